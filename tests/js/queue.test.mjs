// Unit tests of the prompt queue's rules in the Control UI, without the DOM (web/queue.js).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  QueueBook, attachmentLabels, editedParts, promptText, queueFrom, queueHeading, queueRows, routeFor, sendLabel,
} from '../../web/queue.js';

const item = (id, text, extra = {}) => ({
  id, sessionId: 'ses_a', prompt: { parts: [{ type: 'text', text }] }, created: 10, updated: 10, ...extra,
});
const queue = (items, paused) => ({ sessionId: 'ses_a', items, ...(paused ? { paused } : {}) });

test('a prompt is queued while a turn runs or prompts wait, else sent direct', () => {
  assert.equal(routeFor({ status: 'idle' }, queue([])), 'prompt');
  assert.equal(routeFor({ status: 'idle' }, null), 'prompt', 'a queue not loaded yet holds nothing');
  assert.equal(routeFor({ status: 'busy' }, null), 'queue');
  assert.equal(routeFor({ status: 'pending' }, queue([])), 'queue', 'an approval waits: the turn still runs');
  assert.equal(routeFor({ status: 'idle' }, queue([item('que_1', 'a')], 'the last turn failed')), 'queue',
    'a direct prompt never overtakes what waits, paused or not');
  assert.equal(routeFor({ status: 'needs_auth' }, queue([])), 'prompt');
  assert.equal(sendLabel({ status: 'busy' }, null), 'Queue');
  assert.equal(sendLabel({ status: 'idle' }, null), 'Send');
});

test('a queue from the wire is checked: bad items are left out, an empty pause is none', () => {
  assert.equal(queueFrom(null), null);
  assert.equal(queueFrom({ items: [] }), null, 'no session id');
  const q = queueFrom({ sessionId: 'ses_a', paused: '', items: [item('que_1', 'a'), { id: 3 }, { id: 'que_2' }, null] });
  assert.equal(q.paused, null);
  assert.deepEqual(q.items.map((i) => i.id), ['que_1']);
  assert.equal(queueFrom(queue([item('que_1', 'a')], 'stopped')).paused, 'stopped');
});

test('rows keep the order, number from 1, and show text and attachments', () => {
  const q = queueFrom(queue([
    item('que_1', 'first'),
    {
      ...item('que_2', 'second'),
      prompt: { parts: [{ type: 'text', text: 'look' }, { type: 'file', path: 'src/main.rs' }, { type: 'image', mimeType: 'image/png', data: 'AA==', name: 'dot.png' }, { type: 'image', mimeType: 'image/png', data: 'AA==' }] },
      updated: 20,
    },
  ]));
  const rows = queueRows(q);
  assert.deepEqual(rows.map((r) => [r.id, r.place, r.text, r.edited]), [['que_1', 1, 'first', false], ['que_2', 2, 'look', true]]);
  assert.deepEqual(rows[1].extras, ['📎 src/main.rs', '🖼 dot.png', '🖼 image']);
  assert.deepEqual(queueRows(null), []);
});

test('an edit replaces the text and keeps the attachments in place', () => {
  const prompt = { parts: [{ type: 'file', path: 'a.rs' }, { type: 'text', text: 'old' }, { type: 'text', text: 'more' }] };
  assert.equal(promptText(prompt), 'old\nmore');
  assert.deepEqual(editedParts(prompt, '  new text  '), [{ type: 'file', path: 'a.rs' }, { type: 'text', text: 'new text' }]);
  assert.deepEqual(editedParts({ parts: [{ type: 'file', path: 'a.rs' }] }, 'why'), [{ type: 'text', text: 'why' }, { type: 'file', path: 'a.rs' }]);
  assert.equal(editedParts(prompt, '   '), null, 'an empty prompt is cancelled, not sent');
  assert.deepEqual(attachmentLabels(prompt), ['📎 a.rs']);
});

test('the heading counts what waits and says why a paused queue waits', () => {
  const one = queueFrom(queue([item('que_1', 'a')]));
  assert.equal(queueHeading(queueFrom(queue([])), { status: 'busy' }), null);
  assert.match(queueHeading(one, { status: 'busy' }), /^1 prompt queued · sent one at a time/);
  const paused = queueFrom(queue([item('que_1', 'a'), item('que_2', 'b')], 'the turn was stopped'));
  assert.equal(queueHeading(paused, { status: 'idle' }), '2 prompts queued · paused: the turn was stopped. Resume sends the next one.');
});

test('a load answered after a newer event is dropped', () => {
  const book = new QueueBook();
  const ticket = book.loading('ses_a');
  assert.equal(book.event(queue([item('que_1', 'a'), item('que_2', 'b')])), 'ses_a');
  assert.equal(book.loaded('ses_a', ticket, queue([item('que_1', 'a')])), false, 'the event is newer');
  assert.equal(book.get('ses_a').items.length, 2);
  const fresh = book.loading('ses_a');
  assert.equal(book.loaded('ses_a', fresh, queue([])), true);
  assert.equal(book.get('ses_a').items.length, 0);
  assert.equal(book.loaded('ses_b', book.loading('ses_b'), queue([])), false, 'an answer of another session');
  assert.equal(book.event({ nonsense: true }), null);
  book.forget('ses_a');
  assert.equal(book.get('ses_a'), null);
});
