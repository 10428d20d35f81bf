"""The `screen` tool of the agent inside a session (docs/agents.md §8), end to end.

Run by crates/cli/tests/agents_screen.rs:
    python agent_screen_browser.py BINARY MOCK_AGENT
`ax-code serve` with the mock ACP agent configured as `mock` (XDG_CONFIG_HOME), the Control UI
in headless Chromium. A turn typed in the Control UI: the agent (through the session-scoped
screen server the backend handed it) lists `screen` and its call changes the page. A turn
started through the HTTP API: the tool is listed (always: agents list an MCP server's tools
once) but the call is refused, saying why. One session's
screen credential never rides another session's Control UI turn. Also `ax-code session
create --agent`. Prints each check; exits non-zero on the first failure.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, run_checks, strings, wait_for


def run(binary, mock):
    root = tempfile.mkdtemp(prefix="axagentscreen")
    config_home = os.path.join(root, "config")
    os.makedirs(os.path.join(config_home, "ax-code"))
    with open(os.path.join(config_home, "ax-code", "config.toml"), "w") as f:
        f.write(f'[agents.mock]\ncommand = {json.dumps(mock)}\n'
                'env = { AX_TEST_BE_MOCK_AGENT = "1" }\n')
    backend = Backend(binary, root, extra_env={"XDG_CONFIG_HOME": config_home})
    driver = None
    try:
        # `ax-code session create --agent NAME` against the project's registered backend.
        env = dict(os.environ, AX_CODE_DATA_DIR=backend.data, XDG_CONFIG_HOME=config_home)
        env.pop("AX_CODE_SERVER_PASSWORD", None)
        made = subprocess.run([binary, "session", "create", "--agent", "mock", "--title", "alpha"],
                              cwd=backend.project, env=env, capture_output=True, text=True,
                              timeout=60)
        check(made.returncode == 0, f"session create --agent mock works ({made.stderr.strip()})")
        a = made.stdout.strip().split()[0]
        check(backend.api("GET", f"/session/{a}")["agent"] == "mock",
              "the created session's agent is mock")
        bad = subprocess.run([binary, "session", "create", "--agent", "nosuch"],
                             cwd=backend.project, env=env, capture_output=True, text=True,
                             timeout=60)
        check(bad.returncode != 0 and "nosuch" in bad.stderr and "mock" in bad.stderr
              and "shell" in bad.stderr,
              f"an unknown agent is a clear error listing the agents: {bad.stderr.strip()!r}")
        check(len(backend.api("GET", "/session")) == 1, "the refused create stored nothing")
        b = backend.api("POST", "/session", {"agent": "mock", "title": "beta"})["id"]

        def reply_text(session):
            msgs = backend.api("GET", f"/session/{session}/message")
            return "".join(s for m in msgs if m["role"] == "assistant" for s in strings(m["parts"]))

        def turn_over(session, marker, count=1):
            text = reply_text(session)
            idle = backend.api("GET", f"/session/{session}")["status"] == "idle"
            return text if idle and text.count(marker) >= count else None

        def mcp_report(text, n):
            lines = [l for l in text.split("mcp: ")[1:]]
            return lines[n - 1] if len(lines) >= n else ""

        driver = browser(os.path.join(root, "profile"), "--window-size=1440,900")
        driver.get(f"{backend.url}/")
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]').is_displayed(),
                 "the sign-in form shows")
        driver.find_element(By.ID, "token").send_keys(backend.token + Keys.ENTER)
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
                 .get_attribute("data-gateway") == "connected", "the Control UI joins the gateway")

        def item(session):
            return driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{session}"]')

        def sidebar(state):
            el = driver.find_element(By.CSS_SELECTOR, '[data-testid="sidebar"]')
            return el.get_attribute("data-hidden") == ("true" if state == "hidden" else "false")

        def type_prompt(session, text):
            """Types `text` (Shift+Enter between lines) into `session`'s composer and sends it."""
            shown = driver.find_elements(
                By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{session}"]')
            if not shown:
                item(session).click()

            def typed():
                box = driver.find_element(
                    By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{session}"]')
                box.clear()
                lines = text.split("\n")
                chain = ActionChains(driver).click(box)
                for i, line in enumerate(lines):
                    chain = chain.send_keys(line)
                    if i + 1 < len(lines):
                        chain = chain.key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT)
                chain.perform()
                return box.get_attribute("value") == text and box
            box = wait_for(typed, f"the prompt is typed in {session}'s composer")
            box.send_keys(Keys.ENTER)

        # 1. A turn typed in the Control UI: listed, called, applied.
        check(sidebar("shown"), "the sidebar shows at first")
        type_prompt(a, 'mcp screen {"action":"sidebar_hide"}')
        text = wait_for(lambda: turn_over(a, "mcp: "), "the Control UI turn ends", timeout=60)
        report = mcp_report(text, 1)
        check(report.startswith("tools=screen result={"), f"the agent lists and calls screen: {report[:200]}")
        result = json.loads(report.split("result=", 1)[1].strip())
        check(result["ok"] is True and result["delivered"] == 1
              and [o["outcome"] for o in result["outcomes"]] == ["applied"],
              f"its call is applied by the Control UI: {result}")
        wait_for(lambda: sidebar("hidden"), "the page reacts: the sidebar is hidden")

        # 2. A turn started through the HTTP API (no client): listed, but the call is refused.
        backend.api("POST", f"/session/{a}/prompt",
                    {"parts": [{"type": "text", "text": 'mcp screen {"action":"sidebar_show"}'}]})
        text = wait_for(lambda: turn_over(a, "mcp: ", 2), "the API turn ends", timeout=60)
        report = mcp_report(text, 2)
        check(report.startswith("tools=screen result=error "), f"listed, call refused: {report[:300]}")
        refusal = json.loads(report.split("result=error ", 1)[1].strip())
        check(refusal["ok"] is False and refusal["error"]["code"] == "FORBIDDEN"
              and "not enabled for this turn" in refusal["error"]["message"],
              f"the refusal says why: {refusal}")
        check(sidebar("hidden"), "the page did not change")

        # 3. A `client` that is no live Control UI (a made-up id) opens nothing.
        backend.api("POST", f"/session/{a}/prompt",
                    {"parts": [{"type": "text", "text": 'mcp screen {"action":"sidebar_show"}'}],
                     "client": "conn_00000000deadbeef"})
        text = wait_for(lambda: turn_over(a, "mcp: ", 3), "the turn with a dead client ends", timeout=60)
        check(mcp_report(text, 3).startswith("tools=screen result=error "), "a dead client id opens nothing")

        # 4. While a's Control UI turn is open, b's screen credential (an API turn) is refused.
        type_prompt(a, 'mcp screen {"action":"sidebar_show"}\nwait-cancel')
        wait_for(lambda: mcp_report(reply_text(a), 4).startswith("tools=screen result={"),
                 "a's second Control UI turn uses the tool", timeout=60)
        wait_for(lambda: sidebar("shown"), "the sidebar shows again")
        backend.api("POST", f"/session/{b}/prompt",
                    {"parts": [{"type": "text", "text": 'mcp screen {"action":"sidebar_hide"}'}]})
        text = wait_for(lambda: turn_over(b, "mcp: "), "b's API turn ends", timeout=60)
        check(mcp_report(text, 1).startswith("tools=screen result=error "),
              f"b's credential does not ride a's open turn: {mcp_report(text, 1)[:200]}")
        check(sidebar("shown"), "the page did not change")
        aborted = backend.api("POST", f"/session/{a}/abort")
        check(aborted == {"aborted": True}, f"a's waiting turn is aborted: {aborted}")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        check(not errors, f"no page errors: {errors}")
        driver.quit()
        driver = None

        # 5. A backend killed while an agent's permission waits: after the restart neither the
        # permission list nor the transcript shows an approval nobody can answer.
        c = backend.api("POST", "/session", {"agent": "mock", "title": "gamma"})["id"]
        backend.api("POST", f"/session/{c}/prompt",
                    {"parts": [{"type": "text", "text": "permission p1 claude"}]})
        wait_for(lambda: any(p["sessionId"] == c and p["state"] == "pending"
                             for p in backend.api("GET", "/permission")),
                 "the agent's permission is pending", timeout=60)
        backend.proc.kill()
        backend.proc.wait()
        backend.log.close()
        backend = Backend(binary, root, extra_env={"XDG_CONFIG_HOME": config_home})
        check(not [p for p in backend.api("GET", "/permission") if p["sessionId"] == c],
              "after the restart nothing is pending")

        def permission_parts(value):
            if isinstance(value, dict):
                if "permissionId" in value and "outcome" in value:
                    yield value
                for v in value.values():
                    yield from permission_parts(v)
            elif isinstance(value, list):
                for v in value:
                    yield from permission_parts(v)

        parts = list(permission_parts(backend.api("GET", f"/session/{c}/message")))
        check(len(parts) == 1 and "cancelled" in json.dumps(parts[0]["outcome"]),
              f"the transcript's permission part is answered cancelled: {parts}")
        check(backend.api("GET", f"/session/{c}")["status"] == "idle", "the session is idle")
    finally:
        if driver is not None:
            driver.quit()
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
