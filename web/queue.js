// A session's prompt queue in the Control UI (docs/control-ui.md §6, docs/backend.md §3 "Queue
// and steer"): which route a prompt takes, what the queue shows, how an edit changes a queued
// prompt. Pure functions over plain data (tests/js/queue.test.mjs); the DOM is queueview.js.

/** A turn runs (or waits for an approval): a prompt now would be refused by /prompt. */
export function working(session) {
  return session?.status === 'busy' || session?.status === 'pending';
}

/**
 * Where the composer's prompt goes: `queue` while a turn runs or prompts already wait (the
 * backend keeps them in order and a direct prompt never overtakes them), else `prompt`. The
 * direct route stays the free session's, because a queued prompt is bounded (32 KiB of JSON),
 * which a pasted image exceeds; a 409 from it (a turn started meanwhile) goes to the queue.
 */
export function routeFor(session, queue) {
  return working(session) || (queue?.items?.length ?? 0) > 0 ? 'queue' : 'prompt';
}

/** What the composer's button says for that route. */
export function sendLabel(session, queue) {
  return routeFor(session, queue) === 'queue' ? 'Queue' : 'Send';
}

/** A queue as the backend sends it (`GET /session/{id}/queue`, `queue.updated`), checked. */
export function queueFrom(value) {
  if (!value || typeof value !== 'object' || typeof value.sessionId !== 'string') return null;
  const items = Array.isArray(value.items) ? value.items : [];
  return {
    sessionId: value.sessionId,
    paused: typeof value.paused === 'string' && value.paused ? value.paused : null,
    items: items
      .filter((i) => i && typeof i.id === 'string' && Array.isArray(i.prompt?.parts))
      .map((i) => ({ id: i.id, prompt: { parts: i.prompt.parts }, created: i.created, updated: i.updated })),
  };
}

/** The text a queued prompt sends (its text parts, one per line). */
export function promptText(prompt) {
  return (prompt?.parts ?? []).filter((p) => p?.type === 'text').map((p) => String(p.text ?? '')).join('\n');
}

/** What goes with the text: "📎 src/main.rs", "🖼 dot.png" (an image without a name: "image"). */
export function attachmentLabels(prompt) {
  return (prompt?.parts ?? []).flatMap((p) => {
    if (p?.type === 'file') return [`📎 ${p.path}`];
    if (p?.type === 'image') return [`🖼 ${typeof p.name === 'string' && p.name ? p.name : 'image'}`];
    return [];
  });
}

/**
 * The parts of a queued prompt after the person edited its text: the new text in place of
 * the first text part (the others dropped: the edit showed them as one), files and images
 * kept where they were. Null for an empty text: an empty prompt is cancelled, not sent.
 */
export function editedParts(prompt, text) {
  const trimmed = String(text ?? '').trim();
  if (!trimmed) return null;
  const parts = [];
  let placed = false;
  for (const p of prompt?.parts ?? []) {
    if (p?.type !== 'text') parts.push(p);
    else if (!placed) {
      parts.push({ type: 'text', text: trimmed });
      placed = true;
    }
  }
  if (!placed) parts.unshift({ type: 'text', text: trimmed });
  return parts;
}

/** The rows the queue shows, next to be sent first: {id, place (from 1), text, extras}. */
export function queueRows(queue) {
  return (queue?.items ?? []).map((item, i) => ({
    id: item.id,
    place: i + 1,
    text: promptText(item.prompt),
    extras: attachmentLabels(item.prompt),
    edited: Number.isFinite(item.updated) && Number.isFinite(item.created) && item.updated > item.created,
  }));
}

/** The line above the rows: how many wait and, when paused, why and what to do. */
export function queueHeading(queue, session) {
  const n = queue?.items?.length ?? 0;
  if (n === 0) return null;
  const count = n === 1 ? '1 prompt queued' : `${n} prompts queued`;
  if (queue.paused) return `${count} · paused: ${queue.paused}. Resume sends the next one.`;
  return working(session) ? `${count} · sent one at a time as turns end` : `${count} · sending the next one`;
}

/**
 * The queues the page knows, kept so an older answer cannot undo a newer event: every
 * `queue.updated` bumps its session's generation, and a `GET` started before that is
 * dropped (STYLE.md 10, stale async results by generation).
 */
export class QueueBook {
  constructor() {
    this.queues = new Map();
    this.gens = new Map();
  }

  get(sessionId) {
    return this.queues.get(sessionId) ?? null;
  }

  /** A `queue.updated` event: the newest state there is. Returns its session id. */
  event(value) {
    const q = queueFrom(value);
    if (!q) return null;
    this.queues.set(q.sessionId, q);
    this.gens.set(q.sessionId, (this.gens.get(q.sessionId) ?? 0) + 1);
    return q.sessionId;
  }

  /** A load is about to be sent: its ticket. */
  loading(sessionId) {
    return this.gens.get(sessionId) ?? 0;
  }

  /** A load answered: kept unless an event came since its ticket. */
  loaded(sessionId, ticket, value) {
    if ((this.gens.get(sessionId) ?? 0) !== ticket) return false;
    const q = queueFrom(value);
    if (!q || q.sessionId !== sessionId) return false;
    this.queues.set(sessionId, q);
    return true;
  }

  forget(sessionId) {
    this.queues.delete(sessionId);
  }
}
