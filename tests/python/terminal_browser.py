"""The Control UI's operator terminal in headless Chromium against `ax-code serve`.

Run by crates/cli/tests/terminal_browser.rs:
    python terminal_browser.py BINARY ARTIFACTS_DIR
1. The terminal panel starts a shell under a PTY: what is typed reaches it, colours are drawn
   (the renderer's own styles apply under the page's policy), and the backend's credential is
   not in the shell's environment.
2. A command started in the terminal (a loop printing a counter) survives a reload of the
   page: the terminal attaches again, the scrollback from before the reload is shown again,
   the counter goes on, and typing (Ctrl-C, a new command) works after the reload.
3. At 800x600 the terminal's buttons lie inside the viewport, uncovered (a screenshot is
   saved in ARTIFACTS_DIR); Kill ends the shell.
The page logs no Content-Security-Policy violation throughout.
"""

import os
import re
import shutil
import sys
import time
import tempfile

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, check_no_csp_violation, close_browser, run_checks, wait_for

# The rows xterm.js draws (its DOM renderer), one line of text per row.
ROWS_JS = """
    const rows = document.querySelector('[data-testid="terminal-screen"] .xterm-rows');
    return rows ? [...rows.children].map((r) => r.textContent) : [];
"""

# The colour a cell drawn in ANSI red gets, and whether any <style> element lacks the nonce.
RED_JS = """
    const span = [...document.querySelectorAll('[data-testid="terminal-screen"] .xterm-rows span')]
      .find((s) => s.textContent.includes('RED-42'));
    return span ? { cls: span.className, color: getComputedStyle(span).color } : null;
"""

CONTROLS_JS = """
    const out = [];
    for (const el of document.querySelectorAll('[data-testid="terminal-panel"] button')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      const hit = document.elementFromPoint(Math.min(Math.max(x, 0), innerWidth - 1), Math.min(Math.max(y, 0), innerHeight - 1));
      out.push({
        what: el.getAttribute('aria-label') || el.textContent.trim(),
        inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth + 0.5 && r.bottom <= innerHeight + 0.5,
        reachable: hit !== null && (hit === el || el.contains(hit)),
      });
    }
    return out;
"""


class Page:
    def __init__(self, driver):
        self.d = driver

    def testid(self, name):
        return self.d.find_element(By.CSS_SELECTOR, f'[data-testid="{name}"]')

    def connected(self):
        return self.testid("connection").get_attribute("data-state") == "live"

    def rows(self):
        return self.d.execute_script(ROWS_JS)

    def text(self):
        return "\n".join(self.rows())

    def ticks(self):
        return [int(n) for n in re.findall(r"^tick-(\d+)\s*$", self.text(), re.M)]

    def type(self, text):
        """Types into the terminal, as a person would (keys to the focused renderer)."""
        self.testid("terminal-screen").click()
        ActionChains(self.d).send_keys(text).perform()

    def shows(self, needle, what):
        return wait_for(lambda: needle in self.text(), what, timeout=20)


