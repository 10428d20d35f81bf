// The operator terminal panel and the browser panel. Both are built once and moved between
// the bottom and right docks, so their contents survive layout changes.

import { h } from './dom.js';
import { normalizeAddress } from './layout.js';
import { Terminal } from './vendor/xterm.mjs';
import { FitAddon } from './vendor/addon-fit.mjs';

function panelFrame(name, title, actions) {
  const dockBtn = h('button', { class: 'icon', type: 'button', 'data-testid': `${name}-dock-toggle` });
  dockBtn.addEventListener('click', () => actions.toggleDock(name));
  const closeBtn = h('button', {
    class: 'icon', type: 'button', title: `Hide the ${name} panel`, 'aria-label': `Hide the ${name} panel`, text: '✕',
  });
  closeBtn.addEventListener('click', () => actions.setPanel(name, false));
  const el = h('section', {
    class: `panel panel-${name}`,
    'data-testid': `${name}-panel`,
    'aria-label': title,
    hidden: true,
    'data-hidden': 'true',
  }, h('header', { class: 'panel-head' }, h('h2', { text: title }), h('div', { class: 'pane-actions' }, dockBtn, closeBtn)));
  return { el, dockBtn };
}

/**
 * The page's own shortcuts (Alt with these key positions, see app.js) pass through the
 * terminal to the page; every other key goes to the shell.
 */
const PAGE_SHORTCUT_CODES = new Set(['Backslash', 'Minus', 'BracketRight', 'BracketLeft', 'Equal', 'KeyB', 'KeyT', 'Slash']);

/** This tab's terminal, kept across reloads of the tab (the server keeps the terminal). */
const TERMINAL_KEY = 'ax-code.terminal';

/**
 * The page's policy lets only `<style>` elements with this load's nonce apply (docs/SECURITY.md,
 * "Control UI styles"). The terminal renderer builds its own `<style>` elements and styles a
 * cell with a 24-bit colour through `setAttribute('style')`, which the policy would refuse:
 * style elements the page's own scripts create get the nonce, and style attributes they set go
 * through the CSSOM. Markup injected into the page gets neither.
 */
function allowScriptStyles() {
  if (document.createElement.axNonce !== undefined) return;
  const nonce = document.querySelector('link[rel="stylesheet"][nonce]')?.nonce ?? '';
  const create = document.createElement.bind(document);
  const wrapped = (name, options) => {
    const el = create(name, options);
    if (nonce && String(name).toLowerCase() === 'style') el.nonce = nonce;
    return el;
  };
  wrapped.axNonce = nonce;
  document.createElement = wrapped;
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function setAttributeViaCssom(name, value) {
    if (String(name).toLowerCase() === 'style' && this.style) {
      this.style.cssText = String(value);
      return;
    }
    setAttribute.call(this, name, value);
  };
}

/**
 * The operator terminal: a shell under a pseudo-terminal on the server (docs/gateway.md §6),
 * drawn by xterm.js. The server keeps the shell and its scrollback when this page reloads or
 * its gateway connection drops; on reconnect the panel attaches again and the scrollback is
 * replayed.
 */
