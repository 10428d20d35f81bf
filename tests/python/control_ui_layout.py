"""The Control UI's layout in headless Chromium: splitters, balance, shortcuts, narrow windows,
a layout per tab, the browser panel's address field and hidden frame, the toast's place, the
one connection indicator and WCAG AA contrast.

Run by crates/cli/tests/control_ui_layout.rs:
    python control_ui_layout.py BINARY ARTIFACTS_DIR
1. Dragging a splitter (pointer events) changes the weights of the columns (and of the panes
   in a column) on either side, and the new weights survive a reload; the arrow keys move a
   focused splitter; "Balance" (and Alt+=) makes them equal.
2. Alt+\\ and Alt+- split, Alt+] / Alt+[ move the active pane, Alt+B toggles the sidebar,
   Alt+T the terminal (focusing its input), Alt+/ opens the shortcuts overlay listing them all;
   Escape closes it.
3. Two tabs keep their own layouts (a new tab starts from the last one saved).
4. The address field takes `127.0.0.1:PORT/health` and adds `http://`; other schemes are
   refused; a hidden browser panel has no page loaded, also after a reload.
5. The toast never covers a composer or the terminal's input; one connection indicator.
6. Every visible button, pill and badge has a contrast ratio of at least 4.5:1, light and dark.
7. At 800x600 one pane shows, with a readable title; the sidebar and docks are overlays; every
   visible control lies inside the viewport and is not covered (screenshots in ARTIFACTS_DIR).
The page logs no Content-Security-Policy violation throughout.
"""

import os
import shutil
import sys
import tempfile

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, check_no_csp_violation, close_browser, run_checks, wait_for

# The page computes what the checks compare, from the live DOM and computed styles.
PANES_JS = """
    return [...document.querySelectorAll('[data-testid="column"]')].map((col) => ({
      grow: Number(col.style.flexGrow),
      width: col.getBoundingClientRect().width,
      panes: [...col.querySelectorAll('[data-testid="pane"]')].map((p) => ({
        id: p.dataset.paneId, session: p.dataset.session, active: p.dataset.active === 'true',
        grow: Number(p.style.flexGrow), height: p.getBoundingClientRect().height })) }));
"""

STORED_JS = """
    const raw = sessionStorage.getItem('ax-code.layout.v1');
    if (!raw) return null;
    const l = JSON.parse(raw);
    return l.columns.map((c) => ({ grow: c.weight, panes: c.panes.map((p) => p.weight) }));
"""

# Contrast (WCAG 2.x relative luminance) of each visible, enabled control's text against the
# background it is drawn on (the first opaque background up the tree, translucent ones blended).
CONTRAST_JS = """
    const parse = (c) => {
      const m = c.match(/rgba?\\(([^)]+)\\)/);
      if (!m) return null;
      const v = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return { r: v[0], g: v[1], b: v[2], a: v.length > 3 ? v[3] : 1 };
    };
    const blend = (top, under) => ({
      r: top.r * top.a + under.r * (1 - top.a),
      g: top.g * top.a + under.g * (1 - top.a),
      b: top.b * top.a + under.b * (1 - top.a), a: 1 });
    const background = (el) => {
      const layers = [];
      for (let n = el; n; n = n.parentElement) {
        const c = parse(getComputedStyle(n).backgroundColor);
        if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
      }
      let out = { r: 255, g: 255, b: 255, a: 1 };
      for (const l of layers.reverse()) out = blend(l, out);
      return out;
    };
    const lum = ({ r, g, b }) => {
      const f = (x) => { x /= 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const ratio = (a, b) => {
      const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
      return (x + 0.05) / (y + 0.05);
    };
    const out = [];
    for (const el of document.querySelectorAll('button, .status-pill, .badge')) {
      const r = el.getBoundingClientRect();
      if (el.disabled || r.width === 0 || r.height === 0 || !el.textContent.trim()) continue;
      const bg = background(el);
      const fg = blend(parse(getComputedStyle(el).color), bg);
      out.push({ what: (el.getAttribute('aria-label') || el.textContent.trim()).slice(0, 40) + ' .' + el.className,
                 ratio: Math.round(ratio(fg, bg) * 100) / 100 });
    }
    return out;
"""

