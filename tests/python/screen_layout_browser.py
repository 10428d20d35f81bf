"""End to end: the `screen` tool's layout read-back, pane IDs, revisions, targeting,
apply_layout and annotations (docs/gateway.md §3-§5), with two Control UI tabs in headless
Chromium and the official MCP Python SDK through `ax-code mcp screen`.

Run by crates/cli/tests/screen_layout_browser.rs:
    python screen_layout_browser.py BINARY ARTIFACTS_DIR
Prints each check; exits non-zero on the first failure.
"""

import json
import os
import re
import shutil
import sys
import tempfile
import time

import jsonschema
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from axtest import Backend, browser, check, close_browser, mcp_session, run_checks, wait_for


class Tab:
    """One Control UI tab, read through its data-testid hooks."""

    def __init__(self, driver, handle):
        self.d = driver
        self.handle = handle

    def go(self):
        if self.d.current_window_handle != self.handle:
            self.d.switch_to.window(self.handle)
        return self

    def panes(self):
        self.go()
        return self.d.execute_script("""
            return [...document.querySelectorAll('[data-testid="column"]')].map((col) =>
              [...col.querySelectorAll('[data-testid="pane"]')].map((p) => p.dataset.session));
        """)

    def active_pane(self):
        self.go()
        return self.d.execute_script(
            "return document.querySelector('[data-testid=pane][data-active=true]')?.dataset.paneId")

    def conn_id(self):
        self.go()
        title = self.d.find_element(By.CSS_SELECTOR, '[data-testid="connection"]').get_attribute("title")
        m = re.search(r"\((conn_[0-9a-f]+)\)", title or "")
        return m.group(1) if m else None

    def attr(self, testid, name):
        self.go()
        return self.d.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]').get_attribute(name)

    def annotations(self):
        self.go()
        return self.d.execute_script("""
            const boxes = (sel) => [...document.querySelectorAll(sel)].map((e) => e.getBoundingClientRect());
            const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
            const guarded = [...boxes('[data-testid=composer]'), ...boxes('[data-testid=approvals]'),
                             ...boxes('[data-testid=approval]')];
            return [...document.querySelectorAll('[data-testid=annotation]')].map((n) => {
              const r = n.getBoundingClientRect();
              const host = n.closest('[data-testid=pane]')?.dataset.paneId
                ?? n.closest('[data-testid=session-item]')?.dataset.session
                ?? n.closest('[data-testid$=-panel]')?.dataset.testid;
              return {text: n.textContent, host, covers: guarded.some((g) => hit(r, g)),
                      visible: r.width > 0 && r.height > 0};
            });
        """)


