"""One-time sign-in links: the credential never appears in a URL or the browser's history.

Run by crates/cli/tests/control_ui_browser.rs:
    python control_ui_signin.py BINARY
In headless Chromium with its own profile:
1. `ax-code serve` prints a `#code=` link, not the credential; opening it signs the tab in and
   takes the code out of the address.
2. The same link in a fresh tab is refused (the code died on first use), with what to do.
3. A fresh link (`ax-code link`) pasted into that tab, which shows the sign-in form, signs it in
   (`hashchange`, no reload).
4. After the browser quit, its history database holds the links it visited but never the
   credential.
5. A link that carries the credential itself (`#token=`) is not accepted, and taken out of the
   address.
"""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, close_browser, run_checks, wait_for


def connected(driver):
    return driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]').get_attribute("data-gateway") == "connected"


def stored_token(driver):
    return driver.execute_script("return sessionStorage.getItem('ax-code.token')")


def signin_shown(driver, reason):
    el = driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]')
    return el.is_displayed() and el.get_attribute("data-reason") == reason


def run(binary):
    root = tempfile.mkdtemp(prefix="axsignin")
    backend = Backend(binary, root)
    profile = os.path.join(root, "profile")
    driver = None
    try:
        link = backend.link
        check(link is not None and link.startswith(backend.url + "/#code="),
              f"serve prints a one-time sign-in link: {link}")
        check(backend.token not in link, "the link does not carry the credential")

        driver = browser(profile, console_log=True)
        # 1. The printed link signs in once.
        driver.get(link)
        wait_for(lambda: connected(driver), "the printed link signs the tab in")
        check(stored_token(driver) == backend.token, "the tab holds the credential it exchanged the code for")
        check("code=" not in driver.current_url and driver.current_url == backend.url + "/",
              f"the code is taken out of the address: {driver.current_url}")

        # 2. The same link again, in a fresh tab: refused.
        driver.switch_to.new_window("tab")
        driver.get(link)
        wait_for(lambda: signin_shown(driver, "link-refused"), "a used link shows the sign-in form")
        message = driver.find_element(By.ID, "signin-error").text
        check("already used or has expired" in message and "ax-code link" in message,
              f"and says what to do: {message!r}")
        check(stored_token(driver) is None, "the refused tab holds no credential")

        # 3. A fresh link from `ax-code link`, pasted into the tab showing the sign-in form.
        env = dict(os.environ, AX_CODE_DATA_DIR=backend.data)
        env.pop("AX_CODE_SERVER_PASSWORD", None)
        env.pop("XDG_DATA_HOME", None)
        out = subprocess.run([binary, "link", "--url", backend.url], env=env, capture_output=True,
                             text=True, timeout=30)
        check(out.returncode == 0, f"`ax-code link --url` works: {out.stderr}")
        fresh = out.stdout.split()[0]
        check(fresh.startswith(backend.url + "/#code=") and fresh != link and backend.token not in out.stdout,
              f"and prints a fresh link without the credential: {out.stdout!r}")
        out = subprocess.run([binary, "link"], env=env, capture_output=True, text=True, timeout=30,
                             cwd=backend.project)
        check(out.returncode == 0 and out.stdout.startswith(backend.url + "/#code="),
              f"`ax-code link` in the project finds the backend itself: {out.stdout!r} {out.stderr!r}")
        marker = driver.execute_script("window.__sameDocument = 'yes'; return window.__sameDocument")
        driver.get(fresh)
        wait_for(lambda: connected(driver), "the pasted link signs the tab in")
        check(driver.execute_script("return window.__sameDocument") == marker,
              "without a reload (the page handled hashchange)")
        check(stored_token(driver) == backend.token and "code=" not in driver.current_url,
              "the tab holds the credential; the address holds no code")

        driver.quit()
        driver = None

        # 4. The history database: the visited links are there, the credential is not.
        history = os.path.join(profile, "Default", "History")
        check(os.path.exists(history), "the browser kept a history database")
        db = sqlite3.connect(f"file:{history}?mode=ro", uri=True)
        urls = [u for (u,) in db.execute("SELECT url FROM urls")]
        db.close()
        check(any("#code=" in u for u in urls), f"the history holds the visited sign-in links: {urls}")
        check(not any(backend.token in u for u in urls), "no address in the history holds the credential")
        with open(history, "rb") as f:
            check(backend.token.encode() not in f.read(), "nor does any other byte of the database")

        # 5. A link with the credential itself is not accepted (another profile: this one is
        # meant to put the credential into a history).
        driver = browser(os.path.join(root, "profile-legacy"), console_log=True)
        driver.get(f"{backend.url}/#token={backend.token}")
        wait_for(lambda: signin_shown(driver, "link-refused"), "a #token= link is not accepted")
        check("not accepted" in driver.find_element(By.ID, "signin-error").text, "and the page says so")
        check(backend.token not in driver.current_url, "the credential is taken out of the address")
        check(stored_token(driver) is None, "the tab holds no credential")
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, os.path.abspath(sys.argv[1]))
    print("all Control UI sign-in checks passed", flush=True)


if __name__ == "__main__":
    main()
