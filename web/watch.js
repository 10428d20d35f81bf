// What the page keeps an eye on for the person (docs/control-ui.md §7, §8, §9): the
// attention board of the session list, the count in the tab title, desktop notifications once
// the person turned them on, and the approvals inbox. The rules are attention.js, notify.js and
// inbox.js; this is their wiring to the page (the ControlUi of app.js is `ui`).

import {
  ATTENTION_LABEL, attentionCounts, attentionOf, countsText, forget, newBoard, observe, seen, sortSessions, statusChanged,
} from './attention.js';
import { fillInbox, pendingCount } from './inbox.js';
import { askFeedback } from './panes.js';
import { NOTIFY_KEY, countedSessions, notificationFor, shouldNotify, titleWithCount, toggleView } from './notify.js';
import { agentOf, sessionTitle } from './present.js';

const $ = (id) => document.getElementById(id);
const BASE_TITLE = 'ax-code';

export class Watch {
  constructor(ui) {
    this.ui = ui;
    this.board = newBoard();
    this.notices = new Map(); // session id -> the Notification shown for it
    this.abort = new AbortController();
    const opts = { signal: this.abort.signal };
    // Coming back to the tab (it gets the focus) is opening what it shows. Not on
    // `visibilitychange`: a listener there runs as a reload unloads the page, late enough that
    // the event stream's end is seen first, which drops the server's proof and with it the
    // credential the reload needs (api.js `follow`, proof.js).
    window.addEventListener('focus', () => this.lookedAgain(), opts);
    $('toggle-notify').addEventListener('click', () => this.toggleNotify(), opts);
    $('open-inbox').addEventListener('click', () => this.showInbox(true), opts);
    $('close-inbox').addEventListener('click', () => this.showInbox(false), opts);
    this.showToggle();
  }

  stop() {
    this.abort.abort();
    for (const n of this.notices.values()) n.close?.();
    document.title = BASE_TITLE;
  }

  // ---- what the person is looking at ----

  /** Sessions a visible pane shows while the tab is visible (none when it is hidden). */
  lookingAt() {
    if (document.hidden) return new Set();
    return new Set([...this.ui.paneViews.values()]
      .filter((v) => v.el.offsetParent !== null && v.session)
      .map((v) => v.session));
  }

  /** The panes were drawn or the tab came back: what it shows is read. */
  lookedAgain() {
    let changed = false;
    for (const id of this.lookingAt()) {
      if (seen(this.board, id)) changed = true;
      this.notices.get(id)?.close?.();
      this.notices.delete(id);
    }
    if (changed) this.ui.renderSidebar();
    else this.update();
  }

  // ---- events ----

  /** Every event, for the failure signals of a turn. */
  observe(e) {
    observe(this.board, e, (id) => {
      const session = this.ui.state?.sessions.get(id);
      return !!session && agentOf(session) === 'shell';
    });
  }

  /** A session's status changes from `before` to `after` (before the store holds it). */
  statusChanged(id, before, after) {
    const looking = this.lookingAt().has(id);
    const what = statusChanged(this.board, id, before, after, looking);
    if (what === 'finished' || what === 'failed') this.alert(id, after === 'needs_auth' ? 'needs_auth' : what, looking);
  }

  approvalAsked(id) {
    this.alert(id, 'approval', this.lookingAt().has(id));
  }

  forget(id) {
    forget(this.board, id);
    this.notices.get(id)?.close?.();
    this.notices.delete(id);
  }

  // ---- notifications ----

  enabled() {
    try {
      return localStorage.getItem(NOTIFY_KEY) === 'on';
    } catch {
      return false;
    }
  }

  permission() {
    return typeof Notification === 'function' ? Notification.permission : 'unsupported';
  }

  showToggle() {
    const view = toggleView(typeof Notification === 'function', this.permission(), this.enabled());
    const b = $('toggle-notify');
    b.textContent = view.label;
    b.title = view.title;
    b.dataset.state = view.state;
    b.setAttribute('aria-pressed', String(view.pressed));
    b.setAttribute('aria-label', view.title);
  }

