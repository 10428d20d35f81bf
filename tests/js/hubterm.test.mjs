// Unit tests of the operator terminal on a hub's page (web/hubterm.js): which machine's
// gateway the page uses, what the tab remembers, and the connection badge.
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  hubConnectionView, machineGatewayPath, readRemembered, terminalChoices, terminalKeyOf, terminalMachine, terminalPlace,
} from '../../web/hubterm.js';
import { connectionView } from '../../web/present.js';

const machines = [
  { name: 'beta', online: true },
  { name: 'alpha', online: true },
  { name: 'gamma', online: false },
];

test("a machine's gateway is its path on the hub, its name escaped", () => {
  assert.equal(machineGatewayPath('beta'), '/machine/beta/gateway');
  assert.equal(machineGatewayPath('a b/c'), '/machine/a%20b%2Fc/gateway');
});

test('each machine keeps its own remembered terminal', () => {
  assert.notEqual(terminalKeyOf('alpha'), terminalKeyOf('beta'));
  assert.notEqual(terminalKeyOf('alpha'), 'ax-code.terminal');
});

test('a machine the person chose wins while the hub lists it', () => {
  assert.equal(terminalMachine({ machines, pinned: 'gamma', current: 'alpha', shown: 'beta', opening: true }), 'gamma');
  // One the hub no longer lists is not used.
  assert.equal(terminalMachine({ machines, pinned: 'gone', current: 'alpha', shown: 'beta' }), 'alpha');
});

test("opening the panel takes the shown session's machine", () => {
  assert.equal(terminalMachine({ machines, current: 'alpha', shown: 'beta', opening: true }), 'beta');
  // A session of no known machine: the one in use stays.
  assert.equal(terminalMachine({ machines, current: 'alpha', shown: null, opening: true }), 'alpha');
});

test('while the panel stays open or closed, the machine in use stays', () => {
  assert.equal(terminalMachine({ machines, current: 'alpha', shown: 'beta' }), 'alpha');
  assert.equal(terminalMachine({ machines, current: 'gamma', shown: 'beta' }), 'gamma');
});

test("with none in use: the shown session's machine, else the first online by name, else none", () => {
  assert.equal(terminalMachine({ machines, shown: 'gamma' }), 'gamma');
  assert.equal(terminalMachine({ machines }), 'alpha');
  assert.equal(terminalMachine({ machines, current: 'gone' }), 'alpha');
  assert.equal(terminalMachine({ machines: [{ name: 'gamma', online: false }] }), null);
  assert.equal(terminalMachine({ machines: [] }), null);
  assert.equal(terminalMachine({ machines: undefined, shown: 'beta' }), null);
});

test('the picker lists every machine by name, the one in use selected, offline ones said so', () => {
  assert.deepEqual(terminalChoices(machines, 'beta'), [
    { name: 'alpha', online: true, selected: false, label: 'alpha' },
    { name: 'beta', online: true, selected: true, label: 'beta' },
    { name: 'gamma', online: false, selected: false, label: 'gamma (offline)' },
  ]);
  // The machine in use stays listed when the hub no longer lists it.
  assert.deepEqual(terminalChoices([], 'old').map((c) => [c.name, c.selected, c.label]), [['old', true, 'old (offline)']]);
  assert.deepEqual(terminalChoices(null, null), []);
});

test('the panel names the machine its terminal runs on', () => {
  assert.equal(terminalPlace('beta'), 'Operator terminal on beta');
  assert.match(terminalPlace(null), /no machine/);
});

test('what the tab remembered is read back, anything else is nothing', () => {
  assert.deepEqual(readRemembered(JSON.stringify({ machine: 'beta', pinned: true })), { machine: 'beta', pinned: true });
  assert.deepEqual(readRemembered(JSON.stringify({ machine: 'beta' })), { machine: 'beta', pinned: false });
  for (const bad of [null, '', 'not json', '{"machine":""}', '{"machine":3}', '[]']) {
    assert.deepEqual(readRemembered(bad), { machine: null, pinned: false }, String(bad));
  }
});

test("the badge shows the machine's gateway and the stream, as a backend page's", () => {
  assert.equal(hubConnectionView('beta', 'connected', 'live', false).state, 'live');
  assert.equal(hubConnectionView('beta', 'connecting', 'live', false).state, 'connecting');
  assert.equal(hubConnectionView('beta', 'down', 'live', true, 'closed (1006)').state, 'reconnecting');
  assert.equal(hubConnectionView('beta', 'connected', 'down', true).state, 'reconnecting');
  assert.equal(hubConnectionView('beta', 'unauthorized', 'live', true).state, 'refused');
  const view = hubConnectionView('beta', 'down', 'live', true, 'closed (1006)');
  assert.match(view.title, /^Terminal gateway \(beta\): down \(closed \(1006\)\)/);
  assert.equal(view.text, connectionView('down', 'live', true).text);
});

test('with no machine to use, the badge follows the stream alone', () => {
  assert.equal(hubConnectionView(null, 'none', 'live', false).state, 'live');
  assert.equal(hubConnectionView(null, 'none', 'down', false).state, 'connecting');
  assert.equal(hubConnectionView(null, 'none', 'down', true).state, 'reconnecting');
  assert.match(hubConnectionView(null, 'none', 'live', false).title, /no machine/);
});
