"""Runs an ACP agent and records its traffic: `acp_tee.py [--mcp] DIR -- COMMAND ARGS...`.

Relays stdin to the agent and the agent's stdout back, line by line, and appends each line to
`DIR/trace-<ms>-<pid>.jsonl` as `{"t": ms since start, "dir": "to_agent"|"from_agent",
"msg": <the JSON-RPC message>}`. The session-scoped screen credential ax-code puts in
`mcpServers[].env` (docs/agents.md §8) is replaced by "<redacted>" in the record (the agent
still gets it). The agent stays in this process's group, so a signal to the group reaches it;
when the agent exits, so does this wrapper, with its status.

With `--mcp` the stdio MCP servers ax-code hands the agent (`mcpServers` of `session/new`,
`session/load`, `session/resume`) are started through this wrapper too, so their traffic is
recorded in `DIR/mcp/` (the record of the ACP line keeps the original entry).
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


def wrap_mcp(line, out_dir):
    """`line` with each stdio MCP server started through this wrapper (recording into
    `out_dir/mcp`); unchanged when it names none."""
    try:
        msg = json.loads(line)
    except ValueError:
        return line
    params = msg.get("params") if isinstance(msg, dict) else None
    if not isinstance(params, dict) or not isinstance(params.get("mcpServers"), list):
        return line
    for server in params["mcpServers"]:
        if "command" in server:
            server["args"] = [os.path.abspath(__file__), os.path.join(out_dir, "mcp"), "--",
                              server["command"], *server.get("args", [])]
            server["command"] = sys.executable
    return (json.dumps(msg) + "\n").encode()


def main():
    args = sys.argv[1:]
    mcp = args[:1] == ["--mcp"]
    if mcp:
        args = args[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: acp_tee.py [--mcp] DIR -- COMMAND ARGS...")
    out_dir, command = args[0], args[2:]
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
            if mcp:
                line = wrap_mcp(line, out_dir)
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
