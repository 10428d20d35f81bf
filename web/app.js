// The ax-code Control UI: sign-in, the session store fed by the HTTP API and /event, the
// layout (panes, sidebar, panels) and the gateway connection that lets agents arrange it.

import { Api } from './api.js';
import { h, relativeTime } from './dom.js';
import { GatewayClient } from './gateway.js';
import {
  STORAGE_KEY, activePane, allPanes, applyCommand, closePane, defaultLayout, locate, sanitize,
} from './layout.js';
import { fillApprovals, fillTranscript, renderPane } from './panes.js';
import { BrowserPanel, TerminalPanel, placePanels } from './panels.js';

const TOKEN_KEY = 'ax-code.token';
const $ = (id) => document.getElementById(id);

// ---- sign-in ---------------------------------------------------------------------------

function takeTokenFromFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    // The fragment never reaches a server; remove it from the address bar and history too.
    history.replaceState(null, '', location.pathname + location.search);
  }
}

function showSignIn(message) {
  $('app').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message ?? '';
  $('token').focus();
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  app?.stop();
  app = null;
  showSignIn(message);
}

$('signin-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const token = $('token').value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token').value = '';
  boot();
});

// ---- the session store -----------------------------------------------------------------

class Store {
  constructor() {
    this.sessions = new Map(); // id -> session, in list order (newest first)
    this.messages = new Map(); // id -> messages (present once loaded)
    this.permissions = new Map(); // permission id -> pending permission
    this.missing = new Set(); // session ids the backend does not know
  }

  setSessions(list) {
    this.sessions = new Map(list.map((s) => [s.id, s]));
  }

  upsertSession(s) {
    if (this.sessions.has(s.id)) this.sessions.set(s.id, s);
    else this.sessions = new Map([[s.id, s], ...this.sessions]);
    this.missing.delete(s.id);
  }

  pendingFor(sessionId) {
    return [...this.permissions.values()].filter((p) => p.sessionId === sessionId && p.state === 'pending');
  }
}

// ---- the application -------------------------------------------------------------------

class ControlUi {
  constructor(token) {
    this.api = new Api(token, { onUnauthorized: () => signOut('The access token was refused.') });
    this.store = new Store();
    this.layout = this.loadLayout();
    this.drafts = new Map();
    this.abort = new AbortController();
    this.loading = new Set();
    this.actions = this.makeActions();
    this.terminal = new TerminalPanel(this.actions);
    this.browser = new BrowserPanel(this.actions);
    this.gateway = new GatewayClient({
      token,
      onCommand: (payload) => this.handleCommand(payload),
      onEvent: (name, payload) => this.terminal.onEvent(name, payload),
      onStatus: (state, detail) => this.gatewayStatus(state, detail),
    });
  }

  loadLayout() {
    try {
      const raw = localStorage.getItem(STORAGE_KEY);
      if (raw) {
        this.freshLayout = false;
        return sanitize(JSON.parse(raw));
      }
    } catch {
      /* fall through to the default */
    }
    this.freshLayout = true;
    return defaultLayout();
  }

