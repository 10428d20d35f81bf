"""The conformance scenarios: each takes an `AgentBackend` and fails with `CheckFailed`.

Each scenario uses sessions of its own. `SCENARIOS` lists them in run order; those marked
`restarts` stop the shared backend and run after the others (docs/agents.md §10 says what
each one guards).
"""

import base64
import json
import os
import re
import time

from axtest import check, strings, wait_for
from harness import TURN_TIMEOUT, parts_of, reply_text, check_options_named


def _diff_shown(permission, reply):
    """The edit's diff (notes.txt, alpha -> omega) is shown: in the permission's tool call or
    in the reply's tool call card."""
    calls = [permission.get("toolCall") or {}] + parts_of(reply, "tool_call")
    for call in calls:
        for c in call.get("content") or []:
            if c.get("type") == "diff" and c.get("path", "").endswith("notes.txt") and "omega" in c.get("newText", ""):
                return True
    return False


def _edit_turn(ab, session, reply, marker="[[ax:edit]]"):
    """Prompts an edit and answers its permission with `reply`; returns (permission, answer)."""
    ab.prompt(session, f"Edit the notes {marker}")
    perm = ab.wait_permission(session, f"{ab.agent} asks before editing")
    check_options_named(perm)
    answered = ab.answer(session, perm, reply)
    return perm, answered


def allow_once(ab):
    ab.reset_notes()
    s = ab.new_session("allow once")
    perm, answered = _edit_turn(ab, s, "allow_once")
    chosen = next(o for o in perm["options"] if o["optionId"] == answered.get("optionId"))
    check(chosen["kind"] == "allow_once", f"the option sent is the agent's allow_once: {chosen}")
    ab.wait_idle(s, "the edit turn ends")
    check(ab.notes() == "omega\n", f"the file was edited: {ab.notes()!r}")
    reply = ab.replies(s)[-1]
    check(_diff_shown(perm, reply), "the edit's diff is shown (permission or tool call card)")
    check("The notes were edited." in reply_text(reply), f"the model's last text is shown: {reply_text(reply)!r}")
    check(not ab.session(s).get("standing"), "allow once leaves no standing grant")
    ab.prompt(s, "Edit back [[ax:edit_back]]")
    perm2 = ab.wait_permission(s, "the next edit asks again")
    ab.answer(s, perm2, "allow_once")
    ab.wait_idle(s, "the second edit turn ends")
    check(ab.notes() == "alpha\n", f"the file was edited back: {ab.notes()!r}")


def allow_always(ab):
    """With an allow_always option the grant is sent and listed, and the next edit runs
    without asking; an agent without one (Codex in its read-only mode) gets its allow_once
    option and no standing grant is claimed (docs/backend.md §2)."""
    ab.reset_notes()
    s = ab.new_session("allow always")
    perm, answered = _edit_turn(ab, s, "allow_always")
    offered = [o["kind"] for o in perm["options"]]
    chosen = next(o for o in perm["options"] if o["optionId"] == answered.get("optionId"))
    ab.wait_idle(s, "the edit turn ends")
    check(ab.notes() == "omega\n", f"the file was edited: {ab.notes()!r}")
    standing = ab.session(s).get("standing") or []
    if "allow_always" not in offered:
        check(chosen["kind"] == "allow_once", f"without allow_always the allow_once option is sent: {chosen}")
        check(not standing, f"no standing grant is claimed: {standing}")
        return
    check(chosen["kind"] == "allow_always", f"the option sent is the agent's allow_always: {chosen}")
    check(len(standing) == 1, f"the session lists one standing grant: {standing}")
    ab.prompt(s, "Edit back [[ax:edit_back]]")
    ab.wait_idle(s, "the second edit runs without asking")
    reply = ab.replies(s)[-1]
    check(not parts_of(reply, "permission"), f"no permission was asked the second time: {parts_of(reply, 'permission')}")
    check(ab.notes() == "alpha\n", f"the file was edited back: {ab.notes()!r}")


