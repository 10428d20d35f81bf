// Unit tests of the new-session agent choice and the connection indicator in web/present.js
// (the rest of its wording is checked in the browser by tests/python/control_ui_cards.py).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  agentChoiceMeta, agentChoices, connectionView, onlyExit, runEnd, statusWord, terminalText,
} from '../../web/present.js';

test('no choice with one agent, none, or no list', () => {
  assert.equal(agentChoices({ agents: [{ name: 'shell' }], default: 'shell' }), null);
  assert.equal(agentChoices({ agents: [] }), null);
  assert.equal(agentChoices({}), null);
  assert.equal(agentChoices(null), null);
  assert.equal(agentChoices({ agents: [{ name: 'shell' }, { kind: 'acp' }, 'claude'] }), null, 'unnamed entries do not count');
});

test('the default comes first; without one the first agent is the default', () => {
  const list = { agents: [{ name: 'shell' }, { name: 'claude' }, { name: 'codex' }], default: 'codex' };
  const c = agentChoices(list);
  assert.equal(c.def, 'codex');
  assert.deepEqual(c.agents.map((a) => a.name), ['codex', 'shell', 'claude'], 'the others keep their order');
  assert.equal(list.agents[0].name, 'shell', 'the answer itself is not reordered');
  const noDefault = agentChoices({ agents: [{ name: 'claude' }, { name: 'shell' }] });
  assert.equal(noDefault.def, 'claude');
  assert.deepEqual(noDefault.agents.map((a) => a.name), ['claude', 'shell']);
});

test('each choice says whether it is the default, what it is and where it comes from', () => {
  assert.equal(agentChoiceMeta({ name: 'claude', kind: 'acp', origin: 'config' }, 'claude'), 'default · ACP agent · from your config');
  assert.equal(agentChoiceMeta({ name: 'shell', kind: 'shell' }, 'claude'), 'shell commands');
  assert.equal(agentChoiceMeta({ name: 'x', kind: 'other', origin: 'builtin' }, 'claude'), '');
});

test('the connection indicator is live only when both connections are', () => {
  assert.deepEqual(connectionView('connected', 'live', false), {
    state: 'live', text: 'Live', title: 'Agent gateway: connected\nSession events: live',
  });
  assert.equal(connectionView('connecting', 'live', false).state, 'connecting');
  assert.equal(connectionView('connected', 'down', false).text, 'Connecting…');
  const again = connectionView('closed', 'live', true, 'code 1006');
  assert.equal(again.state, 'reconnecting');
  assert.equal(again.title, 'Agent gateway: closed (code 1006)\nSession events: live');
  assert.equal(connectionView('unauthorized', 'live', true).text, 'Refused', 'a refusal wins over everything');
  assert.equal(connectionView('connected', 'down', true).title, 'Agent gateway: connected\nSession events: reconnecting');
});

// ---- a command's run (a `shell` session's execute call, any agent's terminal) ----------

const call = (status, content = [], rawOutput = undefined) => ({ toolCallId: 'cmd-1', kind: 'execute', title: 'make', status, content, rawOutput });
const term = (output, exit) => ({ type: 'terminal', terminalId: 'term-1', output, ...(exit ? { exit } : {}) });

test('a run says how it ended: exit N, a signal, aborted; nothing while it runs', () => {
  assert.equal(runEnd(call('in_progress', [term('a\n')])), null, 'still running');
  assert.deepEqual(runEnd(call('completed', [term('a\n', { exitCode: 0 })])), { text: 'exit 0', ok: true });
  assert.deepEqual(runEnd(call('failed', [term('', { exitCode: 2 })], { exitCode: 2, signal: null, truncated: false })), { text: 'exit 2', ok: false });
  assert.deepEqual(runEnd(call('failed', [term('', { signal: 'SIGTERM' })])), { text: 'killed by signal SIGTERM', ok: false });
  // The person aborted it: its terminal was killed, the call cancelled.
  assert.deepEqual(runEnd(call('cancelled', [term('x', { signal: 'SIGKILL' })])), { text: 'aborted', ok: false });
  // No terminal exit: the raw output's (Codex's `exit_code` too).
  assert.deepEqual(runEnd(call('failed', [], { exitCode: 1, signal: null })), { text: 'exit 1', ok: false });
  assert.deepEqual(runEnd(call('completed', [], { exit_code: 0, stdout: '' })), { text: 'exit 0', ok: true });
  // Rejected: failed before anything ran, nothing says an exit.
  assert.equal(runEnd(call('failed')), null);
});

test('a failed command card says how it failed; other statuses keep their word', () => {
  const words = { completed: 'done', failed: 'failed', cancelled: 'cancelled' };
  assert.equal(statusWord(call('failed', [term('', { exitCode: 2 })]), 'failed', words), 'exit 2');
  assert.equal(statusWord(call('failed', [term('', { signal: 'SIGKILL' })]), 'failed', words), 'killed by signal SIGKILL');
  // Shown failed though the agent said completed: the exit says why.
  assert.equal(statusWord(call('completed', [term('', { exitCode: 1 })]), 'failed', words), 'exit 1');
  assert.equal(statusWord(call('failed'), 'failed', words), 'failed', 'nothing says more');
  assert.equal(statusWord(call('completed', [term('', { exitCode: 0 })]), 'completed', words), 'done');
  assert.equal(statusWord(call('cancelled'), 'cancelled', words), 'cancelled');
});

test('a raw output that only says how a command ended is not shown again', () => {
  assert.ok(onlyExit({ exitCode: 0, signal: null, truncated: false }));
  assert.ok(onlyExit({ exit_code: 1 }));
  assert.ok(!onlyExit({ exit_code: 1, stdout: 'x' }), 'output to show');
  assert.ok(!onlyExit({}) && !onlyExit('exit 1') && !onlyExit(null));
});

test('terminal output as text: escapes removed, a carriage return overwrites', () => {
  assert.equal(terminalText('\x1b[32mok\x1b[0m\n10%\r100%\n'), 'ok\n100%\n');
  assert.equal(terminalText('\x1b]0;title\x07plain'), 'plain');
});
