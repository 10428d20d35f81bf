"""`target: "requester"` for the agent inside a session (docs/agents.md §8, docs/gateway.md §3):
the screen tool reaches the Control UI whose prompt started the turn, never the other tab.

Run by crates/cli/tests/agents_screen.rs:
    python agent_screen_requester.py BINARY MOCK_AGENT
`ax-code serve` with the mock ACP agent, two Control UI tabs in headless Chromium; each tab
types a turn whose agent calls `screen` with `target: "requester"`. Prints each check; exits
non-zero on the first failure.
"""

import json
import os
import re
import sys
import tempfile

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, run_checks, strings, wait_for


def run(binary, mock):
    root = tempfile.mkdtemp(prefix="axrequester")
    config_home = os.path.join(root, "config")
    os.makedirs(os.path.join(config_home, "ax-code"))
    with open(os.path.join(config_home, "ax-code", "config.toml"), "w") as f:
        f.write(f'[agents.mock]\ncommand = {json.dumps(mock)}\n'
                'env = { AX_TEST_BE_MOCK_AGENT = "1" }\n')
    backend = Backend(binary, root, extra_env={"XDG_CONFIG_HOME": config_home})
    driver = None
    try:
        a = backend.api("POST", "/session", {"agent": "mock", "title": "alpha"})["id"]

        def reports(session):
            msgs = backend.api("GET", f"/session/{session}/message")
            text = "".join(s for m in msgs if m["role"] == "assistant" for s in strings(m["parts"]))
            return text.split("mcp: ")[1:]

        def result_of(n):
            def done():
                idle = backend.api("GET", f"/session/{a}")["status"] == "idle"
                got = reports(a)
                return got[n - 1] if idle and len(got) >= n else None
            report = wait_for(done, f"turn {n} ends", timeout=60)
            check(report.startswith("tools=screen result={"), f"turn {n}: the agent called screen: {report[:300]}")
            return json.loads(report.split("result=", 1)[1].strip())

        driver = browser(os.path.join(root, "profile"), "--window-size=1440,900")
        tabs = []
        for _ in range(2):
            if tabs:
                driver.switch_to.new_window("tab")
            driver.get(backend.sign_in_link())
            wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
                     .get_attribute("data-gateway") == "connected", "a tab joins the gateway")
            title = driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]').get_attribute("title")
            tabs.append((driver.current_window_handle, re.search(r"\((conn_[0-9a-f]+)\)", title).group(1)))

        def go(i):
            driver.switch_to.window(tabs[i][0])

        def sidebar_hidden(i):
            go(i)
            return driver.find_element(By.CSS_SELECTOR, '[data-testid="sidebar"]').get_attribute("data-hidden") == "true"

        def type_prompt(i, text):
            go(i)
            if not driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{a}"]'):
                driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{a}"]').click()

            def typed():
                box = driver.find_element(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{a}"]')
                box.clear()
                ActionChains(driver).click(box).send_keys(text).perform()
                return box.get_attribute("value") == text and box
            wait_for(typed, f"the prompt is typed in tab {i + 1}").send_keys(Keys.ENTER)

        # Tab one's turn reads the layout of its requester: tab one only.
        type_prompt(0, 'mcp screen {"action":"layout","target":"requester"}')
        r = result_of(1)
        check(r["ok"] is True and [u["uiId"] for u in r["uis"]] == [tabs[0][1]],
              f"layout with target requester answers tab one only: {r}")
        check(any(p.get("sessionId") == a for p in r["uis"][0]["panes"]), "its panes show the session")

        # Tab one's turn hides the sidebar of tab one, not of tab two.
        type_prompt(0, 'mcp screen {"action":"sidebar_hide","target":"requester"}')
        r = result_of(2)
        check(r["delivered"] == 1 and [o["connId"] for o in r["outcomes"]] == [tabs[0][1]]
              and r["outcomes"][0]["outcome"] == "applied", f"delivered to tab one only: {r}")
        wait_for(lambda: sidebar_hidden(0), "tab one's sidebar is hidden")
        check(not sidebar_hidden(1), "tab two's sidebar is still shown")

        # A turn typed in tab two reaches tab two: the requester follows the turn.
        type_prompt(1, 'mcp screen {"action":"annotate","target":"requester","ttlSeconds":60,'
                       '"annotations":[{"text":"your turn","sessionKey":"' + a + '"}]}')
        r = result_of(3)
        check([o["connId"] for o in r["outcomes"]] == [tabs[1][1]]
              and r["outcomes"][0]["outcome"] == "applied", f"the annotation went to tab two: {r}")
        go(1)
        wait_for(lambda: [n.text for n in driver.find_elements(By.CSS_SELECTOR, '[data-testid="annotation"]')]
                 == ["your turn"], "tab two shows it on the session's row")
        go(0)
        check(not driver.find_elements(By.CSS_SELECTOR, '[data-testid="annotation"]'), "tab one shows none")

        # The same call from a turn no Control UI started is refused (the gate is closed).
        backend.api("POST", f"/session/{a}/prompt", {"parts": [{"type": "text",
                    "text": 'mcp screen {"action":"sidebar_show","target":"requester"}'}]})
        report = wait_for(lambda: (lambda r: r[3] if len(r) >= 4 else None)(reports(a)), "the API turn ends", timeout=60)
        check(report.startswith("tools=screen result=error "), f"no requester without a Control UI turn: {report[:200]}")
        check(sidebar_hidden(0) and not sidebar_hidden(1), "no tab changed")
    finally:
        if driver is not None:
            driver.quit()
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
