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
import { COMPOSER, ComposerList } from './listkey.js';

const SHOWN = 20;

export class Attachments extends ComposerList {
  /**
   * `findFiles(query)`: the backend's matches ({files: [{path}]}); `sessionOf(id)`: the
   * session as the Control UI knows it; `toast(text)`: tells the person.
   */
  constructor({ findFiles, sessionOf, toast }) {
    super();
    this.findFiles = findFiles;
    this.sessionOf = sessionOf;
    this.toast = toast;
    /** session id → {files: [path], images: [{mimeType, data, name, size}]} */
    this.bySession = new Map();
    this.asked = 0;
    this.listAttrs = { class: 'command-list file-list', 'aria-label': 'Project files', 'data-testid': 'file-list' };
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

  option(path) {
    return [{ 'data-testid': 'file-option', 'data-path': path }, [h('span', { class: 'command-name', text: path })]];
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
    // An answer still on its way is for a list that is gone.
    this.asked++;
    super.close();
  }
}
