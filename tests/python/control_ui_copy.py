"""Copy buttons in the Control UI (headless Chromium against a real `ax-code serve` whose agent
is the mock ACP agent): docs/control-ui.md §10.

1. A code block in the agent's Markdown has a copy button beside it (not inside: the block's
   text stays the code); it puts the code on the clipboard.
2. A message's copy button puts the message's text on the clipboard (the agent's Markdown
   source as it came).
3. Where the clipboard API refuses, the button falls back to the browser's copy command.

The clipboard is read back with `navigator.clipboard.readText()` (permission granted through
CDP `Browser.grantPermissions`).

Usage: python control_ui_copy.py AX_CODE_BINARY MOCK_AGENT_BINARY
"""

import os
import sys

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, close_browser, mock_agent_root, run_checks, wait_for

NOTES = "intro line\n\n```sh\necho fenced\nsecond line\n```\n\nafter the block\n"

READ_CLIPBOARD = """
const done = arguments[arguments.length - 1];
navigator.clipboard.readText().then(done, (e) => done('ERROR ' + e));
"""


def run(binary, mock):
    root, env = mock_agent_root(mock, "axcopy")
    os.makedirs(os.path.join(root, "project"))
    with open(os.path.join(root, "project", "notes.md"), "w") as f:
        f.write(NOTES)
    backend = Backend(binary, root, extra_env=env)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        js = driver.execute_script
        sid = backend.api("POST", "/session", {"agent": "mock", "title": "copy"})["id"]
        driver.get(backend.sign_in_link())
        wait_for(lambda: js("return document.getElementById('app').hidden === false"), "signed in")
        driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": backend.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        # Clicked inside wait_for: the list may be drawn anew between finding the row and the click.
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]').click() or True,
                 "the session is listed; opened")
        backend.api("POST", f"/session/{sid}/prompt", {"parts": [{"type": "text", "text": "read notes.md"}]})
        wait_for(lambda: backend.api("GET", f"/session/{sid}")["status"] == "idle"
                 and len(backend.api("GET", f"/session/{sid}/message")) == 2, "the turn ends")
        reply = backend.api("GET", f"/session/{sid}/message")[1]
        source = "".join(p["text"] for p in reply["parts"] if p["type"] == "text")
        pre = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="transcript"] .md-pre'), "the code block is drawn")
        check(js("return arguments[0].textContent", pre) == "echo fenced\nsecond line\n", "its text is the code alone")

        code = driver.find_element(By.CSS_SELECTOR, '[data-testid="transcript"] [data-testid="copy-code"]')
        code.click()
        wait_for(lambda: code.get_attribute("data-copied") == "true", "the code's button says it copied")
        check(driver.execute_async_script(READ_CLIPBOARD) == "echo fenced\nsecond line\n", "the clipboard holds the code")

        messages = driver.find_elements(By.CSS_SELECTOR, '[data-testid="transcript"] [data-testid="message"]')
        ActionChains(driver).move_to_element(messages[1]).perform()
        button = messages[1].find_element(By.CSS_SELECTOR, '[data-testid="copy-message"]')
        wait_for(lambda: button.is_displayed(), "hovering the message shows its copy button")
        button.click()
        wait_for(lambda: driver.execute_async_script(READ_CLIPBOARD) == source, "the clipboard holds the message's text")
        check(js("return arguments[0].textContent.includes('Copy')", messages[1]) is False,
              "the buttons add nothing to the message's text")

        # Where the clipboard API refuses (a non-secure context has none): the copy command.
        js("navigator.clipboard.writeText = () => Promise.reject(new Error('refused'));")
        ActionChains(driver).move_to_element(messages[0]).perform()
        mine = messages[0].find_element(By.CSS_SELECTOR, '[data-testid="copy-message"]')
        wait_for(lambda: mine.is_displayed(), "the person's message has one too")
        mine.click()
        wait_for(lambda: mine.get_attribute("data-copied") == "true", "the fallback copied")
        wait_for(lambda: driver.execute_async_script(READ_CLIPBOARD) == "read notes.md", "the clipboard holds the prompt")
        print("ok: control_ui_copy")
    finally:
        close_browser(driver)
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
