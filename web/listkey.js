// A popup list under a composer (the agent's `/` commands, commands.js; the `@` file picker,
// attachments.js): one implementation for both. `listKey` is the rule for its keys, pure
// (tests/js/listkey.test.mjs); `ComposerList` draws the list and drives it.

import { h } from './dom.js';

/** Every composer's text box (panes.js), by its class: `data-testid`s are the tests'. */
export const COMPOSER = 'textarea.composer-input';

/**
 * What key event `ev` ({key, shiftKey, isComposing}) does to an open list of `n` items with
 * item `selected` chosen: `{action: 'move', selected}` (↑/↓, wrapping), `{action: 'pick'}`
 * (Tab, or Enter without Shift: the list takes Enter, so it never sends the prompt),
 * `{action: 'close'}` (Escape), or null (not the list's key: the composer gets it). A handler
 * that got an action stops the event.
 */
export function listKey(ev, n, selected) {
  if (!ev || ev.isComposing || !(n > 0)) return null;
  if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
    const from = Number.isInteger(selected) && selected >= 0 && selected < n ? selected : 0;
    return { action: 'move', selected: (from + (ev.key === 'ArrowDown' ? 1 : n - 1)) % n };
  }
  if (ev.key === 'Tab' || (ev.key === 'Enter' && !ev.shiftKey)) return { action: 'pick' };
  if (ev.key === 'Escape') return { action: 'close' };
  return null;
}

/**
 * The list under the composer being typed in; one at a time, its listeners on the document
 * (the composer is redrawn with its pane). A subclass gives `update(input)` (called as the
 * person types: it sets `input`, `items`, `selected` and calls `draw()`, or `close()`),
 * `pick()` (the chosen item, by Tab, Enter or a click), `listAttrs` (the `ul`'s label and test
 * IDs) and `option(item)` (an item's `[attributes, children]` in its `li`).
 */
export class ComposerList {
  constructor() {
    this.input = null;
    this.list = null;
    this.items = [];
    this.selected = 0;
    document.addEventListener('input', (ev) => {
      if (ev.target.matches?.(COMPOSER)) this.update(ev.target);
    });
    // Capturing: Tab and Enter pick before the composer's own Enter sends.
    document.addEventListener('keydown', (ev) => this.key(ev), true);
    document.addEventListener('focusout', (ev) => {
      if (ev.target === this.input) this.close();
    });
  }

  draw() {
    const list = h('ul', { role: 'listbox', ...this.listAttrs },
      this.items.map((item, i) => {
        const [attrs, children] = this.option(item);
        const li = h('li', {
          class: i === this.selected ? 'command selected' : 'command',
          role: 'option',
          'aria-selected': String(i === this.selected),
          ...attrs,
        }, children);
        // Before the composer loses its focus (which would close the list).
        li.addEventListener('mousedown', (ev) => { ev.preventDefault(); this.selected = i; this.pick(); });
        return li;
      }));
    this.list?.remove();
    this.list = list;
    (this.input.closest('form') ?? this.input.parentElement).append(list);
    list.querySelector('.selected')?.scrollIntoView?.({ block: 'nearest' });
  }

  key(ev) {
    if (!this.list || ev.target !== this.input) return;
    const done = listKey(ev, this.items.length, this.selected);
    if (!done) return;
    if (done.action === 'move') {
      this.selected = done.selected;
      this.draw();
    } else if (done.action === 'pick') {
      this.pick();
    } else {
      this.close();
    }
    ev.preventDefault();
    ev.stopPropagation();
  }

  close() {
    this.list?.remove();
    this.list = null;
    this.input = null;
    this.items = [];
    this.selected = 0;
  }
}