def reject(ab):
    ab.reset_notes()
    s = ab.new_session("reject")
    _edit_turn(ab, s, "reject_once")
    ab.wait_idle(s, "the rejected turn ends")
    check(ab.notes() == "alpha\n", f"the file is unchanged: {ab.notes()!r}")
    reply = ab.replies(s)[-1]
    perms = parts_of(reply, "permission")
    check(perms and "reject" in json.dumps(perms[-1].get("outcome")),
          f"the transcript shows the rejection: {perms}")
    check(not [c for c in parts_of(reply, "tool_call") if c.get("status") in ("pending", "in_progress")],
          f"no tool call stays open: {parts_of(reply, 'tool_call')}")
    ab.prompt(s, "Hello [[ax:hello]]")
    ab.wait_idle(s, "the session answers the next prompt")
    check("Hello from the fake model." in reply_text(ab.replies(s)[-1]), "the next turn works")


def abort(ab):
    s = ab.new_session("abort")
    ab.prompt(s, "Stream slowly [[ax:slow]]")
    wait_for(lambda: ab.replies(s) and reply_text(ab.replies(s)[-1]).count("chunk") >= 3,
             "the slow answer streams", timeout=TURN_TIMEOUT)
    res = ab.api("POST", f"/session/{s}/abort")
    check(res == {"aborted": True}, f"the abort answers once the run ended: {res}")
    check(ab.session(s)["status"] == "idle", "the session is idle")
    reply = ab.replies(s)[-1]
    check(reply.get("ended"), "the aborted reply has ended")
    n = reply_text(reply).count("chunk")
    check(n < 60, f"the stream stopped early ({n} of 60 chunks)")
    ab.prompt(s, "Hello [[ax:hello]]")
    ab.wait_idle(s, "the session answers the next prompt")
    last = ab.replies(s)[-1]
    check(reply_text(last).startswith("Hello from the fake model.") and "chunk" not in reply_text(last),
          f"the next reply is only the new answer: {reply_text(last)!r}")
    # One prompt late (Claude's adapter after a cancel, docs/agents.md §10) shows here too.
    ab.prompt(s, "Hello again [[ax:hello]]")
    ab.wait_idle(s, "the session answers the prompt after that")
    again = reply_text(ab.replies(s)[-1])
    check(again == "Hello from the fake model.", f"the reply after that is only its own answer: {again!r}")


def reload(ab):
    from harness import Events
    events = Events(ab.backend)
    try:
        s = ab.new_session("reload")
        ab.prompt(s, "Stream slowly [[ax:slow]]")
        wait_for(lambda: ab.replies(s) and reply_text(ab.replies(s)[-1]).count("chunk") >= 5,
                 "the slow answer streams", timeout=TURN_TIMEOUT)
        mid = ab.replies(s)[-1]
        check(mid.get("deltas", 0) > 0 and not mid.get("ended"), f"loaded mid-turn: deltas={mid.get('deltas')}")
        ab.wait_idle(s, "the turn ends", timeout=TURN_TIMEOUT + 30)
        final = ab.replies(s)[-1]
        check(final["id"] == mid["id"], "the same reply")
        later = wait_for(lambda: [d for d in events.deltas(final["id"]) if d["seq"] > mid["deltas"]]
                         if final.get("deltas") in [d["seq"] for d in events.deltas(final["id"])] else None,
                         "the live deltas reached the reader")
        seqs = [d["seq"] for d in later]
        check(seqs == list(range(mid["deltas"] + 1, final["deltas"] + 1)), f"no delta missing after the load: {seqs[:5]}…")
        text = reply_text(mid) + "".join(d["delta"].get("text", "") for d in later
                                        if d["delta"]["type"] == "text_appended")
        check(text == reply_text(final), "transcript loaded mid-turn + later deltas = the final view")
        notices = [d["delta"]["notice"] for d in later if d["delta"]["type"] == "notice"]
        check(parts_of(final, "notice") == parts_of(mid, "notice") + [dict(n, type="notice") for n in notices],
              f"the notices loaded mid-turn + the later ones = the final view: {notices}")
    finally:
        events.close()


# A Control UI's answer to the screen tool, as the tool result carries it (JSON text).
APPLIED = re.compile(r'\\?"outcome\\?"\s*:\s*\\?"applied')


def _screen_results(ab, since):
    """(listed, results): whether any model request after `since` listed a screen tool, and
    every string of those requests that mentions the screen tool's refusal or outcome."""
    reqs = ab.fake.requests[since:]
    listed = any(any(n and "screen" in n for n in names) for names in _tool_lists(reqs))
    texts = [t for r in reqs for t in strings(r["body"]) if "not enabled for this turn" in t or APPLIED.search(t)]
    return listed, texts


