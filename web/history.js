// A session's prompt history for the Control UI's composer (docs/control-ui.md, "Prompt
// history"): ↑/↓ walk it, Ctrl+R searches it backwards, by the same rules as the TUI's
// (docs/tui.md §3a). Pure: a history is a plain object, every function returns a new one, so
// the composer's wiring decides when a key belongs here and this module only answers what to
// show.

/** Most entries kept per session; the oldest go first. */
export const MAX_ENTRIES = 1000;
/** Longest entry kept, in UTF-16 code units (about 64 KiB of text); a longer prompt is not recalled. */
export const MAX_ENTRY_CHARS = 64 * 1024;

/** An empty history: `entries` oldest first, `walk` the walk under way (or null). */
export function emptyHistory() {
  return { entries: [], walk: null };
}

/**
 * The person's prompts among a session's stored `messages` (the API's shape), oldest first:
 * the text parts of each user message joined as they were sent.
 */
export function storedPrompts(messages) {
  const out = [];
  for (const m of messages || []) {
    if (!m || m.role !== 'user' || !Array.isArray(m.parts)) continue;
    const texts = m.parts.filter((p) => p && p.type === 'text' && typeof p.text === 'string').map((p) => p.text);
    if (texts.length) out.push(texts.join('\n'));
  }
  return out;
}

/** A history of `prompts`, oldest first (repeats in a row kept once, bounded). */
export function historyOf(prompts) {
  let h = emptyHistory();
  for (const p of prompts) h = remember(h, p);
  return h;
}

/** `h` with a sent `prompt` as its newest entry; any walk ends. */
export function remember(h, prompt) {
  const entries = h.entries;
  if (typeof prompt !== 'string' || !prompt.trim() || prompt.length > MAX_ENTRY_CHARS
      || entries[entries.length - 1] === prompt) {
    return { entries, walk: null };
  }
  const next = entries.length >= MAX_ENTRIES ? entries.slice(entries.length - MAX_ENTRIES + 1) : entries.slice();
  next.push(prompt);
  return { entries: next, walk: null };
}

/**
 * ↑: `{ history, text }` with the entry before the one shown (the newest when a walk starts
 * from `draft`), or null when there is nothing older.
 */
export function older(h, draft) {
  if (!h.walk) {
    if (!h.entries.length) return null;
    const at = h.entries.length - 1;
    return { history: { entries: h.entries, walk: { at, draft: String(draft ?? '') } }, text: h.entries[at] };
  }
  if (h.walk.at === 0) return null;
  const at = h.walk.at - 1;
  return { history: { entries: h.entries, walk: { at, draft: h.walk.draft } }, text: h.entries[at] };
}

/**
 * ↓: `{ history, text }` with the entry after the one shown or, past the newest, the draft
 * the walk began with (and the walk ends); null when no walk is under way.
 */
export function newer(h) {
  if (!h.walk) return null;
  if (h.walk.at + 1 < h.entries.length) {
    const at = h.walk.at + 1;
    return { history: { entries: h.entries, walk: { at, draft: h.walk.draft } }, text: h.entries[at] };
  }
  return { history: { entries: h.entries, walk: null }, text: h.walk.draft };
}

/** `h` without its walk (the person edited the recalled text). */
export function stopWalking(h) {
  return h.walk ? { entries: h.entries, walk: null } : h;
}

/**
 * The index of the newest entry older than `before` (every entry when null) that holds
 * `query`, ignoring case; null when none does or the query is empty.
 */
export function search(h, query, before = null) {
  if (!query) return null;
  const needle = query.toLowerCase();
  const end = before === null ? h.entries.length : Math.min(before, h.entries.length);
  for (let i = end - 1; i >= 0; i--) {
    if (h.entries[i].toLowerCase().includes(needle)) return i;
  }
  return null;
}

/**
 * Where a Ctrl+R search goes after `event`: `{ query, found }` from the `state` before it.
 * `type` (the query changed: look again from the newest) or `again` (Ctrl+R once more: the
 * next older match, keeping the current one when there is none).
 */
export function searchStep(h, state, event) {
  const current = state || { query: '', found: null };
  if (event.kind === 'type') {
    const query = String(event.query ?? '');
    return { query, found: search(h, query) };
  }
  if (event.kind === 'again') {
    const found = search(h, current.query, current.found);
    return { query: current.query, found: found === null ? current.found : found };
  }
  return current;
}

/**
 * Whether ↑ (`up`) or ↓ belongs to the history rather than moving the caret in a
 * multi-line draft: ↑ on the draft's first line, ↓ on its last, as in the TUI.
 */
export function keyWalks(text, caret, up) {
  const at = Math.max(0, Math.min(caret, text.length));
  return up ? !text.slice(0, at).includes('\n') : !text.slice(at).includes('\n');
}
