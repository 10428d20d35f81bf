"""Sign-in across restarts: an open Control UI tab proves a restarted backend by itself, and
`ax-code link --rotate` ends that (docs/SECURITY.md, "Sign-in across restarts").

Run by crates/cli/tests/control_ui_browser.rs:
    python control_ui_restart.py BINARY
In headless Chromium, with `ax-code serve` on a fixed port and its own kept credential (no
AX_CODE_SERVER_PASSWORD):
1. The printed link signs a tab in.
2. The backend stops and starts again on the same port: the same credential; the tab, left
   open, proves the new process and is live again without a new link, holding the credential.
3. `ax-code link --rotate` in the project, then a restart: a new credential; the open tab
   cannot prove the backend, sends nothing, forgets its credential and says so; a fresh link
   signs in.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, close_browser, run_checks, wait_for


def live(driver):
    el = driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
    return el.is_displayed() and el.get_attribute("data-state") == "live"


def signin_reason(driver):
    el = driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]')
    return el.get_attribute("data-reason") if el.is_displayed() else None


def stored_token(driver):
    return driver.execute_script("return sessionStorage.getItem('ax-code.token')")


def run(binary):
    root = tempfile.mkdtemp(prefix="axrestart")
    backend = Backend(binary, root, generated=True)
    port = backend.port
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), console_log=True)
        # 1. Signed in by the printed link.
        driver.get(backend.link)
        wait_for(lambda: live(driver), "the printed link signs the tab in")
        first = backend.token

        # 2. A restart on the same port: same credential, the open tab follows by itself.
        backend.stop()
        wait_for(lambda: not live(driver), "the tab notices the backend is gone")
        backend = Backend(binary, root, port=port, generated=True)
        check(backend.token == first, "the restarted backend has the project's kept credential")
        wait_for(lambda: live(driver), "the open tab proves the restarted backend and is live again", timeout=30)
        check(signin_reason(driver) is None and stored_token(driver) == first,
              "without signing in again, holding the credential")

        # 3. Rotation, then a restart: the tab stops and forgets; a fresh link works.
        env = dict(os.environ, AX_CODE_DATA_DIR=backend.data)
        env.pop("AX_CODE_SERVER_PASSWORD", None)
        env.pop("XDG_DATA_HOME", None)
        out = subprocess.run([binary, "link", "--rotate"], env=env, capture_output=True, text=True,
                             timeout=30, cwd=backend.project)
        check(out.returncode == 0 and "New credential" in out.stdout and first not in out.stdout,
              f"`ax-code link --rotate` makes a new credential: {out.stdout!r} {out.stderr!r}")
        check(live(driver), "the running backend keeps the old one until it stops")
        backend.stop()
        backend = Backend(binary, root, port=port, generated=True)
        check(backend.token != first, "after the restart the backend has the new credential")
        wait_for(lambda: signin_reason(driver) == "not-proven", "the open tab cannot prove it and stops", timeout=30)
        check(stored_token(driver) is None, "and forgot the old credential")
        check(first not in open(backend.log_path, "rb").read().decode(errors="replace"),
              "the old credential never reached the backend's log")
        driver.get(backend.link)
        wait_for(lambda: live(driver), "a fresh link signs in with the new credential")
        check(stored_token(driver) == backend.token, "holding the new credential")
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, os.path.abspath(sys.argv[1]))
    print("all Control UI restart checks passed", flush=True)


if __name__ == "__main__":
    main()
