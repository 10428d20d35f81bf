// The ax-code Control UI's wiring: it signs in (the rules in signin.js), feeds the session
// store (sessions.js, pure) from the HTTP API and /event and draws what each step says changed,
// keeps the layout (layout.js, pure) of panes, sidebar and panels, and connects the gateway that
// lets agents arrange it. It holds its views by reference: the page's fixed elements found once
// (`page`), and each pane's parts as panes.js drew them (`paneViews`); `data-testid`s are for
// the browser tests only.

import { Api } from './api.js';
import { HubApi, foreignPane, isHub, newSessionMachines } from './hubapi.js';
import { UiLinks, answerMachineCommand } from './hubui.js';
import { AgentCommands } from './commands.js';
import { Attachments } from './attachments.js';
import { placeConfigPickers } from './config.js';
import { h } from './dom.js';
import { GatewayClient } from './gateway.js';
import {
  HUB_TERMINAL_KEY, hubConnectionView, machineGatewayPath, readRemembered, terminalChoices, terminalKeyOf, terminalMachine, terminalPlace,
} from './hubterm.js';
import {
  GUARDED, STORAGE_KEY, activePane, affectedPanes, allPanes, applyCommand, balance, busyReason, closePane, describeCommand,
  draftPanes, locate, nextPane, restoreLayout,
} from './layout.js';
import { MarkdownRenderer } from './markdown.js';
import { fillApprovals, fillTranscript, formatDuration, paneHead, renderPane, splitter } from './panes.js';
import { agentChoiceMeta, agentChoices, connectionView, sessionTitle } from './present.js';
import { QueueBook, sendLabel } from './queue.js';
import { PromptRecall } from './recall.js';
import { fillQueue, queueActions } from './queueview.js';
import { BrowserPanel, TerminalPanel, placePanels } from './panels.js';
import { ServerProof } from './proof.js';
import { fillSessionList } from './sidebar.js';
import {
  applyEvent, emptyState, listed, loadFailed, messagesLoaded, pendingFor, permissionAnswered, upsertSession,
} from './sessions.js';
import { exchangeCode, formInput, fragmentSignIn, linkOutcome, notSentSignOut } from './signin.js';
import { ScreenSide } from './screen.js';
import { Watch } from './watch.js';

const TOKEN_KEY = 'ax-code.token';
const byId = (id) => document.getElementById(id);
/** The page's fixed elements (index.html), found once. */
const page = {
  app: byId('app'),
  signin: byId('signin'),
  signinForm: byId('signin-form'),
  signinError: byId('signin-error'),
  token: byId('token'),
  sidebar: byId('sidebar'),
  sidebarBackdrop: byId('sidebar-backdrop'),
  sessionList: byId('session-list'),
  panes: byId('panes'),
  dockBottom: byId('dock-bottom'),
  dockRight: byId('dock-right'),
  connection: byId('connection'),
  toast: byId('toast'),
  agentPicker: byId('agent-picker'),
  agentList: byId('agent-list'),
  agentPickerTitle: byId('agent-picker-title'),
  agentPickerNote: document.querySelector('#agent-picker p.muted'),
  closeAgentPicker: byId('close-agent-picker'),
  shortcuts: byId('shortcuts'),
  shortcutList: byId('shortcut-list'),
  showShortcuts: byId('show-shortcuts'),
  closeShortcuts: byId('close-shortcuts'),
  toggleSidebar: byId('toggle-sidebar'),
  toggleTerminal: byId('toggle-terminal'),
  toggleBrowser: byId('toggle-browser'),
  balancePanes: byId('balance-panes'),
  newSession: byId('new-session'),
  signOut: byId('sign-out'),
};
/** Below this width (style.css agrees) the sidebar and docks are overlays and one pane shows. */
const NARROW = window.matchMedia('(max-width: 999px)');
/** Smallest sizes a splitter leaves a column or a pane (style.css min-width / min-height). */
const MIN_COLUMN_PX = 180;
const MIN_PANE_PX = 120;
/** A gap in a message's deltas reloads its transcript at most this often. */
const RELOAD_EVERY_MS = 500;

// ---- sign-in ---------------------------------------------------------------------------

/**
 * A `#code=` fragment: a one-time code `ax-code serve` or `ax-code link` printed, exchanged
 * once (POST /signin) for the credential, so the credential never appears in a URL or the
 * browser's history. The fragment is taken out of the address at once.
 */
async function takeFragment() {
  const asked = fragmentSignIn(location.hash);
  if (!asked) return false;
  history.replaceState(null, '', location.pathname + location.search);
  await signInWith(asked.code ? await exchangeCode(asked.code) : asked);
  return true;
}

async function signInWith(result) {
  const next = linkOutcome(result, { running: Boolean(app), stored: Boolean(sessionStorage.getItem(TOKEN_KEY)) });
  if (next.token) {
    sessionStorage.setItem(TOKEN_KEY, next.token);
    boot();
  } else if ('toast' in next) {
    // Signed in already: keep going, and say why the link did nothing.
    if (next.start) boot();
    app?.toast(next.toast);
  } else {
    showSignIn(next.form, next.reason);
  }
}

function showSignIn(message, reason) {
  page.app.hidden = true;
  page.signin.hidden = false;
  page.signin.dataset.reason = reason ?? '';
  page.signinError.textContent = message ?? '';
  page.token.focus();
}

function signOut(message, reason) {
  sessionStorage.removeItem(TOKEN_KEY);
  app?.stop();
  app = null;
  showSignIn(message, reason);
}

page.signinForm.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const typed = formInput(page.token.value, location.origin);
  if (!typed) return;
  page.token.value = '';
  if (typed.go) {
    // A link opens an origin of its own (docs/SECURITY.md): go there, as clicking it would.
    location.assign(typed.go);
  } else if (typed.code) {
    await signInWith(await exchangeCode(typed.code));
  } else {
    sessionStorage.setItem(TOKEN_KEY, typed.token);
    boot();
  }
});

// ---- the application -------------------------------------------------------------------

