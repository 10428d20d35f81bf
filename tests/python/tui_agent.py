#!/usr/bin/env python3
"""An agent driving a shared ax-code TUI through the official MCP SDK, step by step.

Started by crates/cli/tests/tui_pty.rs. It spawns `ax-code mcp tui --endpoint PATH` as a stdio
MCP server, checks the tool list once, then reads one command per line on stdin and answers
one JSON line on stdout:

  sessions        -> {"ids": [...]}             (from `ax-code session list --json`)
  context         -> the tool's structured result ({"status": "context", "context": {...}}
                     or {"status": "rejected", "code": ...}), plus "isError"
  select ID       -> reads the context, then select_session with its identity and revision
                     and a fresh requestId; answers the structured result plus "isError"
  quit            -> exits 0

What it checks is printed to stderr; any failed check exits non-zero.
"""

import argparse
import asyncio
import json
import subprocess
import sys

from axtest import mcp_session, select_arguments


def log(msg):
    print(f"tui_agent: {msg}", file=sys.stderr, flush=True)


def check(cond, msg, quiet=False):
    if not cond:
        log(f"FAIL {msg}")
        sys.exit(1)
    if not quiet:
        log(f"ok   {msg}")


def structured(result):
    # SDK 2.x spells it structured_content / is_error; 1.x structuredContent / isError.
    data = getattr(result, "structured_content", None)
    if data is None:
        data = getattr(result, "structuredContent", None)
    is_error = getattr(result, "is_error", None)
    if is_error is None:
        is_error = getattr(result, "isError", False)
    check(isinstance(data, dict), "the result carries structured content", quiet=True)
    text = result.content[0].text if result.content else None
    check(text is not None and json.loads(text) == data, "text content = structured", quiet=True)
    check(bool(is_error) == (data.get("status") == "rejected"), "isError iff rejected", quiet=True)
    out = dict(data)
    out["isError"] = bool(is_error)
    log(f"ok   {data.get('status')} {data.get('code', '')} (structured, text and isError agree)")
    return out


async def read_line():
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def reply(obj):
    print(json.dumps(obj), flush=True)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ax-code", required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--project", required=True)
    args = ap.parse_args()

    async with mcp_session(args.ax_code, ["mcp", "tui", "--endpoint", args.endpoint]) as session:
        await session.initialize()
        tools = await session.list_tools()
        names = [t.name for t in tools.tools]
        check(names == ["get_view_context", "select_session"], f"tools in order: {names}")
        reply({"ready": True})
        while True:
            line = (await read_line()).strip()
            if not line or line == "quit":
                return
            cmd, _, arg = line.partition(" ")
            if cmd == "sessions":
                out = subprocess.run(
                    [args.ax_code, "session", "list", "--json"],
                    cwd=args.project,
                    capture_output=True,
                    text=True,
                    timeout=20,
                )
                check(out.returncode == 0, f"session list --json ran: {out.stderr.strip()}")
                listed = json.loads(out.stdout)
                reply({"ids": [s["id"] for s in listed]})
            elif cmd == "context":
                res = await session.call_tool("get_view_context", {})
                reply(structured(res))
            elif cmd == "select":
                ctx = structured(await session.call_tool("get_view_context", {}))
                if ctx["status"] != "context":
                    reply(ctx)
                    continue
                view = ctx["context"]
                res = await session.call_tool("select_session", select_arguments(view, arg))
                reply(structured(res))
            else:
                log(f"FAIL unknown command {line!r}")
                sys.exit(2)


if __name__ == "__main__":
    asyncio.run(main())
