// Unit tests of the session list's attention states and order (web/attention.js), the rules
// of the TUI's crates/tui/src/attention.rs. Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  attentionCounts, attentionOf, countsText, forget, newBoard, observe, partFailed, runFailed, seen, sortSessions, statusChanged,
} from '../../web/attention.js';

const s = (id, status, updated = 0) => ({ id, status, updated });

test('each state comes from the status, the approvals and the marks', () => {
  const board = newBoard();
  const none = new Set();
  assert.equal(attentionOf(s('a', 'pending'), board, false), 'needs');
  assert.equal(attentionOf(s('a', 'needs_auth'), board, false), 'needs', 'sign-in needs the person too');
  assert.equal(attentionOf(s('a', 'idle'), board, true), 'needs', 'an approval waits');
  assert.equal(attentionOf(s('a', 'busy'), board, false), 'working');
  assert.equal(attentionOf(s('a', 'idle'), board, none.has('a')), 'idle');
  board.unread.add('a');
  assert.equal(attentionOf(s('a', 'idle'), board, false), 'unread');
  board.failed.add('a');
  assert.equal(attentionOf(s('a', 'idle'), board, false), 'failed');
  assert.equal(attentionOf(s('a', 'busy'), board, false), 'working', 'a new turn shows as working');
});

test('a turn that ends unseen is unread, failed when it failed, until the session is opened', () => {
  const board = newBoard();
  assert.equal(statusChanged(board, 'a', 'idle', 'busy', false), 'started');
  observe(board, { type: 'message.delta', sessionId: 'a', delta: { type: 'notice', notice: { kind: 'error', text: 'crashed' } } });
  assert.equal(statusChanged(board, 'a', 'busy', 'idle', false), 'failed');
  assert.ok(board.unread.has('a') && board.failed.has('a'));
  // The next turn went well: the mark tells how the latest went.
  statusChanged(board, 'a', 'idle', 'busy', false);
  assert.equal(statusChanged(board, 'a', 'busy', 'idle', false), 'finished');
  assert.ok(board.unread.has('a') && !board.failed.has('a'));
  assert.equal(seen(board, 'a'), true);
  assert.equal(attentionOf(s('a', 'idle'), board, false), 'idle');
  assert.equal(seen(board, 'a'), false, 'nothing left to clear');
  // Seen while it ran: not unread.
  statusChanged(board, 'b', 'idle', 'busy', true);
  assert.equal(statusChanged(board, 'b', 'pending', 'idle', true), 'finished');
  assert.ok(!board.unread.has('b'));
  assert.equal(statusChanged(board, 'b', 'idle', 'idle', false), null, 'no turn, no mark');
  assert.equal(statusChanged(board, 'b', 'busy', 'pending', false), null, 'an approval is not an end');
  forget(board, 'a');
  assert.ok(!board.unread.has('a'));
});

test('failure signals: a non-zero exit, a signal, a restart, an error notice; not a stop', () => {
  assert.ok(partFailed({ type: 'exit', code: 2 }));
  assert.ok(partFailed({ type: 'exit', code: null, signal: 9 }));
  assert.ok(!partFailed({ type: 'exit', code: 0 }));
  assert.ok(partFailed({ type: 'interrupted' }));
  assert.ok(partFailed({ type: 'notice', kind: 'error' }));
  assert.ok(!partFailed({ type: 'notice', kind: 'stop' }));
  assert.ok(!partFailed({ type: 'aborted' }), 'an abort by the person is not a failure');
  const board = newBoard();
  observe(board, { type: 'message.part', sessionId: 'x', part: { type: 'exit', code: 1 } });
  observe(board, { type: 'message.created', message: { sessionId: 'y', parts: [{ type: 'interrupted' }] } });
  observe(board, { type: 'message.part', sessionId: 'z', part: { type: 'text', text: 'fine' } });
  assert.deepEqual([...board.failing].sort(), ['x', 'y']);
});

test('a shell session\'s command that failed with an exit status fails its turn; a rejection, an abort, another agent\'s do not', () => {
  const ended = (status, rawOutput) => ({ type: 'tool_call_updated', toolCallId: 'cmd-1', fields: { status, ...(rawOutput ? { rawOutput } : {}) } });
  assert.ok(runFailed(ended('failed', { exitCode: 2, signal: null, truncated: false })));
  assert.ok(runFailed(ended('failed', { exitCode: null, signal: 'SIGTERM', truncated: false })));
  assert.ok(!runFailed(ended('completed', { exitCode: 0, signal: null, truncated: false })));
  assert.ok(!runFailed(ended('failed')), 'rejected: nothing ran');
  assert.ok(!runFailed(ended('cancelled')), 'aborted by the person');
  const board = newBoard();
  const shell = new Set(['s1', 's2', 's3']);
  const isShell = (id) => shell.has(id);
  const delta = (sessionId, d) => observe(board, { type: 'message.delta', sessionId, delta: d }, isShell);
  delta('s1', ended('failed', { exitCode: 1, signal: null, truncated: false }));
  delta('s2', ended('failed'));
  delta('s3', ended('cancelled'));
  delta('agent', ended('failed', { exitCode: 1, signal: null }));
  assert.deepEqual([...board.failing], ['s1']);
});

test('the list puts what needs the person first, then by recent activity', () => {
  const board = newBoard();
  board.unread.add('u');
  board.unread.add('f');
  board.failed.add('f');
  const list = [s('i', 'idle', 90), s('f', 'idle', 10), s('w', 'busy', 5), s('u', 'idle', 20), s('p', 'idle', 1), s('n', 'pending', 2), s('i2', 'idle', 95)];
  const approvals = new Set(['p']);
  assert.deepEqual(sortSessions(list, board, approvals).map((x) => x.id), ['n', 'p', 'w', 'u', 'f', 'i2', 'i']);
  assert.deepEqual(sortSessions([s('a', 'idle', 1), s('b', 'idle', 1)], board, new Set()).map((x) => x.id), ['b', 'a'], 'ties: by id, as the backend');
  const counts = attentionCounts(list, board, approvals);
  assert.deepEqual(counts, { needs: 2, unread: 2 });
  assert.equal(countsText(counts), '2 need you · 2 unread');
  assert.equal(countsText({ needs: 1, unread: 0 }), '1 needs you');
  assert.equal(countsText({ needs: 0, unread: 0 }), null);
});
