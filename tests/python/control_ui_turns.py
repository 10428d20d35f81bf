"""Agent turns in the Control UI (headless Chromium against a real `ax-code serve` whose
default agent is the mock ACP agent, scripted by its prompt; see crates/mock-agent).

1. "+ New" asks for the agent (GET /agent, the default first); the session gets the one picked
   and its pane says which.
2. One full turn renders every part kind: agent text as Markdown (through POST /markdown, built
   as elements), a folded thought, the plan as a checklist, tool-call cards (a run, a diff
   edit with coloured lines), the permission's line; a usage report is no transcript line.
3. Hostile Markdown and HTML in agent text, in a file the agent reads back, in tool titles and
   in a diff stay text: no <img>, <script>, <iframe> or javascript: link is made, and no
   script runs (window.__pwned stays unset).
4. The approval card shows the whole request (a command of two lines, with its newline), the
   agent's options by their own names and what "always" covers; "Allow" answers it.
5. Progress: a spinner and the elapsed time while the turn runs; its duration after.
6. Abort stops a running turn.
7. Modes: the mode switch of the session's agent. An option that asks for feedback (Codex's
   "No, and tell Codex what to do differently") is sent, then the composer takes the focus.
8. A reload in the middle of a turn: every later chunk shows exactly once.
9. needs_auth: the pane says what to do.

Screenshots: ARTIFACTS/control-ui-agent-turn.png, control-ui-agent-approval.png.

Usage: python control_ui_turns.py AX_CODE_BINARY MOCK_AGENT_BINARY ARTIFACTS_DIR
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time

from selenium.webdriver.common.by import By

from axtest import Backend, browser, check, click_when_found, close_browser, mcp_session, run_checks, wait_for

PWN = "window.__pwned"

NOTES = """intro line

## Notes heading

- first *item*
- [x] a done task

```sh
echo fenced
```

<script>window.__pwned = 'notes-script'</script>

<iframe src="javascript:window.__pwned='iframe'"></iframe>

A [js link](javascript:window.__pwned='link') and ![img](javascript:x) and <img src=x onerror="window.__pwned='notes-img'">.
"""

TURN = "\n".join([
    "thought I should read the notes first <img src=x onerror=\"window.__pwned='thought'\">",
    "plan Read the notes|Edit the file|Report back",
    "text Here is **bold**, *em*, `code`, a [safe link](https://example.com/x) and "
    "[bad](javascript:window.__pwned='text-link') <img src=x onerror=\"window.__pwned='text-img'\"> "
    "<script>window.__pwned='text-script'</script> ![pic](http://127.0.0.1:9/p.png)",
    "read notes.md",
    "tool t1 ls -la <b id=\"tool-bold\">bold</b>",
    "tool-done t1",
    "diff src/app.txt old-line fresh <img src=x onerror=\"window.__pwned='diff'\"> line",
    "usage",
    "permission p1 claude",
    "text All **done**.",
])

CONFIG = """default_agent = "mock"

[agents.mock]
command = {exe}
env = {{ AX_TEST_BE_MOCK_AGENT = "1" }}

