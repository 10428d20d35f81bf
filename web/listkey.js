// The keys of a popup list under a composer (the agent's `/` commands, commands.js; the `@`
// file picker, attachments.js): one rule for both, pure (tests/js/listkey.test.mjs).

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
