// The agent's session options in the pane header (docs/control-ui.md, "Config options"):
// one picker per option of `agentState.configOptions` — a select for a select option, a
// checkbox for a boolean — beside the mode picker. A change goes to
// `POST /session/{id}/config`; the agent's answer (its full list) comes back as the session.
// An option of category `mode` is left out: the mode picker already switches it.

import { h } from './dom.js';

/** The pickers for `session`'s config options, or null when its agent offers none. */
export function configPickers(session, setConfig) {
  const options = Array.isArray(session?.agentState?.configOptions) ? session.agentState.configOptions : [];
  const shown = options.filter((o) => typeof o?.id === 'string' && o.category !== 'mode');
  if (!shown.length) return null;
  const box = h('span', { class: 'config-pickers', 'data-testid': 'config-pickers' });
  for (const o of shown) {
    const label = String(o.name || o.id);
    const title = typeof o.description === 'string' ? o.description : label;
    if (o.type === 'boolean') {
      const input = h('input', { type: 'checkbox', 'data-testid': 'config-option', 'data-config': o.id, 'aria-label': label, title });
      input.checked = o.currentValue === true;
      input.addEventListener('change', () => setConfig(session.id, o.id, input.checked));
      box.append(h('label', { class: 'config-option' }, input, h('span', { class: 'muted', text: label })));
    } else if (o.type === 'select' && Array.isArray(o.options) && o.options.length) {
      const select = h('select', { class: 'config-select', 'data-testid': 'config-option', 'data-config': o.id, 'aria-label': label, title },
        o.options.map((c) => {
          const opt = h('option', { value: String(c.value), text: String(c.name || c.value) });
          if (typeof c.description === 'string') opt.title = c.description;
          if (c.value === o.currentValue) opt.selected = true;
          return opt;
        }));
      select.addEventListener('change', () => setConfig(session.id, o.id, select.value));
      box.append(h('label', { class: 'config-option' }, h('span', { class: 'muted', text: label }), select));
    }
  }
  return box.children.length ? box : null;
}

/** Puts the pickers into the pane header `head` (its bar, made if the header has none). */
export function placeConfigPickers(head, session, setConfig) {
  const pickers = configPickers(session, setConfig);
  if (!head || !pickers) return;
  let bar = head.querySelector('.pane-bar');
  if (!bar) {
    bar = h('div', { class: 'pane-bar', 'data-testid': 'session-bar' });
    head.append(bar);
  }
  const mode = bar.querySelector('label.mode');
  if (mode) mode.after(pickers);
  else bar.prepend(pickers);
}
