// Telling the person about sessions they are not looking at (docs/control-ui.md §8): a count
// in the tab title and, once they turned it on with a click, desktop notifications. Pure
// functions (tests/js/notify.test.mjs); app.js owns the browser calls.

/** Where the person's choice is kept (this browser; the permission itself is the browser's). */
export const NOTIFY_KEY = 'ax-code.notify';

/**
 * The tab's title: `(N) base` while N sessions the person did not look at need them or have
 * an unread turn end, else `base`.
 */
export function titleWithCount(base, n) {
  return n > 0 ? `(${n}) ${base}` : base;
}

/**
 * The sessions the title counts: every session with an unread turn end (`unread`, failed
 * ones included), and every session that needs the person (an approval, sign-in) that no
 * visible pane shows (`looking`). Ids, so a test can see which.
 */
export function countedSessions(sessions, { unread, needs, looking }) {
  return sessions
    .filter((s) => unread.has(s.id) || (needs.has(s.id) && !looking.has(s.id)))
    .map((s) => s.id);
}

/** What happened, in words, for the toast and the notification alike. */
export function alertText(what, title) {
  const name = `“${title}”`;
  switch (what) {
    case 'finished': return `${name} finished its turn`;
    case 'failed': return `${name} failed`;
    case 'approval': return `${name} asks for your approval`;
    case 'needs_auth': return `${name} needs you to sign the agent in`;
    default: return `${name} changed`;
  }
}

/**
 * A desktop notification is shown only when the person turned them on, the browser granted
 * them, and the person is not looking at the session (another session, or the tab is hidden
 * or has not the focus).
 */
export function shouldNotify({ enabled, permission, looking, focused }) {
  return Boolean(enabled) && permission === 'granted' && !(looking && focused);
}

/**
 * The toggle in the top bar: `state` is 'unsupported', 'denied', 'on' or 'off'; `label` and
 * `title` say what a click does. Permission is asked only on that click (never on load).
 */
export function toggleView(supported, permission, enabled) {
  if (!supported) return { state: 'unsupported', label: '🔕', title: 'This browser cannot show notifications here (it needs https or localhost).', pressed: false };
  if (permission === 'denied') return { state: 'denied', label: '🔕', title: 'Notifications are blocked for this page in the browser’s settings.', pressed: false };
  if (enabled && permission === 'granted') return { state: 'on', label: '🔔', title: 'Notifications on: a click turns them off', pressed: true };
  return { state: 'off', label: '🔕', title: 'Notify me when a session I am not looking at finishes, fails or asks for approval', pressed: false };
}

/** The notification itself: one per session (`tag`), so a newer one replaces the older. */
export function notificationFor(what, title, sessionId) {
  return { title: alertText(what, title), options: { tag: `ax-code:${sessionId}`, body: 'ax-code: click to open the session' } };
}
