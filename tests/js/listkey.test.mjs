// Unit tests of the popup lists' keys (web/listkey.js), shared by the `/` command list and
// the `@` file picker. Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { listKey } from '../../web/listkey.js';

const key = (k, extra = {}) => ({ key: k, shiftKey: false, isComposing: false, ...extra });

test('arrows move the choice and wrap around', () => {
  assert.deepEqual(listKey(key('ArrowDown'), 3, 0), { action: 'move', selected: 1 });
  assert.deepEqual(listKey(key('ArrowDown'), 3, 2), { action: 'move', selected: 0 });
  assert.deepEqual(listKey(key('ArrowUp'), 3, 0), { action: 'move', selected: 2 });
  assert.deepEqual(listKey(key('ArrowUp'), 1, 0), { action: 'move', selected: 0 });
  assert.deepEqual(listKey(key('ArrowDown'), 3, 7), { action: 'move', selected: 1 }, 'a stale choice starts from the top');
});

test('Tab and Enter pick (the list takes Enter: nothing is sent), Escape closes', () => {
  assert.deepEqual(listKey(key('Tab'), 2, 1), { action: 'pick' });
  assert.deepEqual(listKey(key('Enter'), 2, 1), { action: 'pick' });
  assert.deepEqual(listKey(key('Escape'), 2, 1), { action: 'close' });
});

test('every other key, Shift+Enter, composition and an empty list go to the composer', () => {
  assert.equal(listKey(key('a'), 2, 0), null);
  assert.equal(listKey(key('Enter', { shiftKey: true }), 2, 0), null);
  assert.equal(listKey(key('Enter', { isComposing: true }), 2, 0), null);
  assert.equal(listKey(key('ArrowDown'), 0, 0), null);
  assert.equal(listKey(null, 2, 0), null);
});