async def run(binary, artifacts):
    root = tempfile.mkdtemp(prefix="axscreen2")
    backend = Backend(binary, root)
    driver = None
    try:
        a, b, c, d = (backend.api("POST", "/session", {"title": t})["id"]
                      for t in ("alpha", "beta", "gamma", "delta"))
        driver = browser(os.path.join(root, "profile"), "--window-size=1440,900", console_log=True)
        driver.get(backend.sign_in_link())
        one = Tab(driver, driver.current_window_handle)
        wait_for(lambda: one.conn_id(), "tab one signs in and joins the gateway")
        driver.switch_to.new_window("tab")
        driver.get(backend.sign_in_link())
        two = Tab(driver, driver.current_window_handle)
        wait_for(lambda: two.conn_id(), "tab two signs in and joins the gateway")
        id1, id2 = one.conn_id(), two.conn_id()
        check(id1 != id2, "two UIs, two ids")

        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", root),
            "AX_CODE_SERVER_PASSWORD": backend.token,
            "AX_CODE_DATA_DIR": backend.data,
        }
        async with mcp_session(binary, ["mcp", "screen", "--url", backend.url, "--session", a], env) as mcp:
            await mcp.initialize()
            tool = (await mcp.list_tools()).tools[0]
            actions = tool.input_schema["properties"]["action"]["enum"]
            check({"layout", "apply_layout", "annotate", "annotations_clear"} <= set(actions),
                  f"the new actions are listed: {actions}")

            async def screen(args, expect_error=None):
                result = await mcp.call_tool("screen", args)
                content = result.structured_content
                jsonschema.validate(content, tool.output_schema)
                check(json.loads(result.content[0].text) == content, f"screen {args}: text is the JSON")
                if expect_error:
                    check(result.is_error is True and content["error"]["code"] == expect_error,
                          f"screen {args}: {expect_error}: {content}")
                else:
                    check(result.is_error is not True and content["ok"] is True, f"screen {args}: ok ({content})")
                return content

            async def layouts():
                r = await screen({"action": "layout"})
                return {u["uiId"]: u for u in r["uis"]}

            # Both tabs show alpha (a broadcast, v1's default).
            r = await screen({"action": "navigate"})
            check(r["delivered"] == 2, "navigate reached both tabs")
            check(all(isinstance(o.get("revision"), int) for o in r["outcomes"]),
                  f"every acknowledgement carries the revision: {r['outcomes']}")
            wait_for(lambda: one.panes() == [[a]] and two.panes() == [[a]], "both tabs show alpha")

            # 1. layout: each tab's arrangement, read back.
            ls = await layouts()
            check(set(ls) == {id1, id2}, f"layout answers both UIs by id: {list(ls)}")
            for ui in ls.values():
                check([(p["sessionId"], p["column"], p["row"], p["active"], p["size"]) for p in ui["panes"]]
                      == [(a, 0, 0, True, 1)], f"one pane showing alpha, active, whole area: {ui['panes']}")
                check(ui["sidebar"] == {"shown": True} and ui["terminal"]["shown"] is False
                      and ui["browser"]["shown"] is False, f"sidebar and panels: {ui}")
                check(set(ui) == {"uiId", "revision", "panes", "sidebar", "terminal", "browser"},
                      f"nothing but the arrangement: {sorted(ui)}")
            rev1 = ls[id1]["revision"]
            rev2 = ls[id2]["revision"]
            p1 = ls[id1]["panes"][0]["paneId"]

            # 2. uiId: a split in tab one only; its outcome says the new revision.
            r = await screen({"action": "split_right", "sessionKey": b, "uiId": id1, "paneId": p1})
            check(r["delivered"] == 1 and [o["connId"] for o in r["outcomes"]] == [id1]
                  and r["outcomes"][0]["outcome"] == "applied", f"only tab one got it: {r}")
            check(r["outcomes"][0]["revision"] > rev1, "the revision grew")
            wait_for(lambda: one.panes() == [[a], [b]], "tab one: alpha | beta")
            check(two.panes() == [[a]], "tab two is unchanged")
            ls = await layouts()
            check(ls[id1]["revision"] == r["outcomes"][0]["revision"], "layout reads the same revision back")
            check(ls[id2]["revision"] == rev2, "tab two's revision did not move")
            check([(p["sessionId"], p["column"], p["size"]) for p in ls[id1]["panes"]] == [(a, 0, 0.5), (b, 1, 0.5)],
                  f"tab one's panes read back: {ls[id1]['panes']}")
            p2 = ls[id1]["panes"][1]["paneId"]
            check(ls[id1]["panes"][1]["active"] is True, "the new pane is active")

            # 3. expectedRevision: stale is refused with the current one; current applies.
            current = ls[id1]["revision"]
            r = await screen({"action": "focus", "paneId": p1, "uiId": id1, "expectedRevision": rev1})
            o = r["outcomes"][0]
            check(o["outcome"] == "ignored" and "stale revision" in o["reason"] and o["revision"] == current,
                  f"a stale revision is refused with the current one: {o}")
            check(one.active_pane() == p2, "nothing changed")
            r = await screen({"action": "focus", "paneId": p1, "uiId": id1, "expectedRevision": current})
            check(r["outcomes"][0]["outcome"] == "applied", f"the current revision applies: {r}")
            wait_for(lambda: one.active_pane() == p1, "focus by paneId")
            # The person's own change is a new revision too: the agent's old one is now stale.
            seen = r["outcomes"][0]["revision"]
            one.go()
            driver.find_element(By.CSS_SELECTOR, f'[data-testid="pane"][data-pane-id="{p2}"] .pane-title').click()
            wait_for(lambda: one.active_pane() == p2, "the person activates beta's pane")
            r = await screen({"action": "close_pane", "paneId": p2, "uiId": id1, "expectedRevision": seen})
            check(r["outcomes"][0]["outcome"] == "ignored" and r["outcomes"][0]["revision"] > seen,
                  f"the person's change made the agent's revision stale: {r['outcomes']}")
            check(one.panes() == [[a], [b]], "the pane is still there")
            r = await screen({"action": "focus", "paneId": "p99", "uiId": id1})
            check(r["outcomes"][0]["outcome"] == "ignored" and "no pane p99" in r["outcomes"][0]["reason"],
                  f"an unknown paneId is reported: {r['outcomes']}")

            # 4. Targets that are not there are UNAVAILABLE, never everyone.
            await screen({"action": "sidebar_hide", "uiId": "conn_00000000deadbeef"}, expect_error="UNAVAILABLE")
            await screen({"action": "sidebar_hide", "target": "requester"}, expect_error="UNAVAILABLE")
            await screen({"action": "layout", "target": "requester"}, expect_error="UNAVAILABLE")
            check(one.attr("sidebar", "data-hidden") == "false" and two.attr("sidebar", "data-hidden") == "false",
                  "no tab hid its sidebar")
            await screen({"action": "focus", "paneId": "bad id!"}, expect_error="INVALID_REQUEST")
            await screen({"action": "layout", "uiId": id1, "target": "all"}, expect_error="INVALID_REQUEST")

            # 5. apply_layout: a grid of four in tab one.
            time.sleep(1.6)  # the quiet period after the person's click
            r = await screen({"action": "apply_layout", "preset": "grid", "sessions": [a, b, c, d], "uiId": id1})
            check(r["outcomes"][0]["outcome"] == "applied" and "notApplied" not in r["outcomes"][0],
                  f"grid applied: {r}")
            wait_for(lambda: one.panes() == [[a, c], [b, d]], "tab one: a 2x2 grid")
            check(two.panes() == [[a]], "tab two untouched")
            # Human priority: a draft in gamma's pane; focus on alpha would close it.
            ls = await layouts()
            gamma_pane = next(p["paneId"] for p in ls[id1]["panes"] if p["sessionId"] == c)
            one.go()
            gamma_box = lambda: driver.find_element(
                By.CSS_SELECTOR, f'[data-testid="pane"][data-session="{c}"] [data-testid="composer-input"]')
            box = gamma_box()
            box.click()
            box.send_keys("a draft the person is writing")
            r = await screen({"action": "apply_layout", "preset": "focus", "sessions": [a], "uiId": id1})
            o = r["outcomes"][0]
            check(o["outcome"] == "applied" and [n["paneId"] for n in o["notApplied"]] == [gamma_pane]
                  and "left as it is" in o["notApplied"][0]["reason"],
                  f"the pane in use is said per pane, the rest applied: {o}")
            wait_for(lambda: one.attr("sidebar", "data-hidden") == "true", "the sidebar part applied")
            check(one.panes() == [[a, c], [b, d]], "no pane was moved, closed or replaced")
            one.go()
            check(gamma_box().get_attribute("value") == "a draft the person is writing", "the draft is intact")
            # The person deletes the draft (as keys: a script's clear() is no input of theirs).
            gamma_box().send_keys(Keys.CONTROL, "a")
            gamma_box().send_keys(Keys.BACKSPACE)
            await screen({"action": "sidebar_show", "uiId": id1})
            time.sleep(1.6)

            # Saved layouts: the person saves, renames and deletes them in the Control UI.
            one.go()
            name = driver.find_element(By.CSS_SELECTOR, '[data-testid="layout-name"]')
            name.send_keys("four up")
            driver.find_element(By.CSS_SELECTOR, '[data-testid="layout-save"]').click()
            wait_for(lambda: [e.get_attribute("data-name") for e in
                              driver.find_elements(By.CSS_SELECTOR, '[data-testid="saved-layout"]')] == ["four up"],
                     "the layout is saved by name")
            name = driver.find_element(By.CSS_SELECTOR, '[data-testid="layout-name"]')
            name.clear()
            name.send_keys("quad")
            driver.find_element(By.CSS_SELECTOR, '[data-testid="saved-layout-rename"]').click()
            wait_for(lambda: [e.get_attribute("data-name") for e in
                              driver.find_elements(By.CSS_SELECTOR, '[data-testid="saved-layout"]')] == ["quad"],
                     "renamed")
            time.sleep(1.6)
            r = await screen({"action": "apply_layout", "preset": "pair", "sessions": [d, a], "uiId": id1})
            check(r["outcomes"][0]["outcome"] == "applied", f"pair applied: {r}")
            wait_for(lambda: one.panes() == [[d], [a]], "tab one: delta | alpha")
            r = await screen({"action": "apply_layout", "name": "quad", "uiId": id1})
            check(r["outcomes"][0]["outcome"] == "applied", f"the saved layout applied: {r}")
            wait_for(lambda: one.panes() == [[a, c], [b, d]], "tab one: the saved grid again")
            r = await screen({"action": "apply_layout", "name": "quad", "uiId": id2})
            check(r["outcomes"][0]["outcome"] == "applied", f"saved layouts are the origin's: tab two has it: {r}")
            wait_for(lambda: two.panes() == [[a, c], [b, d]], "tab two: the saved grid")
            one.go()
            driver.find_element(By.CSS_SELECTOR, '[data-testid="saved-layout-delete"]').click()
            wait_for(lambda: not driver.find_elements(By.CSS_SELECTOR, '[data-testid="saved-layout"]'), "deleted")
            r = await screen({"action": "apply_layout", "name": "quad", "uiId": id1})
            check(r["outcomes"][0]["outcome"] == "ignored", "a deleted layout is gone")

            # 6. annotate: on tab one only, expiring, never over a composer or approval.
            ls = await layouts()
            first = ls[id1]["panes"][0]["paneId"]
            r = await screen({"action": "annotate", "uiId": id1, "ttlSeconds": 3, "annotations": [
                {"text": "look here", "paneId": first},
                {"text": "this one", "arrow": True, "sessionKey": b},
                {"text": "terminal", "panel": "terminal"}]})
            o = r["outcomes"][0]
            check(o["outcome"] == "applied" and len(o["notApplied"]) == 1
                  and "terminal panel is not shown" in o["notApplied"][0]["reason"],
                  f"a hidden panel is said, the rest placed: {o}")
            notes = wait_for(lambda: (lambda n: n if len(n) == 2 else None)(one.annotations()), "two annotations show")
            check({n["host"] for n in notes} == {first, b} and all(n["visible"] and not n["covers"] for n in notes),
                  f"on the pane and the session row, covering no composer or approval: {notes}")
            check(two.annotations() == [], "tab two shows none")
            one.go()
            wait_for(lambda: one.annotations() == [], "they expire after ttlSeconds", timeout=10)
            await screen({"action": "annotate", "uiId": id1, "ttlSeconds": 120,
                          "annotations": [{"text": "click me away", "paneId": first}]})
            wait_for(lambda: len(one.annotations()) == 1, "a long-lived annotation shows")
            ActionChains(driver).move_to_element(
                driver.find_element(By.CSS_SELECTOR, '[data-testid="pane-area"]')).click().perform()
            wait_for(lambda: one.annotations() == [], "the person's first click removes it")
            await screen({"action": "annotate", "ttlSeconds": 120,
                          "annotations": [{"text": "everyone", "paneId": first}]})
            wait_for(lambda: len(one.annotations()) == 1 and len(two.annotations()) == 1, "broadcast: both tabs")
            r = await screen({"action": "annotations_clear"})
            check([o["outcome"] for o in r["outcomes"]] == ["applied", "applied"], "annotations_clear applied")
            wait_for(lambda: one.annotations() == [] and two.annotations() == [], "annotations_clear removes them")
            await screen({"action": "annotate", "annotations": [{"text": "x" * 61, "paneId": first}]},
                         expect_error="INVALID_REQUEST")
            await screen({"action": "annotate", "ttlSeconds": 2, "annotations": [{"text": "x", "paneId": first}]},
                         expect_error="INVALID_REQUEST")
            await screen({"action": "annotate", "annotations": [{"text": "x", "paneId": first}] * 5},
                         expect_error="INVALID_REQUEST")

            os.makedirs(artifacts, exist_ok=True)
            one.go()
            driver.save_screenshot(os.path.join(artifacts, "screen-layout-grid.png"))
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    binary, artifacts = sys.argv[1], sys.argv[2]
    run_checks(run, binary, artifacts)
    print("all screen layout browser checks passed", flush=True)


if __name__ == "__main__":
    main()
