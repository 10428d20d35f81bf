"""Runs an ACP agent and records its traffic: `acp_tee.py DIR -- COMMAND ARGS...`.

Relays stdin to the agent and the agent's stdout back, line by line, and appends each line to
`DIR/trace-<ms>-<pid>.jsonl` as `{"t": ms since start, "dir": "to_agent"|"from_agent",
"msg": <the JSON-RPC message>}`. The session-scoped screen credential ax-code puts in
`mcpServers[].env` (docs/agents.md §8) is replaced by "<redacted>" in the record (the agent
still gets it). The agent stays in this process's group, so a signal to the group reaches it;
when the agent exits, so does this wrapper, with its status.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

SECRET_ENV = "AX_CODE_SCREEN_TOKEN"


def redacted(msg):
    """`msg` with the screen credential of each mcpServers entry hidden."""
    params = msg.get("params") if isinstance(msg, dict) else None
    if not isinstance(params, dict) or not isinstance(params.get("mcpServers"), list):
        return msg
    msg = json.loads(json.dumps(msg))
    for server in msg["params"]["mcpServers"]:
        for var in server.get("env") or []:
            if isinstance(var, dict) and var.get("name") == SECRET_ENV:
                var["value"] = "<redacted>"
    return msg


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: acp_tee.py DIR -- COMMAND ARGS...")
    out_dir, command = sys.argv[1], sys.argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    start = time.monotonic()
    path = os.path.join(out_dir, f"trace-{int(time.time() * 1000)}-{os.getpid()}.jsonl")
    log = open(path, "a", buffering=1)
    lock = threading.Lock()

    def record(direction, line):
        try:
            msg = redacted(json.loads(line))
        except ValueError:
            msg = {"unparsed": line.decode(errors="replace").rstrip("\n")}
        entry = {"t": int((time.monotonic() - start) * 1000), "dir": direction, "msg": msg}
        with lock:
            log.write(json.dumps(entry) + "\n")

    agent = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: agent.send_signal(s))

    def pump_in():
        for line in sys.stdin.buffer:
            record("to_agent", line)
            try:
                agent.stdin.write(line)
                agent.stdin.flush()
            except (BrokenPipeError, ValueError):
                break
        try:
            agent.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    threading.Thread(target=pump_in, daemon=True).start()
    for line in agent.stdout:
        record("from_agent", line)
        try:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            break
    code = agent.wait()
    log.close()
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