class ControlUi {
  /** `hub`: the page is served by a hub (hubapi.js): the same UI over every machine. */
  constructor(token, { hub = false } = {}) {
    this.hub = hub;
    // The credential stays in sessionStorage only while the server is proven: after a
    // disconnect a reload must not hand it to whatever page the port serves next.
    this.proof = new ServerProof(token, {
      onLost: () => sessionStorage.removeItem(TOKEN_KEY),
      onProven: () => { if (app === this) sessionStorage.setItem(TOKEN_KEY, token); },
    });
    const notProven = (e) => {
      if (app !== this) return;
      const { message, reason } = notSentSignOut(e, this.proof.everProven);
      signOut(message, reason);
    };
    this.api = new (hub ? HubApi : Api)(token, this.proof, {
      onUnauthorized: () => signOut('The access token was refused.'),
      onNotProven: notProven,
      // Hub only: a machine's backend started again (hubapi.js BootBook).
      onRestart: () => this.resyncSoon(),
    });
    // The session store (sessions.js): replaced, never changed in place, at every step.
    this.state = emptyState();
    // The panes on the page, by pane ID: what panes.js drew ({ el, head, transcript, ... })
    // and the session each shows. Drawn anew by render().
    this.paneViews = new Map();
    // The sidebar's session buttons, by session ID (screen.js annotates them).
    this.sessionItems = new Map();
    this.layout = this.loadLayout();
    // Drafts belong to a session, not to a pane: a typed command never follows a pane to
    // another session.
    this.drafts = new Map();
    // When the person last used each pane (keys, pointer, paste), by pane ID.
    this.inputAt = new Map();
    this.abort = new AbortController();
    this.loading = new Set();
    // Sessions whose delete was sent and not yet answered.
    this.deleting = new Set();
    // session id -> `message.delta`s that arrived while its transcript loaded; applied on top
    // of the load (those it already holds are skipped by seq).
    this.heldDeltas = new Map();
    // Each session's prompt queue (queue.js) and the queued prompts being edited (id -> text).
    this.queues = new QueueBook();
    this.queueEdits = new Map();
    this.actions = this.makeActions();
    this.sidebarActions = this.makeSidebarActions();
    // What transcripts share: the Markdown renderer, the cards the person opened or closed.
    const ui = this;
    this.view = {
      get store() { return ui.state; },
      md: new MarkdownRenderer((text) => this.api.markdown(text), (key) => this.refreshTranscripts(key.split('|')[0])),
      open: new Map(),
      toast: (text) => this.toast(text),
      // A stored image's data: URL, fetched once per image (attachments in the transcript).
      image: (sid, mid, index) => {
        const key = `${sid}/${mid}/${index}`;
        if (!this.images.has(key)) this.images.set(key, this.api.image(sid, mid, index).catch(() => null));
        return this.images.get(key);
      },
    };
    this.images = new Map();
    this.dirty = new Set();
    this.reloadAt = new Map();
    /** For each resync under way, the events that came since it asked (see `resync`). */
    this.listing = new Set();
    // Hub only: the machine whose gateway (and terminal) this tab uses, and whether the person
    // chose it in the panel (else it follows the session shown: hubterm.js `terminalMachine`).
    this.termPlace = hub ? readRemembered(sessionStorage.getItem(HUB_TERMINAL_KEY)) : null;
    this.terminal = new TerminalPanel(this.actions, hub && this.termPlace.machine ? { key: terminalKeyOf(this.termPlace.machine) } : {});
    this.browser = new BrowserPanel(this.actions);
    this.screen = new ScreenSide(this);
    // The attention board, the title count, notifications and the approvals inbox (watch.js).
    this.watch = new Watch(this);
    this.token = token;
    this.notProven = notProven;
    // A hub's page makes its gateway when it knows which machine's (useTerminalMachine).
    this.gateway = hub ? null : this.makeGateway('/gateway', ['ui-commands']);
    // Hub only: a Control UI connection to each online machine's gateway on the hub, where
    // that machine's shared ui.commands come and are acknowledged (hubui.js, docs/hub.md §4).
    this.uiLinks = hub ? new UiLinks((machine) => this.makeUiLink(machine)) : null;
  }

  /**
   * Hub only: the page's Control UI connection (`ui-commands`) to `machine`'s gateway on the
   * hub: its shared `ui.command`s are applied (`machineCommand`) and acknowledged there. The
   * terminal keeps its own connection (no `ui-commands` cap), so no command comes twice.
   */
  makeUiLink(machine) {
    const client = new GatewayClient({
      token: this.token,
      proof: this.proof,
      path: machineGatewayPath(machine),
      caps: ['ui-commands'],
      onNotProven: this.notProven,
      onCommand: (payload) => (this.uiLinks.current(machine, client)
        ? this.machineCommand(machine, payload)
        : { outcome: 'ignored', reason: 'the page no longer follows this machine' }),
      onEvent: () => {},
      onStatus: (state) => {
        this.uiLinks.status(machine, client, state);
        page.connection.dataset.uiLinks = this.uiLinks.connected().join(' ');
        if (state === 'unauthorized' && this.uiLinks.current(machine, client)) signOut('The gateway refused the access token.');
      },
    });
    return client;
  }

  /** Hub only: a UI connection to every online machine's gateway, none to the others. */
  syncUiLinks() {
    if (!this.hub || !this.started || this.stopped) return;
    this.uiLinks.sync(this.api.machines ?? []);
    page.connection.dataset.uiLinks = this.uiLinks.connected().join(' ');
  }

  /**
   * The gateway client for `path`. A hub's machine gateway here serves the terminal only: it
   * is asked for no `ui.command`s (they come on the page's UI connections, `makeUiLink`,
   * docs/hub.md §4), and a client replaced by another machine's is no longer heard.
   */
  makeGateway(path, caps) {
    const client = new GatewayClient({
      token: this.token,
      proof: this.proof,
      path,
      caps,
      onNotProven: this.notProven,
      onCommand: (payload) => (client === this.gateway ? this.handleCommand(payload) : { outcome: 'ignored', reason: 'not shown' }),
      onEvent: (name, payload) => { if (client === this.gateway) this.terminal.onEvent(name, payload); },
      onStatus: (state, detail) => { if (client === this.gateway) this.gatewayStatus(state, detail); },
    });
    return client;
  }

