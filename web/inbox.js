// The approvals inbox (docs/control-ui.md §9): every pending approval of this backend's
// sessions in one panel, each answerable there with the card a pane shows (turns.js
// `approvalCard` through panes.js `fillApprovals`: the whole input, the agent's own options,
// no "always" as the default). The pending approvals are the page's store, fed by
// `GET /permission` and the `permission.asked` / `permission.replied` events.

import { h, syncChildren } from './dom.js';
import { fillApprovals } from './panes.js';
import { agentOf, sessionTitle } from './present.js';

/**
 * The pending approvals grouped by session, the session that has waited longest first, and
 * within a session in the order asked: [{sessionId, session, permissions}]. `sessions`: id ->
 * session (an approval of a session the page does not know is still listed, by its id).
 */
export function inboxGroups(permissions, sessions) {
  const groups = new Map();
  for (const p of permissions) {
    if (p?.state !== 'pending' || typeof p.sessionId !== 'string') continue;
    let g = groups.get(p.sessionId);
    if (!g) {
      g = { sessionId: p.sessionId, session: sessions.get(p.sessionId) ?? null, permissions: [] };
      groups.set(p.sessionId, g);
    }
    g.permissions.push(p);
  }
  const at = (p) => (Number.isFinite(p.created) ? p.created : 0);
  const list = [...groups.values()];
  for (const g of list) g.permissions.sort((a, b) => at(a) - at(b));
  list.sort((a, b) => at(a.permissions[0]) - at(b.permissions[0]) || (a.sessionId < b.sessionId ? -1 : 1));
  return list;
}

/** How many approvals wait in all. */
export function pendingCount(permissions) {
  let n = 0;
  for (const p of permissions) if (p?.state === 'pending') n += 1;
  return n;
}

/**
 * Draws the inbox into `el`: per session its name, agent and an "Open" button, then its
 * approval cards. A session's cards are kept while its approvals stay the same (its card
 * then keeps its scroll and its click guard, panes.js ARM_MS); `fresh` says the panel was
 * just opened, so every card's guard starts again.
 */
export function fillInbox(el, permissions, sessions, actions, fresh = false) {
  const groups = inboxGroups(permissions, sessions);
  const kept = el.groupNodes ?? new Map();
  el.groupNodes = kept;
  const nodes = groups.map((g) => {
    let entry = kept.get(g.sessionId);
    if (!entry) {
      const approvals = h('div', { class: 'approvals', 'data-testid': 'inbox-approvals', 'data-session': g.sessionId });
      const name = g.session ? sessionTitle(g.session) : g.sessionId;
      const head = h('div', { class: 'inbox-head' },
        h('h3', { class: 'inbox-session', title: g.sessionId, text: name }),
        h('span', { class: 'agent-name', text: g.session ? agentOf(g.session) : '' }),
        h('button', {
          type: 'button', class: 'small', 'data-testid': 'inbox-open', title: 'Show this session in the active pane',
          onclick: () => actions.openFromInbox(g.sessionId), text: 'Open',
        }));
      entry = { node: h('section', { class: 'inbox-group', 'data-testid': 'inbox-group', 'data-session': g.sessionId }, head, approvals), approvals, fresh: true };
      kept.set(g.sessionId, entry);
    }
    fillApprovals(entry.approvals, g.permissions, g.sessionId, actions, fresh || entry.fresh, g.session);
    entry.fresh = false;
    return entry.node;
  });
  const shown = new Set(groups.map((g) => g.sessionId));
  for (const id of kept.keys()) if (!shown.has(id)) kept.delete(id);
  if (!nodes.length) nodes.push(h('p', { class: 'muted', 'data-testid': 'inbox-empty', text: 'No approval waits.' }));
  syncChildren(el, nodes);
}
