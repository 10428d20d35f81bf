// The Control UI layout: a pure model (no DOM), so every ui.command has one clear outcome.
//
// A layout is columns side by side; each column is a vertical stack of panes; each pane shows
// one session. Weights are relative sizes (flex-grow). Panels (terminal, browser) are docked
// bottom or right and may be hidden.

/**
 * Each browser tab keeps its own layout in sessionStorage under this key (it survives a reload
 * of that tab, and two tabs never overwrite each other). The layout a tab saved last is also
 * kept in localStorage under the same key: a new tab starts from it.
 */
export const STORAGE_KEY = 'ax-code.layout.v1';
const DOCKS = ['bottom', 'right'];
const PANELS = ['terminal', 'browser'];
const MAX_PANES = 16;

export function defaultLayout() {
  return {
    version: 1,
    nextId: 2,
    columns: [{ weight: 1, panes: [{ id: 'p1', session: null, weight: 1 }] }],
    active: 'p1',
    sidebar: true,
    panels: {
      terminal: { open: false, dock: 'bottom' },
      browser: { open: false, dock: 'right', url: '' },
    },
  };
}

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const posNum = (v) => typeof v === 'number' && Number.isFinite(v) && v > 0;
const sessionOk = (s) => s === null || (typeof s === 'string' && s.length > 0 && s.length <= 128);

/** A stored layout, checked field by field; anything off yields the default. */
export function sanitize(raw) {
  try {
    if (!isObj(raw) || raw.version !== 1 || !Array.isArray(raw.columns)) return defaultLayout();
    const ids = new Set();
    const columns = [];
    for (const c of raw.columns) {
      if (!isObj(c) || !posNum(c.weight) || !Array.isArray(c.panes) || c.panes.length === 0) {
        return defaultLayout();
      }
      const panes = [];
      for (const p of c.panes) {
        if (!isObj(p) || typeof p.id !== 'string' || ids.has(p.id) || !sessionOk(p.session) || !posNum(p.weight)) {
          return defaultLayout();
        }
        ids.add(p.id);
        panes.push({ id: p.id, session: p.session, weight: p.weight });
      }
      columns.push({ weight: c.weight, panes });
    }
    if (columns.length === 0 || ids.size > MAX_PANES) return defaultLayout();
    const d = defaultLayout();
    const panels = {};
    for (const name of PANELS) {
      const p = isObj(raw.panels) && isObj(raw.panels[name]) ? raw.panels[name] : d.panels[name];
      panels[name] = {
        open: p.open === true,
        dock: DOCKS.includes(p.dock) ? p.dock : d.panels[name].dock,
      };
    }
    const url = raw.panels?.browser?.url;
    panels.browser.url = typeof url === 'string' && safeUrl(url) ? url : '';
    const nextId = Number.isInteger(raw.nextId) && raw.nextId > 0 ? raw.nextId : ids.size + 1;
    let active = typeof raw.active === 'string' && ids.has(raw.active) ? raw.active : columns[0].panes[0].id;
    return {
      version: 1,
      nextId: Math.max(nextId, ids.size + 1),
      columns,
      active,
      sidebar: raw.sidebar !== false,
      panels,
    };
  } catch {
    return defaultLayout();
  }
}

/**
 * What the person typed in the browser panel's address field, as an http(s) URL, or null.
 * An address without a scheme (`127.0.0.1:4711/health`, `localhost:3000`, `example.org`) gets
 * `http://`; any other scheme (`javascript:`, `file:`, `data:` …) is refused.
 */
