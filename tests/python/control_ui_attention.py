"""What needs the person, in the Control UI (headless Chromium against a real `ax-code serve`
whose agent is the mock ACP agent): docs/control-ui.md §7 (attention board), §8 (title count
and notifications), §9 (approvals inbox).

The page's `Notification` is a recording stand-in installed before any page script runs (CDP
`Page.addScriptToEvaluateOnNewDocument`), so the test sees whether permission was asked and
which notifications were shown.

1. Loading the page asks for no permission; the toggle asks once, on its click.
2. Sessions no pane shows: one finishes (unread), one fails (failed), one keeps working, one
   asks for approval (needs you). The list sorts them needs you, working, unread, failed, idle;
   the tab title counts the three that wait for the person; each end and the approval was a
   notification.
3. The approvals inbox lists the pending approval with the agent's own options (allow once
   first and primary, never an "always"), answerable there; answered, the inbox is empty.
   While it is open an agent's `navigate` (the `screen` tool) is ignored: human priority.
4. Opening the sessions clears the title count.
5. An option that asks the person what the agent should do instead, chosen in the inbox,
   opens the session with its composer asking for that.

Usage: python control_ui_attention.py AX_CODE_BINARY MOCK_AGENT_BINARY
"""

import asyncio
import os
import sys

from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, close_browser, mcp_session, mock_agent_root, run_checks, wait_for

FAKE_NOTIFICATION = """
window.__notes = [];
window.__asked = 0;
class RecordingNotification {
  constructor(title, options) { window.__notes.push({ title, tag: options && options.tag }); }
  close() {}
}
RecordingNotification.permission = 'default';
RecordingNotification.requestPermission = () => {
  window.__asked += 1;
  RecordingNotification.permission = 'granted';
  return Promise.resolve('granted');
};
window.Notification = RecordingNotification;
"""

ROWS = """
return [...document.querySelectorAll('[data-testid="session-row"]')].map((r) => [
  r.querySelector('[data-testid="session-item"]').dataset.session, r.dataset.attention,
  r.querySelector('[data-testid="session-attention"]')?.textContent ?? '']);
"""