  /** The only place the browser is asked for the permission: the person's click. */
  async toggleNotify() {
    if (typeof Notification !== 'function') {
      this.ui.toast('This browser cannot show notifications for this page (it needs https or localhost).');
      return;
    }
    let on = !(this.enabled() && Notification.permission === 'granted');
    if (on && Notification.permission === 'default') on = (await Notification.requestPermission()) === 'granted';
    if (on && Notification.permission !== 'granted') {
      on = false;
      this.ui.toast('Notifications are blocked for this page in the browser’s settings.');
    }
    try {
      localStorage.setItem(NOTIFY_KEY, on ? 'on' : 'off');
    } catch {
      /* storage disabled: the choice lasts for this page only */
    }
    this.showToggle();
  }

  alert(id, what, looking) {
    this.update();
    const ok = shouldNotify({ enabled: this.enabled(), permission: this.permission(), looking, focused: document.hasFocus() });
    if (!ok) return;
    const s = this.ui.store.sessions.get(id);
    const { title, options } = notificationFor(what, s ? sessionTitle(s) : id, id);
    try {
      const n = new Notification(title, options);
      n.onclick = () => {
        window.focus();
        this.ui.actions.navigate(id);
        n.close();
      };
      this.notices.get(id)?.close?.();
      this.notices.set(id, n);
    } catch {
      /* a browser that shows notifications only from a service worker: the title still counts */
    }
  }

  // ---- the session list, the title, the inbox ----

  approvalSessions() {
    return new Set([...this.ui.store.permissions.values()].filter((p) => p.state === 'pending').map((p) => p.sessionId));
  }

  /** The sidebar's sessions in the board's order, each with its state. */
  sorted() {
    const approvals = this.approvalSessions();
    return sortSessions([...this.ui.store.sessions.values()], this.board, approvals)
      .map((s) => ({ session: s, attention: attentionOf(s, this.board, approvals.has(s.id)) }));
  }

  label(attention, session) {
    if (attention === 'needs' && session.status === 'needs_auth') return 'needs sign-in';
    return ATTENTION_LABEL[attention];
  }

  /** The title count, the list's heading, the inbox button: after anything changed. */
  update() {
    const sessions = [...this.ui.store.sessions.values()];
    const approvals = this.approvalSessions();
    const needs = new Set(sessions.filter((s) => attentionOf(s, this.board, approvals.has(s.id)) === 'needs').map((s) => s.id));
    const counted = countedSessions(sessions, { unread: this.board.unread, needs, looking: this.lookingAt() });
    document.title = titleWithCount(BASE_TITLE, counted.length);
    const heading = countsText(attentionCounts(sessions, this.board, approvals));
    $('attention-counts').textContent = heading ?? '';
    const pending = pendingCount(this.ui.store.permissions.values());
    const open = $('open-inbox');
    open.hidden = pending === 0;
    open.textContent = `Approvals ${pending}`;
    open.title = pending === 1 ? '1 approval waits: answer it here' : `${pending} approvals wait: answer them here`;
    if (!$('inbox').hidden) this.fillInbox(false);
  }

  fillInbox(fresh) {
    fillInbox($('inbox-list'), [...this.ui.store.permissions.values()], this.ui.store.sessions, {
      ...this.ui.actions,
      openFromInbox: (id) => {
        this.showInbox(false);
        this.ui.actions.navigate(id);
      },
      // An option that asks what the agent should do instead, chosen here: the session opens
      // in the active pane and its composer asks for that (docs/control-ui.md §4).
      feedbackFor: (id, session) => {
        this.showInbox(false);
        this.ui.actions.navigate(id);
        askFeedback(null, id, session);
      },
    }, fresh);
  }

  showInbox(open) {
    const dialog = $('inbox');
    if (open) {
      if (dialog.hidden) this.focusBefore = document.activeElement;
      dialog.hidden = false;
      this.fillInbox(true);
      $('close-inbox').focus();
    } else if (!dialog.hidden) {
      dialog.hidden = true;
      if (this.focusBefore?.isConnected) this.focusBefore.focus();
      this.focusBefore = null;
    }
  }

  inboxOpen() {
    return !$('inbox').hidden;
  }
}
