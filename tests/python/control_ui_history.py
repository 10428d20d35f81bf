"""Prompt history in the Control UI's composer (headless Chromium against a real `ax-code
serve` whose agent is the mock ACP agent): docs/control-ui.md §11.

1. ↑ on an empty composer shows the newest stored prompt, ↑ again the one before, ↓ walks
   back and, past the newest, gives the draft back as it was.
2. In a multi-line draft ↑ first moves the caret; on the first line it walks.
3. Ctrl+R opens a search above the composer (the page is not reloaded): typing finds the
   newest match, Ctrl+R again an older one, Enter puts it in the composer without sending it;
   Esc closes a search and leaves the draft as it was.

Usage: python control_ui_history.py AX_CODE_BINARY MOCK_AGENT_BINARY
"""

import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, close_browser, mock_agent_root, run_checks, wait_for

PROMPTS = ["text build the parser", "text run the tests", "text build the docs"]


def run(binary, mock):
    root, env = mock_agent_root(mock, "axhistory")
    os.makedirs(os.path.join(root, "project"))
    backend = Backend(binary, root, extra_env=env)
    driver = None
    try:
        sid = backend.api("POST", "/session", {"agent": "mock", "title": "history"})["id"]
        for i, text in enumerate(PROMPTS):
            backend.api("POST", f"/session/{sid}/prompt", {"parts": [{"type": "text", "text": text}]})
            wait_for(lambda: backend.api("GET", f"/session/{sid}")["status"] == "idle"
                     and len(backend.api("GET", f"/session/{sid}/message")) == 2 * (i + 1), f"turn {i + 1} ends")
        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        js = driver.execute_script
        driver.get(backend.sign_in_link())
        wait_for(lambda: js("return document.getElementById('app').hidden === false"), "signed in")
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]').click() or True,
                 "the session is listed; opened")
        wait_for(lambda: len(driver.find_elements(By.CSS_SELECTOR, '[data-testid="transcript"] [data-testid="message"]')) == 6,
                 "its transcript is loaded")
        box = driver.find_element(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{sid}"]')
        value = lambda: js("return arguments[0].value", box)
        box.click()
        box.send_keys("my draft")
        js("arguments[0].setSelectionRange(0, 0)", box)
        box.send_keys(Keys.ARROW_UP)
        check(value() == PROMPTS[2], f"up shows the newest prompt: {value()!r}")
        box.send_keys(Keys.ARROW_UP)
        check(value() == PROMPTS[1], f"up again the one before: {value()!r}")
        box.send_keys(Keys.ARROW_DOWN)
        check(value() == PROMPTS[2], f"down walks back: {value()!r}")
        box.send_keys(Keys.ARROW_DOWN)
        check(value() == "my draft", f"past the newest the draft comes back: {value()!r}")

        js("arguments[0].value = 'first\\nsecond'; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));"
           "arguments[0].setSelectionRange(9, 9)", box)
        box.send_keys(Keys.ARROW_UP)
        check(value() == "first\nsecond", f"in a multi-line draft up first moves the caret: {value()!r}")
        check(js("return arguments[0].selectionStart", box) <= 5, "the caret moved to the first line")
        box.send_keys(Keys.ARROW_UP)
        check(value() == PROMPTS[2], f"on the first line up walks: {value()!r}")

        js("arguments[0].value = 'kept draft'; arguments[0].dispatchEvent(new Event('input', {bubbles: true}))", box)
        js("window.__notReloaded = true")
        box.send_keys(Keys.CONTROL, "r")
        query = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="recall-query"]'), "Ctrl+R opens the search")
        check(js("return window.__notReloaded === true"), "Ctrl+R did not reload the page")
        query.send_keys("build")
        found = driver.find_element(By.CSS_SELECTOR, '[data-testid="recall-found"]')
        check(found.text == PROMPTS[2], f"the newest match: {found.text!r}")
        query.send_keys(Keys.CONTROL, "r")
        check(found.text == PROMPTS[0], f"Ctrl+R again: an older match: {found.text!r}")
        query.send_keys(Keys.ENTER)
        wait_for(lambda: not driver.find_elements(By.CSS_SELECTOR, '[data-testid="recall-search"]'), "Enter closes the search")
        check(value() == PROMPTS[0], f"the match is in the composer: {value()!r}")
        check(len(backend.api("GET", f"/session/{sid}/message")) == 6, "and was not sent")

        js("arguments[0].value = 'kept draft'; arguments[0].dispatchEvent(new Event('input', {bubbles: true}))", box)
        box.send_keys(Keys.CONTROL, "r")
        query = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="recall-query"]'), "the search opens again")
        query.send_keys("tests")
        query.send_keys(Keys.ESCAPE)
        wait_for(lambda: not driver.find_elements(By.CSS_SELECTOR, '[data-testid="recall-search"]'), "Esc closes it")
        check(value() == "kept draft", f"Esc leaves the draft as it was: {value()!r}")
        print("ok: control_ui_history")
    finally:
        close_browser(driver)
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