async def screen_navigate(binary, backend, root, sid):
    """An agent's `navigate` through the `screen` tool (`ax-code mcp screen`); its outcome."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", root),
        "AX_CODE_SERVER_PASSWORD": backend.token,
        "AX_CODE_DATA_DIR": backend.data,
    }
    async with mcp_session(binary, ["mcp", "screen", "--url", backend.url], env) as mcp:
        await mcp.initialize()
        result = await mcp.call_tool("screen", {"action": "navigate", "sessionKey": sid})
        content = result.structured_content
        check(content.get("ok") is True and len(content["outcomes"]) == 1, f"the navigate reached the Control UI: {content}")
        return content["outcomes"][0]


def open_row(driver, sid):
    """Clicks the session's row; inside wait_for, as the list may be drawn anew between finding
    the row and the click."""
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]').click() or True,
             f"opened {sid} from the list")


def run(binary, mock):
    root, env = mock_agent_root(mock, "axattn")
    backend = Backend(binary, root, extra_env=env)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FAKE_NOTIFICATION})
        js = driver.execute_script
        new = lambda title: backend.api("POST", "/session", {"agent": "mock", "title": title})["id"]  # noqa: E731
        shown = new("shown")
        driver.get(backend.sign_in_link())
        wait_for(lambda: js("return document.getElementById('app').hidden === false"), "signed in")
        wait_for(lambda: js("return document.getElementById('connection').dataset.state === 'live'"),
                 "the events and the gateway are live")
        open_row(driver, shown)
        wait_for(lambda: js("return document.querySelector('[data-testid=pane][data-active=true]').dataset.session") == shown,
                 "a pane shows it")

        # 1. Permission is asked on the toggle's click, never on load.
        toggle = driver.find_element(By.CSS_SELECTOR, '[data-testid="toggle-notify"]')
        check(js("return window.__asked") == 0, "loading the page asked for no permission")
        check(toggle.get_attribute("data-state") == "off", "notifications start off")
        check(js("return document.title") == "ax-code", "nothing counted yet")
        toggle.click()
        wait_for(lambda: toggle.get_attribute("data-state") == "on", "a click turns them on")
        check(js("return window.__asked") == 1, "asking the browser once, on that click")

        # 2. What happens where the person is not looking.
        done = new("done")
        failed = new("failed")
        working = new("working")
        asking = new("asking")
        prompt = lambda sid, text: backend.api("POST", f"/session/{sid}/prompt", {"parts": [{"type": "text", "text": text}]})  # noqa: E731
        status = lambda sid: backend.api("GET", f"/session/{sid}")["status"]  # noqa: E731
        prompt(done, "text all done")
        prompt(failed, "text about to fail\ncrash")
        wait_for(lambda: status(done) == "idle" and status(failed) == "idle", "two turns end", timeout=20)
        prompt(working, "text working\nwait-cancel")
        prompt(asking, "permission p1 claude")
        wait_for(lambda: status(asking) == "pending" and status(working) == "busy", "one works, one asks")
        want = [[asking, "needs", "needs you"], [working, "working", "working"], [done, "unread", "unread"],
                [failed, "failed", "failed"], [shown, "idle", ""]]
        wait_for(lambda: js(ROWS) == want, "the list: needs you, working, unread, failed, idle")
        wait_for(lambda: js("return document.title") == "(3) ax-code", "the title counts what waits for the person")
        counts = driver.find_element(By.CSS_SELECTOR, '[data-testid="attention-counts"]').text
        check(counts == "1 needs you · 2 unread", f"the list's heading counts too: {counts}")
        notes = wait_for(lambda: len(js("return window.__notes")) >= 3 and js("return window.__notes"), "notifications were shown")
        titles = sorted(n["title"] for n in notes)
        check(titles == sorted(["“done” finished its turn", "“failed” failed", "“asking” asks for your approval"]),
              f"one per event, in words: {titles}")
        check({n["tag"] for n in notes} == {f"ax-code:{s}" for s in (done, failed, asking)}, "tagged by session")

        # 3. The approvals inbox.
        button = driver.find_element(By.CSS_SELECTOR, '[data-testid="inbox-button"]')
        check(button.is_displayed() and button.text == "Approvals 1", f"the top bar counts the approvals: {button.text}")
        button.click()
        group = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="inbox-group"][data-session="{asking}"]'),
                         "the inbox lists the session's approval")
        check("asking" in group.text, "named by its session")
        card = group.find_element(By.CSS_SELECTOR, '[data-testid="approval"]')
        buttons = [(b.get_attribute("data-testid"), "primary" in b.get_attribute("class"))
                   for b in card.find_elements(By.CSS_SELECTOR, '.approval-actions button')]
        check(buttons[0] == ("approve-allow_once", True), f"allow once first and primary: {buttons}")
        check(("approve-allow_always", True) not in buttons and {b for b, _ in buttons} == {"approve-allow_once", "approve-allow_always", "approve-reject_once"},
              f"the agent's own options, no default always: {buttons}")
        check("p1" in card.find_element(By.CSS_SELECTOR, '[data-testid="approval-command"]').text, "the whole request")
        outcome = asyncio.run(screen_navigate(binary, backend, root, done))
        check(outcome.get("outcome") == "ignored" and "inbox" in outcome.get("reason", ""),
              f"while the inbox is open an agent's navigate is ignored, with the reason: {outcome}")
        check(js("return document.querySelector('[data-testid=pane][data-active=true]').dataset.session") == shown,
              "and the pane still shows what it showed")
        approvals = group.find_element(By.CSS_SELECTOR, '[data-testid="inbox-approvals"]')
        wait_for(lambda: approvals.get_attribute("data-armed") == "true", "the card takes clicks")
        card.find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]').click()
        wait_for(lambda: backend.api("GET", "/permission") == [], "answered from the inbox")
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-testid="inbox-empty"]'), "the inbox is empty")
        wait_for(lambda: status(asking) == "idle", "the turn went on and ended")
        check(not button.is_displayed(), "the top bar's button is gone")
        driver.find_element(By.ID, "close-inbox").click()
        wait_for(lambda: js("return document.title") == "(3) ax-code",
                 "the answered session's turn end is unread now: still three")

        # 4. Opening the sessions clears the count.
        for sid, left in ((asking, 2), (done, 1), (failed, 0)):
            open_row(driver, sid)
            expected = f"({left}) ax-code" if left else "ax-code"
            wait_for(lambda: js("return document.title") == expected, f"opened: {expected}")
        check([r[1] for r in js(ROWS)] == ["working", "idle", "idle", "idle", "idle"], f"only the working one stands out: {js(ROWS)}")

        # 5. An option that asks what to do instead, chosen in the inbox: the session opens
        # and its composer asks for that.
        fb = new("feedback")
        prompt(fb, "permission p2 codex")
        wait_for(lambda: status(fb) == "pending", "another session asks, with Codex's options")
        button.click()
        group = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="inbox-group"][data-session="{fb}"]'),
                         "the inbox lists it")
        approvals = group.find_element(By.CSS_SELECTOR, '[data-testid="inbox-approvals"]')
        wait_for(lambda: approvals.get_attribute("data-armed") == "true", "its card takes clicks")
        group.find_element(By.CSS_SELECTOR, 'button[data-feedback="true"]').click()
        wait_for(lambda: backend.api("GET", "/permission") == [], "answered with that option")
        wait_for(lambda: js("return document.getElementById('inbox').hidden"), "the inbox closes")
        wait_for(lambda: js("return document.querySelector('[data-testid=pane][data-active=true]').dataset.session") == fb,
                 "the session opens in the active pane")
        focused = js("const b = document.activeElement; return [b?.dataset.testid, b?.dataset.session, b?.dataset.feedback, b?.placeholder]")
        check(focused[:3] == ["composer-input", fb, "true"] and "what to do differently" in focused[3],
              f"its composer has the focus and asks for the feedback: {focused}")
        print("ok: control_ui_attention")
    finally:
        close_browser(driver)
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
