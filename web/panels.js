// The operator terminal panel and the browser panel. Both are built once and moved between
// the bottom and right docks, so their contents survive layout changes.

import { h } from './dom.js';
import { normalizeAddress } from './layout.js';

const MAX_TERMINAL_TEXT = 256 * 1024;

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

export class TerminalPanel {
  constructor(actions) {
    const { el, dockBtn } = panelFrame('terminal', 'Operator terminal', actions);
    this.el = el;
    this.dockBtn = dockBtn;
    this.actions = actions;
    this.runId = null;
    this.output = h('pre', { class: 'terminal-output', role: 'log', 'aria-live': 'polite', 'data-testid': 'terminal-output' });
    this.input = h('input', {
      class: 'terminal-input', type: 'text', spellcheck: 'false', autocomplete: 'off',
      'aria-label': 'Command', placeholder: 'Command to run in the project directory (sh -c)',
      'data-testid': 'terminal-input',
    });
    this.killBtn = h('button', { type: 'button', class: 'danger', disabled: true, text: 'Kill' });
    this.killBtn.addEventListener('click', () => this.kill());
    const form = h('form', { class: 'terminal-form' }, h('span', { class: 'prompt', text: '$' }), this.input,
      h('button', { type: 'submit', class: 'primary', text: 'Run' }), this.killBtn);
    form.addEventListener('submit', (ev) => { ev.preventDefault(); this.run(); });
    this.el.append(this.output, form);
  }

  append(text, cls) {
    const span = document.createElement('span');
    if (cls) span.className = cls;
    span.textContent = text;
    this.output.append(span);
    // Keep the DOM bounded: drop the oldest spans beyond the limit.
    let total = this.output.textContent.length;
    while (total > MAX_TERMINAL_TEXT && this.output.firstChild) {
      total -= this.output.firstChild.textContent.length;
      this.output.firstChild.remove();
    }
    this.output.scrollTop = this.output.scrollHeight;
  }

  async run() {
    const command = this.input.value.trim();
    if (!command) return;
    this.append(`$ ${command}\n`, 'cmd');
    try {
      const res = await this.actions.gatewayRequest('terminal.run', { command });
      this.runId = res.runId;
      this.input.value = '';
      this.killBtn.disabled = false;
    } catch (e) {
      this.append(`${e.code ? `${e.code}: ` : ''}${e.message}\n`, 'err');
    }
  }

  async kill() {
    try {
      await this.actions.gatewayRequest('terminal.kill', {});
    } catch (e) {
      this.append(`${e.message}\n`, 'err');
    }
  }

  onEvent(name, p) {
    if (name === 'terminal.output' && p.runId === this.runId) {
      this.append(p.data, p.stream === 'stderr' ? 'err' : '');
    } else if (name === 'terminal.exit' && p.runId === this.runId) {
      const how = p.signal !== undefined ? `killed by signal ${p.signal}` : `exit ${p.code}`;
      this.append(`[${how}${p.truncated ? `, ${p.droppedBytes} bytes of output dropped` : ''}]\n`, 'meta');
      this.runId = null;
      this.killBtn.disabled = true;
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
