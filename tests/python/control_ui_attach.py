"""Files and images in the Control UI's composer (headless Chromium against a real
`ax-code serve` whose agent is the mock ACP agent; see crates/mock-agent): docs/control-ui.md,
"Files and images".

1. `@` lists the project's files as the person types (GET /find/file: fuzzy, `.gitignore`
   respected); Enter picks one, which becomes a chip and leaves the text; the prompt sends it
   (the agent reports an embedded resource) and the stored prompt shows it as a chip.
2. An image pasted into the composer becomes a chip with a thumbnail; the prompt sends it as
   an image block (the agent reports it) and the transcript shows it as a thumbnail loaded
   from the backend. A pasted file that is no image is refused with a toast, and no chip.

Usage: python control_ui_attach.py AX_CODE_BINARY MOCK_AGENT_BINARY
"""

import base64
import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, close_browser, mock_agent_root, run_checks, wait_for

# A real 1x1 PNG, so the browser can draw the thumbnail.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

PASTE = """
const [box, b64, name, type] = arguments;
const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
const data = new DataTransfer();
data.items.add(new File([bytes], name, { type }));
box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
"""


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
        return self.js("return [...document.querySelectorAll('[data-testid=\"file-option\"]')].map((li) => li.dataset.path);")

    def chips(self, what):
        return self.pane().find_elements(By.CSS_SELECTOR, f'[data-testid="composer-chips"] [data-testid="{what}"]')

    def transcript_text(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="transcript"]').text

    def idle(self, backend, sid):
        return backend.api("GET", f"/session/{sid}")["status"] == "idle"


def check_files(page, backend, sid):
    box = page.box()
    box.click()
    box.send_keys("@")
    everything = wait_for(lambda: "src/main.rs" in page.listed() and page.listed(), "`@` lists the project's files")
    check("secret.txt" not in everything and ".gitignore" in everything,
          f"a file .gitignore names is never listed: {everything}")
    page.box().send_keys("mainrs")
    wait_for(lambda: page.listed()[:1] == ["src/main.rs"], "`@mainrs` lists src/main.rs first")
    page.box().send_keys(Keys.ENTER)
    wait_for(lambda: [c.get_attribute("data-path") for c in page.chips("attach-chip")] == ["src/main.rs"],
             "Enter picks the file: a chip")
    check(page.box().get_attribute("value") == "", "the @query left the text, nothing was sent")
    check(backend.api("GET", f"/session/{sid}/message") == [], "no prompt yet")
    page.box().send_keys("blocks")
    page.box().send_keys(Keys.ENTER)
    root = os.path.realpath(backend.project)
    wait_for(lambda: f"blocks: resource file://{root}/src/main.rs 12" in page.transcript_text(),
             "the agent got the file embedded")
    wait_for(lambda: page.idle(backend, sid), "the turn ends")
    shown = [c.text for c in page.pane().find_elements(By.CSS_SELECTOR, '[data-testid="file-part"]')]
    check(shown == ["📎 src/main.rs"], f"the stored prompt shows the file as a chip: {shown}")
    check(page.chips("attach-chip") == [], "the composer's chips went with the prompt")
    stored = backend.api("GET", f"/session/{sid}/message")[0]["parts"]
    check(stored[1] == {"type": "file", "path": "src/main.rs"}, f"and the stored message keeps it: {stored}")


def check_images(page, backend, sid):
    page.js(PASTE, page.box(), base64.b64encode(b"just text").decode(), "notes.txt", "text/plain")
    wait_for(lambda: "only PNG, JPEG, GIF and WebP" in page.driver.find_element(By.ID, "toast").text,
             "a pasted file that is no image is refused with a toast")
    check(page.chips("image-chip") == [], "and makes no chip")
    page.js(PASTE, page.box(), base64.b64encode(PNG).decode(), "dot.png", "image/png")
    chip = wait_for(lambda: page.chips("image-chip"), "the pasted image is a chip")[0]
    check("dot.png" in chip.text, f"named: {chip.text}")
    check(page.js("return arguments[0].querySelector('img').naturalWidth", chip) == 1, "with its thumbnail")
    page.box().send_keys("blocks")
    page.box().send_keys(Keys.ENTER)
    wait_for(lambda: f"blocks: image image/png {len(PNG)}" in page.transcript_text(),
             "the agent got the image block")
    wait_for(lambda: page.idle(backend, sid), "the turn ends")
    thumb = wait_for(lambda: page.pane().find_elements(
        By.CSS_SELECTOR, '[data-testid="image-part"] [data-testid="image-thumb"]:not([hidden])'),
        "the transcript shows the image")[0]
    wait_for(lambda: page.js("return arguments[0].complete && arguments[0].naturalWidth", thumb) == 1,
             "as a thumbnail loaded from the backend")
    check(page.js("return arguments[0].src.startsWith('data:image/png;base64,')", thumb), "by its checked type")
    check(page.chips("image-chip") == [], "the composer's image chip went with the prompt")


def run(binary, mock):
    root, env = mock_agent_root(mock, "axattach")
    project = os.path.join(root, "project")
    os.makedirs(os.path.join(project, "src"))
    with open(os.path.join(project, "src", "main.rs"), "w") as f:
        f.write("fn main() {}")
    with open(os.path.join(project, "secret.txt"), "w") as f:
        f.write("ignored")
    with open(os.path.join(project, ".gitignore"), "w") as f:
        f.write("secret.txt\n")
    backend = Backend(binary, root, extra_env=env)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        page = Page(driver)
        driver.get(backend.sign_in_link())
        wait_for(lambda: page.js("return document.getElementById('app').hidden === false"), "signed in")
        wait_for(lambda: page.js("return document.getElementById('connection').dataset.stream === 'live'"), "the events are live")
        sid = backend.api("POST", "/session", {"agent": "mock"})["id"]
        row = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{sid}"]'),
                       "the session is listed")
        row.click()
        wait_for(lambda: page.pane().get_attribute("data-session") == sid, "the pane shows it")
        check_files(page, backend, sid)
        check_images(page, backend, sid)
        print("ok: control_ui_attach")
    finally:
        close_browser(driver)
        backend.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2])
