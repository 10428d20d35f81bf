// The gateway WebSocket: handshake as a Control UI, ui.command handling with acknowledgements,
// the operator terminal's requests, and reconnecting. The connect frame carries the credential,
// so every (re)connection waits until the server proved it holds it (proof.js).

import { NotProven } from './proof.js';

const CLIENT_VERSION = '0.1.0';

export class GatewayClient {
  /**
   * @param {object} o
   * @param {string} o.token
   * @param {import('./proof.js').ServerProof} o.proof  shared with the HTTP API client
   * @param {(e: Error) => void} o.onNotProven  the server failed the proof: stop for good
   * @param {(payload: object) => {outcome: string, reason?: string, revision?: number, notApplied?: object[]}} o.onCommand
   * @param {(name: string, payload: object) => void} o.onEvent
   * @param {(state: string, detail?: string) => void} o.onStatus
   * @param {string} [o.path]  the WebSocket's path: a backend's `/gateway`, or a machine's on a
   *                           hub (`/machine/{m}/gateway`, docs/hub.md §4)
   * @param {string[]} [o.caps]  what the connection advertises: `ui-commands` makes it a
   *                             Control UI agents arrange (not on a hub's terminal gateway)
   */
  constructor({ token, proof, onNotProven, onCommand, onEvent, onStatus, path = '/gateway', caps = ['ui-commands'] }) {
    this.token = token;
    this.path = path;
    this.caps = caps;
    this.proof = proof;
    this.onNotProven = onNotProven;
    this.onCommand = onCommand;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.ws = null;
    this.pending = new Map();
    this.nextId = 1;
    this.lastSeq = 0;
    this.stopped = false;
    this.delay = 500;
    this.connId = null;
  }

  start() {
    this.stopped = false;
    this.open();
  }

  stop() {
    this.stopped = true;
    this.ws?.close(1000, 'bye');
  }

  async open() {
    this.onStatus('connecting');
    try {
      await this.proof.ensure();
    } catch (e) {
      if (this.stopped) return;
      if (e instanceof NotProven) {
        this.stopped = true;
        this.onNotProven(e);
        return;
      }
      this.retry(e.message);
      return;
    }
    if (this.stopped) return;
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const ws = new WebSocket(`${scheme}://${location.host}${this.path}`);
    this.ws = ws;
    this.lastSeq = 0;
    this.connId = null;
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => {
      for (const { reject } of this.pending.values()) reject(new Error('gateway connection closed'));
      this.pending.clear();
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) return;
      // Whoever answers the next connection must prove itself first.
      this.proof.lost();
      this.retry(ev.reason || `closed (${ev.code})`);
    };
  }

  retry(detail) {
    this.onStatus('down', detail);
    setTimeout(() => !this.stopped && this.open(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  }

  send(frame) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  /** A request after the handshake; resolves with the payload, rejects with the error. */
  request(method, params) {
    if (!this.connId) return Promise.reject(new Error('gateway not connected'));
    const id = `ui${this.nextId++}`;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ type: 'req', id, method, params });
    });
  }

  receive(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.type === 'event') {
      if (typeof frame.seq === 'number') {
        if (this.lastSeq && frame.seq !== this.lastSeq + 1) {
          console.warn(`gateway: event gap ${this.lastSeq} -> ${frame.seq}`);
        }
        this.lastSeq = frame.seq;
      }
      this.event(frame.event, frame.payload ?? {});
    } else if (frame.type === 'res') {
      if (frame.id === 'connect') {
        this.hello(frame);
        return;
      }
      const p = this.pending.get(frame.id);
      if (!p) return;
      this.pending.delete(frame.id);
      if (frame.ok) p.resolve(frame.payload);
      else {
        const e = new Error(frame.error?.message ?? 'request failed');
        e.code = frame.error?.code;
        p.reject(e);
      }
    }
  }

  event(name, payload) {
    if (name === 'connect.challenge') {
      this.send({
        type: 'req',
        id: 'connect',
        method: 'connect',
        params: {
          minProtocol: 1,
          maxProtocol: 1,
          client: { id: 'ax-code-control-ui', version: CLIENT_VERSION, platform: 'browser', mode: 'ui' },
          caps: this.caps,
          role: 'operator',
          scopes: ['operator.read', 'operator.write', 'operator.admin'],
          auth: { token: this.token },
        },
      });
      return;
    }
    if (name === 'ui.command') {
      let result;
      try {
        result = this.onCommand(payload);
      } catch (e) {
        result = { outcome: 'ignored', reason: `error: ${e.message}` };
      }
      const params = { commandId: payload.commandId, outcome: result.outcome };
      if (result.reason) params.reason = String(result.reason).slice(0, 500);
      if (Number.isInteger(result.revision)) params.revision = result.revision;
      if (Array.isArray(result.notApplied) && result.notApplied.length) {
        params.notApplied = result.notApplied.slice(0, 16).map((n) => ({
          ...(typeof n.paneId === 'string' ? { paneId: n.paneId } : {}),
          reason: String(n.reason).slice(0, 500),
        }));
      }
      this.request('ui.command.result', params).catch(() => {});
      return;
    }
    this.onEvent(name, payload);
  }

  hello(frame) {
    if (!frame.ok) {
      const code = frame.error?.code;
      if (code === 'FORBIDDEN') {
        this.stopped = true;
        this.onStatus('unauthorized', frame.error?.message);
      } else {
        this.onStatus('down', frame.error?.message);
      }
      return;
    }
    this.connId = frame.payload?.server?.connId ?? null;
    this.delay = 500;
    this.onStatus('connected', this.connId);
  }
}
