"""The agent's own offers in the Control UI (headless Chromium against a real `ax-code serve`
whose default agent is the mock ACP agent; see crates/mock-agent): docs/control-ui.md,
"Agent commands".

1. Commands: typing `/` at the start of the composer lists the commands the agent sent
   (`agentState.commands`: name, input hint, description), filtered as the person types; Tab
   completes `/name `, and the prompt `/name args` reaches the agent as its command. While the
   list is open, a new list from the agent replaces it; Escape closes it; Enter on an open
   list completes instead of sending.
2. Config options: the pane header shows a picker per option of `agentState.configOptions`
   beside the mode picker (a select for a select, a checkbox for a boolean; the `mode`
   option is the mode picker's); choosing a model goes through `POST /session/{id}/config`
   to the agent (its `config` report says so), the checkbox switches a boolean, and the
   agent's own `config_option_update` moves the picker.

Usage: python control_ui_agent_options.py AX_CODE_BINARY MOCK_AGENT_BINARY
"""

import json
import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from axtest import Backend, browser, check, close_browser, mock_agent_root, run_checks, wait_for

class Page:
    def __init__(self, driver):
        self.driver = driver

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def pane(self):
        return self.driver.find_element(By.CSS_SELECTOR, '[data-testid="pane"][data-active="true"]')

    def box(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="composer-input"]')

    def listed(self):
        """The commands the open list shows, as (name, hint, description, selected)."""
        return self.js("""
            return [...document.querySelectorAll('[data-testid="command-option"]')].map((li) => [
              li.dataset.command,
              li.querySelector('.command-hint')?.textContent.trim() ?? null,
              li.querySelector('.command-desc')?.textContent ?? null,
              li.getAttribute('aria-selected') === 'true']);
        """)

    def transcript_text(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="transcript"]').text

    def idle(self, backend, sid):
        return backend.api("GET", f"/session/{sid}")["status"] == "idle"


def prompt_api(backend, sid, text):
    backend.api("POST", f"/session/{sid}/prompt", {"parts": [{"type": "text", "text": text}]})


def check_commands(page, backend, sid):
    # The agent sends its list once its session is open: here during the first prompt.
    prompt_api(backend, sid, "text warmed up")
    stored = wait_for(lambda: backend.api("GET", f"/session/{sid}").get("agentState", {}).get("commands"),
                      "the agent's first turn brings its commands", timeout=30)
    wait_for(lambda: page.idle(backend, sid), "the first turn ends")
    check([c["name"] for c in stored] == ["compact", "review"], f"the agent's commands are kept: {stored}")

    box = page.box()
    box.click()
    box.send_keys("/")
    wait_for(lambda: [c[0] for c in page.listed()] == ["compact", "review"], "`/` lists the agent's commands")
    shown = page.listed()
    check(shown[1][1] == "what to review" and shown[1][2] == "Review the changes",
          f"each with its input hint and description: {shown}")
    check(shown[0][3] and not shown[1][3], f"the first is chosen: {shown}")
    box.send_keys("r")
    wait_for(lambda: [c[0] for c in page.listed()] == ["review"], "typing filters the list")
    box.send_keys(Keys.TAB)
    wait_for(lambda: page.box().get_attribute("value") == "/review ", "Tab completes the command")
    check(page.listed() == [], "and closes the list")
    page.box().send_keys("the parser")
    page.box().send_keys(Keys.ENTER)
    wait_for(lambda: "command review: the parser" in page.transcript_text(), "the prompt runs the agent's command")
    wait_for(lambda: page.idle(backend, sid), "that turn ends")

    # Enter on an open list completes rather than sends.
    page.box().send_keys("/comp")
    wait_for(lambda: [c[0] for c in page.listed()] == ["compact"], "`/comp` lists compact")
    page.box().send_keys(Keys.ENTER)
    wait_for(lambda: page.box().get_attribute("value") == "/compact ", "Enter completes")
    messages = backend.api("GET", f"/session/{sid}/message")
    check(not any("/compact" in json.dumps(m) for m in messages), "nothing was sent")

    # The list follows the agent's updates while it is open.
    page.js("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", page.box())
    page.box().send_keys("/")
    wait_for(lambda: [c[0] for c in page.listed()] == ["compact", "review"], "the list is open")
    prompt_api(backend, sid, "commands compact init lint")
    wait_for(lambda: [c[0] for c in page.listed()] == ["compact", "init", "lint"], "the agent's new list replaces it")
    page.box().send_keys(Keys.ESCAPE)
    wait_for(lambda: page.listed() == [], "Escape closes the list")
    check(page.box().get_attribute("value") == "/", "and keeps what was typed")
    wait_for(lambda: page.idle(backend, sid), "the update's turn ends")
    page.js("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", page.box())


