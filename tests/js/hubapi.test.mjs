// Unit tests of the Control UI's hub layer (web/hubapi.js): routing backend calls to the
// machine that holds the session, the hub's listing and events as the page's state.
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  BootBook, HubApi, flattenMachineSessions, foreignPane, hubCommandRefusal, hubPath, hubUiCommand, isHub, machineEnvelope, machineGroups,
  machineStatus, newSessionMachines, projectLabel,
} from '../../web/hubapi.js';
import { defaultLayout } from '../../web/layout.js';

const owner = (id) => ({ s1: 'laptop', 's/2': 'box' }[id] ?? null);

test('session calls go to the machine that holds the session', () => {
  assert.equal(hubPath('GET', '/session/s1/message', owner), '/machine/laptop/session/s1/message');
  assert.equal(hubPath('POST', '/session/s1/prompt', owner), '/machine/laptop/session/s1/prompt');
  assert.equal(hubPath('POST', '/session/s1/abort', owner), '/machine/laptop/session/s1/abort');
  assert.equal(hubPath('POST', '/session/s1/mode', owner), '/machine/laptop/session/s1/mode');
  assert.equal(hubPath('POST', '/session/s1/permission/p9', owner), '/machine/laptop/session/s1/permission/p9');
  assert.equal(hubPath('POST', '/session/s%2F2/prompt', owner), '/machine/box/session/s%2F2/prompt');
  assert.equal(hubPath('GET', '/session/s1', owner), '/machine/laptop/session');
  // Rename and delete (docs/hub.md §4).
  assert.equal(hubPath('PATCH', '/session/s1', owner), '/machine/laptop/session/s1');
  assert.equal(hubPath('DELETE', '/session/s%2F2', owner), '/machine/box/session/s%2F2');
});

