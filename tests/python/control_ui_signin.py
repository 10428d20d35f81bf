"""One-time sign-in links: the credential never appears in a URL or the browser's history.

Run by crates/cli/tests/control_ui_browser.rs:
    python control_ui_signin.py BINARY
In headless Chromium with its own profile:
1. `ax-code serve` prints a `#code=` link, not the credential, on an origin of its own
   (`http://<label>.localhost:PORT`); opening it signs the tab in and takes the code out of the
   address.
2. The same link in a fresh tab is refused (the code died on first use), with what to do.
3. `ax-code link` prints the link alone on its own line, each time on a fresh origin; a link of
   the tab's own origin pasted into that tab, which shows the sign-in form, signs it in
   (`hashchange`, no reload); so does a whole pasted line (link and note) in the address bar,
   and a line that contains a link or a code pasted into the sign-in form.
4. After the browser quit, its history database holds the links it visited but never the
   credential.
5. A link that carries the credential itself (`#token=`) is not accepted, and taken out of the
   address.
"""

import os
import re
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


def origin_of(link):
    return link.split("/#", 1)[0]


def backend_link(binary, env, backend):
    out = subprocess.run([binary, "link", "--url", backend.url], env=env, capture_output=True,
                         text=True, timeout=30)
    check(out.returncode == 0, f"`ax-code link` works: {out.stderr!r}")
    return out.stdout.strip()


def run(binary):
    root = tempfile.mkdtemp(prefix="axsignin")
    backend = Backend(binary, root)
    profile = os.path.join(root, "profile")
    driver = None
    try:
        link = backend.link
        link_shape = re.compile(r"^http://([0-9a-f]{16})\.localhost:%d/#code=([0-9A-Za-z]{32})$" % backend.port)
        check(link is not None and link_shape.match(link),
              f"serve prints a one-time sign-in link on an origin of its own: {link}")
        origin = link.split("/#", 1)[0]
        check(backend.token not in link, "the link does not carry the credential")

        driver = browser(profile, console_log=True)
        # 1. The printed link signs in once.
        driver.get(link)
        wait_for(lambda: connected(driver), "the printed link signs the tab in")
        check(stored_token(driver) == backend.token, "the tab holds the credential it exchanged the code for")
        check("code=" not in driver.current_url and driver.current_url == origin + "/",
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
        fresh = out.stdout.strip()
        check(out.stdout == fresh + "\n" and link_shape.match(fresh) and backend.token not in out.stdout,
              f"and prints a fresh link alone on its line, without the credential: {out.stdout!r}")
        check(origin_of(fresh) != origin, "on an origin of its own")
        out = subprocess.run([binary, "link"], env=env, capture_output=True, text=True, timeout=30,
                             cwd=backend.project)
        check(out.returncode == 0 and link_shape.match(out.stdout.strip()),
              f"`ax-code link` in the project finds the backend itself: {out.stdout!r} {out.stderr!r}")
        marker = driver.execute_script("window.__sameDocument = 'yes'; return window.__sameDocument")
        # The same code on this tab's origin: what pasting a link of this origin does.
        driver.get(origin + "/#code=" + link_shape.match(fresh).group(2))
        wait_for(lambda: connected(driver), "the pasted link signs the tab in")
        check(driver.execute_script("return window.__sameDocument") == marker,
              "without a reload (the page handled hashchange)")
        check(stored_token(driver) == backend.token and "code=" not in driver.current_url,
              "the tab holds the credential; the address holds no code")

        # The whole line `ax-code link` used to print (link, then a note) pasted into the
        # address bar still signs in (a fresh tab: sessionStorage is per tab).
        driver.switch_to.new_window("tab")
        driver.get(f"{backend.sign_in_link()} (one-time sign-in link, valid 60 s)")
        wait_for(lambda: connected(driver), "a pasted line with a note after the link signs in")
        check(stored_token(driver) == backend.token, "with the exchanged credential")

        # The sign-in form takes a pasted line that contains a link of its own origin, or a
        # link of another origin (it opens it), or just `code=...`.
        for label, line, where in [
            ("a line with a link of this origin", f"Control UI: {backend.sign_in_link()}", backend.url),
            ("a line with a fresh link", f"Control UI: {backend_link(binary, env, backend)}  (note)", None),
            ("a line with a code", f"code={backend.sign_in_link().rsplit('=', 1)[1]} (one-time)", backend.url),
        ]:
            driver.switch_to.new_window("tab")
            driver.get(backend.url + "/")
            wait_for(lambda: driver.find_element(By.ID, "token").is_displayed(), "a fresh tab shows the form")
            field = driver.find_element(By.ID, "token")
            field.send_keys(line)
            field.submit()
            wait_for(lambda: connected(driver), f"the form signs in with {label}")
            check(stored_token(driver) == backend.token, "with the exchanged credential")
            if where:
                check(driver.current_url == where + "/", f"on this origin: {driver.current_url}")
            else:
                check(re.match(r"^http://[0-9a-f]{16}\.localhost:%d/$" % backend.port, driver.current_url),
                      f"on the link's own origin: {driver.current_url}")

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
