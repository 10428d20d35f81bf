"""Human priority in the Control UI: an agent's layout command never moves what is under the
person's hands (SECURITY.md, "MCP agents with only their tools").

Run by crates/cli/tests/control_ui_browser.rs:
    python control_ui_priority.py BINARY
In headless Chromium, with the agent side driven through `ax-code mcp screen` (official MCP SDK):
1. The person types a command in alpha's pane; the agent navigates the pane to beta (which
   "always allows"); the person presses Enter: the command goes to alpha (and waits for its
   approval), never to beta. The navigate is acknowledged `ignored` with the reason; so is a split.
2. The pointer rests on "Allow once" of alpha's approval; the agent navigates to gamma (which
   has an approval too); the same click answers alpha's approval, never gamma's.
3. An approval that appears (or moves) under the pointer ignores clicks for 500 ms, and says so.
4. The person's input in a pane holds agent commands off for 1.5 s; after it they apply.
5. Drafts belong to sessions: a draft stays with its session when the pane shows another one.
6. An approval card lists the permission's attachments (as text), when it has any.
"""

import asyncio
import os
import shutil
import sys
import tempfile
import time

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, click_when_found, close_browser, mcp_session, run_checks, wait_for


def prompt(backend, session, text):
    return backend.api("POST", f"/session/{session}/prompt", {"parts": [{"type": "text", "text": text}]})


def user_texts(backend, session):
    return [p.get("text", "") for m in backend.api("GET", f"/session/{session}/message")
            if m["role"] == "user" for p in m["parts"] if p.get("type") == "text"]


def pending(backend, session):
    return [p for p in backend.api("GET", "/permission") if p["sessionId"] == session]


class Page:
    def __init__(self, driver):
        self.d = driver

    def pane(self):
        panes = self.d.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]')
        check(len(panes) == 1, "one pane")
        return panes[0]

    def shown(self):
        return self.pane().get_attribute("data-session")

    def composer(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="composer-input"]')

    def sidebar_item(self, session):
        return self.d.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{session}"]')

    def toast(self):
        el = self.d.find_element(By.CSS_SELECTOR, '[data-testid="toast"]')
        return el.text if el.is_displayed() else ""

    def armed(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="approvals"]').get_attribute("data-armed") == "true"


def item(session):
    """The sidebar row of `session` (a CSS selector: the list is redrawn as events come)."""
    return f'[data-testid="session-item"][data-session="{session}"]'


