// Sign-in without the credential in a URL (docs/control-ui.md, docs/SECURITY.md): the parts
// that read a link, a pasted line or the backend's answer. No DOM here, so Node's test runner
// checks them (tests/js/signin.test.mjs), and what the page does with each; app.js shows the
// form and starts the UI.

/** What every refusal of a link ends with: how to get a good one. */
export const FRESH_LINK = 'Run `ax-code link` in a terminal for a fresh sign-in link.';

/** The code at the start of `text` (32 letters and digits, as `ax-code link` prints it). */
export function leadingCode(text) {
  return /^[0-9A-Za-z]{32}(?![0-9A-Za-z])/.exec(text ?? '')?.[0] ?? null;
}

/**
 * What an address fragment asks for: `{ code }` for a one-time `#code=` (a whole pasted line
 * after the link still carries its code first), `{ error }` for a fragment that cannot sign in
 * (links that carry the credential itself, `#token=`, are not accepted), `null` when the
 * fragment is not about signing in.
 */
export function fragmentSignIn(hash) {
  const params = new URLSearchParams((hash ?? '').replace(/^#/, ''));
  if (params.has('code')) {
    const code = leadingCode(params.get('code'));
    return code ? { code } : { error: `This sign-in link holds no code. ${FRESH_LINK}` };
  }
  if (params.has('token')) {
    return { error: `Links that carry the access token are not accepted. ${FRESH_LINK}` };
  }
  return null;
}

/**
 * A sign-in link or code somewhere in text pasted into the sign-in form (a whole line of
 * `ax-code serve` output, say): the link when there is one, else the code after `code=`.
 */
export function pastedSignIn(text) {
  const link = /\bhttps?:\/\/[^\s#]+#code=([0-9A-Za-z]{32})(?![0-9A-Za-z])/.exec(text);
  if (link) return { link: link[0], code: link[1] };
  const code = /(?:^|[^0-9A-Za-z])code=([0-9A-Za-z]{32})(?![0-9A-Za-z])/.exec(text);
  return code ? { code: code[1] } : null;
}

/**
 * Exchanges a one-time code for the credential (`POST /signin`): `{ token }` or `{ error }`
 * with a sentence for the person. `fetchFn` is the page's `fetch` (a test passes its own).
 */
export async function exchangeCode(code, fetchFn = fetch) {
  let res;
  try {
    res = await fetchFn('/signin', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code }),
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
  } catch (e) {
    return { error: `The backend cannot be reached (${e.message}).` };
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (res.ok && typeof data?.token === 'string') return { token: data.token };
  if (data?.error?.code === 'invalid_code') {
    return { error: `This sign-in link was already used or has expired. ${FRESH_LINK}` };
  }
  return { error: `Sign-in failed: ${data?.error?.message ?? `HTTP ${res.status}`}` };
}

/** Why the page forgot its token when the server could not prove it holds it. */
export function notProvenMessage(e) {
  return 'The server at this address could not prove that it holds your access token '
    + `(${e.message}), so the token was not sent, and this page has forgotten it. `
    + 'The backend may have restarted with a new credential (`ax-code link --rotate`), or stopped and another program taken its port. '
    + 'Start the backend again, then run `ax-code link` in a terminal for a fresh sign-in link.';
}

/**
 * What the page does with the answer to a sign-in link (`fragmentSignIn`, then
 * `exchangeCode`): `{ token }` keeps the credential and starts the UI; a refusal on a page that
 * is signed in already (`running`: the UI runs; `stored`: a credential is kept) keeps going
 * and says why the link did nothing (`{ toast, start }`, start when the UI does not run yet);
 * otherwise the sign-in form shows the refusal (`{ form, reason: 'link-refused' }`).
 */
export function linkOutcome(result, { running, stored }) {
  if (result.token) return { token: result.token };
  if (running || stored) return { toast: result.error, start: !running };
  return { form: result.error, reason: 'link-refused' };
}

/**
 * What the sign-in form does with what the person typed or pasted: nothing for blank text
 * (null); `{ go }` for a sign-in link of another origin (it opens there, as clicking it would:
 * docs/SECURITY.md); `{ code }` for a link or code of this page, exchanged here; else the text is
 * the access token itself (`{ token }`).
 */
export function formInput(text, origin) {
  const typed = (text ?? '').trim();
  if (!typed) return null;
  const pasted = pastedSignIn(typed);
  if (pasted?.link && new URL(pasted.link).origin !== origin) return { go: pasted.link };
  if (pasted) return { code: pasted.code };
  return { token: typed };
}

/**
 * The sign-in form's message and reason (`data-reason`) when the credential was not sent
 * because the server could not be proven (api.js, gateway.js: `e` from proof.js). `everProven`:
 * the server was proven on this page before.
 */
export function notSentSignOut(e, everProven) {
  if (e.insecure) return { message: `The access token was not sent: ${e.message}.`, reason: 'insecure' };
  if (e.foreignWorker) {
    return { message: `The access token was not sent, and this page has forgotten it: ${e.message}. ${FRESH_LINK}`, reason: 'foreign-worker' };
  }
  if (everProven) return { message: notProvenMessage(e), reason: 'not-proven' };
  // Never proven: most likely a mistyped token, or one of another backend.
  return { message: 'The access token was refused: the backend at this address does not hold it.', reason: 'refused' };
}
