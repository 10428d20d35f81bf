// The server proof, checked before anything carrying the credential leaves the page.
//
// The backend answers `GET /health?proof=<nonce>` with `proof`: lowercase hex of
// HMAC-SHA256(key = credential, message = proofMessage(nonce, address)), where `address` is the
// backend's own socket address on the connection that carried the check (`127.0.0.1:4096`,
// `[::1]:4096`). Only a holder of the credential can compute it, and a process on another
// address that relays the check to the real backend gets a proof for the backend's address, not
// its own (the same check as the Rust client, ax_protocol::proof). After any disconnect the page
// asks again with a fresh nonce, so a process that took a dead backend's port never receives the
// credential.

/** The message prefix of the proof (ax_protocol::HEALTH_PROOF_PREFIX). */
export const PROOF_PREFIX = 'ax-code-server-proof-v2:';
/** A /health answer is far smaller; a bigger one is not a backend's. */
const MAX_HEALTH_CHARS = 16 * 1024;

/** The bytes the proof is computed over: the one place the derivation lives. */
export function proofMessage(nonce, address) {
  return PROOF_PREFIX + nonce + '@' + address;
}

/**
 * The server addresses a proof may be bound to for a page served from `host` (`location.host`):
 * the host itself when it is an IP literal (`127.0.0.1:P`, `[::1]:P`); for `localhost` and a sign-in
 * link's `<label>.localhost`, either loopback address, since the browser may reach either and the backend holds both on its port.
 * Empty for any other name: the page cannot know which address the backend behind it listens
 * on, so it cannot check the proof.
 */
export function proofAddresses(host) {
  const m = /^(\[[0-9a-f:.]+\]|[0-9.]+|(?:[a-z0-9]{1,63}\.)?localhost)(?::(\d{1,5}))?$/.exec(String(host).toLowerCase());
  if (!m) return [];
  const port = m[2] ?? '80';
  // `<label>.localhost`: the origin of a sign-in link (browsers resolve it to loopback).
  if (m[1].endsWith('localhost')) return [`127.0.0.1:${port}`, `[::1]:${port}`];
  if (!m[1].startsWith('[') && !/^\d{1,3}(\.\d{1,3}){3}$/.test(m[1])) return [];
  return [`${m[1]}:${port}`];
}

export function toHex(bytes) {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** 32 random bytes as 64 lowercase hex characters. */
export function newNonce() {
  return toHex(crypto.getRandomValues(new Uint8Array(32)));
}

/** Lowercase hex of HMAC-SHA256(key = credential, message = proofMessage(nonce, address)). */
export async function computeProof(credential, nonce, address) {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey(
    'raw', enc.encode(credential), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'],
  );
  return toHex(await crypto.subtle.sign('HMAC', key, enc.encode(proofMessage(nonce, address))));
}

/** Equality whose time does not depend on where the strings differ. */
function sameText(a, b) {
  if (typeof a !== 'string' || a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * The page registers no service worker. One on this origin was registered by a page someone
 * else served here (another user who held the port while the backend was down): it could
 * answer this page's requests, the proof and then the ones carrying the credential. Every
 * registration is removed and the check fails, so the credential is never sent through it
 * (docs/SECURITY.md).
 */
async function refuseForeignWorkers(proof) {
  const workers = navigator.serviceWorker;
  if (!workers) return;
  let registrations = [];
  try {
    registrations = await workers.getRegistrations();
  } catch {
    registrations = [];
  }
  if (registrations.length === 0 && !workers.controller) return;
  await Promise.all(registrations.map((r) => r.unregister().catch(() => false)));
  const error = proof.fail('a service worker this page did not register was present on this address (now removed): '
    + 'another program may have served pages here while the backend was down');
  error.foreignWorker = true;
  throw error;
}

/** The server could not be reached (try again later); nothing was sent. */
export class Unreachable extends Error {}

/** The server answered but could not prove it holds the credential; nothing was sent. */
export class NotProven extends Error {}

/**
 * Whether the server behind this page has proven it holds `credential` since the last
 * disconnect. Shared by the API client, the event stream and the gateway connection.
 */
export class ServerProof {
  /**
   * @param {string} credential
   * @param {{onLost?: () => void, onProven?: () => void}} hooks  called when the proof is
   *   dropped (a disconnect) and when it is established again
   */
  constructor(credential, { onLost, onProven } = {}) {
    this.credential = credential;
    this.onLost = onLost ?? (() => {});
    this.onProven = onProven ?? (() => {});
    this.verified = false;
    /** Whether this server ever proved it: if not, a failed proof is more likely a wrong token. */
    this.everProven = false;
    this.epoch = 0;
    this.pending = null;
    this.failed = null;
  }

  /** A transport error or a closed connection: whoever answers next must prove itself. */
  lost() {
    this.epoch += 1;
    this.verified = false;
    this.onLost();
  }

  /**
   * Resolves once the server is proven; rejects with Unreachable (retry later) or NotProven
   * (final: the page must stop using the credential). Concurrent callers share one check.
   */
  ensure() {
    if (this.failed) return Promise.reject(this.failed);
    if (this.verified) return Promise.resolve();
    if (!this.pending) {
      this.pending = this.check().finally(() => { this.pending = null; });
    }
    return this.pending;
  }

  async check() {
    const epoch = this.epoch;
    if (!globalThis.crypto?.subtle) {
      throw this.fail('this page is not a secure context, so it cannot check the server; open it as http://127.0.0.1 or http://localhost, or through HTTPS', true);
    }
    const addresses = proofAddresses(location.host);
    if (addresses.length === 0) {
      throw this.fail(`the page cannot check the server at ${location.host}: open the Control UI as http://127.0.0.1:PORT, http://[::1]:PORT or http://localhost:PORT`);
    }
    await refuseForeignWorkers(this);
    const nonce = newNonce();
    let res;
    try {
      res = await fetch(`/health?proof=${nonce}`, { cache: 'no-store', redirect: 'error', credentials: 'omit' });
    } catch (e) {
      throw new Unreachable(`the backend cannot be reached (${e.message})`);
    }
    if (res.status !== 200) throw this.fail(`/health answered HTTP ${res.status}`);
    let text;
    try {
      text = await res.text();
    } catch (e) {
      throw new Unreachable(`the answer to the proof was cut (${e.message})`);
    }
    if (text.length > MAX_HEALTH_CHARS) throw this.fail('/health answered too much');
    let health;
    try {
      health = JSON.parse(text);
    } catch {
      throw this.fail('/health did not answer a health record');
    }
    if (typeof health?.proof !== 'string') throw this.fail('/health answered without a proof');
    let proven = false;
    for (const address of addresses) {
      // Every candidate is computed and compared, whichever matches.
      const expected = await computeProof(this.credential, nonce, address);
      proven = sameText(health.proof, expected) || proven;
    }
    if (!proven) throw this.fail('/health answered a wrong proof');
    if (epoch === this.epoch) {
      this.verified = true;
      this.everProven = true;
      this.onProven();
    } else {
      // Disconnected again while checking: the answer may have come from the old server.
      throw new Unreachable('the connection dropped during the check');
    }
  }

  fail(reason, insecure = false) {
    this.failed = new NotProven(reason);
    this.failed.insecure = insecure;
    return this.failed;
  }
}
