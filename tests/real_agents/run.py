"""Runs the real-agent conformance suite (scripts/real-agents.sh calls this).

    run.py --binary AX_CODE --cache NPM_PREFIX [--traces DIR] [AGENT [SCENARIO]]

Each agent gets one backend in a child process of its own (the agents run in parallel; the
scenarios of one agent run one after another, those that restart the backend last). Prints one
line per scenario, `PASS AGENT SCENARIO (Ns)` or `FAIL AGENT SCENARIO: WHY (log: PATH)`, and
finally `N passed, N failed`; exits 1 when anything failed. With `--traces DIR` each
scenario's ACP traffic is copied to `DIR/AGENT-SCENARIO.jsonl`.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import agents  # noqa: E402
from axtest import CheckFailed  # noqa: E402


def run_agent(args):
    """Child: runs the chosen scenarios of one agent; one JSON line per scenario on stdout."""
    from harness import AgentBackend
    from scenarios import SCENARIOS

    chosen = [s for s in SCENARIOS if args.scenario in (None, s[0])]
    chosen.sort(key=lambda s: s[2])
    root = tempfile.mkdtemp(prefix=f"ax-real-{args.agent}-")
    out = sys.stdout
    ab = None
    try:
        for name, fn, _restarts in chosen:
            log_path = os.path.join(root, f"{name}.log")
            start = time.monotonic()
            result = {"agent": args.agent, "scenario": name, "log": log_path}
            with open(log_path, "w") as log, contextlib.redirect_stdout(log):
                try:
                    if ab is None:
                        ab = AgentBackend(args.agent, args.binary, args.cache, os.path.join(root, "run"))
                    ab.scenario_sessions = []
                    fn(ab)
                    result["ok"] = True
                except CheckFailed as e:
                    result.update(ok=False, why=str(e))
                except Exception as e:  # a broken scenario is a failure, with its traceback
                    traceback.print_exc(file=log)
                    result.update(ok=False, why=f"{type(e).__name__}: {e}")
            result["secs"] = round(time.monotonic() - start, 1)
            if ab is not None:
                cleanup(ab)
            if args.traces and ab is not None:
                save_traces(ab, name, args)
            out.write(json.dumps(result) + "\n")
            out.flush()
    finally:
        if ab is not None:
            with contextlib.suppress(Exception):
                ab.stop()


def cleanup(ab):
    """Stops whatever a scenario left running, so the next one starts clean."""
    for s in ab.scenario_sessions:
        with contextlib.suppress(Exception):
            if ab.session(s)["status"] != "idle":
                ab.api("POST", f"/session/{s}/abort")


def save_traces(ab, scenario, args):
    """Copies the traces of the sessions `scenario` created to TRACES/AGENT-SCENARIO.jsonl."""
    lines = []
    for s in ab.scenario_sessions:
        for entry in ab.trace(s):
            lines.append(json.dumps(entry))
    if lines:
        os.makedirs(args.traces, exist_ok=True)
        with open(os.path.join(args.traces, f"{args.agent}-{scenario}.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--traces")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("agent", nargs="?")
    ap.add_argument("scenario", nargs="?")
    args = ap.parse_args()
    if args.agent and args.agent not in agents.AGENTS:
        sys.exit(f"unknown agent {args.agent!r}: one of {', '.join(agents.AGENTS)}")
    if args.child:
        run_agent(args)
        return
    from scenarios import SCENARIOS
    if args.scenario and args.scenario not in [s[0] for s in SCENARIOS]:
        sys.exit(f"unknown scenario {args.scenario!r}: one of {', '.join(s[0] for s in SCENARIOS)}")
    children = []
    for agent in [args.agent] if args.agent else agents.AGENTS:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--binary", args.binary,
               "--cache", args.cache, agent]
        if args.scenario:
            cmd.append(args.scenario)
        if args.traces:
            cmd[3:3] = ["--traces", args.traces]
        children.append((agent, subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)))
    passed = failed = 0
    for agent, child in children:
        seen = 0
        for line in child.stdout:
            r = json.loads(line)
            seen += 1
            if r["ok"]:
                passed += 1
                print(f"PASS {r['agent']} {r['scenario']} ({r['secs']}s)", flush=True)
            else:
                failed += 1
                print(f"FAIL {r['agent']} {r['scenario']}: {r['why']} (log: {r['log']})", flush=True)
        if child.wait() != 0 and seen == 0:
            failed += 1
            print(f"FAIL {agent}: the runner stopped (status {child.returncode})", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