def current(backend, sid, config_id):
    options = backend.api("GET", f"/session/{sid}")["agentState"]["configOptions"]
    return next(o["currentValue"] for o in options if o["id"] == config_id)


def picker(page, config_id):
    return page.pane().find_element(By.CSS_SELECTOR, f'[data-testid="config-option"][data-config="{config_id}"]')


def check_config(page, backend, sid):
    shown = wait_for(lambda: [p.get_attribute("data-config") for p in page.pane().find_elements(By.CSS_SELECTOR, '[data-testid="config-option"]')],
                     "the header shows the agent's options")
    check(shown == ["model", "reasoning_effort", "fast"], f"a picker per option, the mode left to its own picker: {shown}")
    check(page.pane().find_elements(By.CSS_SELECTOR, '[data-testid="mode-select"]'), "beside the mode picker")
    model = Select(picker(page, "model"))
    check([o.get_attribute("value") for o in model.options] == ["mock-large", "mock-small", "mock-fast"]
          and model.first_selected_option.get_attribute("value") == "mock-large",
          "the model picker offers the agent's models, its current one chosen")
    check(picker(page, "fast").get_attribute("type") == "checkbox" and not picker(page, "fast").is_selected(),
          "a boolean option is a checkbox, off")
    model.select_by_value("mock-small")
    wait_for(lambda: current(backend, sid, "model") == "mock-small", "choosing a model changes the agent's option")
    wait_for(lambda: Select(picker(page, "model")).first_selected_option.get_attribute("value") == "mock-small",
             "the picker shows the agent's answer")
    picker(page, "fast").click()
    wait_for(lambda: current(backend, sid, "fast") is True, "the checkbox switches the boolean option")
    wait_for(lambda: picker(page, "fast").is_selected(), "and shows it on")
    prompt_api(backend, sid, "config")
    wait_for(lambda: "model=mock-small reasoning_effort=medium fast=true" in page.transcript_text(),
             "the agent works with the options chosen")
    wait_for(lambda: page.idle(backend, sid), "that turn ends")
    prompt_api(backend, sid, "config-set model mock-fast")
    wait_for(lambda: Select(picker(page, "model")).first_selected_option.get_attribute("value") == "mock-fast",
             "the agent's own change moves the picker")
    wait_for(lambda: page.idle(backend, sid), "that turn ends too")


def run(binary, mock):
    root, env = mock_agent_root(mock, "axoptions")
    backend = Backend(binary, root, extra_env=env)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        page = Page(driver)
        driver.get(backend.sign_in_link())
        wait_for(lambda: page.js("return document.getElementById('app').hidden === false"), "signed in")
        # Created once the page follows the events, so the new session's row comes live.
        wait_for(lambda: page.js("return document.getElementById('connection').dataset.stream === 'live'"), "the events are live")
        sid = backend.api("POST", "/session", {"agent": "mock"})["id"]
        row = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]'),
                       "the session is listed")
        row.click()
        wait_for(lambda: page.pane().get_attribute("data-session") == sid, "the pane shows it")
        check_commands(page, backend, sid)
        check_config(page, backend, sid)
        print("ok: control_ui_agent_options")
    finally:
        close_browser(driver)
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
