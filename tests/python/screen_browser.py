"""End to end: the Control UI in headless Chromium, arranged by `ax-code mcp screen`.

Run by crates/cli/tests/screen_browser.rs:
    python screen_browser.py BINARY ARTIFACTS_DIR
It starts `ax-code serve` (temp data dir, AX_CODE_SERVER_PASSWORD, a free port), signs in to
the Control UI (form, then a one-time `#code=` link in a second tab), and drives it through the official MCP
Python SDK: every action of the `screen` tool must change the page as docs/gateway.md §5 says.
Prints each check; exits non-zero on the first failure.
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time

import jsonschema
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, close_browser, mcp_session, run_checks, wait_for

ACTIONS = [
    "split_right", "split_down", "close_pane", "focus", "navigate", "sidebar_show",
    "sidebar_hide", "terminal_show", "terminal_hide", "browser_show", "browser_hide",
    # Beyond v1 (tested in screen_layout_browser.py).
    "layout", "apply_layout", "annotate", "annotations_clear",
]


class Page:
    """Reads the Control UI through its data-testid hooks."""

    def __init__(self, driver):
        self.d = driver

    def panes(self):
        return self.d.execute_script("""
            return [...document.querySelectorAll('[data-testid="column"]')].map((col, ci) =>
              [...col.querySelectorAll('[data-testid="pane"]')].map((p) => ({
                column: ci, session: p.dataset.session, active: p.dataset.active === 'true',
                grow: Number(p.style.flexGrow), colGrow: Number(col.style.flexGrow) })));
        """)

    def flat(self):
        return [p for col in self.panes() for p in col]

    def active_session(self):
        act = [p["session"] for p in self.flat() if p["active"]]
        return act[0] if len(act) == 1 else None

    def testid(self, name):
        return self.d.find_element(By.CSS_SELECTOR, f'[data-testid="{name}"]')

    def hidden(self, name):
        el = self.testid(name)
        return el.get_attribute("data-hidden") == "true" and not el.is_displayed()

    def shown(self, name):
        el = self.testid(name)
        return el.get_attribute("data-hidden") == "false" and el.is_displayed()

    def dock(self, name):
        return self.testid(name).get_attribute("data-dock")

    def connected(self):
        return self.testid("connection").get_attribute("data-gateway") == "connected"


async def run(binary, artifacts):
    root = tempfile.mkdtemp(prefix="axscreen")
    backend = Backend(binary, root)
    driver = None
    try:
        a = backend.api("POST", "/session", {"title": "alpha"})["id"]
        b = backend.api("POST", "/session", {"title": "beta"})["id"]
        c = backend.api("POST", "/session", {"title": "gamma"})["id"]
        d = backend.api("POST", "/session", {"title": "delta"})["id"]
        missing = "ses_000000000000" + "Zz" * 7

        driver = browser(os.path.join(root, "profile"), "--window-size=1440,900", console_log=True)
        page = Page(driver)
        # Sign in through the form: a wrong token is refused, the right one opens the UI.
        driver.get(f"{backend.url}/")
        wait_for(lambda: page.testid("signin").is_displayed(), "without a token the sign-in form shows")
        field = driver.find_element(By.ID, "token")
        field.send_keys("wrong-token-0123456789" + Keys.ENTER)
        wait_for(lambda: "refused" in driver.find_element(By.ID, "signin-error").text
                 and page.testid("signin").is_displayed(), "a wrong token is refused")
        check(driver.execute_script("return sessionStorage.getItem('ax-code.token')") is None,
              "a refused token is not kept")
        field = driver.find_element(By.ID, "token")
        field.send_keys(backend.token + Keys.ENTER)
        wait_for(page.connected, "the Control UI connects to the gateway")
        check(driver.execute_script("return sessionStorage.getItem('ax-code.token')") == backend.token,
              "the token is kept in sessionStorage")
        wait_for(lambda: len(driver.find_elements(By.CSS_SELECTOR, '[data-testid="session-item"]')) == 4,
                 "the sidebar lists the four sessions")

        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", root),
            "AX_CODE_SERVER_PASSWORD": backend.token,
            "AX_CODE_DATA_DIR": backend.data,
        }
        async with mcp_session(binary, ["mcp", "screen", "--url", backend.url, "--session", a], env) as mcp:
            init = await mcp.initialize()
            check(init.server_info.name == "ax-code-screen", "server name is ax-code-screen")
            tools = (await mcp.list_tools()).tools
            check([t.name for t in tools] == ["screen"], "exactly one tool: screen")
            tool = tools[0]
            check(tool.input_schema.get("additionalProperties") is False, "closed input schema")
            check(tool.input_schema["properties"]["action"]["enum"] == ACTIONS, "the 11 v1 actions, then the 4 beyond")
            check(tool.output_schema is not None, "declares an outputSchema")
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)

            async def screen(args, expect_error=None):
                result = await mcp.call_tool("screen", args)
                content = result.structured_content
                jsonschema.validate(content, tool.output_schema)
                check(json.loads(result.content[0].text) == content,
                      f"screen {args}: text carries the same JSON")
                if expect_error:
                    check(result.is_error is True and content["ok"] is False
                          and content["error"]["code"] == expect_error,
                          f"screen {args}: isError with {expect_error}: {content}")
                else:
                    check(result.is_error is not True and content["ok"] is True,
                          f"screen {args}: ok ({content})")
                return content

            def outcomes(content):
                return sorted(o["outcome"] for o in content["outcomes"])

            # navigate: the active pane shows the agent's own session (the default target).
            r = await screen({"action": "navigate"})
            check(r["delivered"] == 1 and outcomes(r) == ["applied"], "navigate applied by the one UI")
            wait_for(lambda: [p["session"] for p in page.flat()] == [a], "the pane shows alpha")

            # split_right: beta opens right of alpha's pane and becomes active.
            r = await screen({"action": "split_right", "sessionKey": b})
            check(outcomes(r) == ["applied"], "split_right applied")
            wait_for(lambda: [[p["session"] for p in col] for col in page.panes()] == [[a], [b]],
                     "two columns: alpha | beta")
            check(page.active_session() == b, "beta is active")
            check([col[0]["colGrow"] for col in page.panes()] == [0.5, 0.5], "column weights halved")

            # split_down: gamma opens below the agent's own pane (alpha), not the active one.
            r = await screen({"action": "split_down", "sessionKey": c})
            check(outcomes(r) == ["applied"], "split_down applied")
            wait_for(lambda: [[p["session"] for p in col] for col in page.panes()] == [[a, c], [b]],
                     "alpha is split down: (alpha / gamma) | beta")
            check(page.active_session() == c, "gamma is active")
            check([p["grow"] for p in page.panes()[0]] == [0.5, 0.5], "pane weights halved")

            # focus
            r = await screen({"action": "focus", "sessionKey": b})
            check(outcomes(r) == ["applied"], "focus applied")
            wait_for(lambda: page.active_session() == b, "beta's pane is active")

            # navigate to another session: the active pane shows it.
            r = await screen({"action": "navigate", "sessionKey": d})
            check(outcomes(r) == ["applied"], "navigate applied")
            wait_for(lambda: [[p["session"] for p in col] for col in page.panes()] == [[a, c], [d]],
                     "the active pane now shows delta")

            # focus on a session no pane shows is reported, not turned into something else.
            r = await screen({"action": "focus", "sessionKey": b})
            check(outcomes(r) == ["ignored"] and "no pane" in r["outcomes"][0]["reason"],
                  f"focus on an unshown session is ignored with a reason: {r['outcomes']}")

            # sidebar
            r = await screen({"action": "sidebar_hide"})
            wait_for(lambda: page.hidden("sidebar"), "sidebar hidden")
            r = await screen({"action": "sidebar_show"})
            wait_for(lambda: page.shown("sidebar"), "sidebar shown")

            # terminal panel, docked as asked
            r = await screen({"action": "terminal_show", "dock": "right"})
            wait_for(lambda: page.shown("terminal-panel") and page.dock("terminal-panel") == "right",
                     "terminal shown, docked right")
            r = await screen({"action": "terminal_hide"})
            wait_for(lambda: page.hidden("terminal-panel"), "terminal hidden")
            r = await screen({"action": "terminal_show", "dock": "bottom"})
            wait_for(lambda: page.shown("terminal-panel") and page.dock("terminal-panel") == "bottom",
                     "terminal shown, docked bottom")

            # browser panel
            r = await screen({"action": "browser_show", "dock": "right"})
            wait_for(lambda: page.shown("browser-panel") and page.dock("browser-panel") == "right",
                     "browser shown, docked right")
            r = await screen({"action": "browser_hide"})
            wait_for(lambda: page.hidden("browser-panel"), "browser hidden")
            r = await screen({"action": "browser_show"})
            wait_for(lambda: page.shown("browser-panel") and page.dock("browser-panel") == "right",
                     "browser shown again where it was docked")

            # The browser panel shows http(s) pages in a sandboxed frame, nothing else.
            addr = page.testid("browser-address")
            addr.clear()
            addr.send_keys("javascript:alert(1)" + Keys.ENTER)
            wait_for(lambda: "Only http" in driver.find_element(By.CSS_SELECTOR, ".address-error").text,
                     "a javascript: address is refused")
            addr.clear()
            addr.send_keys(f"{backend.url}/health" + Keys.ENTER)
            frame = page.testid("browser-frame")
            wait_for(lambda: frame.get_attribute("src") == f"{backend.url}/health", "the frame loads an http page")
            check("allow-same-origin" not in frame.get_attribute("sandbox"), "the frame is sandboxed")

            # The operator terminal runs a shell in the project directory.
            wait_for(lambda: page.testid("terminal-kill").is_enabled(), "the terminal attaches to a shell")
            page.testid("terminal-screen").click()
            ActionChains(driver).send_keys("echo term-$((40+2)) && pwd" + Keys.ENTER).perform()
            # Rows joined without breaks: a long path may wrap.
            term_text = lambda: "".join(driver.execute_script(
                "return [...document.querySelectorAll('[data-testid=terminal-screen] .xterm-rows > div')]"
                ".map((r) => r.textContent.trimEnd())"))
            wait_for(lambda: "term-42" in term_text() and backend.project in term_text(),
                     "the operator terminal streams the command's output")

            os.makedirs(artifacts, exist_ok=True)
            shot = os.path.join(artifacts, "screen-split-panels.png")
            driver.save_screenshot(shot)
            check(os.path.getsize(shot) > 10_000, f"screenshot of the split layout with both panels: {shot}")

            # A reload keeps the layout.
            before = page.panes()
            driver.refresh()
            wait_for(page.connected, "reconnected after reload")
            wait_for(lambda: page.panes() == before, "the reloaded page has the same panes and weights")
            check(page.active_session() == d, "the active pane survived the reload")
            check(page.shown("terminal-panel") and page.dock("terminal-panel") == "bottom",
                  "the terminal panel survived the reload")
            check(page.shown("browser-panel") and page.dock("browser-panel") == "right",
                  "the browser panel survived the reload")

            # A pane's composer, approval and live transcript.
            first_pane = driver.find_element(By.CSS_SELECTOR, f'[data-testid="pane"][data-session="{a}"]')
            box = first_pane.find_element(By.CSS_SELECTOR, '[data-testid="composer-input"]')
            box.send_keys("echo from-the-ui" + Keys.ENTER)
            wait_for(lambda: first_pane.find_elements(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]'),
                     "the approval appears in alpha's pane")
            # Approval buttons take clicks 500 ms after they appeared (control_ui_priority.py).
            wait_for(lambda: first_pane.find_element(By.CSS_SELECTOR, '[data-testid="approvals"]')
                     .get_attribute("data-armed") == "true", "the approval is ready for clicks")
            first_pane.find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]').click()
            wait_for(lambda: "from-the-ui" in first_pane.find_element(By.CSS_SELECTOR, '[data-testid="transcript"]').text
                     and "exit 0" in first_pane.find_element(By.CSS_SELECTOR, '[data-testid="transcript"]').text,
                     "the command's output streams into the transcript")
            check(not first_pane.find_elements(By.CSS_SELECTOR, '[data-testid="approval"]'), "the approval is gone")

            # An agent's command never takes the keyboard from the person typing: while alpha's
            # pane holds a draft, a split beside it is ignored (human priority,
            # control_ui_priority.py); without the draft and after the quiet period it applies,
            # and the keyboard stays in alpha's composer.
            box = driver.find_element(By.CSS_SELECTOR, f'[data-testid="pane"][data-session="{a}"] [data-testid="composer-input"]')
            box.click()
            box.send_keys("half-typed draft")
            layout_before = page.panes()
            r = await screen({"action": "split_down", "sessionKey": b})
            check(outcomes(r) == ["ignored"] and "draft" in r["outcomes"][0]["reason"],
                  f"split_down beside a pane with a draft is ignored: {r['outcomes']}")
            check(page.panes() == layout_before, "the layout did not change")
            typing = driver.execute_script(
                "const e = document.activeElement;"
                "return [e.closest('[data-testid=pane]')?.dataset.session, e.value];")
            check(typing == [a, "half-typed draft"], f"focus and draft stay in alpha's composer: {typing}")
            box.send_keys(Keys.CONTROL, "a")
            box.send_keys(Keys.BACKSPACE)
            time.sleep(1.6)  # the quiet period after the person's input, then it applies
            r = await screen({"action": "split_down", "sessionKey": b})
            check(outcomes(r) == ["applied"], f"split_down after the quiet period: {r['outcomes']}")
            wait_for(lambda: [[p["session"] for p in col] for col in page.panes()] == [[a, b, c], [d]],
                     "beta opens below alpha")
            check(page.active_session() == b, "the new pane is active")
            typing = driver.execute_script(
                "const e = document.activeElement;"
                "return e.closest('[data-testid=pane]')?.dataset.session;")
            check(typing == a, f"the keyboard stays in alpha's composer: {typing}")

            # Two tabs: both apply every command.
            first = driver.current_window_handle
            layout_now = page.panes()
            driver.switch_to.new_window("tab")
            second = driver.current_window_handle
            driver.get(backend.sign_in_link())
            wait_for(page.connected, "the second tab signs in with a one-time link and connects")
            check("code=" not in driver.current_url, "the code fragment is removed from the address")
            check(driver.execute_script("return sessionStorage.getItem('ax-code.token')") == backend.token,
                  "the code was exchanged for the token, kept in sessionStorage")
            wait_for(lambda: page.panes() == layout_now, "the second tab starts from the stored layout")
            r = await screen({"action": "sidebar_hide"})
            check(r["delivered"] == 2 and outcomes(r) == ["applied", "applied"],
                  f"both tabs applied sidebar_hide: {r}")
            check(len({o["connId"] for o in r["outcomes"]}) == 2, "two distinct connections answered")
            for handle in (second, first):
                driver.switch_to.window(handle)
                wait_for(lambda: page.hidden("sidebar"), f"sidebar hidden in tab {handle[:8]}")

            # Close panes down to the last one; the last is refused and reported.
            r = await screen({"action": "close_pane", "sessionKey": c})
            check(outcomes(r) == ["applied", "applied"], "close_pane applied in both tabs")
            r = await screen({"action": "close_pane", "sessionKey": d})
            check(outcomes(r) == ["applied", "applied"], "close_pane applied in both tabs")
            r = await screen({"action": "close_pane", "sessionKey": b})
            check(outcomes(r) == ["applied", "applied"], "close_pane applied in both tabs")
            wait_for(lambda: [p["session"] for p in page.flat()] == [a], "one pane left: alpha")
            check(page.panes()[0][0]["colGrow"] == 1, "the space went back to the remaining pane")
            r = await screen({"action": "close_pane"})
            check(outcomes(r) == ["ignored", "ignored"], f"closing the last pane is refused: {r['outcomes']}")
            check(all("last pane" in o["reason"] for o in r["outcomes"]), "the reason says why")
            check([p["session"] for p in page.flat()] == [a], "the last pane is still there")

            # Errors come back as tool errors with the gateway's code.
            await screen({"action": "focus", "sessionKey": missing}, expect_error="INVALID_REQUEST")
            await screen({"action": "terminal_hide", "dock": "right"}, expect_error="INVALID_REQUEST")
            await screen({"action": "sidebar_show", "extra": 1}, expect_error="INVALID_REQUEST")
            await screen({"action": "teleport"}, expect_error="INVALID_REQUEST")

            # With no Control UI connected, the gateway answers UNAVAILABLE.
            driver.quit()
            driver = None
            deadline = time.monotonic() + 10
            while True:
                result = await mcp.call_tool("screen", {"action": "sidebar_show"})
                if result.is_error or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            jsonschema.validate(result.structured_content, tool.output_schema)
            check(result.structured_content["error"]["code"] == "UNAVAILABLE",
                  f"no Control UI: UNAVAILABLE ({result.structured_content})")
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    binary, artifacts = sys.argv[1], sys.argv[2]
    run_checks(run, binary, artifacts)
    print("all screen browser checks passed", flush=True)


if __name__ == "__main__":
    main()