export class TerminalPanel {
  /**
   * `key`: where this tab remembers its terminal's ID (a hub's page keeps one per machine,
   * hubterm.js `terminalKeyOf`, and moves the panel between them with `retarget`).
   */
  constructor(actions, { key = TERMINAL_KEY } = {}) {
    const { el, dockBtn } = panelFrame('terminal', 'Operator terminal', actions);
    this.el = el;
    this.key = key;
    // Bumped by `retarget`: an answer for the terminal of the machine before is not this one's.
    this.generation = 0;
    this.dockBtn = dockBtn;
    this.actions = actions;
    this.id = null;
    this.attached = false;
    this.connected = false;
    this.open = false;
    this.busy = false;
    this.term = null;
    this.screen = h('div', { class: 'terminal-screen', 'data-testid': 'terminal-screen' });
    this.status = h('span', { class: 'terminal-status muted', 'data-testid': 'terminal-status', role: 'status' });
    this.newBtn = h('button', {
      type: 'button', class: 'small', text: 'New', title: 'Start a new shell (ends this one)',
      'aria-label': 'New terminal', 'data-testid': 'terminal-new',
    });
    this.newBtn.addEventListener('click', () => this.restart());
    this.killBtn = h('button', {
      type: 'button', class: 'small danger', text: 'Kill', title: 'End the shell and everything it started',
      'aria-label': 'Kill the terminal', 'data-testid': 'terminal-kill', disabled: true,
    });
    this.killBtn.addEventListener('click', () => this.kill());
    const actionsBox = this.el.querySelector('.pane-actions');
    actionsBox.prepend(this.status, this.newBtn, this.killBtn);
    this.el.append(this.screen);
    // Shown in another tab: a click here takes it back.
    this.screen.addEventListener('pointerdown', () => {
      if (!this.attached) this.connect();
    });
    this.id = this.recall();
  }

  recall() {
    try {
      return sessionStorage.getItem(this.key);
    } catch {
      return null;
    }
  }

  /**
   * Hub only: the panel shows the terminal of another machine from now on, remembered under
   * `key`; the terminal shown before stays on its machine (the hub keeps it) and is attached
   * again when the panel comes back to that machine. The gateway of the new machine reports
   * its state through `onGateway`.
   */
  retarget(key) {
    if (key === this.key) return;
    this.generation += 1;
    this.key = key;
    this.id = this.recall();
    this.attached = false;
    this.connected = false;
    this.busy = false;
    this.term?.reset();
    this.showStatus('');
  }

  /**
   * Hub only: the head names the machine the terminal runs on (`place`, e.g. `Operator terminal
   * on beta`) and offers the hub's machines (`choices`: `{name, label, selected}`); `onPick(name)`
   * when the person picks one.
   */
  showPlace(place, choices, onPick) {
    if (!this.picker) {
      this.picker = h('select', { class: 'mode-select', 'aria-label': 'Machine of the terminal', 'data-testid': 'terminal-machine' });
      this.picker.addEventListener('change', () => this.onPick?.(this.picker.value));
      this.el.querySelector('.pane-actions').prepend(this.picker);
    }
    this.onPick = onPick;
    const title = this.el.querySelector('.panel-head h2');
    title.textContent = place;
    title.dataset.testid = 'terminal-place';
    const wanted = JSON.stringify(choices);
    if (this.picker.dataset.choices !== wanted) {
      this.picker.dataset.choices = wanted;
      this.picker.replaceChildren(...choices.map((c) => h('option', { value: c.name, text: c.label })));
    }
    const chosen = choices.find((c) => c.selected);
    this.picker.value = chosen ? chosen.name : '';
    this.picker.hidden = choices.length === 0;
  }

