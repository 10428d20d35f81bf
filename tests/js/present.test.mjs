// Unit tests of the new-session agent choice and the connection indicator in web/present.js
// (the rest of its wording is checked in the browser by tests/python/control_ui_cards.py).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { agentChoiceMeta, agentChoices, connectionView } from '../../web/present.js';

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
