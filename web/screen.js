// The Control UI's side of the screen tool beyond v1 (docs/gateway.md §3 and §5): the layout
// revision and its `ui.layout.report`, `expectedRevision`, `apply-layout` (presets and the
// layouts the person saves by name here) and short-lived annotations.

import { h } from './dom.js';
import { arrange, layoutReport, presetSpec, sanitizeSpec, savedSpec } from './layout.js';

/** The person's saved layouts, by name, for every tab of this origin. */
const SAVED_KEY = 'ax-code.saved-layouts.v1';
const MAX_SAVED = 20;
const MAX_NAME = 40;

const ignored = (reason, extra = {}) => ({ outcome: 'ignored', reason, ...extra });

export class ScreenSide {
  /**
   * @param {object} app  the Control UI (app.js): layout, gateway, personBusy, setLayout, toast,
   *                      and its views: paneViews, sessionItems, sidebarHidden(), the panels
   */
  constructor(app) {
    this.app = app;
    this.revision = 0;
    this.shape = null;
    this.sent = false;
    this.notes = [];
    // The annotation elements on the page now.
    this.placed = [];
    this.timer = null;
    this.dismiss = null;
  }

  // ---- revision and reports ----

  /**
   * Counts a change of the arrangement (what `layoutReport` shows) as a new revision and tells
   * the gateway; called after every save of the layout, so a command's acknowledgement, sent
   * after it, always follows the report of what it did.
   */
  report() {
    const shape = JSON.stringify(layoutReport(this.app.layout, 0));
    if (shape !== this.shape) {
      this.shape = shape;
      this.revision += 1;
      this.sent = false;
    }
    // A hub's page reports to no gateway (its gateway is a machine's terminal: docs/hub.md §4).
    if (!this.sent && !this.app.hub && this.app.gateway?.connId) {
      this.sent = true;
      this.app.gateway.request('ui.layout.report', layoutReport(this.app.layout, this.revision)).catch(() => {
        this.sent = false;
      });
    }
  }

  /** A (re)connected gateway has no report of this tab yet. */
  connected() {
    this.sent = false;
    this.report();
  }

  /**
   * The v2 part of a command: a stale `expectedRevision` is refused with the current revision;
   * `apply-layout`, `annotate` and `annotations-clear` are handled here. Null: a v1 command
   * for app.js.
   */
  handle(payload) {
    this.report();
    const expected = payload?.expectedRevision;
    if (Number.isInteger(expected) && expected !== this.revision) {
      return ignored(`stale revision: expected ${expected}, current ${this.revision}`);
    }
    const command = payload?.command;
    switch (command?.kind) {
      case 'apply-layout':
        return this.applyLayout(command);
      case 'annotate':
        return this.annotate(command);
      case 'annotations-clear':
        this.clear();
        return { outcome: 'applied' };
      default:
        return null;
    }
  }

  // ---- apply-layout and saved layouts ----

  applyLayout(command) {
    let spec;
    if (typeof command.name === 'string') {
      spec = this.saved()[command.name];
      if (!spec) return ignored(`no saved layout named “${command.name}”`);
    } else {
      spec = presetSpec(this.app.layout, command.preset, command.sessions);
      if (spec.error) return ignored(spec.error);
    }
    return this.applySpec(spec, `Agent: layout ${command.preset ?? `“${command.name}”`}`);
  }

  /** Applies `spec` under human priority: a pane the person is using is left as it is. */
  applySpec(spec, what) {
    const using = (pane) => this.app.personBusy([pane], [pane]);
    const r = arrange(this.app.layout, spec, using);
    if (r.layout !== this.app.layout) this.app.setLayout(r.layout);
    const kept = r.notApplied.length ? ` — ${r.notApplied.length} pane(s) left as they are` : '';
    this.app.toast(`${what}${r.outcome === 'ignored' ? ` — ignored (${r.reason})` : kept}`);
    const out = { outcome: r.outcome, reason: r.reason };
    if (r.notApplied.length) out.notApplied = r.notApplied;
    return out;
  }

  saved() {
    try {
      const raw = JSON.parse(localStorage.getItem(SAVED_KEY) ?? '{}');
      const out = {};
      for (const [name, spec] of Object.entries(raw ?? {})) {
        const ok = sanitizeSpec(spec);
        if (ok && name.length > 0 && name.length <= MAX_NAME) out[name] = ok;
      }
      return out;
    } catch {
      return {};
    }
  }

  store(all) {
    try {
      localStorage.setItem(SAVED_KEY, JSON.stringify(all));
    } catch {
      this.app.toast('Could not save the layouts: storage is full or disabled.');
    }
    this.renderSaved();
  }