def _tool_lists(reqs):
    out = []
    for r in reqs:
        b = r["body"] or {}
        names = []
        for t in b.get("tools") or []:
            names.append(t.get("name"))
            names += [d.get("name") for d in t.get("functionDeclarations") or []]
        if names:
            out.append(names)
    return out


def _answer_any(ab, s, reply="allow_once"):
    """Answers a pending permission of `s` (an MCP tool may ask), if one is pending."""
    for p in ab.api("GET", "/permission"):
        if p["sessionId"] == s and p["state"] == "pending":
            ab.answer(s, p, reply)


def _run_answering(ab, s, what, reply="allow_once", after=0):
    """Waits, answering its permissions with `reply`, until the session's turn has ended and
    it has more than `after` replies (a prompt typed in a page arrives asynchronously: the
    previous turn's end must not count as this one's)."""
    def done():
        _answer_any(ab, s, reply)
        r = ab.replies(s)
        return ab.session(s)["status"] == "idle" and len(r) > after and r[-1].get("ended")
    wait_for(done, what, timeout=TURN_TIMEOUT)


def screen_api(ab):
    s = ab.new_session("screen api")
    since = len(ab.fake.requests)
    ab.prompt(s, "Arrange the screen [[ax:screen]]")
    _run_answering(ab, s, "the API turn ends")
    listed, texts = _screen_results(ab, since)
    refused = any("not enabled for this turn" in t for t in texts)
    check(not listed or refused,
          f"an API turn cannot use screen: listed={listed}, refused={refused}")
    check(not any(APPLIED.search(t) for t in texts), f"nothing was applied: {texts[:2]}")


def screen_ui(ab):
    """The agent starts in an API turn (its MCP tools are listed while the gate is closed),
    then a turn typed in the Control UI (headless Chromium) uses the screen tool, and a later
    API turn cannot (docs/agents.md §8)."""
    from axtest import browser, close_browser
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    s = ab.new_session("screen ui")
    ab.prompt(s, "Hello [[ax:hello]]")
    _run_answering(ab, s, "the first (API) turn starts the agent and ends")
    driver = browser(os.path.join(ab.root, "profile"), "--window-size=1440,900")
    try:
        driver.get(f"{ab.backend.url}/")
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="signin"]').is_displayed(),
                 "the sign-in form shows", timeout=30)
        driver.find_element(By.ID, "token").send_keys(ab.backend.token + Keys.ENTER)
        wait_for(lambda: driver.find_element(By.CSS_SELECTOR, '[data-testid="connection"]')
                 .get_attribute("data-gateway") == "connected", "the Control UI joins the gateway", timeout=30)

        def sidebar_hidden():
            return driver.find_element(By.CSS_SELECTOR, '[data-testid="sidebar"]').get_attribute("data-hidden") == "true"

        check(not sidebar_hidden(), "the sidebar shows at first")
        driver.find_element(By.CSS_SELECTOR, f'[data-testid="session-item"][data-session="{s}"]').click()
        box = wait_for(lambda: driver.find_element(
            By.CSS_SELECTOR, f'[data-testid="composer-input"][data-session="{s}"]'), "the composer shows")
        since = len(ab.fake.requests)
        before = len(ab.replies(s))
        box.send_keys("Arrange the screen [[ax:screen]]")
        box.send_keys(Keys.ENTER)
        _run_answering(ab, s, "the Control UI turn ends", after=before)
        listed, texts = _screen_results(ab, since)
        check(listed, f"{ab.agent} lists the screen tool in a Control UI turn (tools: {_tool_lists(ab.fake.requests[since:])[-1:]})")
        wait_for(sidebar_hidden, "the page reacts: the sidebar is hidden")
        check(any(APPLIED.search(t) for t in texts), f"the tool's result says applied: {[t[:200] for t in texts]}")
        since = len(ab.fake.requests)
        ab.prompt(s, "Arrange the screen again [[ax:screen_show]]")
        _run_answering(ab, s, "the later API turn ends")
        listed, texts = _screen_results(ab, since)
        check(not listed or any("not enabled for this turn" in t for t in texts),
              f"the later API turn cannot use screen: {[t[:200] for t in texts]}")
        check(sidebar_hidden(), "the page did not change")
    finally:
        close_browser(driver)


