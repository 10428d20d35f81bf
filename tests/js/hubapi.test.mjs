// Unit tests of the Control UI's hub layer (web/hubapi.js): routing backend calls to the
// machine that holds the session, the hub's listing and events as the page's state.
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { flattenMachineSessions, hubPath, isHub, machineEnvelope, machineGroups, machineStatus } from '../../web/hubapi.js';

const owner = (id) => ({ s1: 'laptop', 's/2': 'box' }[id] ?? null);

test('session calls go to the machine that holds the session', () => {
  assert.equal(hubPath('GET', '/session/s1/message', owner), '/machine/laptop/session/s1/message');
  assert.equal(hubPath('POST', '/session/s1/prompt', owner), '/machine/laptop/session/s1/prompt');
  assert.equal(hubPath('POST', '/session/s1/abort', owner), '/machine/laptop/session/s1/abort');
  assert.equal(hubPath('POST', '/session/s1/mode', owner), '/machine/laptop/session/s1/mode');
  assert.equal(hubPath('POST', '/session/s1/permission/p9', owner), '/machine/laptop/session/s1/permission/p9');
  assert.equal(hubPath('POST', '/session/s%2F2/prompt', owner), '/machine/box/session/s%2F2/prompt');
  assert.equal(hubPath('GET', '/session/s1', owner), '/machine/laptop/session');
});

test('what a hub does not route, or a session of no known machine, is refused', () => {
  assert.equal(hubPath('GET', '/session/unknown/message', owner), null);
  assert.equal(hubPath('DELETE', '/session/s1', owner), null);
  assert.equal(hubPath('PATCH', '/session/s1', owner), null);
  assert.equal(hubPath('GET', '/session/s1/queue', owner), null);
  assert.equal(hubPath('POST', '/markdown', owner), null);
  assert.equal(hubPath('GET', '/agent', owner), null);
});

test('the hub listing becomes one session list, tagged with machines, offline ones read-only', () => {
  const { sessions, owner: map } = flattenMachineSessions([
    { machine: 'laptop', online: true, lastSeen: false, sessions: [{ id: 'a', updated: '2026-01-01T00:00:02Z' }] },
    { machine: 'box', online: false, lastSeen: true, sessions: [{ id: 'b', updated: '2026-01-01T00:00:03Z' }, { nope: 1 }] },
    { bad: true },
  ]);
  assert.deepEqual(sessions.map((s) => [s.id, s.machine, s.readOnly]), [['b', 'box', true], ['a', 'laptop', false]]);
  assert.equal(map.get('a'), 'laptop');
  assert.equal(map.get('b'), 'box');
  assert.deepEqual(flattenMachineSessions(null).sessions, []);
});

test('hub events are unwrapped into the backend envelope and teach the owner map', () => {
  const map = new Map();
  const env = machineEnvelope({ machine: 'box', boot: 'b1', event: { id: 7, event: { type: 'session.created', session: { id: 'x' } } } }, map);
  assert.equal(env.id, 7);
  assert.deepEqual(env.event.session, { id: 'x', machine: 'box', readOnly: false });
  assert.equal(map.get('x'), 'box');
  machineEnvelope({ machine: 'laptop', boot: 'b2', event: { id: 1, event: { type: 'message.delta', sessionId: 'y' } } }, map);
  assert.equal(map.get('y'), 'laptop');
  assert.equal(machineEnvelope({ event: { id: 1, event: { type: 'x' } } }, map), null);
  assert.equal(machineEnvelope({ machine: 'm', event: {} }, map), null);
  assert.equal(machineEnvelope('heartbeat', map), null);
});

test('the sidebar groups sessions under their machine, machines without sessions too', () => {
  const machines = [{ name: 'box', online: true }, { name: 'laptop', online: false, lastSeenMs: 0 }];
  const groups = machineGroups(machines, [{ id: 'a', machine: 'laptop' }, { id: 'b', machine: 'gone' }]);
  assert.deepEqual(groups.map((g) => [g.machine.name, g.sessions.map((s) => s.id)]), [['box', []], ['laptop', ['a']], ['gone', ['b']]]);
  assert.equal(groups[2].machine.online, false);
});

test('a machine is online, or offline with when it was last seen', () => {
  const now = 10_000_000;
  assert.equal(machineStatus({ online: true }, now), 'online');
  assert.equal(machineStatus({ online: false, lastSeenMs: now - 5_000 }, now), 'offline · last seen 5s ago');
  assert.equal(machineStatus({ online: false, lastSeenMs: now - 300_000 }, now), 'offline · last seen 5 min ago');
  assert.equal(machineStatus({ online: false, lastSeenMs: now - 7_200_000 }, now), 'offline · last seen 2 h ago');
  assert.equal(machineStatus({ online: false }, now), 'offline');
});

test('only a hub health answer says hub', () => {
  assert.equal(isHub({ ok: true, hub: true }), true);
  assert.equal(isHub({ ok: true, version: '0.1.0' }), false);
  assert.equal(isHub(null), false);
});
