"""The Control UI served by a hub over two joined machines (docs/hub.md §4).

Run by crates/cli/tests/hub_browser.rs, which starts a real nats-server:
    python control_ui_hub.py BINARY NATS_URL
In headless Chromium with its own profile:
1. Two `ax-code serve --join NATS_URL --name ...` (own data directories and projects), each with
   a session; `ax-code hub --nats NATS_URL --port 0` prints a one-time `#code=` link, never the
   credential. Opening it signs the tab in to the hub (the page checked the hub's proof).
2. Both machines are in the sidebar, online, each with its own session under it.
3. The session of machine 2 opened; a prompt sent from the hub's page (the shell agent asks
   first); its approval answered from the hub's page; the command's output streams into the
   transcript.
4. Machine 2 stopped: shown offline with when it was last seen; its session read-only.
"""

import os
import re
import subprocess
import sys
import tempfile
import secrets

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, close_browser, run_checks, stop_process, wait_for


class Hub:
    """`ax-code hub --nats URL --port 0` with AX_CODE_HUB_PASSWORD; its stderr in `root/hub.log`."""

    def __init__(self, binary, root, nats):
        self.token = secrets.token_urlsafe(32)
        env = dict(os.environ, AX_CODE_HUB_PASSWORD=self.token, AX_CODE_DATA_DIR=os.path.join(root, "hubdata"))
        self.log = open(os.path.join(root, "hub.log"), "wb")
        self.proc = subprocess.Popen([binary, "hub", "--nats", nats, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, env=env)
        self.url = self.link = None
        for _ in range(10):
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1).rstrip("/")
            m = re.search(r"Control UI: (http://\S+)", line)
            if m:
                self.link = m.group(1)
                break
        check(self.url is not None and self.link is not None, f"ax-code hub prints its URL and a link ({self.url}, {self.link})")

    def stop(self):
        stop_process(self.proc, self.log)


def machine_row(driver, name):
    rows = driver.find_elements(By.CSS_SELECTOR, f'[data-testid="machine-row"][data-machine="{name}"]')
    return rows[0] if rows else None


def online(driver, name, state):
    row = machine_row(driver, name)
    return row is not None and row.get_attribute("data-online") == state


def rows_after(driver, name):
    """The session ids listed under machine `name` (up to the next machine heading)."""
    return driver.execute_script("""
        const out = []; let inside = false;
        for (const li of document.querySelectorAll('#session-list > li')) {
          if (li.dataset.testid === 'machine-row') { inside = li.dataset.machine === arguments[0]; continue; }
          const b = li.querySelector('[data-session]');
          if (inside && b) out.push(b.dataset.session);
        }
        return out;""", name)


def transcript_text(driver):
    return " ".join(t.text for t in driver.find_elements(By.CSS_SELECTOR, '[data-testid="transcript"]'))


def run(binary, nats):
    root = tempfile.mkdtemp(prefix="axhubui")
    alpha = beta = hub = driver = None
    try:
        alpha = Backend(binary, os.path.join(root, "alpha"), extra_args=("--join", nats, "--name", "alpha"))
        beta = Backend(binary, os.path.join(root, "beta"), extra_args=("--join", nats, "--name", "beta"))
        on_alpha = alpha.api("POST", "/session", {"title": "on-alpha"})["id"]
        on_beta = beta.api("POST", "/session", {"title": "on-beta"})["id"]

        hub = Hub(binary, root, nats)
        check(hub.token not in hub.link and "#code=" in hub.link, f"the hub prints a one-time code, not its credential: {hub.link}")

        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        driver.get(hub.link)
        wait_for(lambda: driver.execute_script("return sessionStorage.getItem('ax-code.token')") == hub.token,
                 "the hub's link signs the tab in (code exchanged, proof checked)", timeout=20)
        check("code=" not in driver.current_url, f"the code is taken out of the address: {driver.current_url}")

        # 2. Both machines, each with its own session.
        wait_for(lambda: online(driver, "alpha", "true") and online(driver, "beta", "true"),
                 "both machines in the sidebar, online", timeout=20)
        wait_for(lambda: rows_after(driver, "alpha") == [on_alpha] and rows_after(driver, "beta") == [on_beta],
                 "each machine's session under it", timeout=20)

        # 3. Machine 2's session: a prompt, its approval, the output.
        def open_beta():
            # The sidebar is drawn anew as machines report: retried until a click lands.
            driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{on_beta}"]').click()
            return True
        wait_for(open_beta, "beta's session clicked in the sidebar")
        box = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]')), None),
                       "beta's session opened with a composer")
        box.send_keys("echo hub-ui-said-hi")
        box.send_keys(Keys.ENTER)
        approve = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, '[data-testid="approve-once"]')), None),
                           "the shell agent's approval shown on the hub's page", timeout=20)
        approve.click()
        wait_for(lambda: "hub-ui-said-hi" in transcript_text(driver) and len(beta.api("GET", f"/session/{on_beta}/message")) == 2,
                 "the command ran on beta and its output streamed into the hub's transcript", timeout=30)
        check(len(alpha.api("GET", f"/session/{on_alpha}/message")) == 0, "alpha's session got nothing")

        # 4. Machine 2 stops: offline, last seen, read-only.
        beta.stop()
        beta = None
        wait_for(lambda: online(driver, "beta", "false"), "beta shown offline", timeout=30)
        status = machine_row(driver, "beta").find_element(By.CSS_SELECTOR, '[data-testid="machine-status"]').text
        check("last seen" in status, f"with when it was last seen: {status!r}")
        check(online(driver, "alpha", "true"), "alpha still online")
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-testid="readonly-note"]'),
                 "beta's open session is read-only, with a note", timeout=20)
        check(not driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]'),
              "no composer for the offline machine's session")
    finally:
        if driver is not None:
            close_browser(driver)
        for p in (hub, beta, alpha):
            if p is not None:
                p.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