def restart(ab):
    s = ab.new_session("restart")
    ab.reset_notes()
    ab.prompt(s, "Read the notes [[ax:read]]")
    _run_answering(ab, s, "the read turn ends")
    before = ab.messages(s)
    check("The notes were read." in reply_text(before[-1]), "the first turn's text is stored")
    if ab.agent == "gemini":
        # Gemini CLI names a session's chat file by the minute it was opened: reopened in the
        # same minute, it writes the new (empty) record over the old one and `session/load`
        # finds nothing (docs/agents.md §10). Reopen it in the next minute, so the replay
        # this scenario is about happens.
        minute = time.gmtime().tm_min
        wait_for(lambda: time.gmtime().tm_min != minute, "the next minute (Gemini's chat files)", timeout=65)
    ab.restart()
    check(ab.messages(s) == before, "the transcript is unchanged by the restart")
    ab.prompt(s, "Hello again [[ax:hello]]")
    _run_answering(ab, s, "the prompt to the reopened session ends")
    after = ab.messages(s)
    check(after[:len(before)] == before, "the old turn is unchanged")
    new = [m for m in after[len(before):] if m["role"] == "assistant"]
    check(len(new) == 1, f"one new reply: {len(new)}")
    everything = " ".join(strings(new[0]["parts"]))
    check("Reading the notes." not in everything and "The notes were read." not in everything
          and not parts_of(new[0], "tool_call"),
          f"the reply holds no replayed old card or text: {json.dumps(new[0]['parts'])[:400]}")
    check("Hello from the fake model." in reply_text(new[0]), f"the new answer is shown: {reply_text(new[0])!r}")
    loads = [e for e in ab.trace(s) if e["dir"] == "to_agent" and e["msg"].get("method") == "session/load"]
    check(loads, "the reopened session was loaded (session/load)")
    answer = next((e["msg"] for e in ab.trace(s) if e["dir"] == "from_agent" and e["msg"].get("id") == loads[-1]["msg"]["id"]), {})
    check("result" in answer, f"{ab.agent} loaded its session (else nothing was replayed to check): {json.dumps(answer)[:300]}")


MARK_LONG = "finished-long"


def _long_pids():
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARK_LONG.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return [p for p in pids if p != os.getpid()]


def _long_pids_of(ab):
    """The long command's processes of this run (the project path is in their cwd)."""
    out = []
    for pid in _long_pids():
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(ab.project):
                out.append(pid)
        except OSError:
            pass
    return out


def long_command(ab):
    s = ab.new_session("long command")
    ab.prompt(s, "Run the long command [[ax:long]]")

    def cards():
        reply = (ab.replies(s) or [{"parts": []}])[-1]
        # The cards: the tool call parts, and a permission request's own tool call (as asked)
        # where no card has its id: Gemini sends no tool_call before asking (docs/agents.md §5),
        # and ax-code makes the card from the request once it is answered.
        calls = parts_of(reply, "tool_call")
        ids = {c.get("toolCallId") for c in calls}
        return calls + [p["toolCall"] for p in parts_of(reply, "permission")
                        if p.get("toolCall") and p["toolCall"].get("toolCallId") not in ids]

    def running():
        _answer_any(ab, s, "allow_once")
        return cards() and _long_pids_of(ab)
    pids = wait_for(running, "the long command runs and its card shows", timeout=TURN_TIMEOUT)
    ab.backend.stop()
    wait_for(lambda: not _long_pids_of(ab), f"no process of the command survives the backend ({pids})", timeout=20)
    ab.start()
    shown = cards()
    check(shown, f"the command's card is stored: {json.dumps(ab.messages(s))[:1500]}")
    open_cards = [c for c in shown if c.get("status") in ("pending", "in_progress")]
    check(not open_cards, f"the card is not left pending: {[c.get('status') for c in shown]}")


def _tmux(ab, *args):
    import subprocess
    return subprocess.run(["tmux", "-S", os.path.join(ab.root, "tmux.sock"), *args],
                          capture_output=True, text=True, timeout=20)


