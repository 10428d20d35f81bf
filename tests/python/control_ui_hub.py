"""The Control UI served by a hub over two joined machines (docs/hub.md §4).

Run by crates/cli/tests/hub_browser.rs, which starts a real nats-server:
    python control_ui_hub.py BINARY NATS_URL MOCK_AGENT
In headless Chromium with its own profile:
1. Two `ax-code serve --join NATS_URL --name ...` (own data directories and projects; machine 2
   also configures the mock ACP agent, as `mock`, not its default), each with a session; `ax-code hub --nats NATS_URL --port 0` prints a one-time `#code=` link, never the
   credential. Opening it signs the tab in to the hub (the page checked the hub's proof).
2. Both machines are in the sidebar, online, each with its project and its own session under
   it.
3. The session of machine 2 opened; a prompt sent from the hub's page (the shell agent asks
   first); its approval answered from the hub's page; the command's output streams into the
   transcript.
3b. The operator terminal on machine 2 from the hub's page (docs/hub.md §4): the connection
   badge goes live (the page uses beta's gateway on the hub, GET /machine/beta/gateway); the
   panel opened on beta's session says it runs on beta; a command typed there runs in beta's
   project and its computed output is drawn; after a reload the tab attaches to the same
   terminal, its scrollback replayed, and typing goes on; the panel docked right: the shell's
   rows follow (`stty size`); machine 1 picked in the panel runs a
   shell there (its project), and machine 2 picked again shows machine 2's terminal again.
4. A restarted machine: a long command started and approved on machine 2 (meanwhile a prompt
   typed on the page waits in machine 2's queue, shown above the composer, and is cancelled
   from the page, through the hub's queue routes), machine 2 killed
   (SIGKILL) mid-turn and started again on its data directory: without a reload the page shows
   the turn ended, interrupted by the restart (the machine's new boot, docs/hub.md §4); beta's
   terminal ends on the page with the hub's line.
5. Shared ui.commands (machine 1 runs with --share-ui-commands): the page holds a Control UI
   connection to each online machine's gateway on the hub (GET /machine/{m}/gateway, cap
   ui-commands). An agent's waited command sent through the hub's POST
   /machine/alpha/screen/command comes back on alpha's, and the page applies it as a
   gateway's and acknowledges it there, so the waited answer lists the page's outcome:
   `ignored` with the page's reason while the pane it would move shows machine 2's session,
   `applied` with the page's revision (a split) once the pane shows machine 1's; a stale
   expectedRevision `ignored` with its reason and the current revision, and that revision
   expected: `applied`.
6. New session with a machine picker (both online), then an agent picker with the chosen
   machine's own agents (GET /machine/beta/agent: beta's `mock` offered): made on the machine
   chosen with the agent chosen; its agent's text rendered as Markdown (the hub's POST
   /markdown: bold an element, only the safe link a link, raw HTML as text, nothing run); an
   image pasted into its composer reaches the agent, and the transcript's thumbnail loads
   through the hub (GET /machine/beta/session/{id}/message/{mid}/image/0); renamed and
   deleted from the sidebar through the hub's PATCH / DELETE routes.
7. Machine 2 stopped: shown offline with when it was last seen; its session read-only.
8. The page reloaded while machine 2 is away: its session shows the transcript the hub kept
   (GET /machine/beta/session/{id}/message as last seen), read-only, both turns in it.
"""

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import secrets
import time
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from control_ui_attach import PASTE, PNG
from terminal_browser import Page as TerminalPage
from axtest import Backend, browser, check, click_when_found, close_browser, run_checks, stop_process, wait_for


