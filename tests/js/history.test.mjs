// Unit tests of the Control UI's prompt history (web/history.js): the walk gives the draft
// back, repeats and bounds, the reverse search, and which ↑/↓ belong to it.
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_ENTRIES, MAX_ENTRY_CHARS, historyOf, keyWalks, newer, older, remember, search, searchStep,
  stopWalking, storedPrompts,
} from '../../web/history.js';

test('stored prompts are the user messages\' text parts, oldest first', () => {
  const messages = [
    { role: 'user', parts: [{ type: 'text', text: 'fix it' }, { type: 'image', index: 0 }, { type: 'text', text: 'please' }] },
    { role: 'assistant', parts: [{ type: 'text', text: 'done' }] },
    { role: 'user', parts: [{ type: 'image', index: 0 }] },
    { role: 'user', parts: [{ type: 'text', text: 'again' }] },
  ];
  assert.deepEqual(storedPrompts(messages), ['fix it\nplease', 'again']);
  assert.deepEqual(storedPrompts(null), []);
});

test('a walk goes back and forth and gives the draft back past the newest', () => {
  let h = historyOf(['one', 'two', 'three']);
  let step = older(h, 'my draft');
  assert.equal(step.text, 'three');
  step = older(step.history, 'ignored');
  assert.equal(step.text, 'two');
  step = older(step.history);
  assert.equal(step.text, 'one');
  assert.equal(older(step.history), null, 'nothing older than the oldest');
  step = newer(step.history);
  assert.equal(step.text, 'two');
  step = newer(newer(step.history).history);
  assert.equal(step.text, 'my draft');
  assert.equal(step.history.walk, null, 'the walk ended');
  assert.equal(newer(step.history), null);
  h = stopWalking(older(h, 'x').history);
  assert.equal(older(h, 'y').text, 'three', 'a new walk starts at the newest');
});

test('repeats in a row are kept once; blank and huge prompts are not kept; the oldest go first', () => {
  let h = historyOf(['a', 'a', ' ', 'b', 'a']);
  assert.deepEqual(h.entries, ['a', 'b', 'a']);
  h = remember(h, 'x'.repeat(MAX_ENTRY_CHARS + 1));
  assert.deepEqual(h.entries, ['a', 'b', 'a']);
  const many = historyOf(Array.from({ length: MAX_ENTRIES + 5 }, (_, i) => `p${i}`));
  assert.equal(many.entries.length, MAX_ENTRIES);
  assert.equal(many.entries[0], 'p5');
  const sent = remember(older(h, 'd').history, 'c');
  assert.equal(sent.walk, null, 'sending ends a walk');
  assert.equal(older(sent, '').text, 'c');
});

test('the reverse search finds the newest match, ignoring case, and steps older', () => {
  const h = historyOf(['Build the parser', 'run tests', 'build docs', 'deploy']);
  assert.equal(search(h, 'BUILD'), 2);
  assert.equal(search(h, 'build', 2), 0);
  assert.equal(search(h, ''), null);
  assert.equal(search(h, 'nothing'), null);
  let s = searchStep(h, null, { kind: 'type', query: 'build' });
  assert.deepEqual(s, { query: 'build', found: 2 });
  s = searchStep(h, s, { kind: 'again' });
  assert.deepEqual(s, { query: 'build', found: 0 });
  s = searchStep(h, s, { kind: 'again' });
  assert.deepEqual(s, { query: 'build', found: 0 }, 'no older match keeps the one shown');
  s = searchStep(h, s, { kind: 'type', query: 'dep' });
  assert.deepEqual(s, { query: 'dep', found: 3 });
});

test('up belongs to the history on the first line, down on the last', () => {
  assert.equal(keyWalks('one line', 3, true), true);
  assert.equal(keyWalks('one line', 3, false), true);
  assert.equal(keyWalks('first\nsecond', 8, true), false);
  assert.equal(keyWalks('first\nsecond', 8, false), true);
  assert.equal(keyWalks('first\nsecond', 2, false), false);
  assert.equal(keyWalks('first\nsecond', 2, true), true);
  assert.equal(keyWalks('', 99, true), true);
});
