// Unit tests of the Control UI's sign-in parsing and code exchange (web/signin.js).
// Run: node --test tests/js/
import test from 'node:test';
import assert from 'node:assert/strict';
import { exchangeCode, fragmentSignIn, leadingCode, notProvenMessage, pastedSignIn } from '../../web/signin.js';

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
