// Unit tests of the shared ui.commands on a hub's page (web/hubui.js): which machines the page
// holds a UI connection to, a machine's command routed to its own panes, and the shape of the
// acknowledgement that goes back on the machine's connection.
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { UiLinks, answerMachineCommand, commandAck, uiLinkChanges } from '../../web/hubui.js';

test('every online machine gets a UI connection, an offline or unlisted one loses it', () => {
  const machines = [
    { name: 'beta', online: true },
    { name: 'alpha', online: true },
    { name: 'gamma', online: false },
  ];
  assert.deepEqual(uiLinkChanges(machines, []), { open: ['alpha', 'beta'], close: [] });
  assert.deepEqual(uiLinkChanges(machines, ['alpha', 'beta']), { open: [], close: [] });
  assert.deepEqual(uiLinkChanges(machines, ['alpha', 'gamma', 'delta']), { open: ['beta'], close: ['delta', 'gamma'] });
  assert.deepEqual(uiLinkChanges([], ['alpha']), { open: [], close: ['alpha'] });
  assert.deepEqual(uiLinkChanges(null, []), { open: [], close: [] });
  // Records without a usable name, or "online" that is not true, open nothing.
  assert.deepEqual(uiLinkChanges([{ online: true }, { name: '', online: true }, { name: 'x', online: 'yes' }, null], []), { open: [], close: [] });
  // One connection per machine, also when the hub's list names it twice.
  assert.deepEqual(uiLinkChanges([{ name: 'a', online: true }, { name: 'a', online: true }], []), { open: ['a'], close: [] });
});

test('UiLinks opens, keeps and closes one connection per online machine and tells which are up', () => {
  const made = [];
  const links = new UiLinks((machine) => {
    const link = { machine, started: 0, stopped: 0, start() { this.started += 1; }, stop() { this.stopped += 1; } };
    made.push(link);
    return link;
  });
  links.sync([{ name: 'alpha', online: true }, { name: 'beta', online: true }]);
  assert.deepEqual(made.map((l) => [l.machine, l.started, l.stopped]), [['alpha', 1, 0], ['beta', 1, 0]]);
  const [alpha, beta] = made;
  assert.deepEqual(links.connected(), []);
  links.status('alpha', alpha, 'connected');
  links.status('beta', beta, 'down');
  assert.deepEqual(links.connected(), ['alpha']);
  // Nothing new while the machines stay as they are.
  assert.deepEqual(links.sync([{ name: 'alpha', online: true }, { name: 'beta', online: true }]), { open: [], close: [] });
  assert.equal(made.length, 2);
  // alpha goes offline: its connection is stopped and no longer heard.
  links.sync([{ name: 'alpha', online: false }, { name: 'beta', online: true }]);
  assert.equal(alpha.stopped, 1);
  assert.equal(links.current('alpha', alpha), false);
  links.status('alpha', alpha, 'connected');
  assert.deepEqual(links.connected(), []);
  // Back online: a new connection, the old one stays stopped.
  links.sync([{ name: 'alpha', online: true }, { name: 'beta', online: true }]);
  assert.equal(made.length, 3);
  assert.equal(links.current('alpha', made[2]), true);
  assert.equal(links.current('alpha', alpha), false);
  links.stopAll();
  assert.deepEqual(made.map((l) => l.stopped), [1, 1, 1]);
  assert.deepEqual(links.connected(), []);
});

test('the acknowledgement has the outcome, the reason when there is one, the revision and what was not applied', () => {
  assert.deepEqual(commandAck({ outcome: 'applied' }, 4), { outcome: 'applied', revision: 4 });
  assert.deepEqual(commandAck({ outcome: 'applied', reason: undefined, notApplied: [] }, 4), { outcome: 'applied', revision: 4 });
  assert.deepEqual(commandAck({ outcome: 'ignored', reason: 'stale revision: expected 9, current 4' }, 4),
    { outcome: 'ignored', reason: 'stale revision: expected 9, current 4', revision: 4 });
  assert.deepEqual(commandAck({ outcome: 'applied', notApplied: [{ paneId: 'p2', reason: 'human priority' }] }, 5),
    { outcome: 'applied', revision: 5, notApplied: [{ paneId: 'p2', reason: 'human priority' }] });
  // Anything but "applied" is not applied; no revision when there is none to tell.
  assert.deepEqual(commandAck({ outcome: 'weird' }, undefined), { outcome: 'ignored' });
  assert.deepEqual(commandAck(null, 1), { outcome: 'ignored', revision: 1 });
});

const owners = { a1: 'alpha', a2: 'alpha', b1: 'beta' };
const owner = (id) => owners[id] ?? null;
const layoutShowing = (...sessions) => ({ columns: [{ panes: sessions.map((session, i) => ({ id: `p${i + 1}`, session })) }] });

test("a machine's command reaches the page's rules only when it names that machine's sessions and panes", () => {
  let applied = [];
  const apply = (payload) => {
    applied.push(payload);
    return { outcome: 'applied', revision: 8 };
  };
  const ctx = (layout) => ({ owner, layout, revision: () => 7, apply });
  const own = { commandId: 'c1', command: { kind: 'split', direction: 'right', sessionKey: 'a1' } };
  assert.deepEqual(answerMachineCommand('alpha', own, ctx(layoutShowing('a1'))), { ack: { outcome: 'applied', revision: 8 }, refused: null });
  assert.deepEqual(applied, [own]);

  // Machine beta's agent may not name alpha's session: refused with the current revision,
  // nothing applied.
  applied = [];
  const foreign = answerMachineCommand('beta', own, ctx(layoutShowing('a1')));
  assert.equal(foreign.ack.outcome, 'ignored');
  assert.equal(foreign.ack.revision, 7);
  assert.match(foreign.ack.reason, /session a1 is not one of beta's \(it is on alpha\)/);
  assert.equal(foreign.refused, foreign.ack.reason);
  assert.deepEqual(applied, []);

  // A pane named by ID that shows another machine's session.
  const byPane = { commandId: 'c2', command: { kind: 'focus', paneId: 'p2' } };
  const r = answerMachineCommand('alpha', byPane, ctx(layoutShowing('a1', 'b1')));
  assert.equal(r.ack.outcome, 'ignored');
  assert.match(r.ack.reason, /pane p2 shows a session of beta/);
  assert.deepEqual(applied, []);
  // The same pane showing alpha's session: the page's rules decide.
  assert.equal(answerMachineCommand('alpha', byPane, ctx(layoutShowing('a1', 'a2'))).ack.outcome, 'applied');
  assert.deepEqual(applied, [byPane]);
});

test("the page's own refusal is acknowledged as it is, with the revision it gives or the current one", () => {
  const stale = { commandId: 'c3', command: { kind: 'sidebar', visible: false }, expectedRevision: 99 };
  const refuse = () => ({ outcome: 'ignored', reason: 'stale revision: expected 99, current 3', revision: 3 });
  assert.deepEqual(answerMachineCommand('alpha', stale, { owner, layout: layoutShowing('a1'), revision: () => 3, apply: refuse }),
    { ack: { outcome: 'ignored', reason: 'stale revision: expected 99, current 3', revision: 3 }, refused: null });
  const noRevision = () => ({ outcome: 'ignored', reason: 'human priority: typing' });
  assert.deepEqual(answerMachineCommand('alpha', stale, { owner, layout: layoutShowing('a1'), revision: () => 6, apply: noRevision }).ack,
    { outcome: 'ignored', reason: 'human priority: typing', revision: 6 });
});