  /**
   * Hub only: the machine whose terminal the panel shows (hubterm.js `terminalMachine`: the
   * one the person chose, else the shown session's when the panel opens, else the one in
   * use); on a change the page's gateway becomes that machine's (`GET /machine/{m}/gateway`)
   * and the panel retargets to its terminal. `opening`: the panel is being shown now.
   */
  useTerminalMachine(opening = false) {
    if (!this.hub || !this.started || this.stopped) return;
    const machines = this.api.machines ?? [];
    const shown = this.api.sessionOwner(activePane(this.layout).session ?? '');
    const target = terminalMachine({
      machines, pinned: this.termPlace.pinned ? this.termPlace.machine : null, current: this.termPlace.machine, shown, opening,
    });
    if (target && (target !== this.termPlace.machine || !this.gateway)) {
      this.gateway?.stop();
      this.termPlace = { machine: target, pinned: this.termPlace.pinned && this.termPlace.machine === target };
      this.rememberTermPlace();
      this.terminal.retarget(terminalKeyOf(target));
      this.gateway = this.makeGateway(machineGatewayPath(target), []);
      this.gatewayStatus('connecting');
      this.gateway.start();
    } else if (!target && !this.gateway) {
      this.gatewayStatus('none');
    }
    const inUse = this.gateway ? this.termPlace.machine : null;
    this.terminal.showPlace(terminalPlace(inUse), terminalChoices(machines, inUse), (name) => {
      // The person's choice stays until they choose another, also when the panel opens.
      if (name !== this.termPlace.machine) {
        this.gateway?.stop();
        this.gateway = null;
      }
      this.termPlace = { machine: name, pinned: true };
      this.rememberTermPlace();
      this.useTerminalMachine();
      this.terminal.focus();
    });
  }

  rememberTermPlace() {
    try {
      sessionStorage.setItem(HUB_TERMINAL_KEY, JSON.stringify(this.termPlace));
    } catch {
      /* storage unavailable: the page follows the session shown */
    }
  }

  /** This tab's own layout; a new tab starts from the layout any tab saved last (layout.js). */
  loadLayout() {
    const { layout, fresh } = restoreLayout(sessionStorage, localStorage, NARROW.matches);
    this.freshLayout = fresh;
    return layout;
  }

  saveLayout() {
    const text = JSON.stringify(this.layout);
    for (const storage of [sessionStorage, localStorage]) {
      try {
        storage.setItem(STORAGE_KEY, text);
      } catch {
        /* storage full or disabled: the layout still works for this page */
      }
    }
    this.screen?.report();
  }

  setLayout(layout) {
    this.layout = layout;
    this.saveLayout();
    this.render();
  }

  async start() {
    this.started = true;
    page.signin.hidden = true;
    page.app.hidden = false;
    this.browser.show(this.layout.panels.browser.url);
    this.screen.renderSaved();
    const note = (ev) => this.noteInput(ev);
    for (const type of ['keydown', 'pointerdown', 'pointermove', 'wheel', 'paste', 'input']) {
      document.addEventListener(type, note, { capture: true, passive: true, signal: this.abort.signal });
    }
    NARROW.addEventListener('change', () => this.render(), { signal: this.abort.signal });
    // Elapsed times of running turns tick once a second.
    this.ticker = setInterval(() => {
      for (const el of document.querySelectorAll('[data-since]')) {
        el.textContent = formatDuration(Date.now() - Number(el.dataset.since));
      }
    }, 1000);
    this.render();
    try {
      await this.resync();
    } catch (e) {
      if (e.status === 401 || e.code === 'NOT_PROVEN') return;
      this.toast(`Could not load sessions: ${e.message}`);
      this.streamWasDown = true;
    }
    if (this.freshLayout && !activePane(this.layout).session) {
      const newest = this.state.sessions.keys().next().value;
      if (newest) {
        activePane(this.layout).session = newest;
        this.setLayout(this.layout);
      }
    }
    // What happens between the list above and the stream going live comes in no event, so
    // the first `live` lists once more (streamStatus), as after any reconnection.
    this.streamWasDown = true;
    this.api.follow((env) => this.onEnvelope(env), (s) => this.streamStatus(s), this.abort.signal);
    // A hub's page uses one machine's gateway at a time for its terminal (useTerminalMachine),
    // and every online machine's for that machine's shared ui.commands (syncUiLinks,
    // docs/hub.md §4).
    if (!this.hub) this.gateway.start();
    else {
      this.syncUiLinks();
      this.useTerminalMachine();
    }
    // Machines come and go: the sidebar's online/offline marks follow the hub's list.
    if (this.hub) this.machineTimer = setInterval(() => this.refreshMachines(), 2000);
  }

  stop() {
    this.stopped = true;
    clearInterval(this.ticker);
    clearInterval(this.machineTimer);
    pickerDone?.(null);
    this.abort.abort();
    this.watch.stop();
    this.gateway?.stop();
    this.uiLinks?.stopAll();
    // The panels live in the docks, outside what render() replaces.
    this.terminal.el.remove();
    this.browser.el.remove();
  }

  /** The session store (sessions.js) as it is now; watch.js and the composers' lists read it. */
  get store() {
    return this.state;
  }

  async resync() {
    // The events that come while the lists are asked for go on top of them (sessions.js
    // `listed`): the lists may predate them.
    const since = [];
    this.listing.add(since);
    try {
      const [sessions, permissions] = await Promise.all([this.api.listSessions(), this.api.permissions()]);
      this.state = listed(this.state, sessions, permissions, since);
    } finally {
      this.listing.delete(since);
    }
    this.render();
  }

  /**
   * A resync, once at a time: one asked for while another runs comes after it (what the
   * running one listed may predate the reason for asking). A hub page asks when a machine
   * restarted (hubapi.js `BootBook`).
   */
  resyncSoon() {
    if (this.stopped) return;
    if (this.resyncing) {
      this.resyncAgain = true;
      return;
    }
    this.resyncing = this.resync().catch(() => {}).finally(() => {
      this.resyncing = null;
      if (this.resyncAgain) {
        this.resyncAgain = false;
        this.resyncSoon();
      }
    });
  }

  // ---- live events ----

  onEnvelope(env) {
    const e = env?.event ?? env;
    if (!e || typeof e.type !== 'string') return;
    for (const since of this.listing) since.push(e);
    this.watch.observe(e);
    if (e.type === 'queue.updated') {
      // The queues are queue.js's (QueueBook), not the session store's.
      const id = this.queues.event(e.queue);
      if (id) this.refreshQueue(id);
      return;
    }
    // A transcript being loaded takes these after the load (those it holds are skipped by seq).
    const held = e.type === 'message.delta' ? this.heldDeltas.get(e.sessionId) : null;
    if (held) held.push(e);
    else this.fold(e);
  }

