// The Control UI's session store: a pure model (no DOM, no network), so Node's test runner
// checks it (tests/js/sessions.test.mjs). app.js feeds it the HTTP API's answers and the
// /event stream and draws what each step says changed.
//
// A state is never changed in place: every function returns a new state, sharing what did not
// change with the old one (a message keeps its object, a part its object, until they change;
// the transcript's drawing, panes.js `fillTranscript`, keeps an element per part object).

import { applyDelta } from './turn.js';

/**
 * The empty store:
 * - `sessions`: session id -> session, in list order (newest first);
 * - `messages`: session id -> its messages, present once its transcript is loaded;
 * - `permissions`: permission id -> permission (pending ones, as listed or asked);
 * - `missing`: session ids the backend does not know (deleted, or never there);
 * - `seqs`: session id -> (message id -> the seq of the last `message.delta` folded into it).
 */
export function emptyState() {
  return { sessions: new Map(), messages: new Map(), permissions: new Map(), missing: new Set(), seqs: new Map() };
}

/** The pending permissions of one session, oldest first. */
export function pendingFor(state, sessionId) {
  return [...state.permissions.values()].filter((p) => p.sessionId === sessionId && p.state === 'pending');
}

/**
 * The backend's lists (GET /session, GET /permission): they replace what the store held;
 * every transcript is loaded again when shown. Sessions known missing stay so.
 *
 * `since`: the events that arrived while the lists were asked for, in stream order. The
 * lists may have been made before any of them (the answer and the events come on different
 * connections), so they are applied again on top: a session created meanwhile is not lost
 * to a list that predates it, and one deleted meanwhile does not come back. An event the
 * lists already hold changes nothing or is overtaken by a later one, as on the live stream.
 */
export function listed(state, sessions, permissions, since = []) {
  let next = {
    ...state,
    sessions: new Map(sessions.map((s) => [s.id, s])),
    permissions: new Map(permissions.map((p) => [p.id, p])),
    messages: new Map(),
    seqs: new Map(),
  };
  for (const e of since) next = applyEvent(next, e).state;
  return next;
}

/** One session as the backend answered it: replaced in place, or first in the list if new. */
export function upsertSession(state, session) {
  const sessions = state.sessions.has(session.id)
    ? new Map(state.sessions).set(session.id, session)
    : new Map([[session.id, session], ...state.sessions]);
  let missing = state.missing;
  if (missing.has(session.id)) {
    missing = new Set(missing);
    missing.delete(session.id);
  }
  return { ...state, sessions, missing };
}

/**
 * A session's transcript as loaded (GET /session/{id}/message). Each message says how many
 * deltas its parts already hold (`deltas`): later deltas count on from there.
 */
export function messagesLoaded(state, sessionId, messages) {
  const seqs = new Map(messages.map((m) => [m.id, Number.isInteger(m.deltas) ? m.deltas : 0]));
  return {
    ...state,
    messages: new Map(state.messages).set(sessionId, messages),
    seqs: new Map(state.seqs).set(sessionId, seqs),
  };
}

/** A transcript that could not be loaded shows empty; `notFound` (404): the session is gone. */
export function loadFailed(state, sessionId, notFound) {
  const next = messagesLoaded(state, sessionId, []);
  if (notFound && !state.missing.has(sessionId)) next.missing = new Set(state.missing).add(sessionId);
  return next;
}

/** The person's answer to a permission was taken: it waits no more. */
export function permissionAnswered(state, permissionId) {
  if (!state.permissions.has(permissionId)) return state;
  const permissions = new Map(state.permissions);
  permissions.delete(permissionId);
  return { ...state, permissions };
}

/**
 * What one step changed, for the page to draw. Every field is there; false (or null) when it
 * did not change:
 * - `sessionId`: the session the event is about (null when it names none);
 * - `status`: `{ before, after }` when the event carries a session's status (`before` as the
 *   store held it, undefined for a session it did not know);
 * - `sidebar`: the session list; `heads`: the headers of panes showing the session; `queue`:
 *   its queue and Send button; `commands`: its `/` command list (the session's agent state);
 * - `transcript`: its messages; `approvals`: its pending permissions;
 * - `asked`: a permission was asked (the person is told); `deleted`: the session is gone, and
 *   with it every pane's contents (`all`: draw everything);
 * - `reload`: the transcript must be fetched again: 'now' (a part of a message the store does
 *   not hold) or 'soon' (a gap in a message's deltas, or a delta of an unknown message);
 * - `resync`: list everything again (`reset`);
 * - `ignored`: why the event changed nothing, or null.
 */
export function noChange(sessionId = null, ignored = null) {
  return {
    sessionId, status: null, sidebar: false, heads: false, queue: false, commands: false, transcript: false,
    approvals: false, asked: false, deleted: false, all: false, reload: null, resync: false, ignored,
  };
}

/** The session ID an event is about, whichever way it names it. */
function sessionOf(e) {
  return e.session?.id ?? e.message?.sessionId ?? e.permission?.sessionId ?? e.queue?.sessionId ?? e.sessionId ?? null;
}

/** `messages` with the message `id` replaced by `change(message)`. */
function withMessage(state, sessionId, id, change) {
  const list = state.messages.get(sessionId);
  const next = list.map((m) => (m.id === id ? change(m) : m));
  return new Map(state.messages).set(sessionId, next);
}

