// Unit tests of the Control UI's sign-in parsing, code exchange and what the page does with
// each (web/signin.js).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import {
  FRESH_LINK, exchangeCode, formInput, fragmentSignIn, leadingCode, linkOutcome, notProvenMessage, notSentSignOut, pastedSignIn,
} from '../../web/signin.js';

const CODE = 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';

test('a code is exactly 32 letters and digits at the start', () => {
  assert.equal(leadingCode(CODE), CODE);
  assert.equal(leadingCode(`${CODE} and the rest of the pasted line`), CODE);
  assert.equal(leadingCode(`${CODE}x`), null, 'a 33rd letter is not a code');
  assert.equal(leadingCode(CODE.slice(1)), null);
  assert.equal(leadingCode(undefined), null);
});

test('a fragment signs in with its code, refuses a token link, ignores the rest', () => {
  assert.deepEqual(fragmentSignIn(`#code=${CODE}`), { code: CODE });
  assert.deepEqual(fragmentSignIn(`#code=${CODE}%20pasted%20after`), { code: CODE });
  assert.match(fragmentSignIn('#code=short').error, /holds no code/);
  assert.match(fragmentSignIn('#token=secret').error, /access token are not accepted/);
  assert.ok(!fragmentSignIn('#token=secret').error.includes('secret'), 'the token is not repeated');
  assert.equal(fragmentSignIn('#pane=p1'), null);
  assert.equal(fragmentSignIn(''), null);
});

test('a pasted line gives its link, else the code after code=', () => {
  const link = `http://127.0.0.1:4096/#code=${CODE}`;
  assert.deepEqual(pastedSignIn(`Control UI: ${link} (one use)`), { link, code: CODE });
  assert.deepEqual(pastedSignIn(`code=${CODE}`), { code: CODE });
  assert.equal(pastedSignIn(`xcode=${CODE}`), null, 'code= must start a word');
  assert.equal(pastedSignIn('just a token'), null);
});

function answer(status, body) {
  return async () => ({ ok: status < 300, status, json: async () => (body === undefined ? Promise.reject(new Error('no json')) : body) });
}

test('the exchange gives the token or a sentence for the person', async () => {
  let sent = null;
  const ok = await exchangeCode(CODE, async (url, init) => {
    sent = { url, init };
    return { ok: true, status: 200, json: async () => ({ token: 't0k' }) };
  });
  assert.deepEqual(ok, { token: 't0k' });
  assert.equal(sent.url, '/signin');
  assert.deepEqual(JSON.parse(sent.init.body), { code: CODE });
  assert.equal(sent.init.credentials, 'omit');

  assert.match((await exchangeCode(CODE, answer(401, { error: { code: 'invalid_code', message: 'x' } }))).error, /already used or has expired/);
  assert.match((await exchangeCode(CODE, answer(500, { error: { code: 'internal', message: 'disk full' } }))).error, /Sign-in failed: disk full/);
  assert.match((await exchangeCode(CODE, answer(502))).error, /HTTP 502/);
  assert.match((await exchangeCode(CODE, async () => { throw new Error('refused'); })).error, /cannot be reached \(refused\)/);
  assert.ok(!('token' in (await exchangeCode(CODE, answer(200, { token: 7 })))), 'a token must be a string');
});

test('the not-proven message says what happened and what to do', () => {
  const m = notProvenMessage(new Error('wrong proof'));
  assert.match(m, /\(wrong proof\)/);
  assert.match(m, /ax-code link/);
});

test('a link’s answer signs in, or tells a page signed in already, or shows the form', () => {
  assert.deepEqual(linkOutcome({ token: 't' }, { running: false, stored: false }), { token: 't' });
  assert.deepEqual(linkOutcome({ token: 't' }, { running: true, stored: true }), { token: 't' });
  assert.deepEqual(linkOutcome({ error: 'used' }, { running: true, stored: true }), { toast: 'used', start: false });
  assert.deepEqual(linkOutcome({ error: 'used' }, { running: false, stored: true }), { toast: 'used', start: true },
    'a kept credential starts the UI, and the refusal is said there');
  assert.deepEqual(linkOutcome({ error: 'used' }, { running: false, stored: false }), { form: 'used', reason: 'link-refused' });
});

test('the form takes a link of another origin there, a code here, else the token itself', () => {
  const here = 'http://127.0.0.1:4096';
  assert.equal(formInput('   ', here), null);
  assert.equal(formInput(undefined, here), null);
  assert.deepEqual(formInput(`  ${here}/#code=${CODE}  `, here), { code: CODE });
  const there = `http://127.0.0.1:5000/#code=${CODE}`;
  assert.deepEqual(formInput(`Control UI: ${there}`, here), { go: there });
  assert.deepEqual(formInput(`code=${CODE}`, here), { code: CODE });
  assert.deepEqual(formInput('  my-token \n', here), { token: 'my-token' });
});

test('an unproven server signs out with the reason it was not proven', () => {
  const insecure = notSentSignOut({ insecure: true, message: 'plain http' }, true);
  assert.equal(insecure.reason, 'insecure');
  assert.equal(insecure.message, 'The access token was not sent: plain http.');
  const worker = notSentSignOut({ foreignWorker: true, message: 'a worker' }, false);
  assert.equal(worker.reason, 'foreign-worker');
  assert.ok(worker.message.endsWith(FRESH_LINK));
  const lost = notSentSignOut({ message: 'no proof' }, true);
  assert.deepEqual(lost, { message: notProvenMessage({ message: 'no proof' }), reason: 'not-proven' });
  const never = notSentSignOut({ message: 'no proof' }, false);
  assert.equal(never.reason, 'refused');
  assert.match(never.message, /does not hold it/);
});
