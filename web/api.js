// The backend HTTP API (bearer credential) and its event stream.
//
// EventSource cannot send an Authorization header, so /event is read with fetch() streaming
// and the Server-Sent Events framing is parsed here. Nothing carrying the credential is sent
// before the server proved it holds it (proof.js); any transport error drops that proof.

import { toBase64 } from './attach.js';
import { NotProven } from './proof.js';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  /**
   * @param {string} token
   * @param {import('./proof.js').ServerProof} proof  shared with the gateway connection
   * @param {{onUnauthorized?: () => void, onNotProven?: (e: Error) => void}} hooks
   */
  constructor(token, proof, { onUnauthorized, onNotProven } = {}) {
    this.token = token;
    this.proof = proof;
    this.onUnauthorized = onUnauthorized ?? (() => {});
    this.onNotProven = onNotProven ?? (() => {});
  }

  /** Resolves once the server proved it holds the credential; else throws an ApiError. */
  async proven() {
    try {
      await this.proof.ensure();
    } catch (e) {
      if (e instanceof NotProven) {
        this.onNotProven(e);
        throw new ApiError(0, 'NOT_PROVEN', `the server did not prove it holds the credential: ${e.message}`);
      }
      throw new ApiError(0, 'UNREACHABLE', e.message);
    }
  }

  /** fetch(), with a transport error dropping the server's proof. */
  async send(path, init) {
    try {
      return await fetch(path, init);
    } catch (e) {
      if (e?.name !== 'AbortError') this.proof.lost();
      throw e;
    }
  }

  headers(extra = {}) {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  async request(method, path, body) {
    const init = { method, headers: this.headers(), cache: 'no-store' };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    await this.proven();
    const res = await this.send(path, init);
    let text;
    try {
      text = await res.text();
    } catch (e) {
      this.proof.lost();
      throw e;
    }
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!res.ok) {
      if (res.status === 401) this.onUnauthorized();
      const err = data?.error ?? {};
      throw new ApiError(res.status, err.code ?? `HTTP_${res.status}`, err.message ?? res.statusText);
    }
    return data;
  }

  listSessions() { return this.request('GET', '/session'); }
  /** A new session; `agent` names its agent (GET /agent), else the configured default. */
  createSession(title, agent) {
    const body = {};
    if (title) body.title = title;
    if (agent) body.agent = agent;
    return this.request('POST', '/session', body);
  }
  /** The agents a session can be created with: {default, agents: [{name, kind, origin}]}. */
  agents() { return this.request('GET', '/agent'); }
  /** Agent text as a Markdown tree (POST /markdown; see markdown.js). */
  markdown(text) { return this.request('POST', '/markdown', { text }); }
  setMode(id, modeId) { return this.request('POST', `/session/${encodeURIComponent(id)}/mode`, { modeId }); }
  /** `value`: a select option's value id, or a boolean option's state (docs/backend.md §3). */
  setConfig(id, configId, value) { return this.request('POST', `/session/${encodeURIComponent(id)}/config`, { configId, value }); }
  /** Ends the session's standing "always" answers; the session comes back. */
  revokeStanding(id) { return this.request('DELETE', `/session/${encodeURIComponent(id)}/standing`); }
  session(id) { return this.request('GET', `/session/${encodeURIComponent(id)}`); }
  renameSession(id, title) { return this.request('PATCH', `/session/${encodeURIComponent(id)}`, { title }); }
  deleteSession(id) { return this.request('DELETE', `/session/${encodeURIComponent(id)}`); }
  messages(id) { return this.request('GET', `/session/${encodeURIComponent(id)}/message`); }
  // `client`: this page's gateway connection id, so the session's agent may arrange this UI
  // during the turn (docs/agents.md §8); omitted while the gateway is down.
  // `parts`: the whole prompt when it carries files or images (attach.js), else the text alone.
  prompt(id, text, client, parts) {
    const body = { parts: parts ?? [{ type: 'text', text }] };
    if (client) body.client = client;
    return this.request('POST', `/session/${encodeURIComponent(id)}/prompt`, body);
  }
  /** The same body to the session's prompt queue: sent at once when the session is free and
   *  nothing waits (`{state: "sent"}`), else queued (`{state: "queued", item, position}`). */
  queuePrompt(id, parts, client) {
    const body = { parts };
    if (client) body.client = client;
    return this.request('POST', `/session/${encodeURIComponent(id)}/queue`, body);
  }
  queue(id) { return this.request('GET', `/session/${encodeURIComponent(id)}/queue`); }
  editQueued(id, qid, parts) {
    return this.request('PATCH', `/session/${encodeURIComponent(id)}/queue/${encodeURIComponent(qid)}`, { parts });
  }
  cancelQueued(id, qid) { return this.request('DELETE', `/session/${encodeURIComponent(id)}/queue/${encodeURIComponent(qid)}`); }
  /** "Send now": stops the running turn; this prompt goes next. */
  sendQueuedNow(id, qid) { return this.request('POST', `/session/${encodeURIComponent(id)}/queue/${encodeURIComponent(qid)}/send`); }
  resumeQueue(id) { return this.request('POST', `/session/${encodeURIComponent(id)}/queue/resume`); }
  /** The project's files matching `query` fuzzily: {files: [{path, score}], truncated}. */
  findFiles(query, limit = 20) {
    return this.request('GET', `/find/file?query=${encodeURIComponent(query)}&limit=${limit}`);
  }
  /** The path of image `index` of message `mid` (a hub routes it to the session's machine). */
  imagePath(id, mid, index) {
    return `/session/${encodeURIComponent(id)}/message/${encodeURIComponent(mid)}/image/${index}`;
  }
  /** Image `index` of message `mid` as a data: URL (the page's CSP takes no blob: images). */
  async image(id, mid, index) {
    await this.proven();
    const res = await this.send(this.imagePath(id, mid, index), { headers: this.headers() });
    if (!res.ok) throw new ApiError(res.status, `HTTP_${res.status}`, res.statusText);
    const type = res.headers.get('Content-Type') ?? '';
    if (!/^image\/(png|jpeg|gif|webp)$/.test(type)) throw new ApiError(0, 'BAD_IMAGE', `not an image: ${type}`);
    return `data:${type};base64,${toBase64(new Uint8Array(await res.arrayBuffer()))}`;
  }
  abort(id) { return this.request('POST', `/session/${encodeURIComponent(id)}/abort`); }
  permissions() { return this.request('GET', '/permission'); }
  /** `optionId` (optional): the exact option of the permission's `options` (docs/agents.md §5). */
  reply(sessionId, permissionId, reply, optionId) {
    return this.request(
      'POST',
      `/session/${encodeURIComponent(sessionId)}/permission/${encodeURIComponent(permissionId)}`,
      optionId ? { reply, optionId } : { reply },
    );
  }

  /**
   * Follow /event until `signal` aborts, reconnecting with Last-Event-ID (`stream`).
   * `onEnvelope({id, event})` gets every event; `onState('live'|'down')` the stream's health.
   */
  follow(onEnvelope, onState, signal) {
    return this.stream('/event', (msg) => {
      if (!msg.data) return;
      let env;
      try {
        env = JSON.parse(msg.data);
      } catch {
        return;
      }
      onEnvelope(env);
    }, onState, signal);
  }

  /**
   * Follows the server-sent events of `path` until `signal` aborts, reconnecting (with
   * Last-Event-ID unless `resume` is false): `onMessage({id, event, data})` for each message,
   * `onState('live'|'down')` the stream's health.
   */
  async stream(path, onMessage, onState, signal, { resume = true } = {}) {
    let lastId = null;
    let delay = 500;
    while (!signal.aborted) {
      try {
        try {
          await this.proof.ensure();
        } catch (e) {
          if (e instanceof NotProven) {
            this.onNotProven(e);
            return;
          }
          throw e;
        }
        if (signal.aborted) return;
        const headers = this.headers({ Accept: 'text/event-stream' });
        if (resume && lastId !== null) headers['Last-Event-ID'] = String(lastId);
        const res = await this.send(path, { headers, signal, cache: 'no-store' });
        if (res.status === 401) {
          this.onUnauthorized();
          return;
        }
        if (!res.ok || !res.body) throw new Error(`event stream: HTTP ${res.status}`);
        onState('live');
        delay = 500;
        const parser = new SseParser((msg) => {
          if (msg.id !== null && /^\d+$/.test(msg.id)) lastId = Number(msg.id);
          onMessage(msg);
        });
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.push(decoder.decode(value, { stream: true }));
        }
      } catch (e) {
        if (signal.aborted) return;
      }
      // The stream ended or broke: the next connection may reach another server.
      this.proof.lost();
      onState('down');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  }
}

/** Incremental parser for the text/event-stream format. */
export class SseParser {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.buffer = '';
    this.reset();
  }

  reset() {
    this.data = [];
    this.id = null;
    this.event = null;
  }

  push(text) {
    this.buffer += text;
    let nl;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (this.buffer[nl] === '\r' && nl === this.buffer.length - 1) break;
      const len = this.buffer.startsWith('\r\n', nl) ? 2 : 1;
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + len);
      this.line(line);
    }
    if (this.buffer.length > 4 * 1024 * 1024) this.buffer = ''; // a runaway line
  }

  line(line) {
    if (line === '') {
      if (this.data.length || this.id !== null) {
        this.onMessage({ id: this.id, event: this.event, data: this.data.join('\n') });
      }
      this.reset();
      return;
    }
    if (line.startsWith(':')) return; // comment (heartbeat)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'id') this.id = value;
    else if (field === 'event') this.event = value;
  }
}
