// Prompt history in every composer (docs/control-ui.md §11): ↑ on the draft's first line shows
// the session's previous prompt, ↓ on its last line the next one and, past the newest, the
// draft as it was; Ctrl+R opens a reverse search above the composer. The rules are
// history.js's; this wiring decides when a key is the history's and moves text in and out.

import { h } from './dom.js';
import { historyOf, keyWalks, newer, older, searchStep, stopWalking, storedPrompts } from './history.js';

/** Every composer's text box (panes.js), by its class: `data-testid`s are the tests'. */
const COMPOSER = 'textarea.composer-input';

export class PromptRecall {
  /** `messagesOf(id)`: the session's messages as the Control UI holds them (or undefined). */
  constructor(messagesOf) {
    this.messagesOf = messagesOf;
    // The walk under way: its composer, the history it walks and the text it last showed.
    this.walk = null;
    // The Ctrl+R search under way: its composer, the history, its state and its row.
    this.search = null;
    // Capturing, after the `/` and `@` lists (constructed before this), which take their keys first.
    document.addEventListener('keydown', (ev) => this.key(ev), true);
    document.addEventListener('input', (ev) => {
      const w = this.walk;
      // Editing a recalled prompt ends the walk; the next ↑ starts anew from the newest.
      if (w && ev.target === w.input && ev.target.value !== w.shown) {
        w.history = stopWalking(w.history);
        this.walk = null;
      }
    });
  }

  historyFor(input) {
    return historyOf(storedPrompts(this.messagesOf(input.dataset.session)));
  }

  key(ev) {
    const input = ev.target;
    if (ev.defaultPrevented || !input.matches?.(COMPOSER) || ev.isComposing) return;
    if (ev.key === 'r' && ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      ev.preventDefault();
      this.openSearch(input);
      return;
    }
    if (ev.ctrlKey || ev.altKey || ev.metaKey || ev.shiftKey) return;
    if (ev.key !== 'ArrowUp' && ev.key !== 'ArrowDown') return;
    const up = ev.key === 'ArrowUp';
    if (!keyWalks(input.value, up ? input.selectionStart : input.selectionEnd, up)) return;
    const walking = this.walk && this.walk.input === input;
    if (!up && !walking) return;
    const history = walking ? this.walk.history : this.historyFor(input);
    const step = up ? older(history, input.value) : newer(history);
    if (!step) return;
    ev.preventDefault();
    this.walk = step.history.walk ? { input, history: step.history, shown: step.text } : null;
    this.show(input, step.text, up);
  }

  /** Puts `text` in the composer, the caret where the next ↑ (start) or ↓ (end) goes on walking. */
  show(input, text, atStart) {
    input.value = text;
    const at = atStart ? 0 : text.length;
    input.setSelectionRange(at, at);
    // The pane's draft follows, as when the person types (panes.js listens to `input`); the
    // walk's own listener sees the text it showed and goes on.
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }

  openSearch(input) {
    if (this.search?.input === input) {
      this.step({ kind: 'again' });
      return;
    }
    this.closeSearch(false);
    const query = h('input', {
      type: 'text', class: 'recall-query', 'aria-label': 'Search earlier prompts',
      'data-testid': 'recall-query', autocomplete: 'off', spellcheck: 'false',
    });
    const found = h('span', { class: 'recall-found', 'data-testid': 'recall-found' });
    const row = h('div', { class: 'recall-search', 'data-testid': 'recall-search' },
      h('span', { class: 'recall-label', text: 'search:' }), query, h('span', { text: '→' }), found);
    this.search = { input, history: this.historyFor(input), state: null, row, query, found };
    query.addEventListener('input', () => this.step({ kind: 'type', query: query.value }));
    query.addEventListener('keydown', (ev) => {
      if (ev.key === 'r' && ev.ctrlKey) {
        ev.preventDefault();
        this.step({ kind: 'again' });
      } else if (ev.key === 'Enter' || ev.key === 'Tab' || (ev.key === 'ArrowRight' && query.selectionStart === query.value.length)) {
        ev.preventDefault();
        this.closeSearch(true);
      } else if (ev.key === 'Escape' || (ev.ctrlKey && (ev.key === 'g' || ev.key === 'c'))) {
        ev.preventDefault();
        this.closeSearch(false);
      }
    });
    query.addEventListener('blur', () => setTimeout(() => { if (this.search?.query === query) this.closeSearch(false); }, 0));
    (input.closest('form') ?? input.parentElement).prepend(row);
    this.step({ kind: 'type', query: '' });
    query.focus();
  }

  step(event) {
    const s = this.search;
    s.state = searchStep(s.history, s.state, event);
    const text = s.state.found === null ? null : s.history.entries[s.state.found];
    s.found.textContent = text === null ? (s.state.query ? 'no match' : 'type to search') : text.split('\n')[0];
    s.found.dataset.match = text === null ? 'false' : 'true';
  }

  /** Ends the search; `take`: its match goes into the composer (not sent). */
  closeSearch(take) {
    const s = this.search;
    if (!s) return;
    this.search = null;
    s.row.remove();
    const text = s.state?.found == null ? null : s.history.entries[s.state.found];
    this.walk = null;
    if (take && text !== null) this.show(s.input, text, false);
    s.input.focus();
  }
}