[agents.mockauth]
command = {exe}
env = {{ AX_TEST_BE_MOCK_AGENT = "1", AX_MOCK_REQUIRE_AUTH = "1" }}
"""


class Page:
    def __init__(self, driver):
        self.driver = driver

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def pane(self):
        return self.driver.find_element(By.CSS_SELECTOR, '[data-testid="pane"][data-active="true"]')

    def within(self, css):
        return self.pane().find_elements(By.CSS_SELECTOR, css)

    def send(self, text):
        """Types `text` into the active pane's composer (newlines kept) and sends it. One script
        finds the composer, fills it and submits, so a redraw of the pane between those steps
        (a transcript that finished loading) cannot leave a stale element in the way."""
        sent = self.js("""
            const pane = document.querySelector('[data-testid="pane"][data-active="true"]');
            const box = pane?.querySelector('[data-testid="composer-input"]');
            const submit = pane?.querySelector('[data-testid="composer"] button[type="submit"]');
            if (!box || !submit) return false;
            box.value = arguments[0];
            box.dispatchEvent(new Event('input', {bubbles: true}));
            submit.click();
            return true;""", text)
        check(sent, "the active pane has a composer to send with")

    def armed(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="approvals"]').get_attribute("data-armed") == "true"

    def transcript_text(self):
        return self.pane().find_element(By.CSS_SELECTOR, '[data-testid="transcript"]').text


def hostile_elements(page):
    """Elements agent text must never create, anywhere in the page, and the pwn marker."""
    return page.js("""
        const app = document.getElementById('app');
        return {
          img: app.querySelectorAll('img').length,
          script: app.querySelectorAll('script').length,
          iframe: document.querySelectorAll('.transcript iframe, .approvals iframe').length,
          jsLinks: [...document.querySelectorAll('a')].filter((a) => !/^(https?|mailto):/i.test(a.href)).length,
          bold: document.querySelectorAll('#tool-bold, .transcript b').length,
          pwned: window.__pwned ?? null,
        };
    """)


async def screen_navigate(binary, backend, session_id):
    """The `screen` tool's navigate, as an agent sends it (ax-code mcp screen, the MCP SDK)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", backend.project),
        "AX_CODE_SERVER_PASSWORD": backend.token,
        "AX_CODE_DATA_DIR": backend.data,
    }
    async with mcp_session(binary, ["mcp", "screen", "--url", backend.url], env) as mcp:
        await mcp.initialize()
        result = await mcp.call_tool("screen", {"action": "navigate", "sessionKey": session_id})
        content = result.structured_content
        check(content.get("ok") is True and len(content["outcomes"]) == 1, f"delivered to the one Control UI: {content}")
        return content["outcomes"][0]


def session_of(backend, sid):
    return backend.api("GET", f"/session/{sid}")


