"""The prompt queue in the Control UI (headless Chromium against a real `ax-code serve` whose
agent is the mock ACP agent; see crates/mock-agent): docs/control-ui.md §6.

1. While a turn runs (it waits for an approval, so it lasts as long as the test needs), two
   prompts typed into the composer are queued, not refused: shown in order as queued, the
   backend holding both and no second turn started. One is edited, the other cancelled; when
   the approval is answered and the turn ends, the edited one is sent, the cancelled one never.
2. "Send now" on a prompt queued behind a turn that would never end by itself stops that turn
   and sends the prompt.
3. Stop during a turn with a prompt queued pauses the queue: the page says so and why, and
   Resume sends it.

Usage: python control_ui_queue.py AX_CODE_BINARY MOCK_AGENT_BINARY
"""

import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, close_browser, mock_agent_root, run_checks, wait_for

ROWS = """
return [...document.querySelectorAll('[data-testid="pane"][data-active="true"] [data-testid="queue-item"]')]
  .map((r) => ({id: r.dataset.queueId, place: r.dataset.place,
                text: r.querySelector('[data-testid="queue-text"]')?.textContent ?? null,
                badge: r.querySelector('.queue-badge')?.textContent ?? null}));
"""


class Page:
    def __init__(self, driver, backend, sid):
        self.driver = driver
        self.backend = backend
        self.sid = sid

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def pane(self):
        return self.driver.find_element(By.CSS_SELECTOR, '[data-testid="pane"][data-active="true"]')

    def find(self, testid):
        return self.pane().find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def send(self, text):
        """Puts `text` (newlines kept) into the active pane's composer and presses Enter."""
        box = self.find("composer-input")
        self.js("arguments[0].value = arguments[1];"
                "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", box, text)
        box.click()
        box.send_keys(Keys.END, Keys.ENTER)
        wait_for(lambda: self.find("composer-input").get_attribute("value") == "", f"the composer took “{text}”")

    def rows(self):
        return self.js(ROWS)

    def row_button(self, qid, testid):
        return self.pane().find_element(By.CSS_SELECTOR, f'[data-queue-id="{qid}"] [data-testid="{testid}"]')

    def transcript(self):
        return self.find("transcript").text

    def status(self):
        return self.backend.api("GET", f"/session/{self.sid}")["status"]

    def queued(self):
        return self.backend.api("GET", f"/session/{self.sid}/queue")

    def users(self):
        return [m for m in self.backend.api("GET", f"/session/{self.sid}/message") if m["role"] == "user"]

    def replies(self):
        return ["".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")
                for m in self.backend.api("GET", f"/session/{self.sid}/message") if m["role"] == "assistant"]

    def settled(self, n):
        return self.status() == "idle" and not self.queued()["items"] and len(self.users()) == n


def texts(queue):
    return [" ".join(p["text"] for p in i["prompt"]["parts"] if p["type"] == "text") for i in queue["items"]]