export function normalizeAddress(text) {
  const t = typeof text === 'string' ? text.trim() : '';
  if (!t || t.length > 4096) return null;
  // "host:port…" looks like a scheme to the URL parser but is not one.
  const hostPort = /^[\w.-]+:\d+(?:[/?#]|$)/.test(t);
  const hasScheme = !hostPort && /^[a-z][a-z0-9+.-]*:/i.test(t);
  const href = safeUrl(hasScheme ? t : `http://${t}`);
  return href && new URL(href).hostname ? href : null;
}

/** Only http(s) addresses may be shown in the browser panel. */
export function safeUrl(text) {
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

export function allPanes(layout) {
  return layout.columns.flatMap((c) => c.panes);
}

export function locate(layout, paneId) {
  for (let ci = 0; ci < layout.columns.length; ci++) {
    const pi = layout.columns[ci].panes.findIndex((p) => p.id === paneId);
    if (pi >= 0) return { ci, pi, column: layout.columns[ci], pane: layout.columns[ci].panes[pi] };
  }
  return null;
}

export function activePane(layout) {
  return locate(layout, layout.active)?.pane ?? layout.columns[0].panes[0];
}

/** The pane showing `session`: the active one if it does, else the first in reading order. */
export function paneShowing(layout, session) {
  if (!session) return null;
  const active = activePane(layout);
  if (active.session === session) return active;
  return allPanes(layout).find((p) => p.session === session) ?? null;
}

function newPane(layout, session, weight) {
  const pane = { id: `p${layout.nextId}`, session, weight };
  layout.nextId += 1;
  return pane;
}

const ignored = (layout, reason) => ({ layout, outcome: 'ignored', reason });
const applied = (layout) => ({ layout, outcome: 'applied' });

/**
 * Apply one ui.command event payload `{command, sessionKey?}`.
 * Returns `{layout, outcome: 'applied'|'ignored', reason?}`; an ignored command leaves the
 * layout as it was and is never turned into a different action.
 */
export function applyCommand(current, payload) {
  const layout = structuredClone(current);
  const command = payload?.command;
  if (!isObj(command)) return ignored(current, 'malformed command');
  const source = typeof payload.sessionKey === 'string' ? payload.sessionKey : null;
  const named = typeof command.sessionKey === 'string' ? command.sessionKey : null;
  // "Current session": the agent's own session when it runs in one, else the active pane's.
  const target = named ?? source ?? activePane(layout).session;
  // A `paneId` names the pane itself (docs/gateway.md §3); one this tab lacks is reported.
  const byId = typeof command.paneId === 'string' ? locate(layout, command.paneId)?.pane ?? null : null;
  if (typeof command.paneId === 'string' && !byId) return ignored(current, `no pane ${command.paneId}`);

  switch (command.kind) {
    case 'split': {
      if (command.direction !== 'right' && command.direction !== 'down') {
        return ignored(current, `unknown split direction: ${command.direction}`);
      }
      if (!target) return ignored(current, 'no session to show in the new pane');
      if (allPanes(layout).length >= MAX_PANES) return ignored(current, `at most ${MAX_PANES} panes`);
      const beside = byId || (source && paneShowing(layout, source)) || activePane(layout);
      const at = locate(layout, beside.id);
      if (command.direction === 'down') {
        const half = at.pane.weight / 2;
        at.pane.weight = half;
        const pane = newPane(layout, target, half);
        at.column.panes.splice(at.pi + 1, 0, pane);
        layout.active = pane.id;
      } else {
        const half = at.column.weight / 2;
        at.column.weight = half;
        const pane = newPane(layout, target, 1);
        layout.columns.splice(at.ci + 1, 0, { weight: half, panes: [pane] });
        layout.active = pane.id;
      }
      return applied(layout);
    }
    case 'close-pane': {
      if (!byId && !target) return ignored(current, 'no current session to close');
      const pane = byId ?? paneShowing(layout, target);
      if (!pane) return ignored(current, `no pane shows session ${target}`);
      if (allPanes(layout).length === 1) return ignored(current, 'cannot close the last pane');
      closePane(layout, pane.id);
      return applied(layout);
    }
    case 'focus': {
      if (!byId && !target) return ignored(current, 'no current session to focus');
      const pane = byId ?? paneShowing(layout, target);
      if (!pane) return ignored(current, `no pane shows session ${target}`);
      layout.active = pane.id;
      return applied(layout);
    }
    case 'navigate': {
      if (!target) return ignored(current, 'no session to open');
      (byId ?? activePane(layout)).session = target;
      return applied(layout);
    }
    case 'sidebar': {
      if (typeof command.visible !== 'boolean') return ignored(current, 'sidebar needs visible');
      layout.sidebar = command.visible;
      return applied(layout);
    }
    case 'panel': {
      if (!PANELS.includes(command.panel)) return ignored(current, `panel unavailable: ${command.panel}`);
      if (typeof command.open !== 'boolean') return ignored(current, 'panel needs open');
      const panel = layout.panels[command.panel];
      if (command.open) {
        if (command.dock !== undefined) {
          if (!DOCKS.includes(command.dock)) return ignored(current, `unknown dock: ${command.dock}`);
          panel.dock = command.dock;
        }
        panel.open = true;
      } else {
        if (command.dock !== undefined) return ignored(current, 'dock applies only when opening');
        panel.open = false;
      }
      return applied(layout);
    }
    default:
      return ignored(current, `unknown command kind: ${String(command.kind)}`);
  }
}

/** Every column the same width and, within each column, every pane the same height. */
export function balance(current) {
  const layout = structuredClone(current);
  for (const col of layout.columns) {
    col.weight = 1;
    for (const pane of col.panes) pane.weight = 1;
  }
  return layout;
}

/** The pane `step` places after the active one in reading order (columns, then top to bottom). */
export function nextPane(layout, step) {
  const panes = allPanes(layout);
  const at = panes.findIndex((p) => p.id === layout.active);
  return panes[(((at + step) % panes.length) + panes.length) % panes.length];
}

/**
 * New weights for two neighbours (columns, or panes in a column) whose sizes are `sizeA` and
 * `sizeB` pixels when the splitter between them moves by `delta` pixels; neither gets smaller
 * than `min` pixels. The pair keeps its total weight, so nothing else moves.
 */
export function splitWeights(weightA, weightB, sizeA, sizeB, delta, min) {
  const total = sizeA + sizeB;
  if (!(total > 0)) return [weightA, weightB];
  const lo = Math.min(min, total / 2);
  const a = Math.min(Math.max(sizeA + delta, lo), total - lo);
  const sum = weightA + weightB;
  const wa = Math.round((sum * a / total) * 1e6) / 1e6;
  return [wa, Math.max(sum - wa, 1e-6)];
}

/** Remove a pane; its space goes to its neighbour, and the active pane moves if needed. */
export function closePane(layout, paneId) {
  const at = locate(layout, paneId);
  if (!at || allPanes(layout).length === 1) return false;
  const { ci, pi, column } = at;
  column.panes.splice(pi, 1);
  let next;
  if (column.panes.length > 0) {
    const n = column.panes[Math.max(0, pi - 1)];
    n.weight += at.pane.weight;
    next = n;
  } else {
    layout.columns.splice(ci, 1);
    const nc = layout.columns[Math.max(0, ci - 1)];
    nc.weight += column.weight;
    next = nc.panes[0];
  }
  if (layout.active === paneId) layout.active = next.id;
  return true;
}

/**
 * The panes of `before` that going to `after` would move, resize, replace, remove or
 * (de)activate: what is under the person's hands. A pane that only appears in `after` is not
 * one of them. (Splits and closes keep the total weight, so other panes stay where they are.)
 */
export function affectedPanes(before, after) {
  const where = new Map();
  for (const col of after.columns) {
    for (const pane of col.panes) where.set(pane.id, { pane, colWeight: col.weight });
  }
  const out = [];
  for (const col of before.columns) {
    for (const pane of col.panes) {
      const now = where.get(pane.id);
      if (!now
        || now.pane.session !== pane.session
        || now.pane.weight !== pane.weight
        || now.colWeight !== col.weight
        || (before.active === pane.id) !== (after.active === pane.id)) {
        out.push(pane);
      }
    }
  }
  return out;
}

/**
 * The panes of `before` whose draft may refuse going to `after` by an agent's command of
 * `kind`: for `close-pane` only the pane it closes (the others merely grow, and a draft in
 * them stays where it is); for the other commands every pane it affects (`affectedPanes`).
 */
export function draftPanes(before, after, kind) {
  if (kind !== 'close-pane') return affectedPanes(before, after);
  const kept = new Set(allPanes(after).map((p) => p.id));
  return allPanes(before).filter((p) => !kept.has(p.id));
}

/**
 * The layout a tab opens with, from `tab` (sessionStorage: this tab's own, kept across its
 * reloads) or else `shared` (localStorage: the one any tab saved last), each a Storage-like
 * `getItem`; checked by `sanitize`. A narrow window (`narrow`) opens on the pane, not on the
 * sidebar overlay, unless the tab itself left the sidebar open. Storage that cannot be read or
 * holds no JSON is passed over. Returns `{ layout, fresh }`, fresh when nothing was stored.
 */
export function restoreLayout(tab, shared, narrow) {
  for (const storage of [tab, shared]) {
    try {
      const raw = storage.getItem(STORAGE_KEY);
      if (raw) {
        const layout = sanitize(JSON.parse(raw));
        if (storage === shared && narrow) layout.sidebar = false;
        return { layout, fresh: false };
      }
    } catch {
      /* try the next one, then the default */
    }
  }
  const layout = defaultLayout();
  if (narrow) layout.sidebar = false;
  return { layout, fresh: true };
}

/** An agent's layout command waits this long after the person's input in a pane it moves. */
export const QUIET_MS = 1500;
/** Layout commands that move what is under the person's hands (checked by `busyReason`). */
export const GUARDED = new Set(['navigate', 'split', 'close-pane', 'focus']);

/**
 * Why the person is busy in one of `panes` (the panes a command would move, resize, replace
 * or (de)activate), or null: the Control UI's form of the TUI's human-priority rules. In order:
 * the new-session agent picker is open (`person.pickerOpen`: it creates the session in the
 * pane that was active when it opened), the approvals inbox is open, a draft in the composer
 * of one of `drafted` (`draftPanes`; `person.hasDraft(session)`), an approval shown in one of
 * `panes` (`person.hasApproval(session)`), or the person's input in one of them less than
 * QUIET_MS before `person.now` (`person.inputAt`: pane ID -> time).
 */
export function busyReason(panes, drafted, person) {
  if (person.pickerOpen) return 'the person is choosing the agent of a new session';
  if (person.inboxOpen) return 'the person is answering approvals in the inbox';
  for (const pane of drafted) {
    if (pane.session && person.hasDraft(pane.session)) return `the pane showing ${pane.session} has a draft in its composer`;
  }
  for (const pane of panes) {
    const name = pane.session ? `the pane showing ${pane.session}` : `pane ${pane.id}`;
    if (pane.session && person.hasApproval(pane.session)) return `${name} shows an approval`;
    const at = person.inputAt.get(pane.id);
    if (at !== undefined && person.now - at < QUIET_MS) return `the person used ${name} in the last 1.5 s`;
  }
  return null;
}

/** How the page's toast words an agent's layout command (`ui.command`'s `command`). */
export function describeCommand(c) {
  switch (c?.kind) {
    case 'split': return `split ${c.direction}`;
    case 'close-pane': return 'close pane';
    case 'focus': return 'focus';
    case 'navigate': return 'open session';
    case 'sidebar': return c.visible ? 'show sidebar' : 'hide sidebar';
    case 'panel': return `${c.open ? 'show' : 'hide'} ${c.panel}${c.dock ? ` (${c.dock})` : ''}`;
    default: return String(c?.kind);
  }
}

/**
 * What `ui.layout.report` says of a layout (docs/gateway.md §3): the arrangement only, pane
 * IDs, sessions, positions and relative sizes, the sidebar and the panels.
 */
export function layoutReport(layout, revision) {
  const total = layout.columns.reduce((n, c) => n + c.weight, 0) || 1;
  const panes = [];
  layout.columns.forEach((col, column) => {
    const inCol = col.panes.reduce((n, p) => n + p.weight, 0) || 1;
    col.panes.forEach((pane, row) => {
      const size = Math.round((col.weight / total) * (pane.weight / inCol) * 1e4) / 1e4;
      const entry = { paneId: pane.id, column, row, active: pane.id === activePane(layout).id, size: Math.min(1, size) };
      if (pane.session) entry.sessionId = pane.session;
      panes.push(entry);
    });
  });
  const panel = (p) => ({ shown: p.open, dock: p.dock });
  return {
    revision,
    panes,
    sidebar: { shown: layout.sidebar },
    terminal: panel(layout.panels.terminal),
    browser: panel(layout.panels.browser),
  };
}

/**
 * The arrangement a preset asks for, from `current` and the sessions to show (default: those
 * the layout shows, the active pane's first): `{columns: [[session…]…], sidebar?, terminal?}`,
 * or `{error}` when it cannot apply at all.
 */
export function presetSpec(current, preset, sessions) {
  const shown = [activePane(current).session, ...allPanes(current).map((p) => p.session)];
  const list = [...new Set(Array.isArray(sessions) && sessions.length ? sessions : shown.filter(Boolean))];
  const first = list[0];
  switch (preset) {
    case 'focus':
      return first ? { columns: [[first]], sidebar: false } : { error: 'no session to focus on' };
    case 'review':
      return first ? { columns: [[first]], terminal: { open: true, dock: 'right' } } : { error: 'no session to review' };
    case 'pair':
      return list.length >= 2 ? { columns: [[list[0]], [list[1]]] } : { error: 'pair needs two sessions' };
    case 'grid': {
      const four = list.slice(0, 4);
      if (four.length === 0) return { error: 'no session for the grid' };
      const columns = four.length === 1 ? [[four[0]]] : [[four[0]], [four[1]]];
      if (four[2]) columns[0].push(four[2]);
      if (four[3]) columns[1].push(four[3]);
      return { columns };
    }
    default:
      return { error: `unknown preset: ${String(preset)}` };
  }
}

/** A saved layout's spec: the arrangement of `layout` without its pane IDs. */
export function savedSpec(layout) {
  return {
    columns: layout.columns.map((c) => c.panes.map((p) => p.session)),
    weights: layout.columns.map((c) => ({ weight: c.weight, panes: c.panes.map((p) => p.weight) })),
    sidebar: layout.sidebar,
    terminal: { open: layout.panels.terminal.open, dock: layout.panels.terminal.dock },
    browser: { open: layout.panels.browser.open, dock: layout.panels.browser.dock },
  };
}

/** A stored spec, checked; null if anything is off. */
export function sanitizeSpec(raw) {
  if (!isObj(raw) || !Array.isArray(raw.columns) || raw.columns.length === 0) return null;
  let count = 0;
  for (const col of raw.columns) {
    if (!Array.isArray(col) || col.length === 0 || !col.every(sessionOk)) return null;
    count += col.length;
  }
  if (count > MAX_PANES) return null;
  const spec = { columns: raw.columns.map((c) => [...c]) };
  if (Array.isArray(raw.weights) && raw.weights.length === raw.columns.length
    && raw.weights.every((w, i) => isObj(w) && posNum(w.weight) && Array.isArray(w.panes)
      && w.panes.length === raw.columns[i].length && w.panes.every(posNum))) {
    spec.weights = raw.weights.map((w) => ({ weight: w.weight, panes: [...w.panes] }));
  }
  if (typeof raw.sidebar === 'boolean') spec.sidebar = raw.sidebar;
  for (const name of PANELS) {
    const p = raw[name];
    if (isObj(p) && typeof p.open === 'boolean' && DOCKS.includes(p.dock)) spec[name] = { open: p.open, dock: p.dock };
  }
  return spec;
}

/**
 * Goes from `current` to the arrangement `spec` in one act, under human priority: `using(pane)`
 * says why the person is using a pane (or null), and such a pane is never moved (its column
 * and row), closed or given another session. When the arrangement would do that, the panes are
 * left as they are and each pane in the way is listed in `notApplied`; the sidebar and panels
 * still follow the spec. Returns `{layout, outcome, reason?, notApplied}`.
 */
export function arrange(current, spec, using) {
  const layout = structuredClone(current);
  const pool = allPanes(current).map((p) => ({ ...p, at: locate(current, p.id) }));
  const taken = new Set();
  const pick = (session, ci, pi) => {
    const free = pool.filter((p) => !taken.has(p.id) && p.session === session);
    const same = free.find((p) => p.at.ci === ci && p.at.pi === pi);
    return same ?? free[0] ?? null;
  };
  let nextId = layout.nextId;
  const columns = spec.columns.map((sessions, ci) => ({
    weight: spec.weights?.[ci]?.weight ?? 1,
    panes: sessions.map((session, pi) => {
      const reuse = pick(session, ci, pi);
      if (reuse) taken.add(reuse.id);
      const id = reuse ? reuse.id : `p${nextId++}`;
      return { id, session, weight: spec.weights?.[ci]?.panes?.[pi] ?? 1 };
    }),
  }));
  const notApplied = [];
  for (const pane of pool) {
    const why = using(pane);
    if (!why) continue;
    const now = columns[pane.at.ci]?.panes[pane.at.pi];
    if (!now || now.id !== pane.id || now.session !== pane.session) {
      notApplied.push({ paneId: pane.id, reason: `left as it is: ${why}` });
    }
  }
  let changed = false;
  if (notApplied.length === 0) {
    const ids = new Set(columns.flatMap((c) => c.panes.map((p) => p.id)));
    layout.columns = columns;
    layout.nextId = nextId;
    if (!ids.has(layout.active)) layout.active = columns[0].panes[0].id;
    changed = JSON.stringify(layoutReport(layout, 0)) !== JSON.stringify(layoutReport(current, 0));
  }
  if (typeof spec.sidebar === 'boolean' && layout.sidebar !== spec.sidebar) {
    layout.sidebar = spec.sidebar;
    changed = true;
  }
  for (const name of PANELS) {
    const want = spec[name];
    if (!want) continue;
    const panel = layout.panels[name];
    if (panel.open !== want.open || (want.open && panel.dock !== want.dock)) {
      panel.open = want.open;
      if (want.open) panel.dock = want.dock;
      changed = true;
    }
  }
  if (!changed && notApplied.length > 0) {
    return { layout: current, outcome: 'ignored', reason: 'human priority: every change is in a pane the person is using', notApplied };
  }
  return { layout: changed ? layout : current, outcome: 'applied', notApplied };
}