  saveLayout() {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(this.layout));
    } catch {
      /* storage full or disabled: the layout still works for this page */
    }
  }

  setLayout(layout) {
    this.layout = layout;
    this.saveLayout();
    this.render();
  }

  async start() {
    $('signin').hidden = true;
    $('app').hidden = false;
    this.browser.show(this.layout.panels.browser.url);
    this.render();
    try {
      await this.resync();
    } catch (e) {
      if (e.status !== 401) this.toast(`Could not load sessions: ${e.message}`);
      if (e.status === 401) return;
    }
    if (this.freshLayout && !activePane(this.layout).session) {
      const newest = this.store.sessions.keys().next().value;
      if (newest) {
        activePane(this.layout).session = newest;
        this.setLayout(this.layout);
      }
    }
    this.api.follow((env) => this.onEnvelope(env), (s) => this.streamStatus(s), this.abort.signal);
    this.gateway.start();
  }

  stop() {
    this.abort.abort();
    this.gateway.stop();
    // The panels live in the docks, outside what render() replaces.
    this.terminal.el.remove();
    this.browser.el.remove();
  }

  async resync() {
    const [sessions, permissions] = await Promise.all([this.api.listSessions(), this.api.permissions()]);
    this.store.setSessions(sessions);
    this.store.permissions = new Map(permissions.map((p) => [p.id, p]));
    this.store.messages.clear();
    this.render();
  }

  // ---- live events ----

  onEnvelope(env) {
    const e = env?.event ?? env;
    if (!e || typeof e.type !== 'string') return;
    const s = this.store;
    switch (e.type) {
      case 'session.created':
      case 'session.updated':
        s.upsertSession(e.session);
        this.renderSidebar();
        this.refreshPaneHeads(e.session.id);
        break;
      case 'session.deleted':
        s.sessions.delete(e.sessionId);
        s.messages.delete(e.sessionId);
        s.missing.add(e.sessionId);
        this.render();
        break;
      case 'session.status': {
        const cur = s.sessions.get(e.sessionId);
        if (cur) s.sessions.set(e.sessionId, { ...cur, status: e.status });
        this.renderSidebar();
        this.refreshPaneHeads(e.sessionId);
        break;
      }
      case 'message.created': {
        const list = s.messages.get(e.message.sessionId);
        if (list && !list.some((m) => m.id === e.message.id)) list.push(e.message);
        this.refreshTranscripts(e.message.sessionId);
        break;
      }
      case 'message.part': {
        const list = s.messages.get(e.sessionId);
        const msg = list?.find((m) => m.id === e.messageId);
        if (msg) msg.parts[e.index] = e.part;
        else if (list) this.loadMessages(e.sessionId, true);
        this.refreshTranscripts(e.sessionId);
        break;
      }
      case 'permission.asked':
        s.permissions.set(e.permission.id, e.permission);
        this.refreshApprovals(e.permission.sessionId);
        break;
      case 'permission.replied':
        s.permissions.delete(e.permissionId);
        this.refreshApprovals(e.sessionId);
        break;
      case 'reset':
        this.resync().catch(() => {});
        break;
      default:
        break;
    }
  }

  async loadMessages(sessionId, force = false) {
    if (this.loading.has(sessionId) || (!force && this.store.messages.has(sessionId))) return;
    this.loading.add(sessionId);
    try {
      if (!this.store.sessions.has(sessionId)) {
        this.store.upsertSession(await this.api.session(sessionId));
        this.renderSidebar();
      }
      this.store.messages.set(sessionId, await this.api.messages(sessionId));
    } catch (e) {
      if (e.status === 404) this.store.missing.add(sessionId);
      this.store.messages.set(sessionId, []);
    } finally {
      this.loading.delete(sessionId);
    }
    this.render();
  }

  // ---- ui.command ----

  handleCommand(payload) {
    const result = applyCommand(this.layout, payload);
    // Keyboard focus stays where the person left it: an agent arranges, it does not type.
    if (result.outcome === 'applied') this.setLayout(result.layout);
    this.toast(`Agent: ${describe(payload.command)}${result.outcome === 'ignored' ? ` — ignored (${result.reason})` : ''}`);
    return { outcome: result.outcome, reason: result.reason };
  }

  // ---- user actions ----

  makeActions() {
    const self = this;
    return {
      activate(paneId) {
        if (self.restoringFocus || self.layout.active === paneId) return;
        self.layout.active = paneId;
        self.saveLayout();
        for (const el of document.querySelectorAll('[data-testid="pane"]')) {
          const on = el.dataset.paneId === paneId;
          el.dataset.active = String(on);
          el.classList.toggle('active', on);
        }
        self.renderSidebar();
      },
      split(paneId, direction) {
        const pane = locate(self.layout, paneId)?.pane;
        if (!pane?.session) return;
        self.layout.active = paneId;
        const r = applyCommand(self.layout, { command: { kind: 'split', direction, sessionKey: pane.session } });
        if (r.outcome === 'applied') self.setLayout(r.layout);
        else self.toast(r.reason);
      },
      close(paneId) {
        if (allPanes(self.layout).length === 1) {
          self.toast('The last pane stays open.');
          return;
        }
        const layout = structuredClone(self.layout);
        closePane(layout, paneId);
        self.setLayout(layout);
      },
      async createInPane(paneId) {
        try {
          const s = await self.api.createSession();
          self.store.upsertSession(s);
          const pane = locate(self.layout, paneId)?.pane;
          if (pane) pane.session = s.id;
          self.layout.active = paneId;
          self.store.messages.set(s.id, []);
          self.setLayout(self.layout);
        } catch (e) {
          self.toast(`Could not create a session: ${e.message}`);
        }
      },
      navigate(sessionId) {
        activePane(self.layout).session = sessionId;
        self.setLayout(self.layout);
      },
      prompt: (sessionId, text) => self.api.prompt(sessionId, text),
      async abort(sessionId) {
        try {
          await self.api.abort(sessionId);
        } catch (e) {
          self.toast(e.message);
        }
      },
      async reply(sessionId, permissionId, reply) {
        try {
          await self.api.reply(sessionId, permissionId, reply);
          self.store.permissions.delete(permissionId);
          self.refreshApprovals(sessionId);
        } catch (e) {
          self.toast(`Reply failed: ${e.message}`);
        }
      },
      setPanel(name, open) {
        self.layout.panels[name].open = open;
        self.setLayout(self.layout);
      },
      toggleDock(name) {
        const p = self.layout.panels[name];
        p.dock = p.dock === 'bottom' ? 'right' : 'bottom';
        self.setLayout(self.layout);
      },
      setBrowserUrl(url) {
        self.layout.panels.browser.url = url;
        self.saveLayout();
      },
      gatewayRequest: (method, params) => self.gateway.request(method, params),
    };
  }

  // ---- rendering ----

  render() {
    const L = this.layout;
    const sidebar = $('sidebar');
    sidebar.hidden = !L.sidebar;
    sidebar.dataset.hidden = String(!L.sidebar);
    $('toggle-sidebar').setAttribute('aria-pressed', String(L.sidebar));
    $('toggle-terminal').setAttribute('aria-pressed', String(L.panels.terminal.open));
    $('toggle-browser').setAttribute('aria-pressed', String(L.panels.browser.open));
    this.renderSidebar();

    // A re-render replaces the panes: keep a composer that is being typed in focused.
    const focused = document.activeElement;
    const focusedPane = focused?.closest?.('[data-testid="pane"]');
    const restore = focusedPane && focused.tagName === 'TEXTAREA'
      ? { pane: focusedPane.dataset.paneId, start: focused.selectionStart, end: focused.selectionEnd }
      : null;
    const area = $('panes');
    const ctx = (pane) => ({ store: this.store, active: pane.id === L.active, drafts: this.drafts, actions: this.actions });
    area.replaceChildren(...L.columns.map((col) =>
      h('div', { class: 'column', 'data-testid': 'column', style: { flexGrow: String(col.weight) } },
        col.panes.map((pane) => renderPane(pane, ctx(pane))))));
    for (const pane of allPanes(L)) {
      if (pane.session && !this.store.messages.has(pane.session)) this.loadMessages(pane.session);
    }
    placePanels(L, { terminal: this.terminal, browser: this.browser }, { bottom: $('dock-bottom'), right: $('dock-right') });
    if (restore) {
      const box = area.querySelector(`[data-pane-id="${restore.pane}"] textarea`);
      if (box) {
        // Focusing must not make that pane active again (an agent may just have moved it).
        this.restoringFocus = true;
        box.focus({ preventScroll: true });
        box.setSelectionRange(restore.start, restore.end);
        this.restoringFocus = false;
      }
    }
  }

  renderSidebar() {
    const list = $('session-list');
    const current = activePane(this.layout).session;
    const shown = new Set(allPanes(this.layout).map((p) => p.session));
    // Most recent activity first, like the TUI and `ax-code session list`.
    const sorted = [...this.store.sessions.values()].sort((a, b) => b.updated - a.updated || (b.id > a.id ? 1 : -1));
    const items = sorted.map((s) => {
      const btn = h('button', {
        type: 'button',
        class: 'session-item',
        'data-testid': 'session-item',
        'data-session': s.id,
        'aria-current': s.id === current ? 'true' : null,
      },
      h('span', { class: `dot status-${s.status}`, title: s.status }),
      h('span', { class: 'session-title', text: s.title || s.id }),
      h('span', { class: 'session-meta', text: `${shown.has(s.id) ? 'shown · ' : ''}${relativeTime(s.updated)}` }));
      btn.addEventListener('click', () => this.actions.navigate(s.id));
      return h('li', { class: 'session-row' }, btn, this.sessionControls(s));
    });
    if (items.length === 0) items.push(h('li', { class: 'muted', text: 'No sessions yet.' }));
    list.replaceChildren(...items);
  }

  /** Rename and delete buttons of one sidebar row; the list updates from the event stream. */
  sessionControls(s) {
    const name = s.title || s.id;
    const act = (what, run) => run().catch((e) => this.toast(`${what} failed: ${e.message}`));
    const rename = h('button', {
      type: 'button', class: 'icon session-control', 'data-testid': 'session-rename',
      title: `Rename “${name}”`, 'aria-label': `Rename ${name}`, text: '✎',
    });
    rename.addEventListener('click', () => {
      const title = prompt('New title', s.title);
      if (title && title.trim() && title !== s.title) act('Rename', () => this.api.renameSession(s.id, title.trim()));
    });
    const del = h('button', {
      type: 'button', class: 'icon session-control', 'data-testid': 'session-delete',
      title: `Delete “${name}”`, 'aria-label': `Delete ${name}`, text: '🗑',
    });
    del.addEventListener('click', () => {
      if (confirm(`Delete “${name}” and its transcript?`)) act('Delete', () => this.api.deleteSession(s.id));
    });
    return h('span', { class: 'session-controls' }, rename, del);
  }

  panesShowing(sessionId) {
    return [...document.querySelectorAll('[data-testid="pane"]')].filter((el) => el.dataset.session === sessionId);
  }

  refreshTranscripts(sessionId) {
    for (const el of this.panesShowing(sessionId)) {
      const t = el.querySelector('[data-testid="transcript"]');
      if (t) fillTranscript(t, this.store.messages.get(sessionId));
    }
  }

  refreshApprovals(sessionId) {
    for (const el of this.panesShowing(sessionId)) {
      const a = el.querySelector('[data-testid="approvals"]');
      if (a) fillApprovals(a, this.store.pendingFor(sessionId), sessionId, this.actions);
    }
  }

  refreshPaneHeads(sessionId) {
    // Swap only the headers, so a composer being typed in keeps its focus.
    for (const el of this.panesShowing(sessionId)) {
      const pane = locate(this.layout, el.dataset.paneId)?.pane;
      if (!pane) continue;
      const fresh = renderPane(pane, { store: this.store, active: pane.id === this.layout.active, drafts: this.drafts, actions: this.actions });
      el.querySelector('.pane-head')?.replaceWith(fresh.querySelector('.pane-head'));
      el.setAttribute('aria-label', fresh.getAttribute('aria-label'));
    }
  }

  gatewayStatus(state, detail) {
    const el = $('gateway-status');
    el.dataset.state = state;
    el.textContent = { connected: 'Live', connecting: 'Connecting…', down: 'Reconnecting…', unauthorized: 'Refused' }[state] ?? state;
    el.title = detail ?? '';
    if (state === 'unauthorized') signOut('The gateway refused the access token.');
  }

  streamStatus(state) {
    $('stream-status').dataset.state = state;
    $('stream-status').textContent = state === 'live' ? 'Events' : 'Events (reconnecting)';
    // Events may have been missed while the stream was down.
    if (state === 'live' && this.streamWasDown) this.resync().catch(() => {});
    this.streamWasDown = state !== 'live';
  }

  toast(text) {
    const t = $('toast');
    t.textContent = text;
    t.hidden = false;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => { t.hidden = true; }, 4000);
  }
}

function describe(c) {
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

// ---- wiring ----------------------------------------------------------------------------

let app = null;

function boot() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    showSignIn();
    return;
  }
  app?.stop();
  app = new ControlUi(token);
  app.start();
}

$('toggle-sidebar').addEventListener('click', () => {
  if (!app) return;
  app.layout.sidebar = !app.layout.sidebar;
  app.setLayout(app.layout);
});
$('toggle-terminal').addEventListener('click', () => app?.actions.setPanel('terminal', !app.layout.panels.terminal.open));
$('toggle-browser').addEventListener('click', () => app?.actions.setPanel('browser', !app.layout.panels.browser.open));
$('new-session').addEventListener('click', () => app?.actions.createInPane(app.layout.active));
$('sign-out').addEventListener('click', () => signOut());

takeTokenFromFragment();
boot();
