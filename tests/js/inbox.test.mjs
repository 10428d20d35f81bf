// Unit tests of the approvals inbox's grouping (web/inbox.js). Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { inboxGroups, pendingCount } from '../../web/inbox.js';

const p = (id, sessionId, created, state = 'pending') => ({ id, sessionId, created, state });

test('pending approvals are grouped by session, the longest waiting first, in the order asked', () => {
  const sessions = new Map([['ses_a', { id: 'ses_a', title: 'A' }], ['ses_b', { id: 'ses_b', title: 'B' }]]);
  const groups = inboxGroups([p('p3', 'ses_a', 30), p('p1', 'ses_b', 10), p('p2', 'ses_a', 20), p('p0', 'ses_a', 1, 'approved'), p('p4', 'ses_gone', 40)], sessions);
  assert.deepEqual(groups.map((g) => [g.sessionId, g.permissions.map((x) => x.id)]), [
    ['ses_b', ['p1']], ['ses_a', ['p2', 'p3']], ['ses_gone', ['p4']],
  ]);
  assert.equal(groups[1].session.title, 'A');
  assert.equal(groups[2].session, null, 'a session the page does not know is listed by its id');
  assert.deepEqual(inboxGroups([], sessions), []);
});

test('the count is of pending approvals only', () => {
  assert.equal(pendingCount([p('a', 's', 1), p('b', 's', 2, 'rejected'), p('c', 't', 3)]), 2);
  assert.equal(pendingCount([]), 0);
});