test('what a hub does not route, or a session of no known machine, is refused', () => {
  assert.equal(hubPath('GET', '/session/unknown/message', owner), null);
  assert.equal(hubPath('POST', '/session/s1', owner), null);
  assert.equal(hubPath('DELETE', '/session/unknown', owner), null);
  assert.equal(hubPath('DELETE', '/session/s1/standing', owner), null);
  assert.equal(hubPath('POST', '/session/s1/config', owner), null);
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

test('a new boot of a known machine is a restart; first sights and old boots are not', () => {
  const boots = new BootBook(3);
  assert.equal(boots.see('laptop', 'b1'), false, 'first sight');
  assert.equal(boots.see('laptop', 'b1'), false, 'same boot');
  assert.equal(boots.see('box', 'x1'), false, 'another machine, first sight');
  assert.equal(boots.see('laptop', 'b2'), true, 'restarted');
  assert.equal(boots.see('laptop', 'b2'), false, 'told once');
  // The event stream may still bring the old boot's last events after the list told the new one.
  assert.equal(boots.see('laptop', 'b1'), false, 'an old boot is not new again');
  assert.equal(boots.see('laptop', 'b3'), true);
  assert.equal(boots.see('laptop', 'b4'), true);
  // Bounded: the oldest boot is forgotten.
  assert.equal(boots.see('laptop', 'b1'), true);
  assert.equal(boots.see('laptop', ''), false);
  assert.equal(boots.see('laptop', undefined), false);
  assert.equal(boots.see(null, 'b9'), false);
});

test('a new session is made on the one online machine, or the person picks among several', () => {
  assert.deepEqual(newSessionMachines([]), { none: 'no machine is online' });
  assert.deepEqual(newSessionMachines(null), { none: 'no machine is online' });
  assert.deepEqual(newSessionMachines([{ name: 'box', online: false }]), { none: 'no machine is online' });
  assert.deepEqual(newSessionMachines([{ name: 'box', online: false }, { name: 'laptop', online: true }]), { pick: 'laptop' });
  const { choices } = newSessionMachines([
    { name: 'zeta', online: true, project: '/z' }, { name: 'box', online: false }, { name: 'alpha', online: true, project: '/a' },
  ]);
  assert.deepEqual(choices.map((m) => m.name), ['alpha', 'zeta']);
});

test('the hub ui-command stream gives a machine and the gateway payload, or what was dropped', () => {
  const payload = { commandId: 'c1', command: { kind: 'sidebar', visible: false } };
  assert.deepEqual(hubUiCommand({ event: 'ui.command', data: JSON.stringify({ machine: 'box', command: payload }) }), { machine: 'box', payload });
  assert.deepEqual(hubUiCommand({ event: 'dropped', data: '{"dropped":3}' }), { dropped: 3 });
  assert.equal(hubUiCommand({ event: 'dropped', data: '{"dropped":"x"}' }), null);
  assert.equal(hubUiCommand({ event: 'ui.command', data: 'not json' }), null);
  assert.equal(hubUiCommand({ event: 'ui.command', data: '{"command":{}}' }), null);
  assert.equal(hubUiCommand({ event: 'ui.command', data: '{"machine":"box","command":[1]}' }), null);
  assert.equal(hubUiCommand({ event: 'other', data: '{"machine":"box","command":{}}' }), null);
  assert.equal(hubUiCommand({ event: null, data: '' }), null);
});

test("a machine's agent arranges only what shows its own machine's sessions", () => {
  const owners = { a1: 'alpha', a2: 'alpha', b1: 'beta' };
  const own = (id) => owners[id] ?? null;
  const layout = defaultLayout();
  layout.columns[0].panes[0].session = 'b1';
  layout.columns.push({ weight: 1, panes: [{ id: 'p9', session: 'a1', weight: 1 }] });
  const refusal = (payload) => hubCommandRefusal(payload, 'alpha', own, layout);
  assert.equal(refusal({ command: { kind: 'split', direction: 'right', sessionKey: 'a2' }, sessionKey: 'a1' }), null);
  assert.equal(refusal({ command: { kind: 'sidebar', visible: false } }), null);
  assert.equal(refusal({ command: { kind: 'focus', paneId: 'p9' } }), null);
  assert.match(refusal({ command: { kind: 'navigate', sessionKey: 'b1' } }), /session b1 is not one of alpha's \(it is on beta\)/);
  assert.match(refusal({ command: { kind: 'focus' }, sessionKey: 'zz' }), /session zz is not one of alpha's$/);
  assert.match(refusal({ command: { kind: 'close-pane', paneId: layout.columns[0].panes[0].id } }), /shows a session of beta/);
  assert.match(refusal({ command: { kind: 'apply-layout', preset: 'pair', sessions: ['a1', 'b1'] } }), /b1/);
  assert.match(refusal({ command: { kind: 'annotate', annotations: [{ text: 'x', sessionKey: 'b1' }] } }), /b1/);
  assert.match(refusal({ command: { kind: 'annotate', annotations: [{ text: 'x', paneId: 'p1' }] } }), /pane p1/);
  assert.equal(refusal({ command: { kind: 'focus', paneId: 'p77' } }), null, 'a pane the page lacks is the reducer’s to report');
  assert.equal(refusal({}), null);

  assert.equal(foreignPane([{ id: 'p9', session: 'a1' }, { id: 'p3' }], 'alpha', own), null);
  assert.match(foreignPane([{ id: 'p9', session: 'a1' }, { id: 'p1', session: 'b1' }], 'alpha', own), /b1 shows a session of beta/);
  assert.match(foreignPane([{ id: 'p1', session: 'gone' }], 'alpha', own), /another machine/);
});

/**
 * A HubApi whose server is `answer(method, path, body)` (a JSON value, or `{status, error}`
 * for a refusal): the page's calls as the hub would get them, recorded in `calls`.
 */
function fakeHub(answer) {
  const calls = [];
  const api = new HubApi('tok', { ensure: async () => {}, lost: () => {} });
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (path, init) => {
    const body = init.body ? JSON.parse(init.body) : undefined;
    calls.push([init.method, path, body]);
    const got = answer(init.method, path, body);
    const status = got?.status >= 400 ? got.status : 200;
    const text = JSON.stringify(status === 200 ? got : { error: got.error });
    return { ok: status === 200, status, statusText: '', text: async () => text };
  };
  return { api, calls, restore: () => { globalThis.fetch = realFetch; } };
}

test("a new session's agents are asked of the machine it is made on", async () => {
  const list = { default: 'shell', agents: [{ name: 'shell', kind: 'shell', origin: 'builtin' }] };
  const { api, calls, restore } = fakeHub(() => list);
  try {
    assert.deepEqual(await api.agents('box/2'), list);
    assert.deepEqual(calls, [['GET', '/machine/box%2F2/agent', undefined]]);
    await assert.rejects(api.agents(undefined), (e) => e.code === 'NO_MACHINE');
    assert.equal(calls.length, 1, 'nothing asked without a machine');
    await api.createSession(undefined, 'mock', 'box');
    assert.deepEqual(calls[1], ['POST', '/machine/box/session', { agent: 'mock' }]);
  } finally {
    restore();
  }
});

test("a machine's project is shown under it, a long path by its last two names", () => {
  assert.equal(projectLabel('/home/me/src/app'), '/home/me/src/app');
  assert.equal(projectLabel('/home/someone-with-a-long-name/projects/clients/acme/web-shop'), '…/acme/web-shop');
  const long = `/srv/${'x'.repeat(30)}/${'y'.repeat(30)}`;
  const label = projectLabel(long);
  assert.equal(label.length, 40);
  assert.ok(label.startsWith('…') && long.endsWith(label.slice(1)), label);
  assert.equal(projectLabel('  /p  '), '/p');
  assert.equal(projectLabel(undefined), '');
  assert.equal(projectLabel(''), '');
});

test('agent Markdown is asked of the hub itself, whatever the machine', async () => {
  const tree = { blocks: [{ t: 'p', c: [{ t: 'strong', c: [{ t: 'text', text: 'hi' }] }] }] };
  const { api, calls, restore } = fakeHub(() => tree);
  try {
    assert.deepEqual(await api.markdown('**hi**'), tree);
    assert.deepEqual(calls, [['POST', '/markdown', { text: '**hi**' }]]);
  } finally {
    restore();
  }
});

test("a session's prompt queue goes to the machine holding the session", async () => {
  const { api, calls, restore } = fakeHub((method) => (method === 'POST' ? { state: 'queued' } : { items: [] }));
  try {
    api.owner.set('s/1', 'box');
    const parts = [{ type: 'text', text: 'hi' }];
    assert.deepEqual(await api.queuePrompt('s/1', parts, 'gateway-conn'), { state: 'queued' });
    await api.queue('s/1');
    await api.editQueued('s/1', 'q1', parts);
    await api.cancelQueued('s/1', 'q1');
    await api.sendQueuedNow('s/1', 'q/2');
    await api.resumeQueue('s/1');
    assert.deepEqual(calls, [
      ['POST', '/machine/box/session/s%2F1/queue', { parts }],
      ['GET', '/machine/box/session/s%2F1/queue', undefined],
      ['PATCH', '/machine/box/session/s%2F1/queue/q1', { parts }],
      ['DELETE', '/machine/box/session/s%2F1/queue/q1', undefined],
      ['POST', '/machine/box/session/s%2F1/queue/q%2F2/send', undefined],
      ['POST', '/machine/box/session/s%2F1/queue/resume', undefined],
    ]);
    // A session of no known machine: refused, nothing asked.
    await assert.rejects(api.queue('elsewhere'), (e) => e.code === 'NOT_ON_HUB');
    assert.equal(calls.length, 6);
  } finally {
    restore();
  }
});

test("a transcript's image is asked of the session's machine, and refused for no machine", () => {
  const api = new HubApi('tok', { ensure: async () => {}, lost: () => {} });
  api.owner.set('s/2', 'box');
  assert.equal(api.imagePath('s/2', 'm/1', 3), '/machine/box/session/s%2F2/message/m%2F1/image/3');
  assert.throws(() => api.imagePath('gone', 'm1', 0), (e) => e.code === 'NOT_ON_HUB');
});