def run(binary, mock, artifacts):
    root = tempfile.mkdtemp(prefix="axturns")
    config = os.path.join(root, "config")
    os.makedirs(os.path.join(config, "ax-code"))
    with open(os.path.join(config, "ax-code", "config.toml"), "w") as f:
        f.write(CONFIG.format(exe=json.dumps(mock)))
    backend = Backend(binary, root, extra_env={"XDG_CONFIG_HOME": config})
    with open(os.path.join(backend.project, "notes.md"), "w") as f:
        f.write(NOTES)
    driver = None
    try:
        driver = browser(os.path.join(root, "profile"), "--window-size=1400,1000", console_log=True)
        page = Page(driver)
        driver.get(backend.sign_in_link())
        wait_for(lambda: page.js("return document.getElementById('app').hidden === false"), "signed in")

        # ---- 1. the agent of a new session ----
        listed = backend.api("GET", "/agent")
        names = [a["name"] for a in listed["agents"]]
        check(listed["default"] == "mock" and {"mock", "shell", "mockauth"} <= set(names),
              f"GET /agent lists the configured agents, mock the default: {listed}")
        driver.find_element(By.CSS_SELECTOR, '[data-testid="new-session"]').click()
        options = wait_for(lambda: [b for b in driver.find_elements(By.CSS_SELECTOR, '[data-testid="agent-option"]') if b.is_displayed()],
                           "the agent picker opens")
        shown = [b.get_attribute("data-agent") for b in options]
        check(shown[0] == "mock" and sorted(shown) == sorted(names), f"the default agent comes first: {shown}")
        check("default" in options[0].text, f"and says it is the default: {options[0].text!r}")
        # Escape closes it without creating anything.
        before = len(backend.api("GET", "/session"))
        driver.switch_to.active_element.send_keys("\ue00c")
        wait_for(lambda: not driver.find_element(By.CSS_SELECTOR, '[data-testid="agent-picker"]').is_displayed(),
                 "Escape closes the picker")
        check(len(backend.api("GET", "/session")) == before, "closing the picker creates no session")
        driver.find_element(By.CSS_SELECTOR, '[data-testid="new-session"]').click()
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-agent="shell"]').is_displayed(), "the picker again")
        driver.find_element(By.CSS_SELECTOR, '[data-agent="shell"]').click()
        shell_sid = wait_for(lambda: page.pane().get_attribute("data-session"), "a session opens in the pane")
        check(session_of(backend, shell_sid)["agent"] == "shell", "the session got the agent picked (shell)")
        wait_for(lambda: page.within('[data-testid="session-agent"]')[0].text == "shell", "the pane names its agent")
        driver.find_element(By.CSS_SELECTOR, '[data-testid="new-session"]').click()
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-agent="mock"]').is_displayed(), "the picker again")
        driver.find_element(By.CSS_SELECTOR, '[data-agent="mock"]').click()
        sid = wait_for(lambda: (page.pane().get_attribute("data-session") or None) if page.pane().get_attribute("data-session") != shell_sid else None,
                       "a second session opens")
        check(session_of(backend, sid)["agent"] == "mock", "this one runs the mock agent")
        wait_for(lambda: page.within('[data-testid="session-agent"]')[0].text == "mock", "the pane says so")
        placeholder = page.within('[data-testid="composer-input"]')[0].get_attribute("placeholder")
        check(placeholder.startswith("Ask mock…"), f"the composer names the agent: {placeholder!r}")

        # While the picker is open, an agent's layout command does not move the pane it will fill.
        driver.find_element(By.CSS_SELECTOR, '[data-testid="new-session"]').click()
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-agent="mock"]').is_displayed(), "the picker is open")
        outcome = asyncio.run(screen_navigate(binary, backend, shell_sid))
        check(outcome.get("outcome") == "ignored" and "choosing the agent" in outcome.get("reason", ""),
              f"an agent's navigate is ignored while the person picks an agent: {outcome}")
        driver.switch_to.active_element.send_keys("\ue00c")
        wait_for(lambda: not driver.find_element(By.CSS_SELECTOR, '[data-testid="agent-picker"]').is_displayed(), "closed again")
        check(page.pane().get_attribute("data-session") == sid, "the pane still shows the new session")

        # ---- 2.-5. a full turn ----
        page.send(TURN)
        wait_for(lambda: page.within('[data-testid="busy-spinner"]') and page.within('[data-testid="elapsed"]'),
                 "a spinner and the elapsed time while the turn runs")
        wait_for(lambda: page.within('[data-testid="abort"]'), "Stop is offered while it runs")
        card = wait_for(lambda: page.within('[data-testid="approval"]'), "the approval card appears")[0]
        command = card.find_element(By.CSS_SELECTOR, '[data-testid="approval-command"]')
        check(page.js("return arguments[0].textContent", command) == "run step p1\nwith a second line",
              f"the whole command, newline kept: {command.text!r}")
        check(command.text.split("\n") == ["run step p1", "with a second line"], "shown on two lines")
        buttons = {b.get_attribute("data-testid"): b.text for b in card.find_elements(By.CSS_SELECTOR, "button")}
        check(buttons == {"approve-allow_once": "Allow", "approve-allow_always": "Always Allow", "approve-reject_once": "Reject"},
              f"the agent's options by their own names: {buttons}")
        always = [e.text for e in card.find_elements(By.CSS_SELECTOR, '[data-testid="approval-always"]')]
        check(len(always) == 1 and "“Always Allow”" in always[0] and "rest of this session" in always[0] and "Revoke" in always[0],
              f"what “always” covers, in words: {always}")
        wait_for(lambda: page.within('[data-testid="plan"]') and page.within('[data-testid="tool-call"]'),
                 "the turn so far streams in above the card")
        wait_for(page.armed, "the approval takes clicks")
        driver.save_screenshot(os.path.join(artifacts, "control-ui-agent-approval.png"))
        card.find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]').click()
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "the turn ends after the answer", timeout=20)
        wait_for(lambda: "All done." in page.transcript_text(), "the last text arrives")
        wait_for(lambda: not page.within('[data-testid="approval"]'), "the card is gone")
        wait_for(lambda: not page.within('[data-testid="busy-spinner"]') and not page.within('[data-testid="abort"]'),
                 "no spinner and no Stop once idle")
        duration = wait_for(lambda: page.within('[data-testid="turn-duration"]'), "the turn shows how long it took")[0]
        live_took = duration.text
        check(live_took.startswith("· took ") and " s" in live_took and " · ended " in live_took,
              f"as seconds, with the stored end the backend sent live: {live_took!r}")

        # Every part kind.
        def rendered():
            return page.js("""
                const pane = document.querySelector('[data-testid="pane"][data-active="true"]');
                const msg = [...pane.querySelectorAll('[data-testid="message"]')].pop();
                const texts = [...msg.querySelectorAll('[data-testid="agent-text"]')];
                return {
                  full: texts.every((t) => t.dataset.rendered === 'full'),
                  strong: texts.some((t) => t.querySelector('strong')?.textContent === 'bold'),
                  em: texts.some((t) => t.querySelector('em')?.textContent === 'em'),
                  code: texts.some((t) => t.querySelector('code.md-code')?.textContent === 'code'),
                  link: [...msg.querySelectorAll('a')].map((a) => [a.getAttribute('href'), a.rel, a.target, a.textContent]),
                  heading: [...msg.querySelectorAll('.md-h')].map((e) => e.textContent),
                  items: [...msg.querySelectorAll('.md li')].map((e) => e.textContent),
                  pre: [...msg.querySelectorAll('.md-pre')].map((e) => e.textContent),
                  thought: [...msg.querySelectorAll('[data-testid="thought"]')].map((e) => [e.open, e.textContent]),
                  plan: [...msg.querySelectorAll('[data-testid="plan-entry"]')].map((e) => [e.dataset.status, e.textContent]),
                  tools: [...msg.querySelectorAll('[data-testid="tool-call"]')].map((e) => ({
                    id: e.dataset.toolCallId, kind: e.dataset.kind, status: e.dataset.status, open: e.open,
                    title: e.querySelector('.tool-title').textContent, mark: e.querySelector('.mark')?.textContent,
                  })),
                  diffAdd: [...msg.querySelectorAll('.diff-add')].map((e) => e.textContent),
                  diffDel: [...msg.querySelectorAll('.diff-del')].map((e) => e.textContent),
                  notices: [...msg.querySelectorAll('[data-testid="notice"]')].map((e) => e.dataset.kind),
                  permission: [...msg.querySelectorAll('[data-testid="permission"]')].map((e) => [e.dataset.state, e.textContent]),
                  toolInput: [...msg.querySelectorAll('[data-testid="tool-input"]')].map((e) => e.textContent),
                };
            """)
        r = wait_for(lambda: (lambda v: v if v["full"] and v["heading"] else None)(rendered()),
                     "every agent text part is rendered as Markdown")
        check(r["strong"] and r["em"] and r["code"], f"bold, emphasis and code are elements: {r}")
        check(["https://example.com/x", "noopener noreferrer", "_blank", "safe link"] in r["link"],
              f"the safe link is a link, opening apart: {r['link']}")
        check(all(h and h.startswith(("http:", "https:", "mailto:")) for h, *_ in r["link"]),
              f"no other link has a target: {r['link']}")
        check(r["heading"] == ["Notes heading"], f"the heading of the file read back: {r['heading']}")
        check("first item" in r["items"] and any("a done task" in i for i in r["items"]), f"its list: {r['items']}")
        check(any("echo fenced" in p for p in r["pre"]), f"its fenced code block: {r['pre']}")
        check(any("<script>window.__pwned = 'notes-script'</script>" in p for p in r["pre"]),
              f"its raw HTML block is shown as text: {r['pre']}")
        check(len(r["thought"]) == 1 and r["thought"][0][0] is False and "read the notes first" in r["thought"][0][1],
              f"the thought, folded: {r['thought']}")
        check([s for s, _ in r["plan"]] == ["in_progress", "pending", "pending"]
              and [t[1:] for _, t in r["plan"]] == ["Read the notes", "Edit the file", "Report back"],
              f"the plan as a checklist: {r['plan']}")
        tools = {t["id"]: t for t in r["tools"]}
        check(tools["t1"]["status"] == "completed" and tools["t1"]["mark"] == "✓" and tools["t1"]["open"] is False
              and tools["t1"]["title"] == 'ls -la <b id="tool-bold">bold</b>',
              f"the run as a folded card, done, its title as text: {tools.get('t1')}")
        check(tools["edit-1"]["kind"] == "edit" and tools["edit-1"]["open"] is True, f"the edit open on its diff: {tools.get('edit-1')}")
        check(tools["p1"]["status"] == "completed", f"the approved call is done: {tools.get('p1')}")
        check(r["diffDel"] == ["-old-line\n"] and r["diffAdd"] == ["+fresh <img src=x onerror=\"window.__pwned='diff'\"> line\n"],
              f"a coloured unified diff, its lines as text: {r['diffDel']} {r['diffAdd']}")
        meter = page.js("return [...document.querySelectorAll('[data-testid=usage-meter]')].map(e => e.textContent)")
        check("usage" not in r["notices"] and "ctx 100/1k 10%" in meter,
              f"the usage report is no transcript line; the header shows it as a meter: {r['notices']} {meter}")
        check(len(r["permission"]) == 1 and r["permission"][0][0] == "selected" and "“Allow”" in r["permission"][0][1],
              f"the permission line with its answer: {r['permission']}")
        text = page.transcript_text()
        for literal in ["<img src=x onerror=\"window.__pwned='text-img'\">", "<script>window.__pwned='text-script'</script>",
                        "<img src=x onerror=\"window.__pwned='notes-img'\">", "[image: pic]", "bad"]:
            check(literal in text, f"shown as text: {literal}")
        # Open the run's card: its input is the whole command, as text.
        driver.find_element(By.CSS_SELECTOR, '[data-tool-call-id="t1"] summary').click()
        wait_for(lambda: page.js("return document.querySelector('[data-tool-call-id=\"t1\"]').open"), "the card opens")
        check('ls -la <b id="tool-bold">bold</b>' in rendered()["toolInput"], "its command, as text")
        bad = hostile_elements(page)
        check(bad == {"img": 0, "script": 0, "iframe": 0, "jsLinks": 0, "bold": 0, "pwned": None},
              f"no element made from agent text and no script ran: {bad}")
        # The whole turn on one screenshot: a viewport as tall as the transcript needs.
        tall = page.js("const t = document.querySelector('[data-testid=pane][data-active=true] [data-testid=transcript]');"
                       "return Math.min(4000, t.scrollHeight + innerHeight - t.clientHeight + 20)")
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1400, "height": tall, "deviceScaleFactor": 1, "mobile": False})
        wait_for(lambda: page.js("return innerHeight") == tall, f"the viewport is {tall} px tall")
        page.js("document.querySelector('[data-testid=pane][data-active=true] [data-testid=transcript]').scrollTop = 0")
        driver.save_screenshot(os.path.join(artifacts, "control-ui-agent-turn.png"))
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        # The same transcript after a reload (folded by the backend) renders the same.
        before = rendered()
        driver.refresh()
        wait_for(lambda: (lambda v: v if v["full"] and v["heading"] else None)(rendered()), "after a reload, rendered again")
        after = rendered()
        # The duration after a reload comes from the stored end of the turn (`ended`).
        took = [d.text for d in page.within('[data-testid="turn-duration"]')]
        check(live_took in took,
              f"after a reload, the turn shows the same duration and end as live ({live_took!r}): {took}")
        for k in ["strong", "link", "heading", "items", "plan", "diffAdd", "diffDel", "notices", "permission"]:
            check(after[k] == before[k], f"the reloaded transcript has the same {k}")

        # The unified diff in the page: hunks with three lines of context, numbered like diff -u.
        hunks = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            import('/assets/diff.js').then((m) => done({
              two: m.unifiedLines('a\\nb\\nc\\nd\\ne\\nf\\ng\\nh\\ni\\nj\\n', 'a\\nB\\nc\\nd\\ne\\nf\\ng\\nh\\ni\\nJ\\n'),
              created: m.unifiedLines('', 'x\\ny\\n'),
            }), (e) => done({ error: String(e) }));
        """)
        check(hunks["two"] == [["@", "@@ -1,5 +1,5 @@"], [" ", "a"], ["-", "b"], ["+", "B"], [" ", "c"], [" ", "d"], [" ", "e"],
                               ["@", "@@ -7,4 +7,4 @@"], [" ", "g"], [" ", "h"], [" ", "i"], ["-", "j"], ["+", "J"]],
              f"two hunks with their context: {hunks['two']}")
        check(hunks["created"] == [["@", "@@ -0,0 +1,2 @@"], ["+", "x"], ["+", "y"]], f"a new file: {hunks['created']}")

        # ---- 6. abort ----
        page.send("text working on it\nwait-cancel")
        wait_for(lambda: "working on it" in page.transcript_text(), "the next turn runs")
        stop = wait_for(lambda: page.within('[data-testid="abort"]'), "Stop is shown")[0]
        stop.click()
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "abort ends the turn", timeout=25)
        wait_for(lambda: not page.within('[data-testid="abort"]'), "and Stop goes away")

        # ---- 7. modes ----
        select = wait_for(lambda: page.within('[data-testid="mode-select"]'), "the agent's modes are offered")[0]
        check(select.get_attribute("value") == "default", "it starts in the mode that asks")
        page.js("arguments[0].value = 'acceptEdits'; arguments[0].dispatchEvent(new Event('change'));", select)
        wait_for(lambda: session_of(backend, sid)["agentState"]["modes"]["current"] == "acceptEdits",
                 "switching the mode reaches the agent")
        page.send("mode")
        wait_for(lambda: "mode: acceptEdits" in page.transcript_text(), "the agent works in the new mode")
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "that turn ends")

        # ---- 7b. a standing "always", shown in the header and revoked there ----
        page.send("permission p2 claude\ntext after-p2")
        card = wait_for(lambda: page.within('[data-testid="approval"]'), "another approval")[0]
        wait_for(page.armed, "it takes clicks")
        card.find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_always"]').click()
        wait_for(lambda: "after-p2" in page.transcript_text() and session_of(backend, sid)["status"] == "idle",
                 "“Always Allow” answered it")
        standing = wait_for(lambda: page.within('[data-testid="standing"]'), "the header shows the standing answer")[0]
        grants = session_of(backend, sid).get("standing", [])
        listed = page.js("return [...arguments[0].querySelectorAll('.standing-list li > span:first-child')].map((e) => e.textContent)", standing)
        check(len(grants) == 1 and listed == [grants[0]["title"]] and standing.text.startswith("Always allowed: “Always Allow”"),
              f"what it covers, as the backend says: {listed} {grants}")
        standing.find_element(By.CSS_SELECTOR, '[data-testid="revoke-standing"]').click()
        wait_for(lambda: not session_of(backend, sid).get("standing"), "Revoke reaches the backend")
        wait_for(lambda: not page.within('[data-testid="standing"]'), "and the header no longer shows it")

        # ---- 7c. an option that asks for feedback (Codex's): sent, then the composer takes it ----
        page.send("permission p3 codex\ntext after-p3")
        card = wait_for(lambda: page.within('[data-testid="approval"]'), "a Codex-style approval")[0]
        labels = [b.text for b in card.find_elements(By.CSS_SELECTOR, ".approval-actions button")]
        check(labels == ["Yes", "Yes, for this session", "No, and tell Codex what to do differently"],
              f"the agent's own option names: {labels}")
        wait_for(page.armed, "it takes clicks")
        card.find_element(By.CSS_SELECTOR, '[data-feedback="true"]').click()
        wait_for(lambda: "permission p3: abort" in page.transcript_text(), "that option was sent")
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "and ended the turn, as Codex does")
        focused = wait_for(lambda: page.js("const a = document.activeElement;"
                                           "return a && a.dataset.testid === 'composer-input' && a.dataset.session === arguments[0]"
                                           " ? a.placeholder : null", sid),
                           "the composer takes the focus for the feedback")
        check("what to do differently" in focused, f"and asks for it: {focused!r}")
        reply = page.js("const m = [...document.querySelectorAll('[data-testid=pane][data-active=true] [data-testid=message].role-assistant')].pop();"
                        "return m.textContent")
        check("permission p3: abort" in reply and "after-p3" not in reply, f"nothing of the turn ran after it: {reply[-80:]!r}")

        # ---- 8. a reload in the middle of a turn ----
        page.send("text alpha-\nsleep 1500\ntext beta-\nsleep 1500\ntext gamma-\nsleep 300\ntext delta-")
        wait_for(lambda: "alpha-" in page.transcript_text(), "a slow turn starts")
        driver.refresh()
        wait_for(lambda: "alpha-beta-gamma-delta-" in page.transcript_text(), "after the reload, the turn goes on", timeout=20)
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "and ends")
        last = page.js("const m = [...document.querySelectorAll('[data-testid=\"pane\"][data-active=\"true\"] [data-testid=\"message\"]')].pop();"
                       "return m.querySelector('[data-testid=\"agent-text\"]').textContent")
        check(last == "alpha-beta-gamma-delta-", f"each chunk shows exactly once: {last!r}")

        # ---- 8a. many chunks: each once, in order ----
        page.send("chunks 400")
        # (Once rendered as Markdown, the paragraph's trailing space is gone.)
        expected = "".join(f"c{i} " for i in range(400))
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "400 chunks streamed", timeout=20)
        wait_for(lambda: page.js("const m = [...document.querySelectorAll('[data-testid=pane][data-active=true] [data-testid=message]')].pop();"
                                 "return m.querySelector('[data-testid=agent-text]').textContent").rstrip() == expected.rstrip(),
                 "the page folded them into one text part, each chunk once, in order")

        # ---- 8a'. a terminal's output streams into its card, as text ----
        page.send("term 1000 printf 'tick-1 \\033[31mred<b>x</b>\\033[0m\\n'; sleep 1.5; printf 'tick-2\\n'; exit 3")
        term_text = ("const o = [...document.querySelectorAll('[data-testid=pane][data-active=true] [data-testid=tool-terminal-output]')].pop();"
                     "return o ? o.textContent : null")
        wait_for(lambda: "tick-1" in (page.js(term_text) or ""), "the terminal's first output shows in its card")
        check(session_of(backend, sid)["status"] == "busy" and "tick-2" not in page.js(term_text),
              "while the command still runs (live, not at the end)")
        wait_for(lambda: session_of(backend, sid)["status"] == "idle", "the terminal turn ends", timeout=20)
        wait_for(lambda: "tick-2" in (page.js(term_text) or ""), "its later output follows")
        live_term = page.js(term_text)
        check(live_term == "tick-1 red<b>x</b>\ntick-2\n", f"colours stripped, markup kept as text: {live_term!r}")
        check(page.js("return [...document.querySelectorAll('[data-testid=tool-terminal-output] b')].length") == 0, "no element from output")
        state = page.js("return [...document.querySelectorAll('[data-testid=pane][data-active=true] [data-testid=tool-terminal]')].pop().querySelector('.tool-label').textContent")
        check(state.endswith("exit 3"), f"the card shows the exit: {state!r}")
        driver.refresh()
        wait_for(lambda: page.js(term_text) == live_term, "after a reload the card shows the same output")

        # ---- 8b. the shell agent: a command of several lines, whole; its "always" ----
        click_when_found(driver, f'[data-testid="session-item"][data-session="{shell_sid}"]', "the shell session clicked in the sidebar")
        wait_for(lambda: page.pane().get_attribute("data-session") == shell_sid, "the shell session is shown")
        page.send("echo one > one.txt\necho two; touch two.txt")
        card = wait_for(lambda: page.within('[data-testid="approval"]'), "the shell agent asks")[0]
        shown = page.js("return arguments[0].querySelector('[data-testid=\"approval-command\"]').textContent", card)
        check(shown == "echo one > one.txt\necho two; touch two.txt", f"the whole command, both lines: {shown!r}")
        always = card.find_element(By.CSS_SELECTOR, '[data-testid="approval-always"]').text
        check("every later command" in always and "revoke" in always, f"what “Always allow” covers: {always!r}")
        wait_for(page.armed, "it takes clicks")
        card.find_element(By.CSS_SELECTOR, '[data-testid="approve-allow_always"]').click()
        wait_for(lambda: os.path.exists(os.path.join(backend.project, "two.txt")), "both lines ran")
        run_js = ("const r = [...document.querySelectorAll('[data-testid=pane][data-active=true] [data-testid=tool-call][data-run=true]')].pop();"
                  "return r ? [[...r.querySelectorAll('[data-testid=run-output]')].map((e) => e.textContent),"
                  " [...r.querySelectorAll('[data-testid=run-exit]')].map((e) => e.textContent)] : null")
        wait_for(lambda: page.js(run_js) == [["two\n"], ["exit 0"]], "the command shows as its run: its output, then exit 0")
        wait_for(lambda: page.within('[data-testid="standing"]'), "the header shows shell's standing “always”")
        page.within('[data-testid="revoke-standing"]')[0].click()
        wait_for(lambda: not session_of(backend, shell_sid).get("standing"), "revoked")
        page.send("echo three")
        wait_for(lambda: page.within('[data-testid="approval"]'), "the next command asks again")
        wait_for(page.armed, "it takes clicks")
        page.within('[data-testid="approve-reject_once"]')[0].click()
        wait_for(lambda: session_of(backend, shell_sid)["status"] == "idle", "rejected: nothing runs")

        # ---- 9. needs_auth ----
        auth = backend.api("POST", "/session", {"agent": "mockauth", "title": "needs auth"})["id"]
        backend.api("POST", f"/session/{auth}/prompt", {"parts": [{"type": "text", "text": "text hi"}]})
        wait_for(lambda: session_of(backend, auth)["status"] == "needs_auth", "the agent needs sign-in")
        click_when_found(driver, f'[data-testid="session-item"][data-session="{auth}"]', "the needs-auth session clicked in the sidebar")
        banner = wait_for(lambda: page.within('[data-testid="needs-auth"]'), "the pane says the agent needs sign-in")[0]
        check("config.toml" in banner.text and "send the prompt again" in banner.text, f"and what to do: {banner.text!r}")
        check(hostile_elements(page)["pwned"] is None, "still no script ran")
    finally:
        close_browser(driver)
        backend.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    run_checks(run, sys.argv[1], sys.argv[2], sys.argv[3])
    print("all Control UI agent-turn checks passed", flush=True)


if __name__ == "__main__":
    main()
