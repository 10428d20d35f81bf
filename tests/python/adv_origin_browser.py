"""Other origins in the person's browser: cross-site requests, WebSocket hijacking, framing,
and a DNS-rebinding style host name, against a real `ax-code serve` in headless Chromium.

Run by crates/cli/tests/adversarial_origins.rs:
    python adv_origin_browser.py BINARY
It starts `ax-code serve` (temp data dir, AX_CODE_SERVER_PASSWORD, a free loopback port, the
request debug log on) and an "evil" web server on another port of 127.0.0.1 serving
adv_origin_evil.html. The evil page tries fetch() with and without credentials, a no-cors POST,
a form POST, a WebSocket to /gateway with a connect frame, and framing the Control UI; once
without the person's token and once with a leaked token. Checks, each printed:
  - no attempt got a readable answer, a WebSocket open or a hello;
  - the backend saw the attempts and refused them (403 in its request log), so it is the
    backend that refuses, not only the browser's CORS rules;
  - no session was created in the store (the person's API listing still shows only theirs);
  - the Control UI is not rendered inside the evil page's frame;
  - http://evil.example:PORT/ (mapped to 127.0.0.1 by the browser's resolver) is refused.
Exits non-zero on the first failure.
"""

import functools
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading

from selenium.webdriver.common.by import By

from axtest import HERE, Backend, CheckFailed, browser, check, wait_for


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def evil_server(root):
    site = os.path.join(root, "evil")
    os.makedirs(site)
    shutil.copy(os.path.join(HERE, "adv_origin_evil.html"), os.path.join(site, "index.html"))
    handler = functools.partial(Quiet, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_evil_page(driver, backend, evil_origin, leaked):
    label = "with a leaked token" if leaked else "without the token"
    offset = backend.log_size()
    fragment = f"target={backend.url}"
    if leaked:
        fragment += f"&token={backend.token}"
    # A new query string each run: a fragment-only change would not reload the page.
    driver.get(f"{evil_origin}/index.html?run={int(leaked)}#{fragment}")
    wait_for(lambda: driver.execute_script("return document.body.dataset.done") == "1",
             f"the evil page finished its attempts ({label})", timeout=40)
    results = json.loads(driver.find_element(By.ID, "results").text)
    shown = dict(results, control_same_origin=results["control_same_origin"][:12])
    print(f"evil page results ({label}): {json.dumps(shown)}", flush=True)

    check(results["control_same_origin"].startswith("readable 200"),
          f"control: the page's own origin is readable ({label})")
    fetches = [k for k in results if k.startswith(("get_", "post_"))]
    check(len(fetches) >= (9 if leaked else 5), f"every fetch attempt ran ({label})")
    for name in fetches:
        value = results[name]
        check(value.startswith("blocked") or value == "opaque",
              f"{name}: no readable answer ({label}): {value}")
    ws = results["websocket"]
    check(not ws["opened"] and not ws["messages"],
          f"the gateway WebSocket never opened, no challenge or hello ({label}): {ws}")

    # The frame of the Control UI stays empty (X-Frame-Options / frame-ancestors).
    frame = driver.find_element(By.ID, "framed")
    driver.switch_to.frame(frame)
    try:
        framed = driver.execute_script(
            "return [location.href, !!document.querySelector('script[src*=\"app.js\"]'),"
            " document.body ? document.body.innerText.slice(0, 200) : '']")
    finally:
        driver.switch_to.default_content()
    check(not framed[1] and not framed[0].startswith(backend.url),
          f"the Control UI is not rendered in the evil page's frame ({label}): {framed}")

    # What the backend saw: the attempts arrived and were refused by the backend itself.
    seen = backend.requests_since(offset)
    api = [(m, p, s) for (m, p, s) in seen if p in ("/session", "/gateway", "/health")]
    print(f"backend request log ({label}): {api}", flush=True)
    check(all(s in (401, 403) for (_, _, s) in api),
          f"every /session, /gateway, /health request from the evil page was refused ({label})")
    check(any(m == "POST" and p == "/session" and s == 403 for (m, p, s) in api),
          f"a cross-site POST /session reached the backend and got 403 ({label})")
    check(any(m == "GET" and p == "/gateway" and s == 403 for (m, p, s) in api),
          f"the cross-site WebSocket upgrade reached the backend and got 403 ({label})")
    check(any(m == "GET" and p == "/session" and s == 403 for (m, p, s) in api),
          f"a cross-site GET /session reached the backend and got 403 ({label})")

    sessions = backend.api("GET", "/session")
    titles = sorted(s.get("title") or "" for s in sessions)
    check(titles == ["the person's session"],
          f"no session was created by the evil page ({label}): {titles}")


def rebinding(driver, backend):
    offset = backend.log_size()
    driver.get(f"http://evil.example:{backend.port}/#token={backend.token}")
    body = wait_for(lambda: driver.find_element(By.TAG_NAME, "body").text,
                    "the rebound page loaded", timeout=20)
    has_app = driver.execute_script("return !!document.querySelector('script[src*=\"app.js\"]')")
    check("forbidden" in body and not has_app,
          f"http://evil.example:PORT/ is refused, no Control UI: {body[:200]!r}")
    fetched = driver.execute_script(
        "return fetch('/session', {headers: {Authorization: 'Bearer ' + arguments[0]}})"
        ".then(r => r.status).catch(e => 'blocked: ' + e.name)", backend.token)
    check(fetched == 403, f"a same-origin fetch under the rebound name gets 403: {fetched}")
    seen = backend.requests_since(offset)
    check(("GET", "/", 403) in seen and ("GET", "/session", 403) in seen,
          f"the backend refused the rebound host itself: {seen}")


def main():
    binary = sys.argv[1]
    root = tempfile.mkdtemp(prefix="ax-adv-origin-")
    backend = None
    evil = None
    driver = None
    try:
        backend = Backend(binary, root, rust_log="info,ax_server=debug")
        backend.api("POST", "/session", {"title": "the person's session"})
        evil = evil_server(root)
        evil_origin = f"http://127.0.0.1:{evil.server_address[1]}"
        check(evil.server_address[1] != backend.port,
              f"the evil page is another origin: {evil_origin}")
        # A rebound name: evil.example resolves to the loopback address in this browser.
        driver = browser(os.path.join(root, "profile"),
                         "--host-resolver-rules=MAP evil.example 127.0.0.1")
        driver.set_page_load_timeout(20)
        run_evil_page(driver, backend, evil_origin, leaked=False)
        run_evil_page(driver, backend, evil_origin, leaked=True)
        rebinding(driver, backend)
        check(backend.proc.poll() is None, "the backend is still running")
        with open(backend.log_path, "rb") as f:
            log = f.read().decode(errors="replace")
        check(backend.token not in log, "the backend log never shows the token")
        print("all origin checks passed", flush=True)
        return 0
    except CheckFailed:
        return 1
    finally:
        if driver is not None:
            driver.quit()
        if evil is not None:
            evil.shutdown()
        if backend is not None:
            backend.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