  /** One event into the session store (sessions.js), and on the page what it changed. */
  fold(e) {
    const { state, changes } = applyEvent(this.state, e);
    const id = changes.sessionId;
    // Told with the session as the store held it before the event.
    if (changes.status) this.noteStatus(id, changes.status.before, changes.status.after);
    this.state = state;
    if (changes.deleted) {
      this.queues.forget(id);
      this.watch.forget(id);
    }
    if (changes.all) {
      this.render();
    } else {
      if (changes.sidebar) this.renderSidebar();
      if (changes.heads) this.refreshPaneHeads(id);
      if (changes.queue) this.refreshQueue(id);
      if (changes.transcript) this.refreshTranscripts(id);
      if (changes.approvals) this.refreshApprovals(id);
    }
    if (changes.commands) agentCommands.refresh(id);
    if (changes.asked) {
      this.tellIfHidden(id, 'asks for your approval');
      this.watch.approvalAsked(id);
    }
    // A part of a message the store does not hold: load now; a gap in the deltas (or a delta
    // of an unknown message): reload, at most every RELOAD_EVERY_MS.
    if (changes.reload === 'now') this.loadMessages(id, true);
    else if (changes.reload === 'soon') this.reloadSoon(id);
    if (changes.resync) this.resync().catch(() => {});
  }

  reloadSoon(sessionId) {
    if (this.reloadAt.has(sessionId)) return;
    const wait = Math.max(0, RELOAD_EVERY_MS - (performance.now() - (this.lastReload?.get(sessionId) ?? -Infinity)));
    this.reloadAt.set(sessionId, setTimeout(() => {
      this.reloadAt.delete(sessionId);
      (this.lastReload ??= new Map()).set(sessionId, performance.now());
      this.loadMessages(sessionId, true);
    }, wait));
  }

  /** A turn that ends while the page watches (its stored end came just before, `message.ended`). */
  noteStatus(sessionId, before, status) {
    this.watch.statusChanged(sessionId, before, status);
    const working = (st) => st === 'busy' || st === 'pending';
    if (!working(before) || working(status)) return;
    // Once the store holds this event's state (fold sets it after telling the status).
    queueMicrotask(() => this.rereadSession(sessionId));
    this.refreshTranscripts(sessionId);
    this.tellIfHidden(sessionId, status === 'needs_auth' ? 'needs you to sign the agent in' : 'finished its turn');
  }

  /**
   * A turn ended: the session read once more. A backend publishes a session (`session.updated`)
   * after each write that changed it, from the task that wrote, so two writes close together
   * (the turn's end and the agent's new commands or options, stored by another task) can reach
   * the page in the other order, the older session last. Read after the turn's last event, the
   * session is at least as new as every write before it. Taken only when no event changed the
   * session while it was read (such an event may be newer than the read).
   */
  async rereadSession(sessionId) {
    const held = this.state.sessions.get(sessionId);
    if (!held) return;
    let session;
    try {
      session = await this.api.session(sessionId);
    } catch {
      return;
    }
    if (this.stopped || session?.id !== sessionId || this.state.sessions.get(sessionId) !== held) return;
    if (JSON.stringify(session) === JSON.stringify(held)) return;
    this.state = upsertSession(this.state, session);
    this.renderSidebar();
    this.refreshPaneHeads(sessionId);
    this.refreshQueue(sessionId);
    agentCommands.refresh(sessionId);
  }

  /** A toast about a session no pane shows (a turn ended, an approval waits). */
  tellIfHidden(sessionId, what) {
    if (this.panesShowing(sessionId).some((v) => v.el.offsetParent !== null)) return;
    const s = this.state.sessions.get(sessionId);
    this.toast(`“${s ? sessionTitle(s) : sessionId}” ${what}.`);
  }

  /** A shown session's queue; later `queue.updated` events keep it (QueueBook). */
  async loadQueue(sessionId) {
    const ticket = this.queues.loading(sessionId);
    try {
      if (this.queues.loaded(sessionId, ticket, await this.api.queue(sessionId))) this.refreshQueue(sessionId);
    } catch {
      /* a backend without a queue, or the session is gone: nothing is queued */
    }
  }

  async loadMessages(sessionId, force = false) {
    if (this.loading.has(sessionId) || (!force && this.state.messages.has(sessionId))) return;
    this.loading.add(sessionId);
    if (!force) this.loadQueue(sessionId);
    this.heldDeltas.set(sessionId, []);
    try {
      if (!this.state.sessions.has(sessionId)) {
        const session = await this.api.session(sessionId);
        this.state = upsertSession(this.state, session);
        this.renderSidebar();
      }
      // Each message says the seq of the last delta the backend folded into its parts.
      const messages = await this.api.messages(sessionId);
      this.state = messagesLoaded(this.state, sessionId, messages);
    } catch (e) {
      this.state = loadFailed(this.state, sessionId, e.status === 404);
    } finally {
      this.loading.delete(sessionId);
      const held = this.heldDeltas.get(sessionId) ?? [];
      this.heldDeltas.delete(sessionId);
      for (const e of held) this.fold(e);
    }
    this.render();
  }

  // ---- ui.command ----

  /** One `ui.command`; the acknowledgement carries the layout revision after it. */
  handleCommand(payload) {
    const result = this.screen.handle(payload) ?? this.handleLayoutCommand(payload);
    this.screen.report();
    return { ...result, revision: this.screen.revision };
  }

  /**
   * Hub only: one shared `ui.command` of `machine`'s agent, come on the page's connection to
   * that machine's gateway; the answer is its acknowledgement there. Applied as the gateway's
   * (`handleCommand`: the same reducer, revision and human-priority rules), limited to what
   * shows that machine's sessions (hubui.js `answerMachineCommand`, docs/hub.md §4).
   */
  machineCommand(machine, payload) {
    const toasts = this.toasts;
    this.commandMachine = machine;
    try {
      const { ack, refused } = answerMachineCommand(machine, payload, {
        owner: (id) => this.api.sessionOwner(id),
        layout: this.layout,
        revision: () => {
          this.screen.report();
          return this.screen.revision;
        },
        apply: (p) => this.handleCommand(p),
      });
      // A refusal the page has not told yet (its own, a stale revision, annotations with
      // nothing to point at) is told here.
      if (ack.outcome === 'ignored' && (refused || this.toasts === toasts)) {
        this.toast(`Agent on ${machine}: ${describeCommand(payload?.command)} — ignored (${ack.reason})`);
      }
      return ack;
    } finally {
      this.commandMachine = null;
    }
  }