async def run(binary):
    root = tempfile.mkdtemp(prefix="axprio")
    backend = Backend(binary, root)
    driver = None
    try:
        a = backend.api("POST", "/session", {"title": "alpha"})["id"]
        b = backend.api("POST", "/session", {"title": "beta"})["id"]
        c = backend.api("POST", "/session", {"title": "gamma"})["id"]
        # beta always allows: its next command runs without asking.
        first = prompt(backend, b, "true")
        backend.api("POST", f"/session/{b}/permission/{first['permission']['id']}", {"reply": "always"})
        wait_for(lambda: backend.api("GET", f"/session/{b}")["status"] == "idle", "beta always allows and is idle")
        # gamma waits for an approval of its own.
        prompt(backend, c, "echo gamma-ran > gamma.txt")

        driver = browser(os.path.join(root, "profile"), "--window-size=1200,900", console_log=True)
        page = Page(driver)
        driver.get(backend.url + "/")
        wait_for(lambda: driver.find_element(By.ID, "token"), "the sign-in form shows").send_keys(backend.token + Keys.ENTER)
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
                 .get_attribute("data-gateway") == "connected", "the Control UI is connected")
        click_when_found(driver, item(a), "alpha is listed and clicked")
        wait_for(lambda: page.shown() == a, "the person opened alpha")

        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", root),
            "AX_CODE_SERVER_PASSWORD": backend.token,
            "AX_CODE_DATA_DIR": backend.data,
        }
        async with mcp_session(binary, ["mcp", "screen", "--url", backend.url], env) as mcp:
            await mcp.initialize()

            async def screen(args):
                result = await mcp.call_tool("screen", args)
                content = result.structured_content
                check(content.get("ok") is True and len(content["outcomes"]) == 1,
                      f"screen {args} was delivered to the one Control UI: {content}")
                return content["outcomes"][0]

            # 1. A typed command, an agent navigate, then Enter.
            box = page.composer()
            box.click()
            box.send_keys("echo typed-for-alpha > alpha.txt")
            outcome = await screen({"action": "navigate", "sessionKey": b})
            check(outcome["outcome"] == "ignored" and "draft" in outcome.get("reason", ""),
                  f"navigate while the person has a draft is ignored, with the reason: {outcome}")
            outcome = await screen({"action": "split_right", "sessionKey": b})
            check(outcome["outcome"] == "ignored" and "human priority" in outcome.get("reason", ""),
                  f"so is a split: {outcome}")
            wait_for(lambda: "ignored" in page.toast(), "the person sees the agent's ignored command")
            check(page.shown() == a, "the pane still shows alpha")
            driver.switch_to.active_element.send_keys(Keys.ENTER)
            where = wait_for(lambda: [s for s in (a, b) if "echo typed-for-alpha > alpha.txt" in user_texts(backend, s)],
                             "the typed command was sent")
            check(where == [a], f"it went to alpha, not beta: {where}")
            alpha_perm = wait_for(lambda: pending(backend, a), "alpha's command waits for approval")[0]
            check(not os.path.exists(os.path.join(backend.project, "alpha.txt")), "nothing ran without an approval")

            # 2. The pointer rests on "Allow once"; the agent navigates; the same click.
            button = wait_for(lambda: page.pane().find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]'),
                              "alpha's approval is shown")
            wait_for(page.armed, "the approval is ready for clicks")
            ActionChains(driver).move_to_element(button).perform()
            outcome = await screen({"action": "navigate", "sessionKey": c})
            check(outcome["outcome"] == "ignored" and "approval" in outcome.get("reason", ""),
                  f"navigate while an approval is shown is ignored, with the reason: {outcome}")
            check(page.shown() == a, "the pane still shows alpha")
            ActionChains(driver).click().perform()
            wait_for(lambda: not pending(backend, a), "the click answered alpha's approval")
            check([p["id"] for p in pending(backend, c)] != [] , "gamma's approval is untouched")
            wait_for(lambda: os.path.exists(os.path.join(backend.project, "alpha.txt")), "alpha's command ran")
            check(not os.path.exists(os.path.join(backend.project, "gamma.txt")), "gamma's command did not run")
            wait_for(lambda: backend.api("GET", f"/session/{a}")["status"] == "idle", "alpha is idle again")

            # 3. An approval that just appeared ignores a click for 500 ms. On a loaded machine
            # the click may land later than that: then the round tells nothing and is repeated.
            age_js = ("const e = document.querySelector('[data-testid=approvals]');"
                      "return performance.now() - Number(e.dataset.shownAt);")
            for attempt in range(5):
                marker = os.path.join(backend.project, f"second{attempt}.txt")
                prompt(backend, a, f"echo second > second{attempt}.txt")
                button = wait_for(lambda: page.pane().find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]'),
                                  "a new approval appears in alpha's pane")
                ActionChains(driver).move_to_element(button).click().perform()
                # An upper bound of how long after it appeared the click landed.
                age = driver.execute_script(age_js)
                if age < 450:
                    wait_for(lambda: "Click ignored" in page.toast(),
                             f"a click {age:.0f} ms after it appeared is ignored, and said so")
                    check(len(pending(backend, a)) == 1, "the approval is still pending")
                    wait_for(page.armed, "after 500 ms the approval takes clicks")
                    ActionChains(driver).move_to_element(button).click().perform()
                    wait_for(lambda: os.path.exists(marker), "the next click approves")
                    wait_for(lambda: backend.api("GET", f"/session/{a}")["status"] == "idle", "alpha is idle again")
                    break
                print(f"round {attempt}: the click landed up to {age:.0f} ms late; again", flush=True)
                wait_for(page.armed, "the approval takes clicks")
                for p in pending(backend, a):
                    backend.api("POST", f"/session/{a}/permission/{p['id']}", {"reply": "reject"})
                wait_for(lambda: backend.api("GET", f"/session/{a}")["status"] == "idle", "alpha is idle again")
            else:
                check(False, "no click landed within 450 ms of an approval appearing in 5 rounds")

            # 4. Recent input holds commands off for 1.5 s, then they apply.
            page.pane().find_element(By.CSS_SELECTOR, '[data-testid="transcript"]').click()
            outcome = await screen({"action": "navigate", "sessionKey": b})
            check(outcome["outcome"] == "ignored" and "1.5 s" in outcome.get("reason", ""),
                  f"navigate right after the person's input is ignored, with the reason: {outcome}")
            time.sleep(1.6)  # the quiet period, then the command applies
            outcome = await screen({"action": "navigate", "sessionKey": b})
            check(outcome["outcome"] == "applied", f"after the quiet period navigate applies: {outcome}")
            wait_for(lambda: page.shown() == b, "the pane shows beta")

            # 5. Drafts stay with their session.
            box = page.composer()
            box.click()
            box.send_keys("draft-for-beta")
            click_when_found(driver, item(a), "alpha clicked in the sidebar")
            wait_for(lambda: page.shown() == a, "the person opens alpha")
            check(page.composer().get_attribute("value") == "", "alpha's composer does not show beta's draft")
            click_when_found(driver, item(b), "beta clicked in the sidebar")
            wait_for(lambda: page.shown() == b, "the person opens beta again")
            check(page.composer().get_attribute("value") == "draft-for-beta", "beta's draft is still there")

            # 6. Attachments of a permission are shown in its approval card, as text.
            shown = driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                import('/assets/panes.js').then((m) => {
                  const card = (attachments) => {
                    const el = document.createElement('div');
                    // The shell agent's question: its execute call (the command and the files)
                    // and its options.
                    const command = 'wc -l "$1" "$2"';
                    const p = {
                      id: 'per_x', sessionId: 's', command, state: 'pending', created: 0,
                      toolCall: { toolCallId: 'cmd-1', kind: 'execute', title: command, status: 'pending',
                                  rawInput: { command, attachments: attachments ?? [] } },
                      options: [{ optionId: 'once', name: 'Allow once', kind: 'allow_once' },
                                { optionId: 'always', name: 'Allow always in this session', kind: 'allow_always' },
                                { optionId: 'reject', name: 'Reject', kind: 'reject_once' }],
                    };
                    if (attachments) p.attachments = attachments;
                    m.fillApprovals(el, [p], 's', { toast() {}, reply() {} }, false, { id: 's', agent: 'shell' });
                    return el;
                  };
                  const el = card(['notes/a.txt', '<img src=x onerror=alert(1)>']);
                  done({
                    chips: [...el.querySelectorAll('[data-testid="approval-attachment"]')].map((e) => e.textContent),
                    img: el.querySelector('img') !== null,
                    none: card(null).querySelector('[data-testid="approval-attachments"]') === null,
                    // Shown once: as chips, not again as an input field.
                    field: [...el.querySelectorAll('[data-testid="input-field"]')].map((f) => f.dataset.key),
                  });
                }, (e) => done({ error: String(e) }));
            """)
            check(shown == {"chips": ["notes/a.txt", "<img src=x onerror=alert(1)>"], "img": False, "none": True, "field": []},
                  f"an approval lists its attachments as text, and none when it has none: {shown}")
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1])
    print("all Control UI human-priority checks passed", flush=True)


if __name__ == "__main__":
    main()