/**
 * One server event (the `/event` stream's `event`) applied to `state`: `{ state, changes }`,
 * the new state and what changed (`noChange` lists the fields). The input is never modified.
 * Events the store does not hold (`queue.updated`: queue.js) change nothing here.
 */
export function applyEvent(state, e) {
  const id = e && typeof e === 'object' ? sessionOf(e) : null;
  const changes = noChange(id);
  const same = (ignored) => ({ state, changes: { ...changes, ignored } });
  if (!e || typeof e.type !== 'string') return same('not an event');
  switch (e.type) {
    case 'session.created':
    case 'session.updated': {
      if (typeof e.session?.id !== 'string') return same('no session');
      changes.status = { before: state.sessions.get(id)?.status, after: e.session.status };
      Object.assign(changes, { sidebar: true, heads: true, queue: true, commands: true });
      return { state: upsertSession(state, e.session), changes };
    }
    case 'session.deleted': {
      const sessions = new Map(state.sessions);
      sessions.delete(id);
      const messages = new Map(state.messages);
      messages.delete(id);
      const seqs = new Map(state.seqs);
      seqs.delete(id);
      // Its permissions stay until answered or listed again, as the backend says.
      const missing = new Set(state.missing).add(id);
      Object.assign(changes, { deleted: true, all: true });
      return { state: { ...state, sessions, messages, seqs, missing }, changes };
    }
    case 'session.status': {
      const cur = state.sessions.get(id);
      changes.status = { before: cur?.status, after: e.status };
      if (!cur) return { state, changes: { ...changes, ignored: 'unknown session' } };
      Object.assign(changes, { sidebar: true, heads: true, queue: true });
      const sessions = new Map(state.sessions).set(id, { ...cur, status: e.status });
      return { state: { ...state, sessions }, changes };
    }
    case 'message.created': {
      const list = state.messages.get(id);
      if (!list) return same('transcript not loaded');
      if (list.some((m) => m.id === e.message.id)) return same('duplicate');
      // Its parts so far are what it was created with: deltas count from 1.
      const seqs = new Map(state.seqs).set(id, new Map(state.seqs.get(id)).set(e.message.id, 0));
      changes.transcript = true;
      return { state: { ...state, messages: new Map(state.messages).set(id, [...list, e.message]), seqs }, changes };
    }
    case 'message.delta':
      return delta(state, e, changes);
    case 'message.ended': {
      const msg = state.messages.get(id)?.find((m) => m.id === e.messageId);
      if (!msg) return same('unknown message');
      if (!Number.isFinite(e.ended)) return same('no end');
      if (msg.ended === e.ended) return same('duplicate');
      // The end the store now holds: the duration shown equals what a reload shows.
      changes.transcript = true;
      return { state: { ...state, messages: withMessage(state, id, e.messageId, (m) => ({ ...m, ended: e.ended })) }, changes };
    }
    case 'message.part': {
      const list = state.messages.get(id);
      if (!list) return same('transcript not loaded');
      if (!list.some((m) => m.id === e.messageId)) {
        changes.reload = 'now';
        return { state, changes };
      }
      changes.transcript = true;
      const messages = withMessage(state, id, e.messageId, (m) => {
        const parts = [...(m.parts ?? [])];
        parts[e.index] = e.part;
        return { ...m, parts };
      });
      return { state: { ...state, messages }, changes };
    }
    case 'permission.asked': {
      if (typeof e.permission?.id !== 'string') return same('no permission');
      Object.assign(changes, { approvals: true, sidebar: true, asked: true });
      return { state: { ...state, permissions: new Map(state.permissions).set(e.permission.id, e.permission) }, changes };
    }
    case 'permission.replied': {
      if (!state.permissions.has(e.permissionId)) return same('unknown permission');
      Object.assign(changes, { approvals: true, sidebar: true });
      return { state: permissionAnswered(state, e.permissionId), changes };
    }
    case 'reset':
      changes.resync = true;
      return { state, changes };
    default:
      return same('not a store event');
  }
}

/**
 * Folds one `message.delta` into its message (turn.js, the backend's own fold). Deltas are
 * numbered per message: a repeat is skipped, a gap (or an unknown message) asks for a reload.
 * A transcript not loaded takes none (it is loaded when a pane shows it).
 */
function delta(state, e, changes) {
  const id = e.sessionId;
  const list = state.messages.get(id);
  if (!list) return { state, changes: { ...changes, ignored: 'transcript not loaded' } };
  const msg = list.find((m) => m.id === e.messageId);
  const last = state.seqs.get(id)?.get(e.messageId);
  if (!msg || last === undefined || !(e.seq <= last + 1)) {
    changes.reload = 'soon';
    return { state, changes };
  }
  if (e.seq <= last) return { state, changes: { ...changes, ignored: 'duplicate' } };
  const parts = [...(msg.parts ?? [])];
  applyDelta(parts, e.delta);
  const seqs = new Map(state.seqs).set(id, new Map(state.seqs.get(id)).set(e.messageId, e.seq));
  changes.transcript = true;
  return { state: { ...state, messages: withMessage(state, id, e.messageId, (m) => ({ ...m, parts })), seqs }, changes };
}
