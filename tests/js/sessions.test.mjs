// Unit tests of the Control UI's session store (web/sessions.js): every event kind the page
// handles, what each says changed, and the edge cases (unknown session or message, events out
// of order, repeats). Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  applyEvent, emptyState, listed, loadFailed, messagesLoaded, noChange, pendingFor, permissionAnswered, upsertSession,
} from '../../web/sessions.js';

const A = 'ses_a', B = 'ses_b';
const session = (id, extra = {}) => ({ id, title: id, status: 'idle', updated: 1, ...extra });
const message = (id, sessionId, extra = {}) => ({ id, sessionId, role: 'assistant', created: 10, parts: [], ...extra });
const permission = (id, sessionId, state = 'pending') => ({ id, sessionId, state, title: `run ${id}` });
const text = (seq, t, messageId = 'm1', sessionId = A) => ({
  type: 'message.delta', sessionId, messageId, seq, delta: { type: 'text_appended', text: t },
});

/** A store listing A and B (newest first), A's transcript loaded with one message. */
function loaded(extra = {}) {
  let s = listed(emptyState(), [session(A), session(B)], [permission('p1', A)]);
  s = messagesLoaded(s, A, [message('m1', A, { parts: [{ type: 'text', text: 'Hi' }], deltas: 2, ...extra })]);
  return s;
}

/** Deep copy of the Maps and Sets of a state, to prove a step left its input alone. */
function snapshot(state) {
  return JSON.stringify(state, (_k, v) => (v instanceof Map ? [...v] : v instanceof Set ? [...v] : v));
}

/** `applyEvent` that also checks the input was not changed. */
function step(state, event) {
  const before = snapshot(state);
  const out = applyEvent(state, event);
  assert.equal(snapshot(state), before, `${event?.type} changed its input state`);
  return out;
}

/** The changed fields of a change description (the rest are false or null). */
function changed(changes) {
  const base = noChange();
  return Object.keys(changes).filter((k) => k !== 'sessionId' && k !== 'ignored' && changes[k] !== base[k]).sort();
}

test('the empty store holds nothing; pendingFor lists only pending permissions of the session', () => {
  const s = emptyState();
  assert.equal(s.sessions.size + s.messages.size + s.permissions.size + s.missing.size + s.seqs.size, 0);
  const l = listed(s, [session(A)], [permission('p1', A), permission('p2', A, 'replied'), permission('p3', B)]);
  assert.deepEqual(pendingFor(l, A).map((p) => p.id), ['p1']);
  assert.deepEqual(pendingFor(l, 'ses_none'), []);
});

test('events that came while the lists were asked for are applied on top of lists that predate them', () => {
  const C = 'ses_c';
  // The lists were made before C was created, B deleted, A went busy and p2 was asked; the
  // events arrived before the lists' answer.
  const since = [
    { type: 'session.created', session: session(C) },
    { type: 'session.deleted', sessionId: B },
    { type: 'session.status', sessionId: A, status: 'busy' },
    { type: 'permission.asked', permission: permission('p2', A) },
  ];
  const l = listed(emptyState(), [session(A), session(B)], [permission('p1', A)], since);
  assert.deepEqual([...l.sessions.keys()].sort(), [A, C]);
  assert.equal(l.sessions.get(A).status, 'busy');
  assert.ok(l.missing.has(B));
  assert.deepEqual(pendingFor(l, A).map((p) => p.id).sort(), ['p1', 'p2']);
  // Lists made after the same events hold them already: applying them again changes nothing.
  const after = listed(emptyState(), [session(C), session(A, { status: 'busy' })], [permission('p1', A), permission('p2', A)], since);
  assert.deepEqual([...after.sessions.keys()].sort(), [A, C]);
  assert.equal(after.sessions.get(A).status, 'busy');
  assert.deepEqual(pendingFor(after, A).map((p) => p.id).sort(), ['p1', 'p2']);
});

test('listing again replaces sessions and permissions and drops every loaded transcript', () => {
  let s = loaded();
  s = loadFailed(s, 'ses_gone', true);
  const again = listed(s, [session(B)], []);
  assert.deepEqual([...again.sessions.keys()], [B]);
  assert.equal(again.permissions.size, 0);
  assert.equal(again.messages.size, 0);
  assert.ok(again.missing.has('ses_gone'), 'a session known missing stays so');
  assert.equal(s.messages.size, 2, 'the old state is untouched');
});