  handleLayoutCommand(payload) {
    let result = applyCommand(this.layout, payload);
    if (result.outcome === 'applied' && GUARDED.has(payload?.command?.kind)) {
      const kind = payload.command.kind;
      const affected = affectedPanes(this.layout, result.layout);
      const foreign = this.foreignPane(affected);
      const busy = foreign ? null : this.personBusy(affected, draftPanes(this.layout, result.layout, kind));
      if (foreign) result = { layout: this.layout, outcome: 'ignored', reason: foreign };
      else if (busy) result = { layout: this.layout, outcome: 'ignored', reason: `human priority: ${busy}` };
    }
    // Keyboard focus stays where the person left it: an agent arranges, it does not type.
    if (result.outcome === 'applied') this.setLayout(result.layout);
    const who = this.commandMachine ? `Agent on ${this.commandMachine}` : 'Agent';
    this.toast(`${who}: ${describeCommand(payload.command)}${result.outcome === 'ignored' ? ` — ignored (${result.reason})` : ''}`);
    return { outcome: result.outcome, reason: result.reason };
  }

  /**
   * Why the person is busy in one of `panes`, or null (layout.js `busyReason`, the Control
   * UI's form of the TUI's human-priority rules); `drafted`: those whose draft counts.
   */
  personBusy(panes, drafted = panes) {
    const foreign = this.foreignPane(panes);
    if (foreign) return foreign;
    return busyReason(panes, drafted, {
      pickerOpen: !page.agentPicker.hidden,
      inboxOpen: this.watch.inboxOpen(),
      hasDraft: (session) => Boolean(this.drafts.get(session)),
      hasApproval: (session) => pendingFor(this.state, session).length > 0,
      inputAt: this.inputAt,
      now: performance.now(),
    });
  }

  /**
   * Hub only, while a machine's shared command is applied: why one of `panes` is not that
   * machine's to move (it shows another machine's session, hubapi.js `foreignPane`), or null.
   */
  foreignPane(panes) {
    if (!this.commandMachine) return null;
    return foreignPane(panes, this.commandMachine, (id) => this.api.sessionOwner(id));
  }

  /** Records the person's input in a pane (the sidebar acts on the active pane). */
  noteInput(ev) {
    if (!ev.isTrusted) return;
    const target = ev.target instanceof Node ? ev.target : null;
    const paneId = target ? (this.paneAt(target) ?? (page.sidebar.contains(target) ? this.layout.active : null)) : null;
    if (paneId) this.inputAt.set(paneId, performance.now());
  }

  // ---- user actions ----