  /** Creates the renderer the first time the panel is shown (it measures its container). */
  ensureTerm() {
    if (this.term) return;
    allowScriptStyles();
    this.term = new Terminal({
      cursorBlink: true,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
      fontSize: 13,
      scrollback: 5000,
      theme: { background: '#0f1216', foreground: '#d7dde6' },
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.screen);
    this.term.textarea?.setAttribute('data-testid', 'terminal-input');
    this.term.attachCustomKeyEventHandler((ev) => !(ev.altKey && !ev.ctrlKey && !ev.metaKey && PAGE_SHORTCUT_CODES.has(ev.code)));
    this.term.onData((data) => this.send(data));
    this.term.onResize(({ cols, rows }) => this.sendSize(cols, rows));
    new ResizeObserver(() => this.refit()).observe(this.screen);
  }

  refit() {
    if (!this.term || !this.open || this.screen.clientWidth === 0) return;
    try {
      this.fit.fit();
    } catch {
      /* not laid out yet */
    }
  }

  focus() {
    this.term?.focus();
  }

  /** Called when the panel is shown or hidden. */
  setOpen(open) {
    this.open = open;
    if (!open) return;
    this.ensureTerm();
    requestAnimationFrame(() => this.refit());
    this.connect();
  }

  /** The gateway connection's state (from the app). */
  onGateway(state) {
    const was = this.connected;
    this.connected = state === 'connected';
    if (!this.connected) {
      this.attached = false;
      this.showStatus(this.id ? 'reconnecting…' : '');
    } else if (!was) {
      this.connect();
    }
  }

  showStatus(text) {
    this.status.textContent = text;
    this.killBtn.disabled = !this.attached;
  }

  remember(id) {
    this.id = id;
    try {
      if (id) sessionStorage.setItem(this.key, id);
      else sessionStorage.removeItem(this.key);
    } catch {
      /* storage unavailable: the terminal is still found through terminal.list */
    }
  }

  /** Attaches to this tab's terminal (or one nobody watches), else starts one. */
  async connect() {
    if (!this.open || !this.connected || this.attached || this.busy) return;
    this.busy = true;
    const generation = this.generation;
    try {
      const { terminals } = await this.actions.gatewayRequest('terminal.list', {});
      if (generation !== this.generation) return;
      const mine = terminals.find((t) => t.terminalId === this.id)
        ?? terminals.find((t) => !t.attached && t.running);
      if (mine) await this.attach(mine.terminalId);
      else await this.start();
    } catch (e) {
      if (generation === this.generation) this.showStatus(`${e.code ? `${e.code}: ` : ''}${e.message}`);
    } finally {
      if (generation === this.generation) this.busy = false;
    }
  }

  async attach(id) {
    // The replay of the scrollback follows the answer: start from a clean screen.
    this.term.reset();
    const generation = this.generation;
    const res = await this.actions.gatewayRequest('terminal.attach', { terminalId: id });
    if (!this.attachedTo(res, generation)) return;
    // An ended terminal's replay closes with its terminal.exit event.
    if (res.running) this.sendSize(this.term.cols, this.term.rows);
  }

  async start() {
    this.refit();
    this.term.reset();
    const generation = this.generation;
    const res = await this.actions.gatewayRequest('terminal.open', { cols: this.term.cols, rows: this.term.rows });
    this.attachedTo(res, generation);
  }

  /** False when the panel moved to another machine's terminal meanwhile (`retarget`). */
  attachedTo(res, generation) {
    if (generation !== this.generation) return false;
    this.remember(res.terminalId);
    this.attached = true;
    this.showStatus('');
    return true;
  }

  send(data) {
    if (!this.attached) return;
    this.actions.gatewayRequest('terminal.input', { terminalId: this.id, data }).catch((e) => this.showStatus(e.message));
  }

  sendSize(cols, rows) {
    if (!this.attached) return;
    this.actions.gatewayRequest('terminal.resize', { terminalId: this.id, cols, rows }).catch(() => {});
  }

  async kill() {
    if (!this.id) return;
    try {
      await this.actions.gatewayRequest('terminal.close', { terminalId: this.id });
    } catch (e) {
      this.showStatus(e.message);
    }
  }

  async restart() {
    if (!this.connected || this.busy) return;
    this.busy = true;
    try {
      if (this.id) await this.actions.gatewayRequest('terminal.close', { terminalId: this.id }).catch(() => {});
      this.attached = false;
      this.remember(null);
      await this.start();
      this.focus();
    } catch (e) {
      this.showStatus(e.message);
    } finally {
      this.busy = false;
    }
  }

  ended(p) {
    // A hub tells no code when the machine stopped answering (its own line said why).
    const how = p.signal != null ? `: killed by signal ${p.signal}` : p.code != null ? `: exit ${p.code}` : '';
    this.term?.write(`\r\n\x1b[2m[shell ended${how}; New starts another]\x1b[0m\r\n`);
    // Still remembered: a reload shows what it printed; New closes it and starts another.
    this.attached = false;
    this.showStatus('ended');
  }

  onEvent(name, p) {
    if (!p || p.terminalId === undefined || p.terminalId !== this.id || !this.term) return;
    if (name === 'terminal.data') {
      this.term.write(p.data);
    } else if (name === 'terminal.dropped') {
      this.term.write(`\r\n\x1b[2m[${p.droppedBytes} bytes of output not shown]\x1b[0m\r\n`);
    } else if (name === 'terminal.exit') {
      this.ended(p);
    } else if (name === 'terminal.detached') {
      this.attached = false;
      this.showStatus('shown in another tab');
    }
  }
}

export class BrowserPanel {
  constructor(actions) {
    const { el, dockBtn } = panelFrame('browser', 'Browser', actions);
    this.el = el;
    this.dockBtn = dockBtn;
    this.actions = actions;
    // A text field, not type=url: the browser's own check refuses `127.0.0.1:4711/health`
    // before normalizeAddress can add the scheme.
    this.address = h('input', {
      type: 'text', class: 'address', autocapitalize: 'off', autocomplete: 'off', inputmode: 'url', spellcheck: 'false', 'aria-label': 'Address',
      placeholder: 'http://localhost:3000', 'data-testid': 'browser-address',
    });
    this.error = h('span', { class: 'address-error', role: 'alert' });
    const form = h('form', { class: 'address-bar' }, this.address, h('button', { type: 'submit', class: 'primary', text: 'Go' }), this.error);
    form.addEventListener('submit', (ev) => { ev.preventDefault(); this.go(this.address.value.trim()); });
    this.frame = this.makeFrame();
    this.empty = h('p', { class: 'muted browser-empty', text: 'Enter an http or https address.' });
    this.el.append(form, this.empty, this.frame);
    this.url = '';
    this.open = false;
  }

