// An agent's Markdown in the page, without ever building HTML from agent text.
//
// The server parses it (`POST /markdown` of the backend, or of the hub: the same renderer,
// crates/markdown; pulldown-cmark, the TUI's parser too) into a tree
// of plain data; `buildMarkdown` makes one element per node from a fixed list of tags with
// createElement and puts every string in with textContent. Raw HTML arrives as text. A link
// is an <a> only for http, https or mailto (checked here again), opens in a new tab with
// rel=noopener noreferrer; an image is never loaded, it shows as `[image: alt text]` (a link when
// its target is safe). See docs/control-ui.md.
//
// While a text part streams it is shown as the Markdown of what was parsed so far followed by
// the rest as plain text; the part is parsed again at most RENDER_EVERY_MS apart, and once
// more after its last chunk.

import { h } from './dom.js';
import { copyButton } from './copy.js';

/** At most this often per text part while it streams (4 per second). */
export const RENDER_EVERY_MS = 250;
/** The server's bound (crates/markdown); longer text stays plain. */
const MAX_TEXT_BYTES = 256 * 1024;
/** Parsed texts kept for re-renders (a transcript is drawn again on many events). */
const CACHE_SIZE = 300;
/** Requests in flight at once (a reload asks for every text part of a transcript). */
const MAX_IN_FLIGHT = 4;
/** Containers deeper than this in an answer are flattened (the server flattens at 32). */
const MAX_DEPTH = 64;