  makeActions() {
    const self = this;
    return {
      activate(paneId) {
        if (self.restoringFocus || self.layout.active === paneId) return;
        self.layout.active = paneId;
        self.saveLayout();
        for (const [id, { el }] of self.paneViews) {
          const on = id === paneId;
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
        // Through a hub: on which machine (docs/hub.md §4).
        let machine;
        if (self.hub) {
          const where = newSessionMachines(self.api.machines);
          if (where.none) {
            self.toast(`Could not create a session: ${where.none}.`);
            return;
          }
          machine = where.pick ?? await chooseMachine(where.choices);
          if (machine === null) return; // the person closed the picker
        }
        let agent;
        try {
          agent = await chooseAgent(self, machine);
        } catch (e) {
          self.toast(`Could not list the agents: ${e.message}`);
          return;
        }
        if (agent === null) return; // the person closed the picker
        try {
          const s = await self.api.createSession(undefined, agent, machine);
          self.state = upsertSession(self.state, s);
          const pane = locate(self.layout, paneId)?.pane;
          if (pane) pane.session = s.id;
          self.layout.active = paneId;
          if (NARROW.matches) self.layout.sidebar = false;
          self.state = messagesLoaded(self.state, s.id, []);
          self.setLayout(self.layout);
        } catch (e) {
          self.toast(`Could not create a session: ${e.message}`);
        }
      },
      navigate(sessionId) {
        activePane(self.layout).session = sessionId;
        // The sidebar overlay of a narrow window has done its job.
        if (NARROW.matches) self.layout.sidebar = false;
        self.setLayout(self.layout);
      },
      /** Make the pane `step` places on the active one, and its composer, focused. */
      focusNext(step) {
        const pane = nextPane(self.layout, step);
        self.actions.activate(pane.id);
        const view = self.paneViews.get(pane.id);
        const target = view?.input ?? view?.el.querySelector('button');
        target?.focus();
      },
      balance() {
        self.setLayout(balance(self.layout));
      },
      toggleSidebar() {
        self.layout.sidebar = !self.layout.sidebar;
        self.setLayout(self.layout);
      },
      toggleTerminal() {
        const open = !self.layout.panels.terminal.open;
        self.actions.setPanel('terminal', open);
        if (open) self.terminal.focus();
      },
      async setMode(sessionId, modeId) {
        try {
          const s = await self.api.setMode(sessionId, modeId);
          if (s?.id) self.state = upsertSession(self.state, s);
        } catch (e) {
          self.toast(`Could not switch the mode: ${e.message}`);
        }
        self.refreshPaneHeads(sessionId);
      },
      async setConfig(sessionId, configId, value) {
        try {
          const s = await self.api.setConfig(sessionId, configId, value);
          if (s?.id) self.state = upsertSession(self.state, s);
        } catch (e) {
          self.toast(`Could not change the option: ${e.message}`);
        }
        self.refreshPaneHeads(sessionId);
      },
      async revokeStanding(sessionId) {
        try {
          const s = await self.api.revokeStanding(sessionId);
          if (s?.id) self.state = upsertSession(self.state, s);
          self.refreshPaneHeads(sessionId);
          self.toast('Revoked: the agent asks again before each request.');
        } catch (e) {
          self.toast(`Could not revoke: ${e.message}`);
        }
      },
      // The composer's prompt goes direct or to the queue; the queue's buttons (queueview.js).
      ...queueActions({
        api: self.api,
        queues: self.queues,
        sessionOf: (id) => self.state.sessions.get(id),
        connId: () => self.gateway?.connId,
        toast: (text) => self.toast(text),
        refreshQueue: (id) => self.refreshQueue(id),
      }),
      async abort(sessionId) {
        try {
          await self.api.abort(sessionId);
        } catch (e) {
          self.toast(e.message);
        }
      },
      async reply(sessionId, permissionId, reply, optionId) {
        try {
          await self.api.reply(sessionId, permissionId, reply, optionId);
          self.state = permissionAnswered(self.state, permissionId);
          self.refreshApprovals(sessionId);
          self.renderSidebar();
          return true;
        } catch (e) {
          self.toast(`Reply failed: ${e.message}`);
          return false;
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
      gatewayRequest: (method, params) => (self.gateway ? self.gateway.request(method, params) : Promise.reject(new Error('no gateway to use'))),
      toast: (text) => self.toast(text),
    };
  }

  // ---- rendering ----

  render() {
    const L = this.layout;
    const sidebar = page.sidebar;
    sidebar.hidden = !L.sidebar;
    sidebar.dataset.hidden = String(!L.sidebar);
    page.sidebarBackdrop.hidden = !(L.sidebar && NARROW.matches);
    page.toggleSidebar.setAttribute('aria-pressed', String(L.sidebar));
    page.toggleTerminal.setAttribute('aria-pressed', String(L.panels.terminal.open));
    page.toggleBrowser.setAttribute('aria-pressed', String(L.panels.browser.open));
    this.renderSidebar();
    // Hub only: opening the terminal panel takes the shown session's machine.
    this.useTerminalMachine(L.panels.terminal.open && !this.terminalWasOpen);
    this.terminalWasOpen = L.panels.terminal.open;

    // A re-render replaces the panes: keep a composer that is being typed in focused.
    const focused = document.activeElement;
    const focusedPane = focused?.tagName === 'TEXTAREA' ? this.paneAt(focused) : null;
    const restore = focusedPane
      ? { pane: focusedPane, session: this.paneViews.get(focusedPane).session, start: focused.selectionStart, end: focused.selectionEnd }
      : null;
    const area = page.panes;
    const count = allPanes(L).length;
    const ctx = (pane) => ({
      store: this.state, active: pane.id === L.active, drafts: this.drafts, actions: this.actions, count, view: this.view, attachments,
      queues: this.queues, queueEdits: this.queueEdits,
    });
    const children = [];
    const views = new Map();
    L.columns.forEach((col, ci) => {
      if (ci > 0) children.push(this.splitterBetween(L.columns[ci - 1], col));
      const cells = [];
      col.panes.forEach((pane, pi) => {
        if (pi > 0) cells.push(this.splitterBetween(col.panes[pi - 1], pane));
        const view = renderPane(pane, ctx(pane));
        placeConfigPickers(view.head, this.state.sessions.get(pane.session), this.actions.setConfig);
        views.set(pane.id, { ...view, session: pane.session ?? '' });
        cells.push(view.el);
      });
      children.push(h('div', { class: 'column', 'data-testid': 'column', style: { flexGrow: String(col.weight) } }, cells));
    });
    area.replaceChildren(...children);
    this.paneViews = views;
    for (const pane of allPanes(L)) {
      if (pane.session && !this.state.messages.has(pane.session)) this.loadMessages(pane.session);
    }
    placePanels(L, { terminal: this.terminal, browser: this.browser }, { bottom: page.dockBottom, right: page.dockRight });
    // The sessions now in view are read (the attention board, the title count).
    this.watch.lookedAgain();
    if (restore) {
      const view = this.paneViews.get(restore.pane);
      // Its first text box: a queued prompt being edited (queueview.js), else the composer.
      const box = view?.el.querySelector('textarea');
      // Keep the caret only where the pane still shows the session being typed for.
      if (box && view.session === restore.session) {
        // Focusing must not make that pane active again (an agent may just have moved it).
        this.restoringFocus = true;
        box.focus({ preventScroll: true });
        box.setSelectionRange(restore.start, restore.end);
        this.restoringFocus = false;
      }
    }
    this.screen.place();
  }

  /**
   * The splitter between two neighbouring columns or panes (`a` before `b`): the weights it
   * sets are the person's own, saved for this tab.
   */
  splitterBetween(a, b) {
    const col = 'panes' in a;
    return splitter({
      kind: col ? 'col' : 'row',
      label: col ? 'Resize columns' : 'Resize panes',
      min: col ? MIN_COLUMN_PX : MIN_PANE_PX,
      weights: () => [a.weight, b.weight],
      onCommit: (wa, wb) => {
        a.weight = wa;
        b.weight = wb;
        this.saveLayout();
      },
    });
  }

  /** Hub only: the machines again, and the sessions when one came or went (docs/hub.md §4). */
  async refreshMachines() {
    const before = JSON.stringify(this.api.machines.map((m) => [m.name, m.online]));
    try {
      await this.api.listMachines();
    } catch {
      return;
    }
    if (JSON.stringify(this.api.machines.map((m) => [m.name, m.online])) !== before) {
      try {
        await this.resync();
      } catch {
        /* the next tick tries again */
      }
    } else {
      this.renderSidebar();
    }
    this.syncUiLinks();
    this.useTerminalMachine();
  }

  /** The session list (sidebar.js), in the attention board's order (watch.js). */
  renderSidebar() {
    this.sessionItems = fillSessionList(page.sessionList, {
      entries: this.watch.sorted(),
      current: activePane(this.layout).session,
      shown: new Set(allPanes(this.layout).map((p) => p.session)),
      deleting: this.deleting,
      label: (attention, session) => this.watch.label(attention, session),
      machines: this.hub ? this.api.machines : null,
      on: this.sidebarActions,
    });
    this.watch.update();
    this.screen.place();
  }

  /** What the sidebar's rows do; the list itself follows the event stream. */
  makeSidebarActions() {
    const act = (what, run) => run().catch((e) => this.toast(`${what} failed: ${e.message}`));
    return {
      open: (id) => this.actions.navigate(id),
      rename: (s, title) => act('Rename', () => this.api.renameSession(s.id, title)),
      remove: (s) => {
        // Deleting stops the session's agent first, which takes a while: the row says so until
        // the backend answers (docs/control-ui.md §5).
        this.deleting.add(s.id);
        this.renderSidebar();
        act('Delete', () => this.api.deleteSession(s.id)).finally(() => {
          this.deleting.delete(s.id);
          this.renderSidebar();
        });
      },
    };
  }

  /** The views of the panes showing `sessionId` (panes.js `renderPane`, with `session`). */
  panesShowing(sessionId) {
    return [...this.paneViews.values()].filter((v) => v.session === sessionId);
  }

  /** Whether the session sidebar is hidden (screen.js annotates no row then). */
  sidebarHidden() {
    return page.sidebar.hidden;
  }

  /** The ID of the pane that holds `node`, or null. */
  paneAt(node) {
    for (const [id, view] of this.paneViews) if (view.el.contains(node)) return id;
    return null;
  }

  /** Redraws the transcripts of `sessionId` once per frame, however many events came. */
  refreshTranscripts(sessionId) {
    this.dirty.add(sessionId);
    if (this.frame) return;
    const draw = () => {
      this.frame = null;
      const dirty = [...this.dirty];
      this.dirty.clear();
      for (const id of dirty) {
        for (const { transcript } of this.panesShowing(id)) {
          if (transcript) fillTranscript(transcript, this.state.messages.get(id), this.view, id);
        }
      }
    };
    // A hidden tab gets no animation frames: draw on a timer then.
    this.frame = document.hidden ? setTimeout(draw, 100) : requestAnimationFrame(draw);
  }

  /** The pending approvals of every pane showing `sessionId` (the sidebar is its callers'). */
  refreshApprovals(sessionId) {
    const session = this.state.sessions.get(sessionId);
    for (const { approvals } of this.panesShowing(sessionId)) {
      if (approvals) fillApprovals(approvals, pendingFor(this.state, sessionId), sessionId, this.actions, false, session);
    }
  }

  /** The queued prompts and the composer's Send/Queue button of every pane showing `sessionId`. */
  refreshQueue(sessionId) {
    const session = this.state.sessions.get(sessionId);
    const queue = this.queues.get(sessionId);
    for (const view of this.panesShowing(sessionId)) {
      if (view.queue) fillQueue(view.queue, queue, session, sessionId, this.actions, this.queueEdits);
      if (view.send) view.send.textContent = sendLabel(session, queue);
    }
  }

  refreshPaneHeads(sessionId) {
    // Swap only the headers, so a composer being typed in keeps its focus.
    const session = this.state.sessions.get(sessionId);
    for (const [paneId, view] of this.paneViews) {
      if (view.session !== sessionId) continue;
      const pane = locate(this.layout, paneId)?.pane;
      if (!pane) continue;
      const head = paneHead(pane, session, {
        store: this.state, actions: this.actions, count: allPanes(this.layout).length, view: this.view,
      });
      placeConfigPickers(head, session, this.actions.setConfig);
      view.head.replaceWith(head);
      view.head = head;
      view.el.setAttribute('aria-label', `Pane: ${session ? sessionTitle(session) : pane.session}`);
    }
    // The running turn's spinner and elapsed time, or its duration once it ended.
    this.refreshTranscripts(sessionId);
  }

  gatewayStatus(state, detail) {
    page.connection.dataset.gateway = state;
    this.gatewayDetail = detail ?? '';
    this.terminal.onGateway(state);
    // The layout is reported to a backend's gateway only (a hub's page arranges no machine's
    // screen through it: docs/hub.md §4).
    if (state === 'connected' && !this.hub) this.screen.connected();
    this.showConnection();
    if (state === 'unauthorized') signOut('The gateway refused the access token.');
  }

  streamStatus(state) {
    page.connection.dataset.stream = state;
    this.showConnection();
    // Events may have been missed while the stream was down.
    if (state === 'live' && this.streamWasDown) this.resync().catch(() => {});
    this.streamWasDown = state !== 'live';
  }

  /**
   * One indicator for both connections (the gateway, for agents' commands and the terminal;
   * the event stream, for sessions): live only when both are. Its tooltip says which is not.
   */
  showConnection() {
    const el = page.connection;
    const view = this.hub
      ? hubConnectionView(this.gateway ? this.termPlace.machine : null, el.dataset.gateway, el.dataset.stream, this.everLive, this.gatewayDetail)
      : connectionView(el.dataset.gateway, el.dataset.stream, this.everLive, this.gatewayDetail);
    if (view.state === 'live') this.everLive = true;
    el.dataset.state = view.state;
    el.textContent = view.text;
    el.title = view.title;
  }

  toast(text) {
    this.toasts = (this.toasts ?? 0) + 1;
    const t = page.toast;
    t.textContent = text;
    t.title = text;
    t.hidden = false;
    clearTimeout(this.toastTimer);
    this.toastTimer = setTimeout(() => { t.hidden = true; }, 4000);
  }
}

// ---- the agent of a new session --------------------------------------------------------

let pickerDone = null;

/**
 * The agent for a new session: asks the person when there is a choice (GET /agent, the
 * default first; through a hub, `machine`'s). Resolves to a name, to undefined (the backend's
 * default: nothing to choose, or a server without the list) or to null (the person closed the
 * picker).
 */
async function chooseAgent(ui, machine) {
  let list;
  try {
    list = await ui.api.agents(machine);
  } catch (e) {
    if (e.status === 404 || e.code === 'NOT_ON_HUB') return undefined;
    throw e;
  }
  const choices = agentChoices(list);
  if (!choices) return undefined;
  const { agents, def } = choices;
  const title = machine ? `New session on ${machine}: choose its agent` : 'New session: choose its agent';
  return choose(title, true, agents.map((a) => ({
    value: a.name, name: a.name, meta: agentChoiceMeta(a, def), primary: a.name === def, testid: 'agent-option', data: { 'data-agent': a.name },
  })));
}

/** Hub only: the machine of a new session, among the online ones (`newSessionMachines`). */
function chooseMachine(machines) {
  return choose('New session: choose its machine', false, machines.map((m, i) => ({
    value: m.name, name: m.name, meta: m.project ?? '', primary: i === 0, testid: 'machine-option', data: { 'data-machine': m.name },
  })));
}

/**
 * The new-session picker (index.html's dialog) with `options` (`{value, name, meta, primary,
 * testid, data}`): resolves to the value chosen, or null when the person closed it. `agentNote`:
 * whether the note about where agents come from shows.
 */
function choose(title, agentNote, options) {
  return new Promise((resolve) => {
    pickerDone?.(null);
    const before = document.activeElement;
    const finish = (value) => {
      if (pickerDone !== finish) return;
      pickerDone = null;
      page.agentPicker.hidden = true;
      if (before?.isConnected) before.focus();
      resolve(value);
    };
    pickerDone = finish;
    page.agentPickerTitle.textContent = title;
    if (page.agentPickerNote) page.agentPickerNote.hidden = !agentNote;
    const buttons = options.map((o) => h('button', {
      type: 'button',
      class: `agent-option${o.primary ? ' primary' : ''}`,
      'data-testid': o.testid,
      ...o.data,
      onclick: () => finish(o.value),
    },
    h('span', { class: 'agent-option-name', text: o.name }),
    h('span', { class: 'agent-option-meta', text: o.meta })));
    page.agentList.replaceChildren(...buttons.map((b) => h('li', {}, b)));
    page.agentPicker.hidden = false;
    buttons[0].focus();
  });
}

page.closeAgentPicker.addEventListener('click', () => pickerDone?.(null));

// ---- keyboard shortcuts ----------------------------------------------------------------

/**
 * Every shortcut, for the handler and the help overlay alike. Alt with a key position
 * (KeyboardEvent.code), so they work with any keyboard layout and never in the way of typing.
 */
const SHORTCUTS = [
  { code: 'Backslash', keys: 'Alt+\\', what: 'Split the active pane to the right', run: (a) => a.actions.split(a.layout.active, 'right') },
  { code: 'Minus', keys: 'Alt+-', what: 'Split the active pane down', run: (a) => a.actions.split(a.layout.active, 'down') },
  { code: 'BracketRight', keys: 'Alt+]', what: 'Focus the next pane', run: (a) => a.actions.focusNext(1) },
  { code: 'BracketLeft', keys: 'Alt+[', what: 'Focus the previous pane', run: (a) => a.actions.focusNext(-1) },
  { code: 'Equal', keys: 'Alt+=', what: 'Balance panes', run: (a) => a.actions.balance() },
  { code: 'KeyB', keys: 'Alt+B', what: 'Show or hide the session sidebar', run: (a) => a.actions.toggleSidebar() },
  { code: 'KeyT', keys: 'Alt+T', what: 'Show or hide the operator terminal', run: (a) => a.actions.toggleTerminal() },
  { code: 'Slash', keys: 'Alt+/', what: 'Show these shortcuts', run: () => showShortcuts(true) },
];

let focusBeforeShortcuts = null;

function showShortcuts(open) {
  const dialog = page.shortcuts;
  if (open) {
    if (dialog.hidden) focusBeforeShortcuts = document.activeElement;
    page.shortcutList.replaceChildren(...SHORTCUTS.flatMap((s) => [
      h('dt', {}, h('kbd', { text: s.keys })),
      h('dd', { text: s.what }),
    ]));
    dialog.hidden = false;
    page.closeShortcuts.focus();
  } else if (!dialog.hidden) {
    dialog.hidden = true;
    // Back where the person was, when that is still on the page.
    if (focusBeforeShortcuts?.isConnected) focusBeforeShortcuts.focus();
    focusBeforeShortcuts = null;
  }
}

document.addEventListener('keydown', (ev) => {
  if (!app || page.app.hidden || ev.isComposing) return;
  if (ev.key === 'Escape') {
    if (!page.agentPicker.hidden) {
      ev.preventDefault();
      pickerDone?.(null);
    } else if (!page.shortcuts.hidden) {
      ev.preventDefault();
      showShortcuts(false);
    } else if (app.watch.inboxOpen()) {
      ev.preventDefault();
      app.watch.showInbox(false);
    } else if (NARROW.matches && app.layout.sidebar) {
      ev.preventDefault();
      app.actions.toggleSidebar();
    }
    return;
  }
  if (!ev.altKey || ev.ctrlKey || ev.metaKey) return;
  const shortcut = SHORTCUTS.find((s) => s.code === ev.code);
  if (!shortcut) return;
  ev.preventDefault();
  if (shortcut.code !== 'Slash') showShortcuts(false);
  shortcut.run(app);
});

// ---- wiring ----------------------------------------------------------------------------

let app = null;
// One `/` completion list for every composer, over the running app's sessions.
const agentCommands = new AgentCommands((id) => app?.state.sessions.get(id));
// One `@` file picker and image paste for every composer (attachments.js).
const attachments = new Attachments({
  findFiles: (query) => app.api.findFiles(query),
  sessionOf: (id) => app?.state.sessions.get(id),
  toast: (text) => app?.toast(text),
});
// ↑/↓ and Ctrl+R over the session's prompts in every composer (recall.js), after the lists
// above, which take their keys first.
new PromptRecall((id) => app?.state.messages.get(id));

function boot() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    showSignIn();
    return;
  }
  app?.stop();
  // Whether a hub serves this page: its /health says so (no credential goes with this ask).
  fetch('/health', { cache: 'no-store', credentials: 'omit', redirect: 'error' })
    .then((r) => r.json()).then(isHub).catch(() => false)
    .then((hub) => {
      if (sessionStorage.getItem(TOKEN_KEY) !== token) return;
      app?.stop();
      app = new ControlUi(token, { hub });
      app.start();
    });
}

page.toggleSidebar.addEventListener('click', () => app?.actions.toggleSidebar());
page.toggleTerminal.addEventListener('click', () => app?.actions.setPanel('terminal', !app.layout.panels.terminal.open));
page.balancePanes.addEventListener('click', () => app?.actions.balance());
page.showShortcuts.addEventListener('click', () => showShortcuts(true));
page.closeShortcuts.addEventListener('click', () => showShortcuts(false));
page.sidebarBackdrop.addEventListener('click', () => {
  if (app?.layout.sidebar) app.actions.toggleSidebar();
});
page.toggleBrowser.addEventListener('click', () => app?.actions.setPanel('browser', !app.layout.panels.browser.open));
page.newSession.addEventListener('click', () => app?.actions.createInPane(app.layout.active));
page.signOut.addEventListener('click', () => signOut());
// A sign-in link pasted into a tab that is already open (on the sign-in form or not).
window.addEventListener('hashchange', () => { takeFragment(); });

takeFragment().then((taken) => { if (!taken) boot(); });
