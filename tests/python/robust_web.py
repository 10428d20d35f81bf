"""The Control UI's sidebar renames and deletes sessions (headless Chromium against a real
`ax-code serve`), and follows renames and deletions made elsewhere through the event stream.

Usage: python robust_web.py AX_CODE_BINARY
"""

import os
import shutil
import sys
import tempfile

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, run_checks, wait_for


def rows(driver):
    """(session id, shown title) of the sidebar, top to bottom."""
    return [
        (el.get_attribute("data-session"), el.find_element(By.CLASS_NAME, "session-title").text)
        for el in driver.find_elements(By.CSS_SELECTOR, '[data-testid="session-item"]')
    ]


def control(driver, session_id, testid):
    row = driver.find_element(By.CSS_SELECTOR, f'[data-session="{session_id}"]').find_element(By.XPATH, "..")
    ActionChains(driver).move_to_element(row).perform()
    return row.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')


def run(binary):
    root = tempfile.mkdtemp(prefix="axweb")
    backend = Backend(binary, root)
    driver = None
    try:
        a = backend.api("POST", "/session", {"title": "alpha"})["id"]
        b = backend.api("POST", "/session", {"title": "beta"})["id"]
        driver = browser(os.path.join(root, "profile"), "--window-size=1280,800")
        driver.get(backend.sign_in_link())
        wait_for(lambda: [t for _, t in rows(driver)] == ["beta", "alpha"], "most recent first")

        # Rename from the sidebar (the prompt answered by the person).
        driver.execute_script("window.prompt = () => 'alpha renamed';")
        control(driver, a, "session-rename").click()
        wait_for(lambda: backend.api("GET", f"/session/{a}")["title"] == "alpha renamed",
                 "the rename reached the backend")
        wait_for(lambda: rows(driver)[0] == (a, "alpha renamed"),
                 "the sidebar shows it, moved to the top (last activity)")

        # Delete asks first: "no" keeps the session.
        driver.execute_script("window.confirm = () => false;")
        control(driver, b, "session-delete").click()
        check(len(backend.api("GET", "/session")) == 2, "declining the confirmation deletes nothing")
        driver.execute_script("window.confirm = () => true;")
        control(driver, b, "session-delete").click()
        wait_for(lambda: [s["id"] for s in backend.api("GET", "/session")] == [a], "the delete reached the backend")
        wait_for(lambda: [i for i, _ in rows(driver)] == [a], "the sidebar drops it")

        # Changes made elsewhere arrive live.
        backend.api("PATCH", f"/session/{a}", {"title": "renamed elsewhere"})
        wait_for(lambda: rows(driver) == [(a, "renamed elsewhere")], "a rename elsewhere shows live")
        backend.api("DELETE", f"/session/{a}")
        wait_for(lambda: rows(driver) == [], "a deletion elsewhere shows live")
    finally:
        if driver is not None:
            driver.quit()
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1])
    print("all Control UI session management checks passed", flush=True)


if __name__ == "__main__":
    main()
