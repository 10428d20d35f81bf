// What a prompt carries beside its text, without the DOM (docs/control-ui.md, "Files and
// images"): the `@` being typed, the image checks the backend makes too (docs/agents.md §11),
// and the prompt's parts. attachments.js draws the picker and the chips with these.

/** The backend's bounds (docs/agents.md §11), checked here first to say so at once. */
export const IMAGE_BYTES = 5 * 1024 * 1024;
export const PROMPT_IMAGE_BYTES = 10 * 1024 * 1024;
/** The most chips of each kind a composer holds (the backend takes 64 parts in all). */
export const MAX_FILES = 20;
export const MAX_IMAGES = 10;
const NAME_CHARS = 200;

/**
 * The `@query` the caret is in, if any: `@` at the start or after whitespace, then no
 * whitespace up to the caret. Answers {start (the index of `@`), end (the caret), query}.
 */
export function atQuery(text, caret) {
  const before = String(text ?? '').slice(0, caret);
  const m = /(^|\s)@(\S*)$/.exec(before);
  if (!m) return null;
  const start = before.length - m[2].length - 1;
  return { start, end: before.length, query: m[2] };
}

/** `text` with the `@query` at {start, end} taken out (the picked file becomes a chip). */
export function withoutAt(text, { start, end }) {
  const s = String(text ?? '');
  return s.slice(0, start) + s.slice(end).replace(/^ /, '');
}

/** The image type of `bytes` (a Uint8Array) by its magic bytes: PNG, JPEG, GIF, WebP. */
export function sniffImage(bytes) {
  const b = bytes ?? new Uint8Array();
  const at = (i, seq) => seq.every((v, k) => b[i + k] === v);
  const ascii = (s) => [...s].map((c) => c.charCodeAt(0));
  if (at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (at(0, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (at(0, ascii('GIF87a')) || at(0, ascii('GIF89a'))) return 'image/gif';
  if (b.length >= 12 && at(0, ascii('RIFF')) && at(8, ascii('WEBP'))) return 'image/webp';
  return null;
}

/**
 * Whether one more image of `size` bytes and type `mime` (null: not an image) may join
 * `images` ([{size}]): null if so, else the reason, for the person.
 */
export function imageRefusal(images, mime, size) {
  if (!mime) return 'only PNG, JPEG, GIF and WebP images can be attached';
  if (size > IMAGE_BYTES) return `an image is limited to ${formatBytes(IMAGE_BYTES)} (this one is ${formatBytes(size)})`;
  if (images.length >= MAX_IMAGES) return `at most ${MAX_IMAGES} images per prompt`;
  const total = images.reduce((n, i) => n + i.size, 0) + size;
  if (total > PROMPT_IMAGE_BYTES) return `the images of a prompt are limited to ${formatBytes(PROMPT_IMAGE_BYTES)} in all`;
  return null;
}

/** Why `session` takes no images at all (the shell agent), else null: an ACP agent's own
 *  answer comes with the prompt (400 `images_not_supported` names it). */
export function noImagesFor(session) {
  return !session?.agent || session.agent === 'shell' ? 'the shell agent takes no images' : null;
}

/** A size for the person: "512 B", "12 KiB", "1.5 MiB". */
export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.ceil(n / 1024)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `bytes` (a Uint8Array) as base64, in slices (a spread of megabytes overflows the stack). */
export function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** A name to send with an image: its file name when it has a fitting one, else none. */
export function imageName(name) {
  const s = typeof name === 'string' ? name : '';
  // Control characters and bidi controls would make the chip read otherwise (the backend refuses them).
  // eslint-disable-next-line no-control-regex
  if (!s || s.length > NAME_CHARS || /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(s)) return undefined;
  return s;
}

/** The chip of an attached or stored image: its name, else its number and type; and its size. */
export function imageLabel({ name, mimeType, size, bytes, index }) {
  const n = Number.isFinite(size) ? size : bytes;
  const what = name || `image ${(index ?? 0) + 1} (${String(mimeType ?? '').replace('image/', '')})`;
  return Number.isFinite(n) ? `${what} · ${formatBytes(n)}` : what;
}

/**
 * The parts of a prompt: the text, then the files ({type: 'file', path}) and the images
 * ({type: 'image', mimeType, data, name?}), in the order they were attached.
 */
export function promptParts(text, { files = [], images = [] } = {}) {
  const parts = [{ type: 'text', text }];
  for (const path of files) parts.push({ type: 'file', path });
  for (const i of images) {
    const part = { type: 'image', mimeType: i.mimeType, data: i.data };
    if (i.name) part.name = i.name;
    parts.push(part);
  }
  return parts;
}