  makeFrame() {
    // Sandboxed without allow-same-origin: the page runs as an opaque origin, apart from this UI.
    return h('iframe', {
      class: 'browser-frame', title: 'Browser panel page', sandbox: 'allow-scripts allow-forms',
      referrerpolicy: 'no-referrer', 'data-testid': 'browser-frame',
    });
  }

  go(text) {
    this.error.textContent = '';
    const href = normalizeAddress(text);
    if (!href) {
      this.error.textContent = 'Only http and https addresses can be shown.';
      return;
    }
    this.show(href);
    this.actions.setBrowserUrl(href);
  }

  show(href) {
    this.url = href;
    this.address.value = href;
    this.load();
  }

  /** Called when the panel is shown or hidden: a hidden panel has no page loaded. */
  setOpen(open) {
    this.open = open;
    this.load();
  }

  load() {
    const href = this.open ? this.url : '';
    this.empty.hidden = Boolean(this.url);
    this.frame.hidden = !href;
    if (href) {
      if (this.frame.getAttribute('src') !== href) this.frame.setAttribute('src', href);
    } else if (this.frame.hasAttribute('src')) {
      // Removing the attribute would leave the page running: a fresh frame unloads it.
      const fresh = this.makeFrame();
      fresh.hidden = true;
      this.frame.replaceWith(fresh);
      this.frame = fresh;
    }
  }
}

/** Put each panel in its dock and reflect open/dock state in attributes the tests read. */
export function placePanels(layout, panels, docks) {
  for (const [name, panel] of Object.entries(panels)) {
    const state = layout.panels[name];
    const dock = docks[state.dock];
    if (panel.el.parentElement !== dock) dock.append(panel.el);
    panel.el.hidden = !state.open;
    panel.setOpen?.(state.open);
    panel.el.dataset.hidden = String(!state.open);
    panel.el.dataset.dock = state.dock;
    const other = state.dock === 'bottom' ? 'right' : 'bottom';
    panel.dockBtn.textContent = state.dock === 'bottom' ? '⇥' : '⤓';
    panel.dockBtn.title = `Dock ${other}`;
    panel.dockBtn.setAttribute('aria-label', `Dock the ${name} panel ${other}`);
  }
  for (const [name, dock] of Object.entries(docks)) {
    const visible = [...dock.children].some((c) => !c.hidden);
    dock.hidden = !visible;
    dock.dataset.dock = name;
  }
}