test('session.created puts a new session first; session.updated replaces it in place', () => {
  const s = loaded();
  const c = step(s, { type: 'session.created', session: session('ses_new', { status: 'busy' }) });
  assert.deepEqual([...c.state.sessions.keys()], ['ses_new', A, B]);
  assert.equal(c.changes.sessionId, 'ses_new');
  assert.deepEqual(c.changes.status, { before: undefined, after: 'busy' });
  assert.deepEqual(changed(c.changes), ['commands', 'heads', 'queue', 'sidebar', 'status']);

  const u = step(c.state, { type: 'session.updated', session: session(B, { title: 'renamed', status: 'busy' }) });
  assert.deepEqual([...u.state.sessions.keys()], ['ses_new', A, B], 'an update keeps the list order');
  assert.equal(u.state.sessions.get(B).title, 'renamed');
  assert.deepEqual(u.changes.status, { before: 'idle', after: 'busy' });
  assert.equal(u.state.messages, c.state.messages, 'what did not change is shared');
});

test('a session that comes back after a delete is no longer missing', () => {
  const d = step(loaded(), { type: 'session.deleted', sessionId: A });
  assert.ok(d.state.missing.has(A));
  const back = step(d.state, { type: 'session.updated', session: session(A) });
  assert.ok(!back.state.missing.has(A));
  assert.ok(back.state.sessions.has(A));
  assert.ok(!back.state.messages.has(A), 'its transcript is loaded again when shown');
});

test('session.deleted drops the session and its transcript and asks for a full redraw', () => {
  const s = loaded();
  const d = step(s, { type: 'session.deleted', sessionId: A });
  assert.ok(!d.state.sessions.has(A));
  assert.ok(!d.state.messages.has(A));
  assert.ok(!d.state.seqs.has(A));
  assert.ok(d.state.missing.has(A));
  assert.equal(d.changes.sessionId, A);
  assert.deepEqual(changed(d.changes), ['all', 'deleted']);
  // A repeat (or the delete of a session the page never listed) is the same: gone, drawn.
  const again = step(d.state, { type: 'session.deleted', sessionId: A });
  assert.ok(again.state.missing.has(A));
  assert.equal(again.changes.deleted, true);
  const never = step(s, { type: 'session.deleted', sessionId: 'ses_never' });
  assert.ok(never.state.missing.has('ses_never'));
  assert.equal(never.state.sessions.size, 2);
});

test('session.status changes the status of a known session only', () => {
  const s = loaded();
  const st = step(s, { type: 'session.status', sessionId: A, status: 'busy' });
  assert.equal(st.state.sessions.get(A).status, 'busy');
  assert.equal(st.state.sessions.get(A).title, A, 'the rest of the session stays');
  assert.deepEqual(st.changes.status, { before: 'idle', after: 'busy' });
  assert.deepEqual(changed(st.changes), ['heads', 'queue', 'sidebar', 'status']);

  const unknown = step(s, { type: 'session.status', sessionId: 'ses_x', status: 'busy' });
  assert.equal(unknown.state, s);
  assert.equal(unknown.changes.ignored, 'unknown session');
  assert.deepEqual(unknown.changes.status, { before: undefined, after: 'busy' }, 'the status is still reported');
  assert.deepEqual(changed(unknown.changes), ['status']);
});

test('message.created appends to a loaded transcript once; deltas then count from 1', () => {
  const s = loaded();
  const m2 = message('m2', A);
  const c = step(s, { type: 'message.created', message: m2 });
  assert.deepEqual(c.state.messages.get(A).map((m) => m.id), ['m1', 'm2']);
  assert.equal(c.state.seqs.get(A).get('m2'), 0);
  assert.equal(c.changes.sessionId, A);
  assert.deepEqual(changed(c.changes), ['transcript']);
  assert.equal(c.state.messages.get(A)[0], s.messages.get(A)[0], 'the older message keeps its object');

  const dup = step(c.state, { type: 'message.created', message: m2 });
  assert.equal(dup.state, c.state);
  assert.equal(dup.changes.ignored, 'duplicate');

  const notLoaded = step(s, { type: 'message.created', message: message('m9', B) });
  assert.equal(notLoaded.state, s);
  assert.equal(notLoaded.changes.ignored, 'transcript not loaded');

  const d = step(c.state, text(1, 'yo', 'm2'));
  assert.deepEqual(d.state.messages.get(A)[1].parts, [{ type: 'text', text: 'yo' }]);
});