class Hub:
    """`ax-code hub --nats URL --port 0` with AX_CODE_HUB_PASSWORD; its stderr in `root/hub.log`."""

    def __init__(self, binary, root, nats):
        self.token = secrets.token_urlsafe(32)
        env = dict(os.environ, AX_CODE_HUB_PASSWORD=self.token, AX_CODE_DATA_DIR=os.path.join(root, "hubdata"))
        self.log = open(os.path.join(root, "hub.log"), "wb")
        self.proc = subprocess.Popen([binary, "hub", "--nats", nats, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, env=env)
        self.url = self.link = None
        for _ in range(10):
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1).rstrip("/")
            m = re.search(r"Control UI: (http://\S+)", line)
            if m:
                self.link = m.group(1)
                break
        check(self.url is not None and self.link is not None, f"ax-code hub prints its URL and a link ({self.url}, {self.link})")

    def stop(self):
        stop_process(self.proc, self.log)

    def request(self, method, path, body=None):
        """One request to the hub's API with its credential: (status, decoded body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.status, json.loads(res.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


def machine_row(driver, name):
    rows = driver.find_elements(By.CSS_SELECTOR, f'[data-testid="machine-row"][data-machine="{name}"]')
    return rows[0] if rows else None


def machine_project(driver, name):
    """(text, title) of the project line under machine `name` in the sidebar, or None."""
    return driver.execute_script("""
        const el = document.querySelector(`[data-testid="machine-row"][data-machine="${arguments[0]}"] [data-testid="machine-project"]`);
        return el && el.offsetParent !== null ? [el.textContent, el.title] : null;""", name)


def online(driver, name, state):
    row = machine_row(driver, name)
    return row is not None and row.get_attribute("data-online") == state


def rows_after(driver, name):
    """The session ids listed under machine `name` (up to the next machine heading)."""
    return driver.execute_script("""
        const out = []; let inside = false;
        for (const li of document.querySelectorAll('#session-list > li')) {
          if (li.dataset.testid === 'machine-row') { inside = li.dataset.machine === arguments[0]; continue; }
          const b = li.querySelector('[data-session]');
          if (inside && b) out.push(b.dataset.session);
        }
        return out;""", name)


def approve_on_page(driver, backend, what):
    """Clicks "Allow once" on the page once its card takes clicks (a card that just appeared or
    moved ignores them), until the machine's pending approval is answered."""
    pending = wait_for(lambda: backend.api("GET", "/permission"), "the machine asks for an approval", timeout=20)
    ids = {p["id"] for p in pending}

    def answered():
        if not ids & {p["id"] for p in backend.api("GET", "/permission")}:
            return True
        for el in driver.find_elements(By.CSS_SELECTOR, '[data-testid="approvals"][data-armed="true"] [data-testid="approve-allow_once"]'):
            el.click()
        return False
    wait_for(answered, what, timeout=20)


def kill_hard(backend):
    """SIGKILL, as a crash or an OOM kill would: no shutdown of its own."""
    backend.proc.kill()
    backend.proc.wait()
    backend.log.close()


def queue_texts(driver, sid):
    """The texts of the queued prompts the pane of session `sid` shows."""
    return driver.execute_script("""
        return [...document.querySelectorAll(`[data-testid="queue"][data-session="${arguments[0]}"] [data-testid="queue-text"]`)]
          .map((e) => e.textContent);""", sid)


def pane_sessions(driver):
    return [p.get_attribute("data-session") for p in driver.find_elements(By.CSS_SELECTOR, '[data-testid="pane"]')]


def toast(driver):
    el = driver.find_element(By.CSS_SELECTOR, "#toast")
    return el.get_attribute("textContent") if el.is_displayed() else ""


def transcript_text(driver):
    return " ".join(t.text for t in driver.find_elements(By.CSS_SELECTOR, '[data-testid="transcript"]'))


# Machine 2's config: the mock ACP agent as `mock`, the built-in shell agent still the default.
BETA_AGENTS = """[agents.mock]
command = {exe}
env = {{ AX_TEST_BE_MOCK_AGENT = "1" }}
"""


# The mock agent's answer (one text chunk): Markdown with a safe link, a bad one and raw HTML.
HUB_MARKDOWN = ("text Via the hub: **bold**, a [safe](https://example.com/h), a [bad](javascript:window.__pwned='hub-link') "
                "and <img src=x onerror=\"window.__pwned='hub-img'\">")


