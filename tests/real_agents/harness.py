"""One real agent behind one real `ax-code serve` (docs/agents.md §9, §10).

`AgentBackend(agent, binary, cache, root)`: the fake model server, an ax-code config that
defines the agent (wrapped by acp_tee.py, so every ACP line is recorded under `root/traces`),
and `ax-code serve` (tests/python/axtest.py's `Backend`) with a private data directory, HOME
and XDG_CONFIG_HOME. Helpers to prompt, answer, wait and read the transcript through the API,
an `/event` reader, and `restart()` (stop the backend, start it again on the same data).
"""

import glob
import json
import os
import sys
import threading
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import agents  # noqa: E402
from axtest import Backend, check, strings, wait_for  # noqa: E402
from fake_models import FakeModels  # noqa: E402

# Waits for the real agents (each starts a Node or native process; the machine is small).
TURN_TIMEOUT = 90


class Events:
    """Reads `/event` in a thread and keeps every envelope."""

    def __init__(self, backend):
        self.items = []
        self.lock = threading.Lock()
        req = urllib.request.Request(backend.url + "/event")
        req.add_header("Authorization", f"Bearer {backend.token}")
        self.res = urllib.request.urlopen(req, timeout=300)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            for raw in self.res:
                line = raw.decode().rstrip("\n")
                if line.startswith("data:"):
                    with self.lock:
                        self.items.append(json.loads(line[5:]))
        except Exception:
            pass  # the backend stopped

    def deltas(self, message_id):
        with self.lock:
            return [e["event"] for e in self.items
                    if e["event"].get("type") == "message.delta" and e["event"].get("messageId") == message_id]

    def close(self):
        try:
            self.res.close()
        except Exception:
            pass


class AgentBackend:
    def __init__(self, agent, binary, cache, root):
        self.agent = agent
        self.binary = binary
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.project = os.path.realpath(os.path.join(root, "project"))
        os.makedirs(self.project, exist_ok=True)
        self.traces = os.path.join(root, "traces")
        self.fake = FakeModels(os.path.join(root, "model-requests.jsonl"), self.project)
        command, args, env = agents.setup(agent, cache, self.fake.url, os.path.join(root, "home"))
        self.config_home = os.path.join(root, "config")
        os.makedirs(os.path.join(self.config_home, "ax-code"), exist_ok=True)
        tee = [os.path.join(HERE, "acp_tee.py"), "--mcp", self.traces, "--", command, *args]
        env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        with open(os.path.join(self.config_home, "ax-code", "config.toml"), "w") as f:
            f.write(f"[agents.{agent}]\ncommand = {json.dumps(sys.executable)}\n"
                    f"args = {json.dumps(tee)}\nenv = {{ {env_toml} }}\n")
        self.backend = None
        self.scenario_sessions = []
        self.start()

    def start(self):
        self.backend = Backend(self.binary, self.root, extra_env={"XDG_CONFIG_HOME": self.config_home})

    def restart(self, kill=False):
        """Stops the backend (SIGTERM, or SIGKILL with `kill`) and starts it on the same data."""
        if kill:
            self.backend.proc.kill()
            self.backend.proc.wait()
            self.backend.log.close()
        else:
            self.backend.stop()
        self.start()

    def stop(self):
        if self.backend is not None:
            self.backend.stop()
        self.fake.stop()

    # --- the API ---------------------------------------------------------------------------

    def api(self, method, path, body=None):
        return self.backend.api(method, path, body)

    def new_session(self, title):
        sid = self.api("POST", "/session", {"agent": self.agent, "title": title})["id"]
        self.scenario_sessions.append(sid)
        return sid

    def prompt(self, session, text, client=None):
        body = {"parts": [{"type": "text", "text": text}]}
        if client:
            body["client"] = client
        return self.api("POST", f"/session/{session}/prompt", body)

    def session(self, session):
        return self.api("GET", f"/session/{session}")

    def messages(self, session):
        return self.api("GET", f"/session/{session}/message")

    def replies(self, session):
        return [m for m in self.messages(session) if m["role"] == "assistant"]

    def wait_idle(self, session, what, timeout=TURN_TIMEOUT):
        return wait_for(lambda: self.session(session)["status"] == "idle" and self.replies(session)
                        and self.replies(session)[-1].get("ended"), what, timeout=timeout)

    def wait_permission(self, session, what, timeout=TURN_TIMEOUT):
        return wait_for(lambda: next((p for p in self.api("GET", "/permission")
                                      if p["sessionId"] == session and p["state"] == "pending"), None),
                        what, timeout=timeout)

    def answer(self, session, permission, reply):
        return self.api("POST", f"/session/{session}/permission/{permission['id']}", {"reply": reply})

    def reset_notes(self, text="alpha\n"):
        with open(os.path.join(self.project, "notes.txt"), "w") as f:
            f.write(text)

    def notes(self):
        with open(os.path.join(self.project, "notes.txt")) as f:
            return f.read()

    def trace_files(self, session):
        """This session's ACP traces, oldest first (ax-code names the session in the screen
        server's env of `session/new`/`session/load`)."""
        found = []
        for path in sorted(glob.glob(os.path.join(self.traces, "trace-*.jsonl"))):
            with open(path) as f:
                if session in f.read():
                    found.append(path)
        return found

    def trace(self, session):
        out = []
        for path in self.trace_files(session):
            with open(path) as f:
                out += [json.loads(line) for line in f if line.strip()]
        return out


def parts_of(reply, kind):
    return [p for p in reply["parts"] if p.get("type") == kind]


def reply_text(reply):
    return "".join(p["text"] for p in parts_of(reply, "text"))


def check_options_named(permission):
    """The permission lists the agent's options by kind; allow_once is among them."""
    kinds = [o.get("kind") for o in permission.get("options", [])]
    check("allow_once" in kinds and any(k.startswith("reject") for k in kinds),
          f"the permission offers the agent's options: {kinds}")
    return kinds