test('message.delta folds the next delta, skips repeats and asks for a reload on a gap', () => {
  const s = loaded();
  const d3 = step(s, text(3, ' there'));
  const m = d3.state.messages.get(A)[0];
  assert.deepEqual(m.parts, [{ type: 'text', text: 'Hi there' }]);
  assert.equal(d3.state.seqs.get(A).get('m1'), 3);
  assert.deepEqual(changed(d3.changes), ['transcript']);
  assert.deepEqual(s.messages.get(A)[0].parts, [{ type: 'text', text: 'Hi' }], 'the old message is untouched');

  // Already folded into the load (seq <= deltas), or a repeat of the one just applied.
  for (const seq of [1, 2]) {
    const old = step(s, text(seq, 'again'));
    assert.equal(old.state, s);
    assert.equal(old.changes.ignored, 'duplicate');
  }
  const repeat = step(d3.state, text(3, ' there'));
  assert.equal(repeat.state, d3.state);
  assert.equal(repeat.changes.ignored, 'duplicate');

  // Out of order: 5 before 4 is a gap, nothing is folded, the transcript is fetched again.
  const gap = step(d3.state, text(5, '!'));
  assert.equal(gap.state, d3.state);
  assert.equal(gap.changes.reload, 'soon');
  assert.equal(gap.changes.transcript, false);
  const four = step(d3.state, text(4, '?'));
  assert.deepEqual(four.state.messages.get(A)[0].parts, [{ type: 'text', text: 'Hi there?' }]);
});

test('a delta of an unknown message reloads; one of a transcript not loaded is left for the load', () => {
  const s = loaded();
  const unknown = step(s, text(1, 'x', 'm_unknown'));
  assert.equal(unknown.state, s);
  assert.equal(unknown.changes.reload, 'soon');
  const notLoaded = step(s, text(1, 'x', 'm1', B));
  assert.equal(notLoaded.state, s);
  assert.equal(notLoaded.changes.reload, null);
  assert.equal(notLoaded.changes.ignored, 'transcript not loaded');
  const noSeq = step(s, { ...text(3, 'x'), seq: undefined });
  assert.equal(noSeq.changes.reload, 'soon', 'a delta without a number cannot be placed');
});

test('a tool call delta goes through the same fold as the backend', () => {
  const s = loaded();
  const t = step(s, {
    type: 'message.delta', sessionId: A, messageId: 'm1', seq: 3,
    delta: { type: 'tool_call_created', toolCall: { toolCallId: 'tc1', title: 'Read', kind: 'read', status: 'pending' } },
  });
  const parts = t.state.messages.get(A)[0].parts;
  assert.equal(parts.length, 2);
  assert.equal(parts[0], s.messages.get(A)[0].parts[0], 'the untouched part keeps its object');
  assert.equal(parts[1].type, 'tool_call');
  assert.equal(parts[1].toolCallId, 'tc1');
});

test('message.ended stores the end once; an unknown message changes nothing', () => {
  const s = loaded();
  const e = step(s, { type: 'message.ended', sessionId: A, messageId: 'm1', ended: 99 });
  assert.equal(e.state.messages.get(A)[0].ended, 99);
  assert.deepEqual(changed(e.changes), ['transcript']);
  assert.equal(step(e.state, { type: 'message.ended', sessionId: A, messageId: 'm1', ended: 99 }).changes.ignored, 'duplicate');
  assert.equal(step(s, { type: 'message.ended', sessionId: A, messageId: 'm1', ended: null }).state, s);
  assert.equal(step(s, { type: 'message.ended', sessionId: A, messageId: 'nope', ended: 5 }).changes.ignored, 'unknown message');
  assert.equal(step(s, { type: 'message.ended', sessionId: B, messageId: 'm1', ended: 5 }).state, s);
});