def run(binary, artifacts):
    root = tempfile.mkdtemp(prefix="axterm")
    backend = Backend(binary, root)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1280,900", console_log=True)
        page = Page(driver)
        driver.get(backend.url + "/")
        wait_for(lambda: driver.find_element(By.ID, "token"), "the sign-in form shows").send_keys(backend.token + Keys.ENTER)
        wait_for(page.connected, "signed in, the connection indicator says live")

        # ---- 1. a shell under a PTY ----
        driver.find_element(By.ID, "toggle-terminal").click()
        wait_for(lambda: page.testid("terminal-panel").is_displayed(), "the terminal panel opens")
        wait_for(lambda: page.testid("terminal-kill").is_enabled(), "and attaches to a new shell")
        wait_for(lambda: page.text().strip(), "the shell draws its prompt", timeout=20)
        page.type("echo typed-$((6*7)); printf '\\033[31m%s\\033[0m\\n' RED-$((40+2))" + Keys.ENTER)
        page.shows("typed-42", "typed input reaches the shell and its output is drawn")
        red = wait_for(lambda: driver.execute_script(RED_JS), "the red text is drawn")
        check("xterm-fg-1" in red["cls"], f"the red text carries the renderer's colour class: {red}")
        check(red["color"] not in ("rgb(215, 221, 230)", "rgb(0, 0, 0)", ""),
              f"and it is drawn in a colour of its own: {red}")
        page.type("echo leak-$(env | grep -c AX_CODE_SERVER_PASSWORD)" + Keys.ENTER)
        page.shows("leak-0", "the backend's credential is not in the shell's environment")

        # ---- 2. a running command survives a reload, with its scrollback ----
        page.type("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo tick-$i; sleep 0.5; done" + Keys.ENTER)
        wait_for(lambda: max(page.ticks(), default=0) >= 2, "the counter loop runs", timeout=20)
        before = max(page.ticks())
        terminal_id = driver.execute_script("return sessionStorage.getItem('ax-code.terminal')")
        check(terminal_id and terminal_id.startswith("term_"), f"the tab remembers its terminal: {terminal_id}")
        driver.refresh()
        wait_for(page.connected, "reconnected after the reload")
        wait_for(lambda: page.testid("terminal-panel").is_displayed(), "the terminal panel is open again")
        page.shows("typed-42", "the scrollback from before the reload is shown again")
        check("tick-1" in page.text(), "with the counter's first lines")
        wait_for(lambda: max(page.ticks(), default=0) > before + 1,
                 f"the counter went on past {before}: the command survived the reload", timeout=20)
        check(driver.execute_script("return sessionStorage.getItem('ax-code.terminal')") == terminal_id,
              "the same terminal was attached again")
        ticks = page.ticks()
        check(ticks == sorted(set(ticks)), f"no line was drawn twice or out of order: {ticks}")
        page.testid("terminal-screen").click()
        ActionChains(driver).key_down(Keys.CONTROL).send_keys("c").key_up(Keys.CONTROL).perform()
        # The shell resets the terminal when the interrupted loop returns to its prompt, which
        # can discard what was typed in between: type again until the output shows (the typed
        # line echoes "after-$((2+3))", never "after-5").
        for _ in range(10):
            page.type("echo after-$((2+3))" + Keys.ENTER)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and "after-5" not in page.text():
                time.sleep(0.1)
            if "after-5" in page.text():
                break
        page.shows("after-5", "after the reload, Ctrl-C and typing still reach the shell")

        # ---- 3. 800x600: the terminal's buttons are on screen ----
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})
        wait_for(lambda: driver.execute_script("return [innerWidth, innerHeight]") == [800, 600],
                 "the viewport is 800x600")
        if page.testid("sidebar").is_displayed():
            page.testid("sidebar-backdrop").click()
            wait_for(lambda: not page.testid("sidebar").is_displayed(), "the sidebar overlay closes")

        def buttons_on_screen(where):
            controls = wait_for(lambda: driver.execute_script(CONTROLS_JS), "the terminal's buttons are laid out")
            names = {c["what"]: c for c in controls}
            for name in ["New terminal", "Kill the terminal", "Hide the terminal panel", "Dock the terminal panel right"]:
                c = names.get(name)
                check(c and c["inside"] and c["reachable"], f"{where}: {name!r} is inside the viewport and uncovered: {c}")

        buttons_on_screen("docked at the bottom")
        page.shows("after-5", "the terminal still shows its text after the resize")
        os.makedirs(artifacts, exist_ok=True)
        shot = os.path.join(artifacts, "terminal-800x600.png")
        driver.save_screenshot(shot)
        check(os.path.getsize(shot) > 10_000, f"screenshot: {shot}")
        page.type("stty size" + Keys.ENTER)
        size = wait_for(lambda: re.search(r"^(\d+) (\d+)\s*$", page.text(), re.M), "stty size answers")
        rows = len(page.rows())
        check(int(size.group(1)) == rows, f"the shell's terminal has the rows the panel shows ({size.group(0)} vs {rows})")

        page.testid("terminal-kill").click()
        page.shows("[shell ended", "Kill ends the shell")
        wait_for(lambda: not page.testid("terminal-kill").is_enabled(), "and the Kill button is off")

        check_no_csp_violation(driver)
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1], sys.argv[2])
    print("all terminal checks passed", flush=True)


if __name__ == "__main__":
    main()