# Every visible control: its rectangle inside the viewport, and whether it is what a click at
# its centre reaches (not covered by another element).
CONTROLS_JS = """
    const out = [];
    for (const el of document.querySelectorAll('button, input:not([type=hidden]), textarea, [role=separator], [tabindex="0"]')) {
      const r = el.getBoundingClientRect();
      const s = getComputedStyle(el);
      if (r.width === 0 || r.height === 0 || s.visibility === 'hidden') continue;
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      const hit = document.elementFromPoint(Math.min(Math.max(x, 0), innerWidth - 1), Math.min(Math.max(y, 0), innerHeight - 1));
      out.push({
        what: (el.getAttribute('aria-label') || el.getAttribute('data-testid') || el.textContent.trim() || el.tagName).slice(0, 40),
        inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth + 0.5 && r.bottom <= innerHeight + 0.5,
        reachable: hit !== null && (hit === el || el.contains(hit)),
      });
    }
    return out;
"""


def rect(driver, el):
    return driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];", el)


def overlaps(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class Page:
    def __init__(self, driver):
        self.d = driver

    def testid(self, name):
        return self.d.find_element(By.CSS_SELECTOR, f'[data-testid="{name}"]')

    def columns(self):
        return self.d.execute_script(PANES_JS)

    def stored(self):
        return self.d.execute_script(STORED_JS)

    def active(self):
        act = [p["id"] for c in self.columns() for p in c["panes"] if p["active"]]
        return act[0] if len(act) == 1 else None

    def alt(self, key):
        ActionChains(self.d).key_down(Keys.ALT).send_keys(key).key_up(Keys.ALT).perform()

    def splitters(self, kind):
        return self.d.find_elements(By.CSS_SELECTOR, f'[data-testid="splitter"][data-kind="{kind}"]')

    def connected(self):
        return self.testid("connection").get_attribute("data-state") == "live"

    def sign_in(self, backend):
        self.d.get(backend.url + "/")
        wait_for(lambda: self.d.find_element(By.ID, "token"), "the sign-in form shows").send_keys(backend.token + Keys.ENTER)
        wait_for(self.connected, "signed in, the connection indicator says live")

    def toast_text(self):
        el = self.testid("toast")
        return el.get_attribute("textContent") if el.is_displayed() else ""


def visible_rects_of(driver, selector):
    return driver.execute_script("""
        return [...document.querySelectorAll(arguments[0])].filter((e) => e.getClientRects().length > 0)
          .map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; });
    """, selector)


def run(binary, artifacts):
    root = tempfile.mkdtemp(prefix="axlayout")
    backend = Backend(binary, root)
    driver = None
    try:
        a = backend.api("POST", "/session", {"title": "alpha"})["id"]
        b = backend.api("POST", "/session", {"title": "beta with a fairly long title"})["id"]
        driver = browser(os.path.join(root, "profile"), "--window-size=1400,900", console_log=True)
        page = Page(driver)
        page.sign_in(backend)
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{a}"]'),
                 "alpha is listed").click()
        wait_for(lambda: page.columns()[0]["panes"][0]["session"] == a, "the pane shows alpha")

        # ---- 5a. one connection indicator ----
        pills = [e for e in driver.find_elements(By.CSS_SELECTOR, ".topbar .status-pill") if e.is_displayed()]
        check(len(pills) == 1 and pills[0].text == "Live", f"one connection indicator, saying Live: {[p.text for p in pills]}")
        check(not driver.find_elements(By.CSS_SELECTOR, '[data-testid="gateway-status"], [data-testid="stream-status"]'),
              "the two old pills are gone")
        title = pills[0].get_attribute("title")
        check("gateway" in title and "events" in title, f"its tooltip names both connections: {title!r}")

        # ---- 2. shortcuts: split ----
        page.alt("\\")
        wait_for(lambda: len(page.columns()) == 2, "Alt+\\ splits the active pane to the right")
        check(len(page.splitters("col")) == 1, "one splitter between the two columns")
        page.alt("-")
        wait_for(lambda: len(page.columns()[1]["panes"]) == 2, "Alt+- splits the active pane down")
        check(len(page.splitters("row")) == 1, "one splitter between the two panes of the column")

        # ---- 1. splitter drag ----
        before = page.columns()
        ActionChains(driver).click_and_hold(page.splitters("col")[0]).move_by_offset(150, 0).release().perform()
        after = wait_for(lambda: (lambda c: c if c[0]["width"] > before[0]["width"] + 100 else None)(page.columns()),
                         "dragging the column splitter right widens the left column")
        check(after[0]["grow"] > after[1]["grow"], f"and its weight grows past its neighbour's: {after}")
        check(abs(after[0]["grow"] + after[1]["grow"] - before[0]["grow"] - before[1]["grow"]) < 1e-3,
              "the pair keeps its total weight")
        wait_for(lambda: page.stored() and abs(page.stored()[0]["grow"] - after[0]["grow"]) < 1e-6,
                 "the new weights are saved for this tab")
        ActionChains(driver).click_and_hold(page.splitters("row")[0]).move_by_offset(0, -80).release().perform()
        rows = wait_for(lambda: (lambda c: c if c[1]["panes"][0]["height"] < before[1]["panes"][0]["height"] - 50 else None)(page.columns()),
                        "dragging the row splitter up shortens the upper pane")
        check(rows[1]["panes"][0]["grow"] < rows[1]["panes"][1]["grow"], f"and lowers its weight: {rows[1]}")
        weights = [(c["grow"], [p["grow"] for p in c["panes"]]) for c in page.columns()]
        driver.refresh()
        wait_for(page.connected, "reconnected after a reload")
        wait_for(lambda: [(c["grow"], [p["grow"] for p in c["panes"]]) for c in page.columns()] == weights,
                 f"the dragged weights survive the reload: {weights}")
        # The arrow keys move a focused splitter.
        split = page.splitters("col")[0]
        split.send_keys(Keys.ARROW_LEFT)
        wait_for(lambda: page.columns()[0]["grow"] < weights[0][0], "ArrowLeft on the focused splitter narrows the left column")

        # ---- 1. balance ----
        page.testid("balance-panes").click()
        wait_for(lambda: all(c["grow"] == 1 and all(p["grow"] == 1 for p in c["panes"]) for c in page.columns()),
                 "Balance makes every column and pane weigh the same")
        cols = page.columns()
        check(abs(cols[0]["width"] - cols[1]["width"]) < 2, f"so the columns are as wide: {cols[0]['width']} vs {cols[1]['width']}")
        ActionChains(driver).click_and_hold(page.splitters("col")[0]).move_by_offset(-120, 0).release().perform()
        wait_for(lambda: page.columns()[0]["grow"] < 1, "dragged again")
        page.alt("=")
        wait_for(lambda: all(c["grow"] == 1 for c in page.columns()), "Alt+= balances too")

        # ---- 2. shortcuts: focus, sidebar, terminal, help ----
        order = [p["id"] for c in page.columns() for p in c["panes"]]
        start = page.active()
        page.alt("]")
        wait_for(lambda: page.active() == order[(order.index(start) + 1) % len(order)], "Alt+] activates the next pane")
        page.alt("[")
        wait_for(lambda: page.active() == start, "Alt+[ goes back")
        page.alt("b")
        wait_for(lambda: not page.testid("sidebar").is_displayed(), "Alt+B hides the sidebar")
        page.alt("b")
        wait_for(lambda: page.testid("sidebar").is_displayed(), "Alt+B shows it again")
        page.alt("t")
        wait_for(lambda: page.testid("terminal-panel").is_displayed(), "Alt+T opens the terminal")
        wait_for(lambda: driver.switch_to.active_element == page.testid("terminal-input"), "with its input focused")
        page.alt("/")
        wait_for(lambda: page.testid("shortcuts").is_displayed(), "Alt+/ opens the shortcuts overlay")
        listed = page.testid("shortcut-list").text
        for keys in ["Alt+\\", "Alt+-", "Alt+]", "Alt+[", "Alt+=", "Alt+B", "Alt+T", "Alt+/"]:
            check(keys in listed, f"the overlay lists {keys}")
        ActionChains(driver).send_keys(Keys.ESCAPE).perform()
        wait_for(lambda: not page.testid("shortcuts").is_displayed(), "Escape closes it")
        page.testid("show-shortcuts").click()
        wait_for(lambda: page.testid("shortcuts").is_displayed(), "the ? button opens it too")
        driver.find_element(By.ID, "close-shortcuts").click()
        wait_for(lambda: not page.testid("shortcuts").is_displayed(), "and its close button closes it")

        # ---- 4. the browser panel ----
        driver.find_element(By.ID, "toggle-browser").click()
        addr = wait_for(lambda: page.testid("browser-address"), "the browser panel opens")
        check(addr.get_attribute("type") == "text", "the address field is a text field")
        addr.clear()
        addr.send_keys(f"127.0.0.1:{backend.port}/health" + Keys.ENTER)
        want = f"http://127.0.0.1:{backend.port}/health"
        wait_for(lambda: page.testid("browser-frame").get_attribute("src") == want,
                 "127.0.0.1:PORT/health loads as http://127.0.0.1:PORT/health")
        check(addr.get_attribute("value") == want, "the field shows the address with its scheme")
        for bad in ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,hi", "ftp://127.0.0.1/"]:
            addr.clear()
            addr.send_keys(bad + Keys.ENTER)
            wait_for(lambda: "Only http" in driver.find_element(By.CSS_SELECTOR, ".address-error").text,
                     f"{bad} is refused")
            check(page.testid("browser-frame").get_attribute("src") == want, f"and {bad} never reaches the frame")
        normal = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('/assets/layout.js').then((m) => done(arguments[0].map((t) => m.normalizeAddress(t))),
              (e) => done(String(e)));
        """, ["localhost:3000", "example.org/x?y=1", "https://example.org", " 127.0.0.1:4711/health ",
              "JavaScript:alert(1)", "", "http://", "mailto:a@b"])
        check(normal == ["http://localhost:3000/", "http://example.org/x?y=1", "https://example.org/",
                         "http://127.0.0.1:4711/health", None, None, None, None],
              f"normalizeAddress adds http:// and refuses other schemes: {normal}")

        # A hidden browser panel has no page loaded; shown again, it loads its page.
        driver.find_element(By.ID, "toggle-browser").click()
        wait_for(lambda: not page.testid("browser-panel").is_displayed(), "the browser panel is hidden")
        check(all(f.get_dom_attribute("src") is None for f in driver.find_elements(By.CSS_SELECTOR, '[data-testid="browser-frame"]')),
              "the hidden panel's frame has no src")
        driver.refresh()
        wait_for(page.connected, "reconnected after a reload")
        check(all(f.get_dom_attribute("src") is None for f in driver.find_elements(By.CSS_SELECTOR, '[data-testid="browser-frame"]')),
              "after a reload the hidden panel still loads nothing")
        check(driver.execute_script("return JSON.parse(sessionStorage.getItem('ax-code.layout.v1')).panels.browser.url") == want,
              "its address is kept")
        driver.find_element(By.ID, "toggle-browser").click()
        wait_for(lambda: page.testid("browser-frame").get_attribute("src") == want, "shown again, it loads its page")
        os.makedirs(artifacts, exist_ok=True)
        shot = os.path.join(artifacts, "control-ui-wide-splitters.png")
        driver.save_screenshot(shot)
        check(os.path.getsize(shot) > 10_000, f"screenshot of three panes and both docks: {shot}")

        # ---- 6. contrast, light and dark ----
        for scheme in ["light", "dark"]:
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                   {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            wait_for(lambda: driver.execute_script(f"return matchMedia('(prefers-color-scheme: {scheme})').matches"),
                     f"the page is in {scheme} mode")
            measured = driver.execute_script(CONTRAST_JS)
            check(len(measured) >= 10, f"{len(measured)} controls measured in {scheme} mode")
            kinds = " ".join(m["what"] for m in measured)
            check("primary" in kinds and "status-pill" in kinds, f"including primary buttons and the pill ({scheme})")
            low = [m for m in measured if m["ratio"] < 4.5]
            check(not low, f"every control has contrast >= 4.5:1 in {scheme} mode (lowest: "
                  f"{min(m['ratio'] for m in measured)}; below: {low})")
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})

        # ---- 3. two tabs, two layouts ----
        first_tab = driver.current_window_handle
        first_layout = page.columns()
        check(len(first_layout) == 2, "the first tab has two columns")
        driver.switch_to.new_window("tab")
        page.sign_in(backend)
        wait_for(lambda: len(page.columns()) == 2, "a new tab starts from the layout saved last")
        while len([p for c in page.columns() for p in c["panes"]]) > 1:
            driver.find_elements(By.CSS_SELECTOR, '[aria-label="Close pane"]')[-1].click()
        wait_for(lambda: len(page.columns()) == 1, "the second tab closes its panes down to one")
        page.alt("b")
        wait_for(lambda: not page.testid("sidebar").is_displayed(), "and hides its sidebar")

        # ---- 5b. the toast's place: closing the last pane says why it stays ----
        check(page.testid("terminal-panel").is_displayed(), "the terminal is open in this tab too")
        driver.find_element(By.CSS_SELECTOR, '[aria-label="Close pane"]').click()
        wait_for(lambda: "last pane" in page.toast_text(), "a toast says the last pane stays open")

        def toast_clear_of_inputs():
            t = rect(driver, page.testid("toast"))
            inputs = visible_rects_of(driver, '[data-testid="composer-input"], [data-testid="terminal-screen"], '
                                              '.composer button, .panel-terminal .panel-head button')
            return len(inputs) >= 4 and not any(overlaps(t, r) for r in inputs)

        check(toast_clear_of_inputs(), "the toast covers no composer and not the terminal's input")
        driver.switch_to.window(first_tab)
        driver.refresh()
        wait_for(page.connected, "the first tab reloads")
        wait_for(lambda: [[p["id"] for p in c["panes"]] for c in page.columns()] == [[p["id"] for p in c["panes"]] for c in first_layout],
                 "the first tab keeps its own panes")
        check(page.testid("sidebar").is_displayed(), "and its own sidebar")
        second = [h for h in driver.window_handles if h != first_tab][0]
        driver.switch_to.window(second)
        driver.refresh()
        wait_for(page.connected, "the second tab reloads")
        wait_for(lambda: len(page.columns()) == 1 and not page.testid("sidebar").is_displayed(),
                 "the second tab keeps its one pane and hidden sidebar")
        driver.close()
        driver.switch_to.window(first_tab)

        # ---- 7. a narrow window ----
        # The viewport itself, exactly (a headless window's size includes no-one-knows-what).
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": False})
        wait_for(lambda: driver.execute_script("return [innerWidth, innerHeight]") == [800, 600],
                 "the viewport is 800x600")
        wait_for(lambda: len([p for p in driver.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]') if p.is_displayed()]) == 1,
                 "only the active pane shows")
        shown = [p for p in driver.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]') if p.is_displayed()][0]
        check(shown.get_attribute("data-active") == "true", "and it is the active one")
        title = shown.find_element(By.CSS_SELECTOR, ".pane-title")
        check(title.size["width"] > 150, f"its title is readable ({title.size['width']} px wide)")
        check(not [s for s in page.splitters("col") + page.splitters("row") if s.is_displayed()], "no splitters show")
        check(shown.size["width"] > 700, f"the pane takes the width even with the sidebar open ({shown.size['width']} px)")
        sidebar = page.testid("sidebar")
        check(sidebar.is_displayed() and rect(driver, sidebar)[0] == 0, "the sidebar floats over the pane")
        check(page.testid("terminal-panel").is_displayed() and page.testid("browser-panel").is_displayed(),
              "the terminal and the browser panels are open")

        def all_controls_on_screen(what):
            controls = driver.execute_script(CONTROLS_JS)
            outside = [c["what"] for c in controls if not c["inside"]]
            check(len(controls) > 10 and not outside, f"{what}: all {len(controls)} visible controls inside the viewport (outside: {outside})")
            return controls

        os.makedirs(artifacts, exist_ok=True)
        controls = all_controls_on_screen("sidebar open, both docks open")
        shot = os.path.join(artifacts, "control-ui-narrow-800x600-sidebar.png")
        driver.save_screenshot(shot)
        check(os.path.getsize(shot) > 10_000, f"screenshot: {shot}")
        # Close the sidebar overlay (its backdrop), hide the browser: the terminal's controls are reachable.
        page.testid("sidebar-backdrop").click()
        wait_for(lambda: not sidebar.is_displayed(), "a click on the backdrop closes the sidebar overlay")
        driver.find_element(By.ID, "toggle-browser").click()
        wait_for(lambda: not page.testid("browser-panel").is_displayed(), "the browser panel is hidden")
        controls = all_controls_on_screen("terminal docked at the bottom")
        for name in ["New terminal", "Kill the terminal", "Hide the terminal panel", "Dock the terminal panel right"]:
            hit = [c for c in controls if c["what"] == name]
            check(hit and hit[0]["reachable"], f"the terminal's {name!r} control is on screen and uncovered")
        shot = os.path.join(artifacts, "control-ui-narrow-800x600-terminal.png")
        driver.save_screenshot(shot)
        check(os.path.getsize(shot) > 10_000, f"screenshot: {shot}")
        page.testid("terminal-dock-toggle").click()
        wait_for(lambda: page.testid("terminal-panel").get_attribute("data-dock") == "right", "the terminal docks right")
        controls = all_controls_on_screen("terminal docked right")
        for name in ["New terminal", "Kill the terminal"]:
            hit = [c for c in controls if c["what"] == name]
            check(hit and hit[0]["reachable"], f"docked right, the terminal's {name!r} control is uncovered")
        # The narrow pane's next-pane button and the toast.
        page.alt("t")
        wait_for(lambda: not page.testid("terminal-panel").is_displayed(), "Alt+T hides the terminal")
        shown = [p for p in driver.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]') if p.is_displayed()][0]
        before = shown.get_attribute("data-pane-id")
        shown.find_element(By.CSS_SELECTOR, '[data-testid="next-pane"]').click()
        wait_for(lambda: [p.get_attribute("data-pane-id") for p in driver.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]')
                          if p.is_displayed()] not in ([], [before]), "the next-pane button shows another pane")
        all_controls_on_screen("one pane, nothing docked")
        shot = os.path.join(artifacts, "control-ui-narrow-800x600.png")
        driver.save_screenshot(shot)
        check(os.path.getsize(shot) > 10_000, f"screenshot: {shot}")

        check_no_csp_violation(driver)
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1], sys.argv[2])
    print("all Control UI layout checks passed", flush=True)


if __name__ == "__main__":
    main()