def tui_enter(ab):
    """The real TUI (`ax-code attach`, in tmux) with a real agent's approval: Enter answers
    "allow once", never the standing "always" the agent lists first (docs/tui.md §3)."""
    import shlex
    ab.reset_notes()
    s = ab.new_session("tui enter")
    env = {"AX_CODE_DATA_DIR": ab.backend.data, "HOME": os.path.join(ab.root, "tui-home"),
           "TERM": "xterm-256color", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    line = "env -i " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + \
        f" {shlex.quote(ab.binary)} attach {ab.backend.url} 2>{shlex.quote(os.path.join(ab.root, 'tui.log'))}"
    started = _tmux(ab, "new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", line)
    check(started.returncode == 0, f"the TUI starts in tmux: {started.stderr.strip()}")
    try:
        screen = lambda: _tmux(ab, "capture-pane", "-p", "-t", "tui").stdout  # noqa: E731
        wait_for(lambda: "tui enter" in screen(), "the TUI lists the session", timeout=30)
        ab.prompt(s, "Edit the notes [[ax:edit]]")
        perm = ab.wait_permission(s, f"{ab.agent} asks before editing")
        kinds = check_options_named(perm)
        _tmux(ab, "send-keys", "-t", "tui", "Enter")  # opens the session
        wait_for(lambda: "Enter confirm" in screen(), "the approval dialog shows", timeout=30)
        _tmux(ab, "send-keys", "-t", "tui", "Enter")  # confirms the preselected choice
        wait_for(lambda: not [p for p in ab.api("GET", "/permission") if p["sessionId"] == s and p["state"] == "pending"],
                 "Enter answered the permission", timeout=30)
        ab.wait_idle(s, "the turn ends")
        part = parts_of(ab.replies(s)[-1], "permission")[0]
        option = json.dumps(part.get("outcome"))
        chosen = [o for o in perm["options"] if f'"{o["optionId"]}"' in option]
        check(chosen and chosen[0]["kind"] == "allow_once",
              f"Enter sent the agent's allow_once option (offered in order {kinds}): {part.get('outcome')}")
        check(not ab.session(s).get("standing"), "no standing grant was made")
    finally:
        _tmux(ab, "kill-server")


def agent_offers(ab):
    """The agent's own offers are kept in the session (docs/agents.md §3, §4): after its first
    prompt the commands it sent (`available_commands_update`: Claude right after
    `session/new`, Codex when its first prompt started it, which can be after that turn ended:
    the list is kept whenever it comes, in or between turns) are in `agentState.commands`, and
    its `configOptions` in `agentState.configOptions`; a model the agent offers is chosen
    through `POST /session/{id}/config` and the agent's answer is stored. Gemini sends neither:
    its state says so by having none."""
    s = ab.new_session("offers")
    ab.prompt(s, "Say hello [[ax:hello]]")
    ab.wait_idle(s, "the first turn ends")
    if ab.agent == "gemini":
        options = (ab.session(s).get("agentState") or {}).get("configOptions") or []
        check(not options, f"Gemini offers no config options: {options}")
        return
    # Kept without another prompt, also when the list came after the turn's end.
    wait_for(lambda: (ab.session(s).get("agentState") or {}).get("commands"),
             f"{ab.agent}'s commands are kept after its first prompt", timeout=30)
    state = ab.session(s).get("agentState") or {}
    commands = state.get("commands") or []
    options = state.get("configOptions") or []
    check(commands and all(isinstance(c.get("name"), str) and c["name"] and not c["name"].startswith("/")
                           for c in commands), f"{ab.agent}'s commands are kept: {[c.get('name') for c in commands]}")
    model = next((o for o in options if o.get("id") == "model"), None)
    check(model and model.get("type") == "select" and model.get("options"),
          f"{ab.agent}'s model option is kept with its choices: {model}")
    other = next((c["value"] for c in model["options"] if c["value"] != model["currentValue"]), None)
    if other is None:
        return
    changed = ab.api("POST", f"/session/{s}/config", {"configId": "model", "value": other})
    now = next(o for o in changed["agentState"]["configOptions"] if o["id"] == "model")
    check(now["currentValue"] == other, f"the model was changed to {other!r} by the agent: {now['currentValue']!r}")


def usage(ab):
    """The agent's `usage_update` is a meter in the session (docs/agents.md §4), never a
    transcript line per step. Claude reports its context (tokens used of its window) and the
    session's cost at each turn's end, Codex the context without a cost, Gemini nothing (so
    the UIs draw no meter). A second turn replaces the report: the latest, not a sum, with
    Claude's cost the session's total as the agent keeps it."""
    s = ab.new_session("usage")
    ab.prompt(s, "Say hello [[ax:hello]]")
    ab.wait_idle(s, "the first turn ends")
    first = (ab.session(s).get("agentState") or {}).get("usage")
    for reply in ab.replies(s):
        usage_lines = [n for n in parts_of(reply, "notice") if n.get("kind") == "usage"]
        check(not usage_lines, f"no usage line in the transcript: {usage_lines}")
    if ab.agent == "gemini":
        check(first is None, f"Gemini reports no usage, so there is no meter: {first}")
        return
    check(first and 0 < first["used"] <= first["size"], f"{ab.agent}'s usage is kept as a meter: {first}")
    cost = first.get("cost")
    if ab.agent == "codex":
        check(cost is None, f"Codex reports no cost: {cost}")
        return
    check(cost and cost.get("currency") == "USD" and cost.get("amount", -1) >= 0,
          f"Claude's cost is kept as it gave it: {cost}")
    ab.prompt(s, "Say hello again [[ax:hello]]")
    ab.wait_idle(s, "the second turn ends")
    second = ab.session(s)["agentState"]["usage"]
    check(second["size"] == first["size"] and 0 < second["used"] <= second["size"]
          and second["cost"]["amount"] > cost["amount"],
          f"the second turn's report replaced the first, the cost the session's total: {first} -> {second}")

def queue(ab):
    """A prompt sent while a turn runs is queued, not refused (docs/agents.md §4): while the
    agent waits for an edit's approval, two prompts go to the queue (one then edited, one
    cancelled); once the edit turn ends, the edited one is sent as the next turn by itself and
    the agent answers it, and the queue is empty."""
    ab.reset_notes()
    s = ab.new_session("queue")
    ab.prompt(s, "Edit the notes [[ax:edit]]")
    perm = ab.wait_permission(s, f"{ab.agent} asks before editing")
    refused, _ = ab.backend.request("POST", f"/session/{s}/prompt",
                                    {"parts": [{"type": "text", "text": "Say hello [[ax:hello]]"}]})
    check(refused == 409, f"/prompt is still refused while a turn runs: {refused}")
    first = ab.api("POST", f"/session/{s}/queue",
                   {"parts": [{"type": "text", "text": "Say goodbye"}]})
    second = ab.api("POST", f"/session/{s}/queue",
                    {"parts": [{"type": "text", "text": "Never sent [[ax:edit_back]]"}]})
    check(first.get("state") == "queued" and second.get("position") == 1,
          f"both wait behind the running turn: {first}, {second}")
    listed = ab.api("GET", f"/session/{s}/queue")
    check([i["id"] for i in listed["items"]] == [first["item"]["id"], second["item"]["id"]],
          f"both are queued in order: {listed}")
    ab.api("PATCH", f"/session/{s}/queue/{first['item']['id']}",
           {"parts": [{"type": "text", "text": "Say hello [[ax:hello]]"}]})
    ab.api("DELETE", f"/session/{s}/queue/{second['item']['id']}")
    before = len(ab.replies(s))
    ab.answer(s, perm, "allow_once")

    def sent():
        r = ab.replies(s)
        return ab.session(s)["status"] == "idle" and len(r) > before and r[-1].get("ended") \
            and not ab.api("GET", f"/session/{s}/queue")["items"] and r[-1]
    reply = wait_for(sent, "the queued prompt is sent once the edit turn ends and answered",
                     timeout=TURN_TIMEOUT)
    check(ab.notes() == "omega\n", f"the edit turn ran first: {ab.notes()!r}")
    users = [m for m in ab.messages(s) if m["role"] == "user"]
    texts = [" ".join(p.get("text", "") for p in m["parts"] if p["type"] == "text") for m in users]
    check(texts == ["Edit the notes [[ax:edit]]", "Say hello [[ax:hello]]"],
          f"the edited prompt was sent, the cancelled one never: {texts}")
    check(reply_text(reply).strip(), f"{ab.agent} answered the queued prompt: {reply_text(reply)!r}")


# The smallest PNG: one transparent pixel.
PIXEL_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
             "60e6kgAAAABJRU5ErkJggg==")


