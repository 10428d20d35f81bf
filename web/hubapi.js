// The Control UI served by a hub (docs/hub.md §4): the one place that knows the page talks to
// a hub rather than to a backend. The hub says so in its `/health` answer (`hub: true`), and
// `HubApi` then offers the page the backend's API (api.js) over the hub's routes: every
// session call goes to `/machine/{m}` of the machine that holds the session, the listing and
// the approvals are gathered from every machine, and the hub's events (`{machine, boot,
// event}`) are unwrapped into the backend's envelopes. The pure parts below are tested by
// Node (tests/js/hubapi.test.mjs); app.js stays the same page for both servers.

import { Api, ApiError } from './api.js';

/** Paths of the backend API a hub routes per machine (docs/hub.md §4). */
const MACHINE_ROUTES = [
  /^\/session\/[^/]+\/message$/,
  /^\/session\/[^/]+\/(prompt|abort|mode)$/,
  /^\/session\/[^/]+\/permission\/[^/]+$/,
];

/**
 * The hub path for a backend API call on `path`, whose session (if any) lives on the machine
 * `owner(sessionId)` names; `null` when a hub offers no such route (or the session's machine
 * is unknown), so the call fails with a clear message instead of a 404.
 */
export function hubPath(method, path, owner) {
  const m = /^\/session\/([^/?]+)/.exec(path);
  if (!m) return null;
  const machine = owner(decodeURIComponent(m[1]));
  if (!machine) return null;
  const bare = path.split('?')[0];
  if (method === 'GET' && bare === `/session/${m[1]}`) return `/machine/${encodeURIComponent(machine)}/session`;
  if (!MACHINE_ROUTES.some((r) => r.test(bare))) return null;
  return `/machine/${encodeURIComponent(machine)}${path}`;
}

/**
 * `GET /session` of a hub (`[{machine, online, lastSeen, sessions}]`) as the page's session
 * list: each session carries `machine`, and `readOnly: true` when its machine is away (the
 * sessions as last seen). `owner` maps session id to machine.
 */
export function flattenMachineSessions(list) {
  const sessions = [];
  const owner = new Map();
  for (const m of Array.isArray(list) ? list : []) {
    if (typeof m?.machine !== 'string' || !Array.isArray(m.sessions)) continue;
    for (const s of m.sessions) {
      if (typeof s?.id !== 'string') continue;
      owner.set(s.id, m.machine);
      sessions.push({ ...s, machine: m.machine, readOnly: !m.online || Boolean(m.lastSeen) });
    }
  }
  // Most recent activity first across machines, as a backend lists its own.
  sessions.sort((a, b) => String(b.updated ?? '').localeCompare(String(a.updated ?? '')));
  return { sessions, owner };
}

/**
 * One hub event (`{machine, boot, event: {id, event}}`) as the backend's envelope the page
 * handles, its sessions tagged with their machine; `null` for anything else. `owner` learns
 * the machine of a session the event names.
 */
export function machineEnvelope(msg, owner) {
  if (typeof msg?.machine !== 'string' || typeof msg?.event?.event?.type !== 'string') return null;
  const e = msg.event.event;
  const machine = msg.machine;
  const sid = e.session?.id ?? e.sessionId ?? e.message?.sessionId ?? e.permission?.sessionId;
  if (typeof sid === 'string') owner.set(sid, machine);
  const event = e.session ? { ...e, session: { ...e.session, machine, readOnly: false } } : e;
  return { id: msg.event.id, event };
}

/** "online", or when a machine was last heard of, relative to `now` (ms since the epoch). */
export function machineStatus(machine, now) {
  if (machine.online) return 'online';
  const ago = Math.max(0, Math.round((now - Number(machine.lastSeenMs)) / 1000));
  if (!Number.isFinite(ago)) return 'offline';
  if (ago < 60) return `offline · last seen ${ago}s ago`;
  if (ago < 3600) return `offline · last seen ${Math.round(ago / 60)} min ago`;
  return `offline · last seen ${Math.round(ago / 3600)} h ago`;
}

/**
 * The sidebar's groups: each machine (by name) with its sessions in the page's order, and the
 * sessions of machines the hub no longer lists under their own name too.
 */
export function machineGroups(machines, sessions) {
  const groups = new Map();
  for (const m of machines) groups.set(m.name, { machine: m, sessions: [] });
  for (const s of sessions) {
    const name = s.machine ?? '';
    if (!groups.has(name)) groups.set(name, { machine: { name, project: '', online: false, lastSeenMs: 0 }, sessions: [] });
    groups.get(name).sessions.push(s);
  }
  return [...groups.values()];
}

/** Whether the `/health` answer `health` is a hub's. */
export function isHub(health) {
  return health?.hub === true;
}

/** The backend API over a hub's routes. */
export class HubApi extends Api {
  constructor(token, proof, hooks) {
    super(token, proof, hooks);
    this.owner = new Map();
    this.machines = [];
  }

  sessionOwner(id) {
    return this.owner.get(id) ?? null;
  }

  request(method, path, body) {
    if (method === 'GET' && path === '/machine') return super.request(method, path, body);
    const routed = hubPath(method, path, (id) => this.sessionOwner(id));
    if (!routed) {
      return Promise.reject(new ApiError(0, 'NOT_ON_HUB', 'not available through the hub'));
    }
    return super.request(method, routed, body);
  }

  async listMachines() {
    this.machines = (await super.request('GET', '/machine')) ?? [];
    return this.machines;
  }

  async listSessions() {
    const [, list] = await Promise.all([this.listMachines(), super.request('GET', '/session')]);
    const { sessions, owner } = flattenMachineSessions(list);
    for (const [id, m] of owner) this.owner.set(id, m);
    return sessions;
  }

  async session(id) {
    const machine = this.sessionOwner(id);
    const list = await this.request('GET', `/session/${encodeURIComponent(id)}`);
    const s = (list?.sessions ?? []).find((x) => x.id === id);
    if (!s) throw new ApiError(404, 'not_found', `no session ${id} on ${machine}`);
    return { ...s, machine, readOnly: !list.online || Boolean(list.lastSeen) };
  }

  /** Every online machine's pending approvals. */
  async permissions() {
    const online = this.machines.filter((m) => m.online);
    const answers = await Promise.all(online.map((m) => super.request('GET', `/machine/${encodeURIComponent(m.name)}/permission`).catch(() => [])));
    return answers.flat();
  }

  /** A hub has no prompt queue: a prompt is sent (a busy session answers 409). */
  queuePrompt(id, parts, client) {
    return this.prompt(id, undefined, client, parts);
  }

  prompt(id, text, client, parts) {
    // `client` names a gateway connection of a backend; through a hub there is none.
    return super.prompt(id, text, undefined, parts);
  }

  follow(onEnvelope, onState, signal) {
    return super.follow((msg) => {
      const env = machineEnvelope(msg, this.owner);
      if (env) onEnvelope(env);
    }, onState, signal);
  }
}
