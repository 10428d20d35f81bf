// Unit tests of the tab title count and the notification rules (web/notify.js).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { alertText, countedSessions, notificationFor, shouldNotify, titleWithCount, toggleView } from '../../web/notify.js';

test('the title counts only when something waits', () => {
  assert.equal(titleWithCount('ax-code', 0), 'ax-code');
  assert.equal(titleWithCount('ax-code', 2), '(2) ax-code');
});

test('counted: unread turn ends, and what needs the person where no pane shows it', () => {
  const sessions = ['a', 'b', 'c', 'd'].map((id) => ({ id }));
  const counted = countedSessions(sessions, { unread: new Set(['a']), needs: new Set(['b', 'c']), looking: new Set(['c', 'd']) });
  assert.deepEqual(counted, ['a', 'b'], 'c needs the person but is in view; d is only in view');
  assert.deepEqual(countedSessions(sessions, { unread: new Set(), needs: new Set(), looking: new Set() }), []);
});

test('a notification needs the person to have turned it on, the browser to grant it, and them not looking', () => {
  assert.equal(shouldNotify({ enabled: true, permission: 'granted', looking: false, focused: true }), true);
  assert.equal(shouldNotify({ enabled: true, permission: 'granted', looking: true, focused: false }), true, 'the tab lost the focus');
  assert.equal(shouldNotify({ enabled: true, permission: 'granted', looking: true, focused: true }), false);
  assert.equal(shouldNotify({ enabled: false, permission: 'granted', looking: false, focused: false }), false);
  assert.equal(shouldNotify({ enabled: true, permission: 'default', looking: false, focused: false }), false);
});

test('the toggle says what a click does', () => {
  assert.equal(toggleView(false, 'default', true).state, 'unsupported');
  assert.equal(toggleView(true, 'denied', true).state, 'denied');
  assert.equal(toggleView(true, 'granted', true).state, 'on');
  assert.equal(toggleView(true, 'granted', false).state, 'off');
  assert.equal(toggleView(true, 'default', true).state, 'off', 'not granted yet: a click asks');
});

test('the words name the session and what happened', () => {
  assert.equal(alertText('finished', 'Fix'), '“Fix” finished its turn');
  assert.equal(alertText('failed', 'Fix'), '“Fix” failed');
  assert.equal(alertText('approval', 'Fix'), '“Fix” asks for your approval');
  const n = notificationFor('approval', 'Fix', 'ses_1');
  assert.equal(n.options.tag, 'ax-code:ses_1');
  assert.equal(n.title, '“Fix” asks for your approval');
});
