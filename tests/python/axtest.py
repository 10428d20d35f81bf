"""Shared helpers for the Python test scripts in this directory.

The scripts are run as `python tests/python/NAME.py ...` by the Rust integration tests in
crates/cli/tests, so this directory is first on sys.path and `import axtest` finds this file.

- `check` / `wait_for` / `CheckFailed` / `run_checks`: printed checks that stop a script on the
  first failure (exit status 1);
- `Backend`: a real `ax-code serve` on a free loopback port with a private data directory and
  a generated credential;
- `browser`: headless Chromium through chromedriver (selenium); `click_when_found`: find and
  click in one retried step (a list redrawn in between makes a found element stale);
- `mcp_session` / `select_arguments`: the official MCP Python SDK over stdio to an `ax-code mcp
  ...` subprocess.
"""

import asyncio
import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CHROMIUM = os.environ.get("AX_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("AX_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
HERE = os.path.dirname(os.path.abspath(__file__))
# One request line of the backend's debug log.
REQUEST_LOG = re.compile(r"method=(\w+) path=(\S+) status=(\d+)")


class CheckFailed(Exception):
    pass


def check(condition, what):
    """Prints `ok: WHAT` or `FAIL: WHAT`; raises CheckFailed on failure."""
    print(("ok: " if condition else "FAIL: ") + what, flush=True)
    if not condition:
        raise CheckFailed(what)


def wait_for(predicate, what, timeout=10.0):
    """Polls `predicate` until it returns something true (returned, and printed as a passed
    check) or `timeout` seconds pass (a failed check with the last value or exception).
    Exceptions other than CheckFailed count as "not yet" (a page may be re-rendering)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                check(True, what)
                return last
        except CheckFailed:
            raise
        except Exception as e:
            last = e
        time.sleep(0.05)
    check(False, f"{what} (last: {last!r})")


def click_when_found(driver, css, what, timeout=10.0):
    """Finds the element `css` selects and clicks it in one step, again until a click lands:
    the page redraws lists (the sidebar, a pane) as events come, so an element found before a
    redraw is stale by the time it is clicked. Returns the element clicked."""
    def attempt():
        from selenium.webdriver.common.by import By
        el = driver.find_element(By.CSS_SELECTOR, css)
        el.click()
        return el
    return wait_for(attempt, what, timeout=timeout)


def strings(value):
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def run_checks(main, *args):
    """Runs `main(*args)` (a coroutine function or a plain one); a failed check (also one
    wrapped in the MCP client's task groups) exits with status 1."""
    try:
        result = main(*args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return result
    except CheckFailed:
        sys.exit(1)
    except BaseExceptionGroup as group:
        if group.subgroup(CheckFailed) is not None:
            sys.exit(1)
        raise


class Backend:
    """`ax-code serve --port 0` with a generated AX_CODE_SERVER_PASSWORD and a private data
    directory under `root`; its stderr goes to `root/serve.log`."""

    def __init__(self, binary, root, rust_log=None, port=0, token=None, extra_env=None, generated=False,
                 extra_args=()):
        """`generated`: no AX_CODE_SERVER_PASSWORD; the credential is the one `serve` keeps for
        the project, read from its `credentials/` file. `extra_args`: more `serve` arguments
        (`--join URL --name NAME`)."""
        self.token = None if generated else (token or secrets.token_urlsafe(32))
        self.data = os.path.join(root, "data")
        self.project = os.path.join(root, "project")
        os.makedirs(self.data, mode=0o700, exist_ok=True)
        os.makedirs(self.project, exist_ok=True)
        env = dict(os.environ, AX_CODE_DATA_DIR=self.data)
        env.pop("AX_CODE_SERVER_PASSWORD", None)
        if self.token:
            env["AX_CODE_SERVER_PASSWORD"] = self.token
        env.pop("XDG_DATA_HOME", None)
        if rust_log is not None:
            env["RUST_LOG"] = rust_log
        env.update(extra_env or {})
        self.log_path = os.path.join(root, "serve.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--port", str(port), "--dir", self.project, *extra_args],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, env=env,
        )
        self.url = None
        self.link = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1).rstrip("/")
                # The next line is the Control UI link.
                m = re.search(r"Control UI: (http://\S+)", self.proc.stdout.readline().decode())
                self.link = m.group(1) if m else None
                break
        check(self.url is not None, f"ax-code serve is listening ({self.url})")
        if generated:
            folder = os.path.join(self.data, "credentials")
            for name in os.listdir(folder):
                with open(os.path.join(folder, name)) as f:
                    record = json.load(f)
                if record.get("url") == self.url:
                    self.token = record["token"]
            check(self.token is not None, "serve wrote its credential file")
        check(self.token not in (self.url or ""), "the token is not in the printed URL")
        self.port = int(self.url.rsplit(":", 1)[1])

    def api(self, method, path, body=None):
        """One authenticated JSON request to the backend's API; returns the decoded body."""
        with urllib.request.urlopen(self._request(method, path, body), timeout=10) as res:
            return json.loads(res.read() or b"null")

    def _request(self, method, path, body):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        return req

    def request(self, method, path, body=None):
        """One authenticated request; returns (status, body bytes), also for an error status."""
        try:
            with urllib.request.urlopen(self._request(method, path, body), timeout=10) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def sign_in_link(self):
        """A fresh one-time Control UI link `URL/#code=CODE` (POST /signin/code)."""
        return f"{self.url}/#code={self.api('POST', '/signin/code')['code']}"

    def log_size(self):
        self.log.flush()
        return os.path.getsize(self.log_path)

    def requests_since(self, offset):
        """(method, path, status) of every request the backend logged after `offset`."""
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        return [(m, p, int(s)) for m, p, s in REQUEST_LOG.findall(text)]

    def stop(self):
        stop_process(self.proc, self.log)


def stop_process(proc, log):
    """Ends an `ax-code` process as a person would (SIGTERM, then SIGKILL after 10 s) and closes
    the file its stderr went to."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


MOCK_AGENT_CONFIG = """default_agent = "mock"

[agents.mock]
command = {exe}
env = {{ AX_TEST_BE_MOCK_AGENT = "1" }}
"""


def mock_agent_root(mock, prefix):
    """A fresh test root whose ax-code config (ROOT/config, as XDG_CONFIG_HOME) makes `mock`
    the default agent: a test binary that serves the mock ACP agent when started with
    AX_TEST_BE_MOCK_AGENT=1. Returns (root, the `extra_env` for `Backend`)."""
    root = tempfile.mkdtemp(prefix=prefix)
    config = os.path.join(root, "config")
    os.makedirs(os.path.join(config, "ax-code"))
    with open(os.path.join(config, "ax-code", "config.toml"), "w") as f:
        f.write(MOCK_AGENT_CONFIG.format(exe=json.dumps(mock)))
    return root, {"XDG_CONFIG_HOME": config}


def browser(profile, *flags, console_log=False):
    """Headless Chromium with a private profile and the extra command-line `flags`;
    `console_log` keeps the page console for `driver.get_log("browser")`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile}", *flags,
    ]:
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def close_browser(driver):
    """Quits `driver` (if any), first printing the page's console errors so a failed run
    shows them."""
    if driver is None:
        return
    try:
        for entry in driver.get_log("browser"):
            if entry.get("level") == "SEVERE":
                print("browser console:", entry.get("message"), flush=True)
    except Exception:
        pass  # no console log kept, or the browser is already gone
    driver.quit()


def check_no_csp_violation(driver):
    """The page logged no Content-Security-Policy violation (needs `console_log`)."""
    violations = [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    check(not violations, f"no Content-Security-Policy violation was logged: {violations}")


@contextlib.asynccontextmanager
async def mcp_session(binary, args, env=None):
    """An MCP client session (official SDK, not yet initialized) over the stdio of
    `binary args` (with `env` as its whole environment when given)."""
    params = StdioServerParameters(command=binary, args=args, env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            yield session


def select_arguments(view, session_id):
    """select_session arguments for `session_id` against the identity and revision of
    `view` (the `context` of a get_view_context answer), with a fresh requestId."""
    return {
        "requestId": str(uuid.uuid4()),
        "instanceId": view["instanceId"],
        "generation": view["generation"],
        "expectedRevision": view["revision"],
        "sessionId": session_id,
    }