/** Whether `href` may be a link target: http, https or mailto, parsed by the browser. */
export function safeHref(href) {
  if (typeof href !== 'string' || href.length > 8192) return null;
  try {
    const url = new URL(href);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

const INLINE = { em: 'em', strong: 'strong', del: 'del' };
const BLOCK = { p: 'p', quote: 'blockquote', cell: 'td' };

/** Elements for `nodes` (an answer of POST /markdown), appended to `parent`. */
export function buildMarkdown(nodes, parent, depth = 0) {
  if (!Array.isArray(nodes)) return parent;
  for (const n of nodes) {
    const el = buildNode(n, depth);
    if (el) parent.append(el);
  }
  return parent;
}

function text(value) {
  return typeof value === 'string' ? value : '';
}

function container(tag, n, depth) {
  const el = document.createElement(tag);
  buildMarkdown(n.c, el, depth + 1);
  return el;
}

function buildNode(n, depth) {
  if (n === null || typeof n !== 'object') return null;
  if (depth > MAX_DEPTH) return document.createTextNode(plainText([n]));
  switch (n.t) {
    case 'text':
      return document.createTextNode(text(n.text));
    case 'code':
      return h('code', { class: 'md-code', text: text(n.text) });
    case 'br':
      return document.createElement('br');
    case 'em':
    case 'strong':
    case 'del':
      return container(INLINE[n.t], n, depth);
    case 'p':
    case 'quote':
    case 'cell':
      return container(BLOCK[n.t], n, depth);
    case 'heading': {
      const level = Number.isInteger(n.level) ? Math.min(Math.max(n.level, 1), 6) : 6;
      // Agent headings sit inside a transcript: shown two levels down, never as the page's h1.
      const el = container(`h${Math.min(level + 2, 6)}`, n, depth);
      el.className = `md-h md-h${level}`;
      return el;
    }
    case 'link': {
      const href = safeHref(n.href);
      if (!href) {
        const span = container('span', n, depth);
        span.className = 'md-link-off';
        span.title = 'Link not followed: only http, https and mailto links are';
        return span;
      }
      const a = container('a', n, depth);
      a.href = href;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      a.referrerPolicy = 'no-referrer';
      a.title = text(n.title) || href;
      return a;
    }
    case 'image': {
      // Never an <img>: nothing is loaded from an address the agent wrote.
      const label = `[image: ${text(n.alt) || 'no description'}]`;
      const href = safeHref(n.href);
      if (!href) return h('span', { class: 'md-image', title: 'Image not loaded', text: label });
      return h('a', {
        class: 'md-image', href, target: '_blank', rel: 'noopener noreferrer', referrerpolicy: 'no-referrer',
        title: `Image not loaded: ${href}`, text: label,
      });
    }
    case 'rule':
      return document.createElement('hr');
    case 'code_block': {
      const pre = h('pre', { class: 'md-pre' });
      const code = h('code', { text: text(n.text) });
      if (typeof n.lang === 'string' && n.lang) {
        pre.dataset.lang = n.lang.slice(0, 32);
        pre.title = n.lang.slice(0, 32);
      }
      pre.append(code);
      // The button sits beside the block, so the block's text stays the code alone.
      return h('div', { class: 'md-code-wrap' }, pre, copyButton(() => text(n.text), 'code'));
    }
    case 'html_block':
      return h('pre', { class: 'md-pre md-html', text: text(n.text) });
    case 'list': {
      const ordered = Number.isInteger(n.start);
      const el = container(ordered ? 'ol' : 'ul', n, depth);
      if (ordered && n.start !== 1) el.start = n.start;
      return el;
    }
    case 'item': {
      const li = document.createElement('li');
      if (typeof n.checked === 'boolean') {
        li.className = 'md-task';
        li.append(h('span', { class: `md-check${n.checked ? ' done' : ''}`, 'aria-label': n.checked ? 'done' : 'not done', text: n.checked ? '☑' : '☐' }), ' ');
      }
      buildMarkdown(n.c, li, depth + 1);
      return li;
    }
    case 'table': {
      const align = Array.isArray(n.align) ? n.align : [];
      const table = h('table', { class: 'md-table' });
      const body = h('tbody');
      for (const row of Array.isArray(n.c) ? n.c : []) {
        if (row?.t !== 'row') continue;
        const tr = document.createElement('tr');
        (Array.isArray(row.c) ? row.c : []).forEach((cell, i) => {
          const td = document.createElement(row.head ? 'th' : 'td');
          if (['left', 'center', 'right'].includes(align[i])) td.style.textAlign = align[i];
          buildMarkdown(cell?.c, td, depth + 2);
          tr.append(td);
        });
        if (row.head) table.append(h('thead', {}, tr));
        else body.append(tr);
      }
      table.append(body);
      return h('div', { class: 'md-table-wrap' }, table);
    }
    default:
      // An unknown kind: its text, nothing else.
      return document.createTextNode(plainText([n]));
  }
}

/** The text of nodes without markup. */
export function plainText(nodes) {
  let out = '';
  const walk = (list, depth) => {
    if (!Array.isArray(list) || depth > MAX_DEPTH) return;
    for (const n of list) {
      if (!n || typeof n !== 'object') continue;
      if (typeof n.text === 'string') out += n.text;
      else if (typeof n.alt === 'string') out += n.alt;
      walk(n.c, depth + 1);
    }
  };
  walk(nodes, 0);
  return out;
}

/**
 * Parses agent text through the backend, cached and throttled. `element(key, text)` gives the
 * element to show for a text part now; when a parse that it asked for arrives, `onRendered()`
 * is called so the caller can draw again.
 */
export class MarkdownRenderer {
  /**
   * @param {(text: string) => Promise<{blocks: object[]}>} parse  POST /markdown
   * @param {(key: string) => void} onRendered  called with the part's key
   */
  constructor(parse, onRendered) {
    this.parse = parse;
    this.onRendered = onRendered;
    this.cache = new Map(); // text -> blocks (insertion order = age)
    this.latest = new Map(); // part key -> {text, blocks}: its last parsed text
    this.timers = new Map(); // part key -> {due, text}
    this.lastAsked = new Map(); // part key -> time of its last request
    this.queue = [];
    this.inFlight = 0;
    this.failed = false;
    this.refused = new Set(); // texts the backend would not parse: not asked again
  }

  remember(text, blocks) {
    this.cache.delete(text);
    this.cache.set(text, blocks);
    while (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value);
  }

  /** The element showing `text`, the text part known as `key` (message id and index). */
  element(key, text) {
    const box = h('div', { class: 'part-text md', 'data-testid': 'agent-text' });
    const cached = this.cache.get(text);
    if (cached) {
      this.remember(text, cached);
      this.latest.set(key, { text, blocks: cached });
      box.dataset.rendered = 'full';
      return buildMarkdown(cached, box);
    }
    const prev = this.latest.get(key);
    if (prev && text.startsWith(prev.text)) {
      // Streaming: the Markdown of what was parsed, then the new chunks as plain text.
      buildMarkdown(prev.blocks, box);
      box.append(h('span', { class: 'md-tail', text: text.slice(prev.text.length) }));
      box.dataset.rendered = 'partial';
    } else {
      box.classList.add('md-plain');
      box.textContent = text;
      box.dataset.rendered = 'plain';
    }
    if (!this.failed && !this.refused.has(text) && new Blob([text]).size <= MAX_TEXT_BYTES) this.schedule(key, text);
    // Never to be parsed (too long, or no parser): plain text for good.
    else if (box.dataset.rendered === 'plain') box.dataset.rendered = 'text';
    return box;
  }

  schedule(key, text) {
    const pending = this.timers.get(key);
    if (pending) {
      pending.text = text; // the newest text is parsed when the timer fires
      return;
    }
    const since = performance.now() - (this.lastAsked.get(key) ?? -Infinity);
    const wait = Math.max(0, RENDER_EVERY_MS - since);
    const entry = { text };
    this.timers.set(key, entry);
    setTimeout(() => {
      this.timers.delete(key);
      this.lastAsked.set(key, performance.now());
      this.enqueue(key, entry.text);
    }, wait);
  }

  enqueue(key, text) {
    this.queue.push({ key, text });
    this.pump();
  }

  pump() {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length) {
      const { key, text } = this.queue.shift();
      if (this.cache.has(text)) continue;
      this.inFlight += 1;
      this.parse(text)
        .then((tree) => {
          const blocks = Array.isArray(tree?.blocks) ? tree.blocks : [];
          this.remember(text, blocks);
          const prev = this.latest.get(key);
          if (!prev || text.length >= prev.text.length) this.latest.set(key, { text, blocks });
          this.onRendered(key);
        })
        .catch((e) => {
          // A backend without the route, or one that refuses: plain text from now on.
          if (e?.status === 404 || e?.status === 405) this.failed = true;
          else if (e?.status >= 400 && e?.status < 500) {
            this.refused.add(text);
            if (this.refused.size > CACHE_SIZE) this.refused.delete(this.refused.values().next().value);
          }
        })
        .finally(() => {
          this.inFlight -= 1;
          this.pump();
        });
    }
  }
}