def picker_options(driver, testid, attribute):
    return [b.get_attribute(attribute) for b in driver.find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]') if b.is_displayed()]


def run(binary, nats, mock):
    root = tempfile.mkdtemp(prefix="axhubui")
    config = os.path.join(root, "beta-config")
    os.makedirs(os.path.join(config, "ax-code"))
    with open(os.path.join(config, "ax-code", "config.toml"), "w") as f:
        f.write(BETA_AGENTS.format(exe=json.dumps(mock)))
    beta_env = {"XDG_CONFIG_HOME": config}
    alpha = beta = hub = driver = None
    try:
        alpha = Backend(binary, os.path.join(root, "alpha"),
                        extra_args=("--join", nats, "--name", "alpha", "--share-ui-commands"))
        beta_args = ("--join", nats, "--name", "beta")
        beta = Backend(binary, os.path.join(root, "beta"), extra_args=beta_args, extra_env=beta_env)
        beta_token = beta.token
        on_alpha = alpha.api("POST", "/session", {"title": "on-alpha"})["id"]
        on_beta = beta.api("POST", "/session", {"title": "on-beta"})["id"]

        hub = Hub(binary, root, nats)
        check(hub.token not in hub.link and "#code=" in hub.link, f"the hub prints a one-time code, not its credential: {hub.link}")

        driver = browser(os.path.join(root, "profile"), "--window-size=1300,900", console_log=True)
        driver.get(hub.link)
        wait_for(lambda: driver.execute_script("return sessionStorage.getItem('ax-code.token')") == hub.token,
                 "the hub's link signs the tab in (code exchanged, proof checked)", timeout=20)
        check("code=" not in driver.current_url, f"the code is taken out of the address: {driver.current_url}")

        # 2. Both machines, each with its own session.
        wait_for(lambda: online(driver, "alpha", "true") and online(driver, "beta", "true"),
                 "both machines in the sidebar, online", timeout=20)
        wait_for(lambda: rows_after(driver, "alpha") == [on_alpha] and rows_after(driver, "beta") == [on_beta],
                 "each machine's session under it", timeout=20)
        status, machines = hub.request("GET", "/machine")
        projects = {m["name"]: m["project"] for m in machines}
        check(status == 200 and projects.get("alpha", "").endswith("alpha/project") and projects.get("beta", "").endswith("beta/project"),
              f"the hub knows each machine's project: {projects}")
        for name in ("alpha", "beta"):
            text, title = wait_for(lambda: machine_project(driver, name), f"{name}'s project shown under it in the sidebar")
            check(title == projects[name] and text and projects[name].endswith(text.lstrip("…")), f"{name}: {text!r} of {projects[name]!r}")

        # 3. Machine 2's session: a prompt, its approval, the output.
        def open_beta():
            # The sidebar is drawn anew as machines report: retried until a click lands.
            driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{on_beta}"]').click()
            return True
        wait_for(open_beta, "beta's session clicked in the sidebar")
        box = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]')), None),
                       "beta's session opened with a composer")
        box.send_keys("echo hub-ui-said-hi")
        box.send_keys(Keys.ENTER)
        approve = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, '[data-testid="approve-allow_once"]')), None),
                           "the shell agent's approval shown on the hub's page", timeout=20)
        approve_on_page(driver, beta, "the approval answered from the hub's page")
        wait_for(lambda: "hub-ui-said-hi" in transcript_text(driver) and len(beta.api("GET", f"/session/{on_beta}/message")) == 2,
                 "the command ran on beta and its output streamed into the hub's transcript", timeout=30)
        check(len(alpha.api("GET", f"/session/{on_alpha}/message")) == 0, "alpha's session got nothing")

        # 3b. Beta's terminal from the hub's page.
        connection = driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
        wait_for(lambda: connection.get_attribute("data-state") == "live",
                 "the connection badge is live (the hub's gateway for the terminal, the events)", timeout=20)
        title = connection.get_attribute("title")
        check(re.match(r"Terminal gateway \((alpha|beta)\): connected", title), f"its title names the machine whose gateway is used: {title!r}")
        term = TerminalPage(driver)
        driver.find_element(By.ID, "toggle-terminal").click()
        wait_for(lambda: term.testid("terminal-panel").is_displayed(), "the terminal panel opens")
        wait_for(lambda: "on beta" in term.testid("terminal-place").text, "it says the terminal runs on beta (the shown session's machine)")
        check(term.testid("terminal-machine").get_attribute("value") == "beta", "and its machine picker shows beta")
        wait_for(lambda: re.match(r"Terminal gateway \(beta\): connected", connection.get_attribute("title"))
                 and connection.get_attribute("data-state") == "live", "the badge: beta's gateway, live")
        wait_for(lambda: term.testid("terminal-kill").is_enabled(), "a shell opened on beta and attached", timeout=20)
        wait_for(lambda: term.text().strip(), "the shell draws its prompt", timeout=20)
        term.type("echo hub-term-$((6*7)) in-$(basename $(dirname $PWD))" + Keys.ENTER)
        term.shows("hub-term-42 in-beta", "typed input reaches beta's shell through the hub, its computed output drawn")
        term_key = "ax-code.terminal@beta"
        terminal_id = driver.execute_script("return sessionStorage.getItem(arguments[0])", term_key)
        check(terminal_id and terminal_id.startswith("term_"), f"the tab remembers beta's terminal: {terminal_id}")
        driver.refresh()
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-testid="connection"][data-state="live"]'),
                 "live again after the reload", timeout=20)
        connection = driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
        wait_for(lambda: term.testid("terminal-panel").is_displayed() and "on beta" in term.testid("terminal-place").text,
                 "the terminal panel is open again, on beta", timeout=20)
        term.shows("hub-term-42 in-beta", "the scrollback from before the reload is shown again")
        wait_for(lambda: term.testid("terminal-kill").is_enabled(), "attached again", timeout=20)
        check(driver.execute_script("return sessionStorage.getItem(arguments[0])", term_key) == terminal_id,
              "the same terminal was attached again")
        term.type("echo again-$((2+3))" + Keys.ENTER)
        term.shows("again-5", "typing goes on after the reload")

        def shell_size(marker):
            """(rows, cols) the shell on the machine sees, asked with `stty size`."""
            term.type(f"echo {marker}-$(stty size | tr ' ' x)" + Keys.ENTER)
            found = wait_for(lambda: re.search(rf"{marker}-(\d+)x(\d+)", term.text()), f"the shell tells its size ({marker})", timeout=20)
            return int(found.group(1)), int(found.group(2))
        rows = len(term.rows())
        check(shell_size("size")[0] == rows, f"the shell's rows are the panel's ({rows})")
        # Docked right, the panel is taller: the resize reaches the machine's terminal.
        term.testid("terminal-dock-toggle").click()
        wait_for(lambda: len(term.rows()) > rows, "the panel docked right has more rows", timeout=20)
        rows = len(term.rows())
        # The resize was sent before the keys typed after it, and the hub keeps that order.
        check(shell_size(f"size{rows}")[0] == rows, f"the shell's rows follow the resize ({rows})")
        term.testid("terminal-dock-toggle").click()
        wait_for(lambda: len(term.rows()) < rows, "docked at the bottom again", timeout=20)
        # The panel's machine picker: alpha's own terminal, then beta's again.
        Select(term.testid("terminal-machine")).select_by_value("alpha")
        wait_for(lambda: "on alpha" in term.testid("terminal-place").text and term.testid("terminal-kill").is_enabled(),
                 "alpha picked: the panel says so and a shell opened on alpha", timeout=20)
        wait_for(lambda: re.match(r"Terminal gateway \(alpha\): connected", connection.get_attribute("title"))
                 and connection.get_attribute("data-state") == "live", "the badge: alpha's gateway, live", timeout=20)
        term.type("echo alpha-$((5*5)) in-$(basename $(dirname $PWD))" + Keys.ENTER)
        term.shows("alpha-25 in-alpha", "typing runs on alpha, in its project")
        check("hub-term-42" not in term.text(), "beta's terminal is not drawn there")
        Select(term.testid("terminal-machine")).select_by_value("beta")
        wait_for(lambda: "on beta" in term.testid("terminal-place").text and term.testid("terminal-kill").is_enabled(),
                 "beta picked again: attached", timeout=20)
        term.shows("again-5", "beta's terminal shown again, its scrollback replayed")
        check("alpha-25" not in term.text(), "without alpha's output")
        check(driver.execute_script("return sessionStorage.getItem(arguments[0])", term_key) == terminal_id,
              "the same terminal of beta")

        # 4. A restarted machine: killed mid-turn, started again, the turn shown ended.
        wait_for(lambda: beta.api("GET", f"/session/{on_beta}")["status"] == "idle"
                 and not driver.find_elements(By.CSS_SELECTOR, '[data-testid="busy-spinner"]'),
                 "beta's first turn is over", timeout=20)
        driver.execute_script("window.axNoReload = true;")
        box = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]')), None),
                       "beta's composer")
        # The marker is computed by the shell, so the prompt's own text never matches it.
        box.send_keys("echo cut-$((6*7)); exec sleep 600.25")
        box.send_keys(Keys.ENTER)
        approve_on_page(driver, beta, "the long command approved from the hub's page")
        wait_for(lambda: "cut-42" in transcript_text(driver) and driver.find_elements(By.CSS_SELECTOR, '[data-testid="busy-spinner"]'),
                 "the long command runs: its output shown, the session working", timeout=30)
        # The prompt queue through the hub: a prompt typed while the command runs waits in
        # beta's own queue, shown above the composer, and is cancelled from the page.
        box = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]')), None),
                       "beta's composer while it works")
        box.send_keys("echo queued-$((3*3))")
        box.send_keys(Keys.ENTER)
        wait_for(lambda: [i["prompt"]["parts"][0]["text"] for i in beta.api("GET", f"/session/{on_beta}/queue")["items"]] == ["echo queued-$((3*3))"],
                 "the prompt waits in beta's queue", timeout=20)
        wait_for(lambda: queue_texts(driver, on_beta) == ["echo queued-$((3*3))"], "and shows in the pane's queue", timeout=20)
        click_when_found(driver, f'[data-testid="queue"][data-session="{on_beta}"] [data-testid="queue-cancel"]', "its cancel clicked")
        wait_for(lambda: beta.api("GET", f"/session/{on_beta}/queue")["items"] == [], "cancelled on beta from the hub's page", timeout=20)
        wait_for(lambda: queue_texts(driver, on_beta) == [], "and gone from the page's queue", timeout=20)
        kill_hard(beta)
        beta = None
        term.shows("the terminal on beta ended", "beta's terminal ends on the page with the hub's line")
        wait_for(lambda: term.testid("terminal-status").text == "ended" and not term.testid("terminal-kill").is_enabled(),
                 "the panel says it ended")
        beta = Backend(binary, os.path.join(root, "beta"), token=beta_token, extra_args=beta_args, extra_env=beta_env)
        wait_for(lambda: "interrupted by a restart" in transcript_text(driver)
                 and not driver.find_elements(By.CSS_SELECTOR, '[data-testid="busy-spinner"]'),
                 "after the restart the page shows the turn ended, interrupted", timeout=30)
        check(driver.execute_script("return window.axNoReload === true"), "without a reload of the page")
        check(transcript_text(driver).count("cut-42") == 1, "the command's output shown once")
        check(rows_after(driver, "beta") == [on_beta], "beta's session listed once")

        # 5. Shared ui.commands from alpha's agents, applied by the hub's page.
        wait_for(lambda: "alpha" in (driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]').get_attribute("data-ui-links") or "").split(),
                 "the page holds a Control UI connection to alpha's gateway on the hub", timeout=20)

        def send_command(params):
            """An agent's waited command, through the hub to alpha's gateway (again while alpha's
            relay, its one UI, is not there yet); the page's acknowledgement, as the agent sees it."""
            def sent():
                status, answer = hub.request("POST", "/machine/alpha/screen/command", dict(params, wait=True))
                return status == 200 and answer.get("delivered", 0) >= 1 and answer
            answer = wait_for(sent, f"alpha's gateway took {params['command']} and delivered it", timeout=20)
            outcomes = answer.get("outcomes") or []
            check(len(outcomes) == 1, f"one outcome, the relay's, which is the hub page's answer: {answer}")
            return outcomes[0]

        check(pane_sessions(driver) == [on_beta], "one pane, showing beta's session")
        refused = send_command({"command": {"kind": "split", "direction": "right", "sessionKey": on_alpha}})
        check(refused.get("outcome") == "ignored" and "shows a session of beta" in refused.get("reason", "")
              and isinstance(refused.get("revision"), int),
              f"the agent is told the page refused the split that would move beta's pane, why, and its revision: {refused}")
        wait_for(lambda: "Agent on alpha: split right — ignored" in toast(driver) and "shows a session of beta" in toast(driver),
                 "a split that would move the pane showing beta's session is refused, said so", timeout=20)
        check(pane_sessions(driver) == [on_beta], "the layout is as it was")
        click_when_found(driver, f'[data-testid="session-item"][data-session="{on_alpha}"]', "alpha's session opened")
        wait_for(lambda: pane_sessions(driver) == [on_alpha], "the pane shows alpha's session")
        time.sleep(1.7)  # the person's click in the pane: human priority holds it 1.5 s
        applied = send_command({"command": {"kind": "split", "direction": "right", "sessionKey": on_alpha}})
        check(applied.get("outcome") == "applied" and isinstance(applied.get("revision"), int) and "reason" not in applied,
              f"the agent is told the page applied the split, with the page's revision: {applied}")
        check(applied["revision"] > refused["revision"], f"a revision after the one refused ({refused['revision']} -> {applied['revision']})")
        wait_for(lambda: pane_sessions(driver) == [on_alpha, on_alpha], "alpha's agent's split applied on the hub's page", timeout=20)
        wait_for(lambda: "Agent on alpha: split right" in toast(driver) and "ignored" not in toast(driver), "and told")
        stale = send_command({"command": {"kind": "sidebar", "visible": False}, "expectedRevision": 99999})
        check(stale.get("outcome") == "ignored" and "stale revision" in stale.get("reason", "") and stale.get("revision") == applied["revision"],
              f"a command on a stale revision comes back ignored, why, and the page's revision: {stale}")
        wait_for(lambda: "stale revision" in toast(driver), "a command on a stale revision is refused", timeout=20)
        check(driver.find_element(By.CSS_SELECTOR, "#sidebar").is_displayed(), "the sidebar still shows")
        current = send_command({"command": {"kind": "sidebar", "visible": True}, "expectedRevision": stale["revision"]})
        check(current.get("outcome") == "applied", f"the page's revision expected: applied ({current})")
        check(driver.find_element(By.CSS_SELECTOR, "#sidebar").is_displayed(), "the sidebar shows")
        check(pane_sessions(driver) == [on_alpha, on_alpha], "each command applied once: two panes")

        # 6. A new session: the machine picked, then one of its agents; renamed and deleted
        # through the hub.
        click_when_found(driver, "#new-session", "new session asked for")
        wait_for(lambda: sorted(b.get_attribute("data-machine") for b in driver.find_elements(By.CSS_SELECTOR, '[data-testid="machine-option"]')) == ["alpha", "beta"],
                 "the picker offers both online machines")
        check("machine" in driver.find_element(By.CSS_SELECTOR, "#agent-picker-title").text, "and asks for the machine")
        click_when_found(driver, '[data-testid="machine-option"][data-machine="beta"]', "beta chosen")
        beta_agents = beta.api("GET", "/agent")
        wait_for(lambda: sorted(picker_options(driver, "agent-option", "data-agent")) == sorted(a["name"] for a in beta_agents["agents"]),
                 f"then the agent picker offers beta's own agents ({[a['name'] for a in beta_agents['agents']]})", timeout=20)
        check("mock" not in [a["name"] for a in alpha.api("GET", "/agent")["agents"]], "(mock is beta's only)")
        title = driver.find_element(By.CSS_SELECTOR, "#agent-picker-title").text
        check("beta" in title and "agent" in title, f"and says for which machine: {title!r}")
        check(picker_options(driver, "agent-option", "data-agent")[0] == "shell", "beta's default (shell) first")
        click_when_found(driver, '[data-testid="agent-option"][data-agent="mock"]', "beta's mock agent chosen")
        made = wait_for(lambda: [s for s in beta.api("GET", "/session") if s["id"] != on_beta], "a session made on beta", timeout=20)
        fresh = made[0]["id"]
        check(made[0]["agent"] == "mock", f"with the agent chosen: {made[0]['agent']}")
        check(len(alpha.api("GET", "/session")) == 1, "none on alpha")
        wait_for(lambda: fresh in pane_sessions(driver) and fresh in rows_after(driver, "beta"),
                 "the new session shown in the active pane and under beta", timeout=20)
        # Its agent's text rendered as Markdown by the hub (POST /markdown), under the backend's
        # rules: markup as elements, raw HTML as text, only safe links, nothing run.
        box = wait_for(lambda: next(iter(driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{fresh}"]')), None),
                       "the new session's composer")
        box.send_keys(HUB_MARKDOWN)
        box.send_keys(Keys.ENTER)
        wait_for(lambda: beta.api("GET", f"/session/{fresh}")["status"] == "idle"
                 and len(beta.api("GET", f"/session/{fresh}/message")) == 2, "the mock agent answered on beta", timeout=30)

        def rendered():
            return driver.execute_script("""
                const pane = [...document.querySelectorAll('[data-testid="pane"]')].find((p) => p.dataset.session === arguments[0]);
                const texts = pane ? [...pane.querySelectorAll('[data-testid="agent-text"]')] : [];
                if (!texts.length || !texts.every((t) => t.dataset.rendered === 'full')) return null;
                return {
                  strong: texts.map((t) => t.querySelector('strong')?.textContent).filter(Boolean),
                  links: texts.flatMap((t) => [...t.querySelectorAll('a')].map((a) => a.getAttribute('href'))),
                  imgs: texts.flatMap((t) => [...t.querySelectorAll('img, script')]).length,
                  text: texts.map((t) => t.textContent).join(' '),
                  pwned: window.__pwned ?? null,
                };""", fresh)
        r = wait_for(rendered, "the agent's text rendered as Markdown on the hub's page", timeout=20)
        check(r["strong"] == ["bold"], f"bold is an element: {r}")
        check(r["links"] == ["https://example.com/h"], f"only the safe link is a link: {r['links']}")
        check(r["imgs"] == 0 and "<img src=x" in r["text"], f"raw HTML shown as text, no element made: {r}")
        check(r["pwned"] is None, "nothing in the agent's text ran")
        # An image pasted on the hub's page goes with the prompt to beta's agent, and the
        # transcript's thumbnail loads through the hub (its image route, which reads the image
        # from the machine in pieces).
        driver.execute_script(PASTE, box, base64.b64encode(PNG).decode(), "dot.png", "image/png")
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-testid="image-chip"]'), "the pasted image is a chip")
        box.send_keys("blocks")
        box.send_keys(Keys.ENTER)
        wait_for(lambda: beta.api("GET", f"/session/{fresh}")["status"] == "idle"
                 and len(beta.api("GET", f"/session/{fresh}/message")) == 4, "the mock agent got the image on beta", timeout=30)
        wait_for(lambda: f"blocks: image image/png {len(PNG)}" in transcript_text(driver),
                 "as an image block (the agent's answer on the page)", timeout=20)

        def thumb_loaded():
            return driver.execute_script("""
                const pane = [...document.querySelectorAll('[data-testid="pane"]')].find((p) => p.dataset.session === arguments[0]);
                const img = pane?.querySelector('[data-testid="image-part"] [data-testid="image-thumb"]:not([hidden])');
                return img && img.complete && img.naturalWidth === 1 ? img.src.slice(0, 22) : null;""", fresh)
        src = wait_for(thumb_loaded, "the transcript's image loaded through the hub", timeout=20)
        check(src == "data:image/png;base64,", f"by its checked type: {src}")
        driver.execute_script("window.prompt = () => 'renamed via hub';")
        click_when_found(driver, f'[data-testid="session-item"][data-session="{fresh}"] ~ .session-controls [data-testid="session-rename"]',
                         "rename clicked")
        wait_for(lambda: beta.api("GET", f"/session/{fresh}")["title"] == "renamed via hub", "the rename reached beta", timeout=20)
        wait_for(lambda: "renamed via hub" in driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{fresh}"]').text,
                 "and shows in the sidebar", timeout=20)
        driver.execute_script("window.confirm = () => true;")
        click_when_found(driver, f'[data-testid="session-item"][data-session="{fresh}"] ~ .session-controls [data-testid="session-delete"]',
                         "delete clicked")
        wait_for(lambda: [s["id"] for s in beta.api("GET", "/session")] == [on_beta], "the delete reached beta", timeout=20)
        wait_for(lambda: fresh not in rows_after(driver, "beta"), "and the row is gone", timeout=20)

        # 7. Machine 2 stops: offline, last seen, read-only.
        click_when_found(driver, f'[data-testid="session-item"][data-session="{on_beta}"]', "beta's session opened again")
        wait_for(lambda: on_beta in pane_sessions(driver), "a pane shows beta's session")
        beta.stop()
        beta = None
        wait_for(lambda: online(driver, "beta", "false"), "beta shown offline", timeout=30)
        status = machine_row(driver, "beta").find_element(By.CSS_SELECTOR, '[data-testid="machine-status"]').text
        check("last seen" in status, f"with when it was last seen: {status!r}")
        check(online(driver, "alpha", "true"), "alpha still online")
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-testid="readonly-note"]'),
                 "beta's open session is read-only, with a note", timeout=20)
        check(not driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]'),
              "no composer for the offline machine's session")

        # 8. The page reloaded while beta is away: its session opens from the transcript the hub
        # kept (served earlier, kept up to date), as last seen, read-only, instead of a 503.
        status, _ = hub.request("GET", f"/machine/beta/session/{on_beta}/message")
        check(status == 200, f"the hub answers beta's transcript as last seen ({status})")
        driver.refresh()
        wait_for(lambda: online(driver, "beta", "false") and on_beta in pane_sessions(driver),
                 "after a reload: beta offline, its session in the pane", timeout=20)
        wait_for(lambda: "hub-ui-said-hi" in transcript_text(driver) and "cut-42" in transcript_text(driver)
                 and "interrupted by a restart" in transcript_text(driver),
                 "beta's transcript shown as last seen, both turns and the restart's end", timeout=20)
        check(driver.find_elements(By.CSS_SELECTOR, '[data-testid="readonly-note"]'), "read-only, with its note")
        check(not driver.find_elements(By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{on_beta}"]'),
              "and no composer")
    finally:
        if driver is not None:
            close_browser(driver)
        for p in (hub, beta, alpha):
            if p is not None:
                p.stop()


if __name__ == "__main__":
    run_checks(run, sys.argv[1], sys.argv[2], sys.argv[3])
