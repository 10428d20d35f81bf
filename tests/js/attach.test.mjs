// Unit tests of the composer's files and images without the DOM (web/attach.js).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  IMAGE_BYTES, MAX_IMAGES, PROMPT_IMAGE_BYTES, atQuery, formatBytes, imageLabel, imageName, imageRefusal,
  noImagesFor, promptParts, sniffImage, toBase64, withoutAt,
} from '../../web/attach.js';

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const bytes = (s) => new Uint8Array([...s].map((c) => c.charCodeAt(0)));

test('an @ at the start or after a space, up to the caret, is a file query', () => {
  assert.deepEqual(atQuery('@src/ma', 7), { start: 0, end: 7, query: 'src/ma' });
  assert.deepEqual(atQuery('look at @ma please', 11), { start: 8, end: 11, query: 'ma' });
  assert.deepEqual(atQuery('see @', 5), { start: 4, end: 5, query: '' });
  assert.equal(atQuery('mail me@example.com', 19), null, 'an @ inside a word is not one');
  assert.equal(atQuery('@src done', 9), null, 'the caret left the query');
  assert.equal(atQuery('', 0), null);
});

test('a picked file leaves the text without its @query', () => {
  const text = 'look at @ma please';
  assert.equal(withoutAt(text, atQuery(text, 11)), 'look at please');
  assert.equal(withoutAt('@ma', { start: 0, end: 3 }), '');
});

test('images are known by their bytes, never by their name', () => {
  assert.equal(sniffImage(PNG), 'image/png');
  assert.equal(sniffImage(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), 'image/jpeg');
  assert.equal(sniffImage(bytes('GIF89a..')), 'image/gif');
  assert.equal(sniffImage(bytes('RIFF\0\0\0\0WEBPVP8 ')), 'image/webp');
  assert.equal(sniffImage(bytes('RIFF\0\0\0\0WAVEfmt ')), null);
  assert.equal(sniffImage(bytes('<svg xmlns="http://www.w3.org/2000/svg"/>')), null);
  assert.equal(sniffImage(new Uint8Array()), null);
});

test('the bounds of one image and of a prompt are checked before sending', () => {
  assert.equal(imageRefusal([], 'image/png', 100), null);
  assert.match(imageRefusal([], null, 100), /only PNG, JPEG, GIF and WebP/);
  assert.match(imageRefusal([], 'image/png', IMAGE_BYTES + 1), /limited to 5\.0 MiB/);
  const four = [{ size: 4 * 1024 * 1024 }, { size: 4 * 1024 * 1024 }];
  assert.match(imageRefusal(four, 'image/png', 3 * 1024 * 1024), /in all/);
  assert.equal(imageRefusal(four, 'image/png', PROMPT_IMAGE_BYTES - 8 * 1024 * 1024), null);
  const many = Array.from({ length: MAX_IMAGES }, () => ({ size: 1 }));
  assert.match(imageRefusal(many, 'image/png', 1), /at most 10 images/);
  assert.equal(noImagesFor({ agent: 'shell' }), 'the shell agent takes no images');
  assert.equal(noImagesFor({ agent: 'claude' }), null);
});

test('base64 matches the platform, also beyond one slice', () => {
  const big = new Uint8Array(0x8000 * 2 + 5).map((_, i) => i % 251);
  assert.equal(toBase64(big), Buffer.from(big).toString('base64'));
  assert.equal(toBase64(PNG), Buffer.from(PNG).toString('base64'));
});

test('names and labels', () => {
  assert.equal(imageName('shot.png'), 'shot.png');
  assert.equal(imageName('a\u202eb.png'), undefined, 'a bidi override is no name');
  assert.equal(imageName('x'.repeat(201)), undefined);
  assert.equal(imageName(''), undefined);
  assert.equal(imageLabel({ name: 'shot.png', size: 2048 }), 'shot.png · 2 KiB');
  assert.equal(imageLabel({ index: 1, mimeType: 'image/png', bytes: 10 }), 'image 2 (png) · 10 B');
  assert.equal(formatBytes(3 * 1024 * 1024 / 2), '1.5 MiB');
});

test('a prompt is its text, then its files, then its images', () => {
  assert.deepEqual(promptParts('hi'), [{ type: 'text', text: 'hi' }]);
  assert.deepEqual(promptParts('hi', {
    files: ['src/a.rs'],
    images: [{ mimeType: 'image/png', data: 'iVBO', name: 'a.png', size: 3 }, { mimeType: 'image/gif', data: 'R0lG', size: 3 }],
  }), [
    { type: 'text', text: 'hi' },
    { type: 'file', path: 'src/a.rs' },
    { type: 'image', mimeType: 'image/png', data: 'iVBO', name: 'a.png' },
    { type: 'image', mimeType: 'image/gif', data: 'R0lG' },
  ]);
});