  /** The person's save / rename / delete of named layouts, in the sidebar. */
  renderSaved() {
    const box = document.getElementById('saved-layouts');
    if (!box) return;
    const input = h('input', { type: 'text', maxlength: String(MAX_NAME), placeholder: 'Layout name', 'aria-label': 'Layout name', 'data-testid': 'layout-name' });
    const name = () => input.value.trim();
    const save = h('button', { type: 'button', class: 'small', 'data-testid': 'layout-save', text: 'Save layout' });
    save.addEventListener('click', () => {
      const all = this.saved();
      if (!name()) return this.app.toast('Name the layout first.');
      if (!(name() in all) && Object.keys(all).length >= MAX_SAVED) return this.app.toast(`At most ${MAX_SAVED} saved layouts.`);
      all[name()] = savedSpec(this.app.layout);
      this.store(all);
    });
    const rows = Object.keys(this.saved()).sort().map((n) => {
      const act = (label, testid, fn) => {
        const b = h('button', { type: 'button', class: 'small ghost', 'data-testid': testid, text: label });
        b.addEventListener('click', fn);
        return b;
      };
      return h('li', { class: 'saved-layout', 'data-testid': 'saved-layout', 'data-name': n },
        h('span', { class: 'saved-layout-name', text: n }),
        act('Apply', 'saved-layout-apply', () => {
          const spec = this.saved()[n];
          if (spec) this.applyOwn(spec);
        }),
        act('Rename', 'saved-layout-rename', () => {
          const all = this.saved();
          const to = name();
          if (!to || to === n) return this.app.toast('Type the new name in the field first.');
          if (to in all) return this.app.toast(`A layout named “${to}” exists.`);
          all[to] = all[n];
          delete all[n];
          this.store(all);
        }),
        act('Delete', 'saved-layout-delete', () => {
          const all = this.saved();
          delete all[n];
          this.store(all);
        }));
    });
    box.replaceChildren(h('h3', { text: 'Layouts' }), h('div', { class: 'saved-layout-new' }, input, save), h('ul', { class: 'saved-layout-list' }, rows));
  }

  /** The person applies a saved layout: their own act, no human-priority check. */
  applyOwn(spec) {
    const r = arrange(this.app.layout, spec, () => null);
    if (r.layout !== this.app.layout) this.app.setLayout(r.layout);
  }

  // ---- annotations ----

  /** Where an annotation goes: a header, never over a transcript, approval or composer. */
  hostOf(a) {
    if (typeof a.paneId === 'string') {
      return this.app.paneViews.get(a.paneId)?.head ?? null;
    }
    if (typeof a.panel === 'string') {
      const el = { terminal: this.app.terminal, browser: this.app.browser }[a.panel]?.el;
      return el?.isConnected && !el.hidden ? el.querySelector('.panel-head') : null;
    }
    if (typeof a.sessionKey === 'string') {
      if (this.app.sidebarHidden()) return null;
      return this.app.sessionItems.get(a.sessionKey) ?? null;
    }
    return null;
  }

  annotate(command) {
    const list = Array.isArray(command.annotations) ? command.annotations.slice(0, 4) : [];
    const ttl = Number.isInteger(command.ttlSeconds) ? Math.min(Math.max(command.ttlSeconds, 3), 120) : 10;
    this.clear();
    const notApplied = [];
    const placed = [];
    for (const a of list) {
      if (this.hostOf(a)) placed.push(a);
      else {
        const where = a.paneId ? `pane ${a.paneId}` : a.panel ? `the ${a.panel} panel` : `the sidebar row of ${a.sessionKey}`;
        notApplied.push({ ...(a.paneId ? { paneId: a.paneId } : {}), reason: `${where} is not shown` });
      }
    }
    if (placed.length === 0) return ignored('none of the annotated parts is shown', { notApplied });
    this.notes = placed;
    this.timer = setTimeout(() => this.clear(), ttl * 1000);
    // The person's first click or key ends them (their own input only, never a script's).
    this.dismiss = (ev) => {
      if (ev.isTrusted) this.clear();
    };
    for (const type of ['pointerdown', 'keydown']) document.addEventListener(type, this.dismiss, { capture: true });
    this.place();
    const out = { outcome: 'applied' };
    if (notApplied.length) out.notApplied = notApplied;
    return out;
  }

  /** Puts the annotations (back) in place; a re-render of the panes or sidebar drops them. */
  place() {
    for (const el of this.placed) el.remove();
    this.placed = [];
    for (const a of this.notes) {
      const host = this.hostOf(a);
      if (!host) continue;
      const note = h('span', {
        class: `annotation${a.arrow ? ' annotation-arrow' : ''}`,
        'data-testid': 'annotation',
        role: 'note',
        text: a.arrow ? `⟵ ${a.text}` : a.text,
      });
      host.append(note);
      this.placed.push(note);
    }
  }

  clear() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.dismiss) {
      for (const type of ['pointerdown', 'keydown']) document.removeEventListener(type, this.dismiss, { capture: true });
      this.dismiss = null;
    }
    this.notes = [];
    this.place();
  }
}
