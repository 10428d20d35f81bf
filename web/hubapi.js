// The Control UI served by a hub (docs/hub.md §4): the one place that knows the page talks to
// a hub rather than to a backend. The hub says so in its `/health` answer (`hub: true`), and
// `HubApi` then offers the page the backend's API (api.js) over the hub's routes: every
// session call (its prompt queue too) goes to `/machine/{m}` of the machine that holds the
// session, a new session's agents are the chosen machine's, the listing and the approvals are
// gathered from every machine, agent Markdown is rendered by the hub itself, and the hub's
// events (`{machine, boot, event}`) are unwrapped into the backend's envelopes. The pure parts below are tested by
// Node (tests/js/hubapi.test.mjs); app.js stays the same page for both servers.

import { Api, ApiError } from './api.js';

/** Paths of the backend API a hub routes per machine (docs/hub.md §4). */
const MACHINE_ROUTES = [
  /^\/session\/[^/]+$/,
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
  if (bare === `/session/${m[1]}`) {
    if (method === 'GET') return `/machine/${encodeURIComponent(machine)}/session`;
    // Rename and delete; the session's other calls (config, standing) are not on a hub.
    if (method !== 'PATCH' && method !== 'DELETE') return null;
  }
  if (!MACHINE_ROUTES.some((r) => r.test(bare))) return null;
  return `/machine/${encodeURIComponent(machine)}${path}`;
}

