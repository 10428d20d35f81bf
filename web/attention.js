// What each session needs from the person, at a glance (docs/control-ui.md §7): the state the
// session list shows and sorts by, the same rules as the TUI's (crates/tui/src/attention.rs,
// docs/tui.md §2b). Pure functions over plain data (tests/js/attention.test.mjs).
//
// "Unread" is a turn that ended while the person was not looking at the session; it stays
// until they open it. A turn "failed" when its events carried an error notice, a non-zero exit
// or a signal (a `shell` session's command: its call failed with an exit status), or a run cut
// short by a backend restart (an abort by the person is not one).

/** The states, in the list's order: what needs the person first. */
export const ATTENTION = ['needs', 'working', 'unread', 'failed', 'idle'];

/** What the list says of each state (idle says nothing). */
export const ATTENTION_LABEL = { needs: 'needs you', working: 'working', unread: 'unread', failed: 'failed', idle: '' };

/** The marks events leave, per session id: an unread turn end, a failed one, a turn failing. */
export function newBoard() {
  return { unread: new Set(), failed: new Set(), failing: new Set() };
}

const active = (status) => status === 'busy' || status === 'pending';

/** Whether a stored or streamed part says the turn went wrong. */
export function partFailed(part) {
  switch (part?.type) {
    case 'exit': return (Number.isInteger(part.code) && part.code !== 0) || (part.signal !== undefined && part.signal !== null);
    case 'interrupted': return true;
    case 'notice': return part.kind === 'error';
    default: return false;
  }
}

/**
 * Whether a delta of a `shell` session's turn says its command failed: its `execute` call
 * ended `failed` with an exit status or a signal in its raw output (the `shell` agent's
 * `{exitCode, signal}`). A rejection fails the call with neither and an abort cancels it:
 * neither is a failure.
 */
export function runFailed(delta) {
  if (delta?.type !== 'tool_call_updated' || delta.fields?.status !== 'failed') return false;
  const out = delta.fields.rawOutput;
  if (out === null || typeof out !== 'object') return false;
  const code = Number.isInteger(out.exitCode) ? out.exitCode : out.exit_code;
  return (Number.isInteger(code) && code !== 0) || (out.signal !== undefined && out.signal !== null);
}

/**
 * Notes the failure signals of any session's message events (`message.part`, `.delta`,
 * `.created`); `isShell(id)` says which sessions are the `shell` agent's, whose failed
 * command is a failed turn.
 */
export function observe(board, e, isShell = () => false) {
  let session = null;
  let failed = false;
  if (e?.type === 'message.part') {
    session = e.sessionId;
    failed = partFailed(e.part);
  } else if (e?.type === 'message.delta') {
    session = e.sessionId;
    failed = (e.delta?.type === 'notice' && e.delta.notice?.kind === 'error') || (isShell(session) && runFailed(e.delta));
  } else if (e?.type === 'message.created') {
    session = e.message?.sessionId;
    failed = (e.message?.parts ?? []).some(partFailed);
  }
  if (session && failed) board.failing.add(session);
}

/**
 * A session's status went from `before` to `after`. A turn starting forgets what failed
 * before; a turn ending while the person is not `looking` becomes unread, marked failed when
 * it failed. Returns what happened: 'started', 'finished', 'failed', or null.
 */
export function statusChanged(board, id, before, after, looking) {
  if (active(after) && !active(before)) {
    board.failing.delete(id);
    return 'started';
  }
  if (!active(before) || active(after)) return null;
  const failed = board.failing.delete(id);
  if (!looking) {
    board.unread.add(id);
    // The mark tells how the latest turn went.
    if (failed) board.failed.add(id);
    else board.failed.delete(id);
  }
  return failed ? 'failed' : 'finished';
}

/** The person opened the session (or came back to the tab showing it): nothing is unread there. */
export function seen(board, id) {
  const had = board.unread.delete(id);
  board.failed.delete(id);
  return had;
}

/** The session is gone. */
export function forget(board, id) {
  seen(board, id);
  board.failing.delete(id);
}

/** What session `s` needs: `approval` says an approval of it waits. */
export function attentionOf(s, board, approval) {
  if (s.status === 'pending' || s.status === 'needs_auth' || approval) return 'needs';
  if (s.status === 'busy') return 'working';
  if (board.failed.has(s.id)) return 'failed';
  if (board.unread.has(s.id)) return 'unread';
  return 'idle';
}

/**
 * The list's order: by state (ATTENTION), then the most recent activity first, then by id
 * (the backend's own order). `approvals`: the ids of sessions with a pending approval.
 */
export function sortSessions(sessions, board, approvals) {
  const keyed = sessions.map((s) => ({ s, rank: ATTENTION.indexOf(attentionOf(s, board, approvals.has(s.id))) }));
  keyed.sort((a, b) => a.rank - b.rank || (b.s.updated ?? 0) - (a.s.updated ?? 0) || (a.s.id < b.s.id ? 1 : a.s.id > b.s.id ? -1 : 0));
  return keyed.map((k) => k.s);
}

/** How many sessions need the person and how many have an unread turn end (failed included). */
export function attentionCounts(sessions, board, approvals) {
  let needs = 0;
  let unread = 0;
  for (const s of sessions) {
    const a = attentionOf(s, board, approvals.has(s.id));
    if (a === 'needs') needs += 1;
    else if (a === 'unread' || a === 'failed') unread += 1;
  }
  return { needs, unread };
}

/** The list's heading line, e.g. "1 needs you · 2 unread" (null when nothing waits). */
export function countsText({ needs, unread }) {
  const parts = [];
  if (needs) parts.push(`${needs} need${needs === 1 ? 's' : ''} you`);
  if (unread) parts.push(`${unread} unread`);
  return parts.length ? parts.join(' · ') : null;
}