def _image_in(body):
    """Whether a model request carries the pixel: as an Anthropic `image` block, an OpenAI
    Responses `input_image` or a Gemini `inlineData` part (each with the base64 bytes)."""
    return any(PIXEL_PNG in t for t in strings(body))


def image(ab):
    """An image pasted in a prompt reaches the model (docs/agents.md §11): the agent
    advertises `promptCapabilities.image`, the prompt goes as an ACP image block, and the
    agent's own model request carries the same bytes; the stored message names it and its
    bytes are served back as they were sent."""
    s = ab.new_session("image")
    since = len(ab.fake.requests)
    accepted = ab.api("POST", f"/session/{s}/prompt", {"parts": [
        {"type": "text", "text": "What is in this picture? [[ax:hello]]"},
        {"type": "image", "mimeType": "image/png", "data": PIXEL_PNG, "name": "pixel.png"},
    ]})
    ab.wait_idle(s, "the image turn ends")
    reqs = ab.fake.requests[since:]
    check(any(_image_in(r["body"]) for r in reqs),
          f"{ab.agent}'s model request carries the image ({len(reqs)} requests)")
    user = next(m for m in ab.messages(s) if m["role"] == "user")
    images = [p for p in user["parts"] if p["type"] == "image"]
    check(images == [{"type": "image", "index": 0, "mimeType": "image/png", "bytes": 70, "name": "pixel.png"}],
          f"the stored prompt names the image: {images}")
    status, served = ab.backend.request("GET", f"/session/{s}/message/{user['id']}/image/0")
    check(status == 200 and served == base64.b64decode(PIXEL_PNG), "the image's bytes are served as sent")
    check(accepted.get("replyId"), f"the prompt was accepted: {accepted}")


