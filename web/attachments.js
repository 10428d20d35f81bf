// Files and images in the composer (docs/control-ui.md, "Files and images"). Typing `@` opens
// a picker over the project's files (GET /find/file: fuzzy, .gitignore respected), filtered
// as the person types; Tab or Enter picks one, which becomes a chip; Escape closes the list.
// An image pasted or dropped into a composer is checked (type by its bytes, size) and becomes
// a chip with a thumbnail. The chips belong to the session, like its draft, so a composer
// drawn anew shows them again; they go with the next prompt (attach.js builds its parts).
//
// Listeners sit on the document, as the `/` list's do (commands.js): one list at a time,
// under the composer being typed in.

import { h } from './dom.js';
import { atQuery, imageLabel, imageName, imageRefusal, MAX_FILES, noImagesFor, promptParts, sniffImage, toBase64, withoutAt } from './attach.js';
import { listKey } from './listkey.js';

/** Every composer's text box (panes.js), by its class: `data-testid`s are the tests'. */
const COMPOSER = 'textarea.composer-input';
const SHOWN = 20;

export class Attachments {
  /**
   * `findFiles(query)`: the backend's matches ({files: [{path}]}); `sessionOf(id)`: the
   * session as the Control UI knows it; `toast(text)`: tells the person.
   */
  constructor({ findFiles, sessionOf, toast }) {
    this.findFiles = findFiles;
    this.sessionOf = sessionOf;
    this.toast = toast;
    /** session id → {files: [path], images: [{mimeType, data, name, size}]} */
    this.bySession = new Map();
    this.input = null;
    this.list = null;
    this.items = [];
    this.selected = 0;
    this.asked = 0;
    document.addEventListener('input', (ev) => {
      if (ev.target.matches?.(COMPOSER)) this.update(ev.target);
    });
    // Capturing: Tab and Enter pick before the composer's own Enter sends.
    document.addEventListener('keydown', (ev) => this.key(ev), true);
    document.addEventListener('focusout', (ev) => {
      if (ev.target === this.input) this.close();
    });
    document.addEventListener('paste', (ev) => {
      if (!ev.target.matches?.(COMPOSER)) return;
      const files = [...(ev.clipboardData?.files ?? [])];
      if (!files.length) return;
      ev.preventDefault();
      this.addImages(ev.target.dataset.session, files);
    });
    document.addEventListener('dragover', (ev) => {
      if (ev.target.closest?.('form.composer')) ev.preventDefault();
    });
    document.addEventListener('drop', (ev) => {
      const form = ev.target.closest?.('form.composer');
      const files = [...(ev.dataTransfer?.files ?? [])];
      if (!form || !files.length) return;
      ev.preventDefault();
      this.addImages(form.querySelector(COMPOSER)?.dataset.session, files);
    });
  }

  of(session) {
    let a = this.bySession.get(session);
    if (!a) {
      a = { files: [], images: [] };
      this.bySession.set(session, a);
    }
    return a;
  }

  /** The parts of `session`'s next prompt with `text`. */
  parts(session, text) {
    return promptParts(text, this.bySession.get(session));
  }

  /** After the prompt went: the chips go. */
  clear(session) {
    this.bySession.delete(session);
    this.redraw(session);
  }

  /** Draws `session`'s chips into `el` (a composer's chip row). */
  fill(el, session) {
    const a = this.bySession.get(session) ?? { files: [], images: [] };
    const remove = (kind, i) => () => {
      this.of(session)[kind].splice(i, 1);
      this.redraw(session);
    };
    el.replaceChildren(
      ...a.files.map((path, i) => h('span', { class: 'chip attach-chip', 'data-testid': 'attach-chip', 'data-path': path },
        `📎 ${path}`, h('button', { type: 'button', class: 'chip-x', 'aria-label': `Remove ${path}`, onclick: remove('files', i), text: '×' }))),
      ...a.images.map((img, i) => h('span', { class: 'chip attach-chip image-chip', 'data-testid': 'image-chip' },
        h('img', { class: 'thumb', alt: '', src: `data:${img.mimeType};base64,${img.data}` }),
        imageLabel(img),
        h('button', { type: 'button', class: 'chip-x', 'aria-label': `Remove ${imageLabel(img)}`, onclick: remove('images', i), text: '×' }))),
    );
    el.hidden = !el.children.length;
  }

  redraw(session) {
    for (const el of document.querySelectorAll('.composer-chips')) {
      if (el.dataset.session === session) this.fill(el, session);
    }
  }

  /** Reads pasted or dropped files; images that pass the checks become chips. */
  async addImages(session, files) {
    if (!session) return;
    const why = noImagesFor(this.sessionOf(session));
    if (why) {
      this.toast(`Cannot attach: ${why}.`);
      return;
    }
    for (const file of files) {
      const bytes = new Uint8Array(await file.arrayBuffer());
      const mimeType = sniffImage(bytes);
      const refused = imageRefusal(this.of(session).images, mimeType, bytes.length);
      if (refused) {
        this.toast(`Cannot attach ${file.name || 'that'}: ${refused}.`);
        continue;
      }
      this.of(session).images.push({ mimeType, data: toBase64(bytes), name: imageName(file.name), size: bytes.length });
    }
    this.redraw(session);
  }

  async update(input) {
    const at = atQuery(input.value, input.selectionEnd ?? input.value.length);
    if (!at) {
      this.close();
      return;
    }
    // Answers to older keystrokes are dropped: only the latest query's list is shown.
    const asked = ++this.asked;
    let found;
    try {
      found = await this.findFiles(at.query);
    } catch (e) {
      if (asked === this.asked) this.toast(`Cannot list files: ${e.message}`);
      return;
    }
    if (asked !== this.asked) return;
    const paths = (found?.files ?? []).map((f) => f.path).filter((p) => typeof p === 'string').slice(0, SHOWN);
    if (!paths.length) {
      this.close();
      return;
    }
    this.input = input;
    this.at = at;
    this.items = paths;
    this.selected = 0;
    this.draw();
  }

  draw() {
    const list = h('ul', { class: 'command-list file-list', role: 'listbox', 'aria-label': 'Project files', 'data-testid': 'file-list' },
      this.items.map((path, i) => {
        const li = h('li', {
          class: i === this.selected ? 'command selected' : 'command',
          role: 'option',
          'aria-selected': String(i === this.selected),
          'data-testid': 'file-option',
          'data-path': path,
        }, h('span', { class: 'command-name', text: path }));
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

  /** The chosen file becomes a chip; its `@query` leaves the text. */
  pick() {
    const path = this.items[this.selected];
    const { input, at } = this;
    this.close();
    if (!path || !input) return;
    const session = input.dataset.session;
    const files = this.of(session).files;
    if (files.length >= MAX_FILES) this.toast(`At most ${MAX_FILES} files per prompt.`);
    else if (!files.includes(path)) files.push(path);
    input.value = withoutAt(input.value, at);
    input.setSelectionRange(at.start, at.start);
    // The composer keeps its draft (and its twins in other panes) in step.
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.focus();
    this.redraw(session);
  }

  close() {
    this.asked++;
    this.list?.remove();
    this.list = null;
    this.input = null;
    this.items = [];
    this.selected = 0;
  }
}
