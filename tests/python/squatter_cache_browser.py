"""Nothing another OS user served while holding the backend's port ever runs in a later real
Control UI page (docs/SECURITY.md, "Other OS users").

Run by crates/cli/tests/security_redteam.rs as root:
    python squatter_cache_browser.py BINARY [cache|worker ...]
For each variant, in headless Chromium with a profile of its own, with `ax-code serve` on a
fixed port and the same credential across its restart (AX_CODE_SERVER_PASSWORD):
1. The person opens the printed sign-in link (tab A) and a second sign-in link of the same
   origin (tab B, left open).
2. The backend stops. Another OS user (`axtestuser`, created when missing) takes 127.0.0.1:P and
   [::1]:P with tests/python/squatter.py `poison`: variant `cache` serves the page and its
   script "immutable" for a year, variant `worker` registers a service worker for `/` that
   answers navigations and copies every Authorization header it sees.
3. The person reloads tab A once; the squatter leaves; the backend starts again on the port.
4. The person opens a fresh `ax-code link` in a new tab: it signs in, the squatter's script
   never runs there, and the exfiltration endpoint hears nothing, neither a credential from
   the link's page nor (worker variant) an Authorization header from tab B, which refuses to
   send its credential while a service worker it did not register is present, and removes it.
"""

import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from selenium.webdriver.common.by import By

from axtest import HERE, Backend, browser, check, close_browser, run_checks, wait_for

USER = "axtestuser"


def other_user():
    """(uid, gid) of the second OS user, created when missing."""
    if subprocess.run(["id", "-u", USER], capture_output=True).returncode != 0:
        r = subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", USER], capture_output=True)
        check(r.returncode in (0, 9), f"useradd {USER}: {r.stderr!r}")
    uid = int(subprocess.run(["id", "-u", USER], capture_output=True, text=True).stdout)
    gid = int(subprocess.run(["id", "-g", USER], capture_output=True, text=True).stdout)
    check(uid != 0, f"{USER} is not root")
    return uid, gid


def free_port_on_both():
    while True:
        v4 = socket.socket(socket.AF_INET)
        v4.bind(("127.0.0.1", 0))
        port = v4.getsockname()[1]
        v6 = socket.socket(socket.AF_INET6)
        try:
            v6.bind(("::1", port))
            return port
        except OSError:
            continue
        finally:
            v4.close()
            v6.close()


class Exfil:
    """Where the planted code sends what it stole: records every request line."""

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/steal"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def connected(driver):
    el = driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
    return el.is_displayed() and el.get_attribute("data-gateway") == "connected"


def signin_reason(driver):
    el = driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]')
    return el.get_attribute("data-reason") if el.is_displayed() else None


def origin_of(link):
    return re.match(r"(https?://[^/#]+)", link).group(1)


def fresh_link(binary, backend):
    env = dict(os.environ, AX_CODE_DATA_DIR=backend.data, AX_CODE_SERVER_PASSWORD=backend.token)
    env.pop("XDG_DATA_HOME", None)
    out = subprocess.run([binary, "link", "--url", backend.url], env=env, capture_output=True,
                         text=True, timeout=30)
    check(out.returncode == 0, f"`ax-code link` works: {out.stderr!r}")
    return out.stdout.split()[0]


def variant(binary, user, kind):
    print(f"-- variant {kind}", flush=True)
    root = tempfile.mkdtemp(prefix=f"axsquat-{kind}-")
    os.chmod(root, 0o755)
    port = free_port_on_both()
    password = "squatter-test-password-" + os.urandom(8).hex()
    exfil = Exfil()
    backend = Backend(binary, root, port=port, token=password)
    driver = None
    squatter = None
    try:
        driver = browser(os.path.join(root, "profile"), console_log=True)
        # 1. Tab A by the printed link; tab B by a second link of the same origin.
        driver.get(backend.link)
        wait_for(lambda: connected(driver), "tab A signs in by the printed link")
        tab_a = driver.current_window_handle
        origin = origin_of(backend.link)
        driver.switch_to.new_window("tab")
        tab_b = driver.current_window_handle
        driver.get(f"{origin}/#code={backend.api('POST', '/signin/code')['code']}")
        wait_for(lambda: connected(driver), "tab B signs in on the same origin")

        # 2. The backend stops; another OS user takes both loopback addresses of its port.
        backend.stop()
        with open(os.path.join(HERE, "squatter.py"), "rb") as source:
            squatter = subprocess.Popen(
                ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups",
                 "/usr/bin/python3", "-", "poison", str(port), exfil.url, kind],
                stdin=source, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
        check(squatter.stdout.readline().strip() == "ready", f"the squatter ({USER}) holds port {port}")
        served = []
        threading.Thread(target=lambda: [served.append(l.strip()) for l in squatter.stdout],
                         daemon=True).start()

        # 3. The person reloads tab A once: the squatter's page runs there.
        driver.switch_to.window(tab_a)
        driver.refresh()
        wait_for(lambda: driver.execute_script("return window.__squatter === true"),
                 "the reload ran the squatter's page in tab A")
        if kind == "worker":
            seen = []

            def worker_active():
                state = driver.execute_async_script(
                    "const done = arguments[0]; navigator.serviceWorker.getRegistrations()"
                    ".then((r) => done(r.some((x) => x.active) || `${window.__worker} ${r.length}`))")
                seen.append(state)
                return state is True

            wait_for(worker_active, "the squatter's service worker is active on the origin", timeout=30)
        else:
            wait_for(lambda: "served /assets/app.js" in served, "its script was fetched (and cached)")
            seen = None
        squatter.terminate()
        squatter.wait(timeout=10)
        squatter = None

        # 4. The backend starts again on the port; the person opens a fresh link.
        backend = Backend(binary, root, port=port, token=password)
        check(backend.port == port, "the backend is back on the same port")
        link = fresh_link(binary, backend)
        driver.switch_to.new_window("tab")
        driver.get(link)
        wait_for(lambda: exfil.hits or connected(driver), "the fresh link's page settles", timeout=20)
        check(not exfil.hits, f"the squatter's code did not run in the real page: {exfil.hits}")
        check(connected(driver), "the fresh link signs in")
        check(driver.execute_script("return window.__squatter === undefined"),
              "no squatter script in the page the link opened")
        if kind == "worker":
            driver.switch_to.window(tab_b)
            wait_for(lambda: exfil.hits or signin_reason(driver) == "foreign-worker",
                     "tab B settles after the restart", timeout=20)
            check(not exfil.hits, f"tab B sent no credential through the worker: {exfil.hits}")
            check(signin_reason(driver) == "foreign-worker",
                  f"tab B refused to go on while a foreign service worker was present: {signin_reason(driver)}")
            check(driver.execute_script("return sessionStorage.getItem('ax-code.token')") is None,
                  "and forgot the credential")
            wait_for(lambda: driver.execute_async_script(
                "const done = arguments[0]; navigator.serviceWorker.getRegistrations()"
                ".then((r) => done(r.length === 0))"), "and removed the worker")
        time.sleep(0.5)
        check(not exfil.hits, f"nothing reached the exfiltration endpoint: {exfil.hits}")
    finally:
        close_browser(driver)
        if squatter is not None:
            squatter.kill()
            squatter.wait()
        backend.stop()
        exfil.server.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def run(binary, kinds):
    user = other_user()
    for kind in kinds:
        variant(binary, user, kind)


def main():
    run_checks(run, os.path.abspath(sys.argv[1]), sys.argv[2:] or ["cache", "worker"])
    print("all squatter cache and worker checks passed", flush=True)


if __name__ == "__main__":
    main()