def attach_file(ab):
    """An @-file reaches the model (docs/agents.md §11): every adapter advertises
    `embeddedContext`, so the file goes as an embedded text resource and the agent's own model
    request carries its text; the stored prompt keeps the file part, and a path outside the
    project is refused at once (400 `bad_attachment`) with nothing stored."""
    marker = "attached-file-content-7f3a"
    with open(os.path.join(ab.project, "brief.md"), "w") as f:
        f.write(f"# Brief\n{marker}\n")
    s = ab.new_session("attach")
    status, body = ab.backend.request("POST", f"/session/{s}/prompt", {"parts": [
        {"type": "text", "text": "Read this [[ax:hello]]"}, {"type": "file", "path": "../outside.md"}]})
    check(status == 400 and b"bad_attachment" in body, f"a path outside the project is refused: {status} {body[:200]!r}")
    check(not ab.messages(s), "nothing was stored for the refused prompt")
    since = len(ab.fake.requests)
    ab.api("POST", f"/session/{s}/prompt", {"parts": [
        {"type": "text", "text": "Summarise the brief [[ax:hello]]"}, {"type": "file", "path": "brief.md"}]})
    ab.wait_idle(s, "the turn with the file ends")
    reqs = ab.fake.requests[since:]
    check(any(marker in t for r in reqs for t in strings(r["body"])),
          f"{ab.agent}'s model request carries the file's text ({len(reqs)} requests)")
    user = next(m for m in ab.messages(s) if m["role"] == "user")
    check({"type": "file", "path": "brief.md"} in user["parts"], f"the stored prompt keeps the file: {user['parts']}")


SCENARIOS = [
    ("allow_once", allow_once, False),
    ("allow_always", allow_always, False),
    ("reject", reject, False),
    ("abort", abort, False),
    ("reload", reload, False),
    ("screen_api", screen_api, False),
    ("screen_ui", screen_ui, False),
    ("tui_enter", tui_enter, False),
    ("agent_offers", agent_offers, False),
    ("usage", usage, False),
    ("queue", queue, False),
    ("image", image, False),
    ("attach_file", attach_file, False),
    ("restart", restart, True),
    ("long_command", long_command, True),
]