def check_queue_edit_cancel(page):
    page.send("text working\npermission p1 claude\ntext done working")
    wait_for(lambda: page.status() == "pending", "the turn waits for its approval")
    wait_for(lambda: page.find("composer-send").text == "Queue", "while it runs the composer's button says Queue")
    page.send("text answer a")
    page.send("text answer b")
    rows = wait_for(lambda: len(page.rows()) == 2 and page.rows(), "both prompts are shown as queued")
    check([r["text"] for r in rows] == ["text answer a", "text answer b"] and [r["place"] for r in rows] == ["1", "2"],
          f"in the order typed: {rows}")
    check(all(r["badge"] == "queued" for r in rows), "each marked queued")
    check(texts(page.queued()) == ["text answer a", "text answer b"], "the backend holds both, in order")
    check(len(page.users()) == 1, "no second turn started")
    first, second = rows[0]["id"], rows[1]["id"]

    page.row_button(first, "queue-edit").click()
    box = wait_for(lambda: page.row_button(first, "queue-edit-input"), "Edit opens the queued prompt's text")
    check(box.get_attribute("value") == "text answer a", "with its text")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("text answer edited")
    box.send_keys(Keys.ENTER)
    wait_for(lambda: [r["text"] for r in page.rows()] == ["text answer edited", "text answer b"], "the edit shows, in place")
    check(texts(page.queued()) == ["text answer edited", "text answer b"], "and the backend keeps the edit")
    check(page.rows()[0]["badge"] == "queued · edited", "marked edited")

    page.row_button(second, "queue-cancel").click()
    wait_for(lambda: [r["id"] for r in page.rows()] == [first], "a cancelled prompt leaves the list")
    check([i["id"] for i in page.queued()["items"]] == [first], "and the backend's queue")

    wait_for(lambda: page.find("approvals").get_attribute("data-armed") == "true", "the approval takes clicks")
    page.find("approve-allow_once").click()
    wait_for(lambda: "answer edited" in page.transcript(), "when the turn ends the edited prompt is sent", timeout=20)
    wait_for(lambda: page.settled(2), "and nothing else waits")
    wait_for(lambda: page.rows() == [], "the queue list is empty again")
    check(page.replies()[-1] == "answer edited", f"the agent got the edited prompt: {page.replies()}")
    check("answer b" not in page.transcript() and len(page.replies()) == 2, "the cancelled prompt was never sent")
    check(page.find("queue").get_attribute("hidden") is not None, "an empty queue takes no room")
    wait_for(lambda: page.find("composer-send").text == "Send", "a free session's button says Send again")


def check_send_now(page):
    page.send("text steering\nwait-cancel")
    wait_for(lambda: page.status() == "busy", "a turn that waits to be stopped runs")
    page.send("text steered")
    row = wait_for(lambda: page.rows(), "the prompt is queued behind it")[0]
    page.row_button(row["id"], "queue-send-now").click()
    wait_for(lambda: "steered" in page.transcript().replace("steering", ""), "Send now stops the turn and sends it", timeout=20)
    wait_for(lambda: page.settled(4), "and the session settles")
    check(page.replies()[-1] == "steered", f"the agent answered the prompt sent now: {page.replies()[-2:]}")
    check(page.rows() == [], "the queue is empty")


def check_pause_resume(page):
    page.send("text stopping\nwait-cancel")
    wait_for(lambda: page.status() == "busy", "another turn runs")
    page.send("text after resume")
    wait_for(lambda: len(page.rows()) == 1, "a prompt waits behind it")
    page.find("abort").click()
    head = wait_for(lambda: page.find("queue-paused").text, "Stop pauses the queue, and the page says so")
    check("paused" in head and "Resume" in head, f"with why and what to do: {head}")
    check(page.queued()["paused"], "the backend's queue is paused")
    wait_for(lambda: page.status() == "idle", "the turn was stopped")
    check(len(page.rows()) == 1 and len(page.users()) == 5, "the queued prompt was not sent")
    page.find("queue-resume").click()
    wait_for(lambda: "after resume" in page.transcript(), "Resume sends it", timeout=20)
    wait_for(lambda: page.settled(6), "and the queue is empty")
    check(page.replies()[-1] == "after resume", f"the agent answered it: {page.replies()[-1]}")
    check(page.rows() == [], "the list too")


def run(binary, mock):
    root, env = mock_agent_root(mock, "axqueue")
    backend = Backend(binary, root, extra_env=env)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        driver.get(backend.sign_in_link())
        js = driver.execute_script
        wait_for(lambda: js("return document.getElementById('app').hidden === false"), "signed in")
        wait_for(lambda: js("return document.getElementById('connection').dataset.stream === 'live'"), "the events are live")
        sid = backend.api("POST", "/session", {"agent": "mock"})["id"]
        # Clicked inside wait_for: the list may be drawn anew between finding the row and the click.
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]').click() or True,
                 "the session is listed; opened")
        page = Page(driver, backend, sid)
        wait_for(lambda: page.pane().get_attribute("data-session") == sid, "the pane shows it")
        check_queue_edit_cancel(page)
        check_send_now(page)
        check_pause_resume(page)
        print("ok: control_ui_queue")
    finally:
        close_browser(driver)
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