/** The hub path of `rest` (e.g. `/agent`) on `machine`. */
export function machinePath(machine, rest) {
  return `/machine/${encodeURIComponent(machine)}${rest}`;
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

/** Longest project path the sidebar shows whole; a longer one keeps its last two names. */
const PROJECT_LABEL_CHARS = 40;

/**
 * A machine's project directory (`GET /machine`'s `project`) as the sidebar shows it under the
 * machine's name: the path itself when short, else `…/` and its last two names (the whole
 * path goes in the row's title); '' when the machine told none.
 */
export function projectLabel(project) {
  if (typeof project !== 'string') return '';
  const path = project.trim();
  if (path.length <= PROJECT_LABEL_CHARS) return path;
  const names = path.split('/').filter(Boolean);
  const tail = names.slice(-2).join('/');
  return tail.length + 2 <= PROJECT_LABEL_CHARS ? `…/${tail}` : `…${tail.slice(-(PROJECT_LABEL_CHARS - 1))}`;
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

/**
 * Each machine's boots as this page saw them (a machine record's or a hub event's `boot`,
 * random per start of the machine's join: docs/hub.md §4). `see(machine, boot)` is true when
 * the machine is known with another boot and this one is new to the page: its backend started
 * again, and what its restart changed in its store (a turn cut by a crash, marked interrupted)
 * came in no event, so the page lists its sessions and loads the shown transcripts again, as
 * for a backend's `reset`. The first boot seen of a machine is not a restart; a boot seen
 * before is never new again (the machine list and the event stream may tell of the two boots
 * in either order).
 */
export class BootBook {
  constructor(keep = 8) {
    this.boots = new Map();
    this.keep = keep;
  }

  see(machine, boot) {
    if (typeof machine !== 'string' || typeof boot !== 'string' || boot === '') return false;
    const seen = this.boots.get(machine);
    if (!seen) {
      this.boots.set(machine, [boot]);
      return false;
    }
    if (seen.includes(boot)) return false;
    seen.push(boot);
    if (seen.length > this.keep) seen.shift();
    return true;
  }
}

/**
 * The machines a new session can be made on (`GET /machine`'s records): the online ones, by
 * name. `{ pick }` when there is one (nothing to ask), `{ choices }` when there are several,
 * `{ none }` (the reason) when no machine is online.
 */
export function newSessionMachines(machines) {
  const online = (Array.isArray(machines) ? machines : [])
    .filter((m) => m?.online && typeof m.name === 'string')
    .sort((a, b) => a.name.localeCompare(b.name));
  if (online.length === 0) return { none: 'no machine is online' };
  if (online.length === 1) return { pick: online[0].name };
  return { choices: online };
}

/**
 * One `GET /ui-command` message (server-sent event `ui.command`, data `{machine, command}`,
 * docs/hub.md §4) as `{ machine, payload }`, `payload` being the gateway's `ui.command` event
 * payload; `{ dropped: N }` for the hub's `dropped` event; null for anything else. The page
 * itself takes the machines' commands from their gateways on the hub (hubui.js), where it can
 * acknowledge them; this reads the route for a client that only watches.
 */
export function hubUiCommand(msg) {
  let data;
  try {
    data = JSON.parse(msg?.data ?? '');
  } catch {
    return null;
  }
  if (msg.event === 'dropped') return Number.isInteger(data?.dropped) ? { dropped: data.dropped } : null;
  if (msg.event !== 'ui.command') return null;
  if (typeof data?.machine !== 'string' || data.machine === '') return null;
  if (!data.command || typeof data.command !== 'object' || Array.isArray(data.command)) return null;
  return { machine: data.machine, payload: data.command };
}

/**
 * Why a `ui.command` of `machine`'s agent may not act on this hub page, or null. Through a hub
 * an agent arranges only what shows its own machine's sessions: every session it names (its
 * own, the target, an `apply-layout`'s, an annotated sidebar row) must be one `owner` (session
 * id -> machine) puts on `machine`, and a pane it names by ID must not show another machine's
 * session. What the command would move is checked afterwards by `foreignPane`, next to the
 * human-priority rules.
 */
export function hubCommandRefusal(payload, machine, owner, layout) {
  const command = payload?.command;
  if (!command || typeof command !== 'object') return null; // the reducer refuses it
  const sessions = [payload.sessionKey, command.sessionKey];
  if (Array.isArray(command.sessions)) sessions.push(...command.sessions);
  const annotations = Array.isArray(command.annotations) ? command.annotations : [];
  for (const a of annotations) sessions.push(a?.sessionKey);
  for (const id of sessions) {
    if (typeof id !== 'string') continue;
    const on = owner(id);
    if (on !== machine) return `session ${id} is not one of ${machine}'s${on ? ` (it is on ${on})` : ''}`;
  }
  const panes = [command.paneId, ...annotations.map((a) => a?.paneId)];
  for (const paneId of panes) {
    if (typeof paneId !== 'string') continue;
    const pane = layout.columns.flatMap((c) => c.panes).find((p) => p.id === paneId);
    const on = pane?.session ? owner(pane.session) : null;
    if (pane?.session && on !== machine) return `pane ${paneId} shows a session of ${on ?? 'another machine'}`;
  }
  return null;
}

/**
 * Of `panes` (those a command of `machine`'s agent would move, resize, replace or
 * (de)activate), why one may not be touched, or null: it shows a session of another machine.
 */
export function foreignPane(panes, machine, owner) {
  for (const pane of panes) {
    if (!pane.session) continue;
    const on = owner(pane.session);
    if (on !== machine) return `the pane showing ${pane.session} shows a session of ${on ?? 'another machine'}`;
  }
  return null;
}

/** Whether the `/health` answer `health` is a hub's. */
export function isHub(health) {
  return health?.hub === true;
}

/** The backend API over a hub's routes. */
export class HubApi extends Api {
  /** `hooks.onRestart(names)`: machines whose backend started again (`BootBook`). */
  constructor(token, proof, hooks = {}) {
    super(token, proof, hooks);
    this.owner = new Map();
    this.machines = [];
    this.boots = new BootBook();
    this.onRestart = hooks.onRestart ?? (() => {});
  }

  sessionOwner(id) {
    return this.owner.get(id) ?? null;
  }

  request(method, path, body) {
    // The hub's own routes: its machines, and agent Markdown, which it renders itself with
    // the backends' renderer (docs/hub.md §4).
    if (method === 'GET' && path === '/machine') return super.request(method, path, body);
    if (method === 'POST' && path === '/markdown') return super.request(method, path, body);
    const routed = hubPath(method, path, (id) => this.sessionOwner(id));
    if (!routed) {
      return Promise.reject(new ApiError(0, 'NOT_ON_HUB', 'not available through the hub'));
    }
    return super.request(method, routed, body);
  }

  async listMachines() {
    this.machines = (await super.request('GET', '/machine')) ?? [];
    const restarted = this.machines.filter((m) => this.boots.see(m.name, m.boot)).map((m) => m.name);
    if (restarted.length) this.onRestart(restarted);
    return this.machines;
  }

  /** A new session on `machine` (the page asks which: `newSessionMachines`). */
  async createSession(title, agent, machine) {
    if (!machine) throw new ApiError(0, 'NO_MACHINE', 'no machine chosen for the new session');
    const body = {};
    if (title) body.title = title;
    if (agent) body.agent = agent;
    const s = await super.request('POST', `/machine/${encodeURIComponent(machine)}/session`, body);
    this.owner.set(s.id, machine);
    return { ...s, machine, readOnly: false };
  }

  /** The agents a new session on `machine` can run: that machine's `GET /agent`. */
  agents(machine) {
    if (!machine) return Promise.reject(new ApiError(0, 'NO_MACHINE', 'no machine chosen for the new session'));
    return super.request('GET', machinePath(machine, '/agent'));
  }

  /** A renamed session keeps its machine in the page's store. */
  async renameSession(id, title) {
    const machine = this.sessionOwner(id);
    const s = await super.renameSession(id, title);
    return s?.id ? { ...s, machine, readOnly: false } : s;
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

  /**
   * The hub path of `rest` (e.g. `/queue`) under session `id` on the machine holding it; a
   * session of no known machine is refused as `request` refuses it.
   */
  sessionRoute(id, rest) {
    const machine = this.sessionOwner(id);
    if (!machine) throw new ApiError(0, 'NOT_ON_HUB', 'not available through the hub');
    return machinePath(machine, `/session/${encodeURIComponent(id)}${rest}`);
  }

  /** A transcript's image, from the session's machine (docs/hub.md §4). */
  imagePath(id, mid, index) {
    return this.sessionRoute(id, `/message/${encodeURIComponent(mid)}/image/${index}`);
  }

  /**
   * The session's prompt queue, through the machine's own queue API (docs/hub.md §4): sent at
   * once when the session is free, else queued. `client` names a backend's gateway
   * connection; through a hub there is none.
   */
  async queuePrompt(id, parts) {
    return super.request('POST', this.sessionRoute(id, '/queue'), { parts });
  }

  async queue(id) {
    return super.request('GET', this.sessionRoute(id, '/queue'));
  }

  async editQueued(id, qid, parts) {
    return super.request('PATCH', this.sessionRoute(id, `/queue/${encodeURIComponent(qid)}`), { parts });
  }

  async cancelQueued(id, qid) {
    return super.request('DELETE', this.sessionRoute(id, `/queue/${encodeURIComponent(qid)}`));
  }

  async sendQueuedNow(id, qid) {
    return super.request('POST', this.sessionRoute(id, `/queue/${encodeURIComponent(qid)}/send`));
  }

  async resumeQueue(id) {
    return super.request('POST', this.sessionRoute(id, '/queue/resume'));
  }

  prompt(id, text, client, parts) {
    // `client` names a gateway connection of a backend; through a hub there is none.
    return super.prompt(id, text, undefined, parts);
  }

  follow(onEnvelope, onState, signal) {
    return super.follow((msg) => {
      const env = machineEnvelope(msg, this.owner);
      if (env) onEnvelope(env);
      if (env && this.boots.see(msg.machine, msg.boot)) this.onRestart([msg.machine]);
    }, onState, signal);
  }
}
