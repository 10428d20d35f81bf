// The session sidebar's list (docs/control-ui.md §5, §7): a row per session in the attention
// board's order, with its rename and delete buttons; through a hub, under a heading per
// machine (docs/hub.md §4). A view: it draws what app.js hands it and calls back for what the
// person does.

import { h, relativeTime } from './dom.js';
import { machineGroups, machineStatus, projectLabel } from './hubapi.js';
import { agentOf, sessionTitle } from './present.js';

/**
 * Draws the session list into `list` and returns its session buttons by session ID (held by
 * reference: screen.js annotates them).
 * - `entries`: `[{ session, attention }]` in the order shown (watch.js `sorted`);
 * - `current`: the session of the active pane; `shown`: the sessions some pane shows;
 * - `deleting`: the sessions whose delete is under way; `label(attention, session)`: the
 *   attention mark's words (watch.js);
 * - `machines`: the hub's machines (rows grouped under them), or null on a backend;
 * - `on`: `open(id)`, `rename(session, title)` (the new title, trimmed and different), and
 *   `remove(session)` (the person confirmed).
 */
export function fillSessionList(list, { entries, current, shown, deleting, label, machines, on }) {
  const buttons = new Map();
  const rows = new Map();
  for (const { session: s, attention } of entries) {
    const busy = deleting.has(s.id);
    const btn = h('button', {
      type: 'button',
      class: 'session-item',
      'data-testid': 'session-item',
      'data-session': s.id,
      'aria-current': s.id === current ? 'true' : null,
      title: s.id,
    },
    h('span', { class: `dot status-${s.status}`, title: s.status }),
    h('span', { class: 'session-title', text: sessionTitle(s) }),
    attention !== 'idle'
      ? h('span', { class: `attention attention-${attention}`, 'data-testid': 'session-attention', text: label(attention, s) })
      : null,
    h('span', { class: 'session-meta' },
      h('span', { class: 'session-agent', 'data-testid': 'session-item-agent', text: agentOf(s) }),
      ` · ${busy ? 'deleting…' : `${shown.has(s.id) ? 'shown · ' : ''}${relativeTime(s.updated)}`}`));
    btn.addEventListener('click', () => on.open(s.id));
    buttons.set(s.id, btn);
    rows.set(s.id, h('li', {
      class: `session-row${busy ? ' deleting' : ''}`, 'data-testid': 'session-row', 'data-attention': attention,
      'data-deleting': busy ? 'true' : null, 'aria-busy': busy ? 'true' : null,
    },
    btn, sessionControls(s, deleting, on)));
  }
  const items = machines ? byMachine(machines, entries.map((e) => e.session), rows) : [...rows.values()];
  if (items.length === 0) items.push(h('li', { class: 'muted', text: 'No sessions yet.' }));
  list.replaceChildren(...items);
  return buttons;
}

/**
 * Hub only: the rows under a heading per machine (online, or offline and last seen), with the
 * machine's project under its name.
 */
function byMachine(machines, sessions, rows) {
  const out = [];
  for (const { machine, sessions: own } of machineGroups(machines, sessions)) {
    const project = projectLabel(machine.project);
    out.push(h('li', {
      class: 'machine-row muted', 'data-testid': 'machine-row', 'data-machine': machine.name,
      'data-online': machine.online ? 'true' : 'false',
    },
    h('span', { class: `dot ${machine.online ? 'status-idle' : 'status-error'}` }),
    h('strong', { class: 'machine-name', text: machine.name }),
    h('span', { class: 'session-meta', 'data-testid': 'machine-status', text: ` · ${machineStatus(machine, Date.now())}` }),
    project ? h('span', { class: 'machine-project', 'data-testid': 'machine-project', title: machine.project, text: project }) : null));
    for (const s of own) out.push(rows.get(s.id));
  }
  return out;
}

/** Rename and delete buttons of one row; the list updates from the event stream. */
function sessionControls(s, deleting, on) {
  const name = sessionTitle(s);
  const busy = deleting.has(s.id);
  const rename = h('button', {
    type: 'button', class: 'icon session-control', 'data-testid': 'session-rename',
    title: `Rename “${name}”`, 'aria-label': `Rename ${name}`, text: '✎',
  });
  rename.addEventListener('click', () => {
    const title = prompt('New title', s.title);
    if (title && title.trim() && title !== s.title) on.rename(s, title.trim());
  });
  const del = h('button', {
    type: 'button', class: 'icon session-control', 'data-testid': 'session-delete',
    title: busy ? `Deleting “${name}”…` : `Delete “${name}”`, 'aria-label': `Delete ${name}`,
    text: busy ? '' : '🗑', disabled: busy,
  }, busy ? h('span', { class: 'spinner small', role: 'img', 'aria-label': 'deleting' }) : null);
  del.addEventListener('click', () => {
    if (deleting.has(s.id) || !confirm(`Delete “${name}” and its transcript?`)) return;
    on.remove(s);
  });
  return h('span', { class: 'session-controls' }, rename, del);
}