test('message.part replaces one part; one of an unknown message reloads the transcript now', () => {
  const s = loaded();
  const p = step(s, { type: 'message.part', sessionId: A, messageId: 'm1', index: 0, part: { type: 'text', text: 'Hello' } });
  assert.deepEqual(p.state.messages.get(A)[0].parts, [{ type: 'text', text: 'Hello' }]);
  assert.deepEqual(changed(p.changes), ['transcript']);
  const added = step(s, { type: 'message.part', sessionId: A, messageId: 'm1', index: 1, part: { type: 'exit', code: 0 } });
  assert.equal(added.state.messages.get(A)[0].parts.length, 2);

  const unknown = step(s, { type: 'message.part', sessionId: A, messageId: 'm_new', index: 0, part: { type: 'text', text: 'x' } });
  assert.equal(unknown.state, s);
  assert.equal(unknown.changes.reload, 'now');
  const notLoaded = step(s, { type: 'message.part', sessionId: B, messageId: 'm1', index: 0, part: {} });
  assert.equal(notLoaded.state, s);
  assert.equal(notLoaded.changes.reload, null);
});

test('permission.asked adds a pending permission (a repeat replaces it); replied removes it', () => {
  const s = loaded();
  const a = step(s, { type: 'permission.asked', permission: permission('p2', B) });
  assert.deepEqual(pendingFor(a.state, B).map((p) => p.id), ['p2']);
  assert.equal(a.changes.sessionId, B);
  assert.deepEqual(changed(a.changes), ['approvals', 'asked', 'sidebar']);
  const again = step(a.state, { type: 'permission.asked', permission: { ...permission('p2', B), title: 'newer' } });
  assert.equal(again.state.permissions.size, 2);
  assert.equal(again.state.permissions.get('p2').title, 'newer');

  const r = step(a.state, { type: 'permission.replied', sessionId: B, permissionId: 'p2', reply: 'once' });
  assert.deepEqual(pendingFor(r.state, B), []);
  assert.deepEqual(changed(r.changes), ['approvals', 'sidebar']);
  // Replied before it was asked here (or twice): nothing to remove.
  const early = step(s, { type: 'permission.replied', sessionId: B, permissionId: 'p2' });
  assert.equal(early.state, s);
  assert.equal(early.changes.ignored, 'unknown permission');
});

test('reset asks for a resync; queue updates, unknown kinds and junk change nothing', () => {
  const s = loaded();
  const r = step(s, { type: 'reset' });
  assert.equal(r.state, s);
  assert.deepEqual(changed(r.changes), ['resync']);
  const q = step(s, { type: 'queue.updated', queue: { sessionId: A, items: [] } });
  assert.equal(q.state, s);
  assert.equal(q.changes.sessionId, A);
  assert.equal(q.changes.ignored, 'not a store event');
  assert.equal(step(s, { type: 'something.new', sessionId: A }).changes.ignored, 'not a store event');
  for (const junk of [null, undefined, 7, {}, { type: 3 }]) {
    const j = applyEvent(s, junk);
    assert.equal(j.state, s);
    assert.equal(j.changes.ignored, 'not an event');
  }
  assert.equal(step(s, { type: 'session.updated' }).changes.ignored, 'no session');
  assert.equal(step(s, { type: 'permission.asked' }).changes.ignored, 'no permission');
});

test('the API answers: upsert, load, failed load and an answered permission', () => {
  const s = loaded();
  const u = upsertSession(s, session(B, { title: 'B2' }));
  assert.deepEqual([...u.sessions.keys()], [A, B]);
  assert.equal(s.sessions.get(B).title, B);
  const n = upsertSession(s, session('ses_c'));
  assert.deepEqual([...n.sessions.keys()], ['ses_c', A, B]);

  const reloaded = messagesLoaded(s, A, [message('m1', A, { deltas: 7 }), message('m2', A)]);
  assert.deepEqual([...reloaded.seqs.get(A)], [['m1', 7], ['m2', 0]]);
  assert.equal(s.seqs.get(A).get('m1'), 2);

  const gone = loadFailed(s, 'ses_gone', true);
  assert.deepEqual(gone.messages.get('ses_gone'), []);
  assert.ok(gone.missing.has('ses_gone'));
  assert.ok(!s.missing.has('ses_gone'));
  const failed = loadFailed(s, B, false);
  assert.deepEqual(failed.messages.get(B), []);
  assert.ok(!failed.missing.has(B));

  const answered = permissionAnswered(s, 'p1');
  assert.equal(answered.permissions.size, 0);
  assert.equal(s.permissions.size, 1);
  assert.equal(permissionAnswered(s, 'nope'), s);
});
