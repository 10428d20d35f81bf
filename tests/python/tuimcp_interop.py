"""Interop check of `ax-code mcp tui` with the official MCP Python SDK.

Run by crates/cli/tests/tuimcp_interop.rs, which serves a live endpoint from a fake TUI:
    python tuimcp_interop.py BINARY ENDPOINT_JSON SESSION_OK SESSION_PENDING
Protocol with the Rust side: this script prints `PENDING` once a select_session is in
flight, then waits for a `REVOKED` line on stdin. Every tool result, rejections included,
is validated against the tool's outputSchema. Exits non-zero on the first failed check.
"""

import asyncio
import json
import sys

import jsonschema

from axtest import check, mcp_session, run_checks, select_arguments


async def main(binary, endpoint, session_ok, session_pending):
    async with mcp_session(binary, ["mcp", "tui", "--endpoint", endpoint]) as session:
        init = await session.initialize()
        check(init.server_info.name == "ax-code-tuimcp", "server name is ax-code-tuimcp")

        tools = (await session.list_tools()).tools
        names = [tool.name for tool in tools]
        check(names == ["get_view_context", "select_session"], f"exactly the two tools, in order: {names}")
        schemas = {}
        for tool in tools:
            check(tool.input_schema.get("additionalProperties") is False, f"{tool.name}: closed input schema")
            check(tool.output_schema is not None, f"{tool.name}: declares an outputSchema")
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            schemas[tool.name] = tool.output_schema
        check(tools[0].annotations.read_only_hint is True, "get_view_context is read-only")
        check(tools[1].annotations.read_only_hint is False, "select_session is not read-only")
        check(tools[1].annotations.destructive_hint is False, "select_session is not destructive")
        check(tools[1].annotations.idempotent_hint is True, "select_session is idempotent")
        check(tools[1].annotations.open_world_hint is False, "select_session is closed-world")

        def validated(name, result):
            content = result.structured_content
            jsonschema.validate(content, schemas[name])
            check(True, f"{name}: structuredContent {json.dumps(content)} matches the outputSchema")
            check(json.loads(result.content[0].text) == content, f"{name}: text carries the same JSON")
            check(result.is_error == (content["status"] == "rejected"), f"{name}: isError exactly for rejected")
            return content

        context = validated("get_view_context", await session.call_tool("get_view_context", {}))
        check(context["status"] == "context", "the context is readable")
        view = context["context"]

        args = select_arguments(view, session_ok)
        applied = validated("select_session", await session.call_tool("select_session", args))
        check(applied["status"] == "applied", "select_session is applied")
        check(applied["context"]["sessionId"] == session_ok, "the view shows the selected session")

        extra = dict(args, extra=True)
        rejected = validated("select_session", await session.call_tool("select_session", extra))
        check(rejected == {"status": "rejected", "code": "invalid_request"}, "an extra argument is invalid_request")

        now = validated("get_view_context", await session.call_tool("get_view_context", {}))["context"]
        unknown_id = "ses_" + "9" * 26
        unknown = validated("select_session", await session.call_tool("select_session", select_arguments(now, unknown_id)))
        check(unknown == {"status": "rejected", "code": "target_unavailable", "detail": "unknown_session"},
              f"an unknown session is target_unavailable / unknown_session: {unknown}")

        stale = validated("select_session", await session.call_tool("select_session", select_arguments(view, session_pending)))
        check(stale == {"status": "rejected", "code": "stale_revision"}, "an old revision is stale_revision")

        fresh = validated("get_view_context", await session.call_tool("get_view_context", {}))["context"]
        pending = asyncio.create_task(session.call_tool("select_session", select_arguments(fresh, session_pending)))
        await asyncio.sleep(0.05)
        print("PENDING", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        check(line.strip() == "REVOKED", "the TUI revoked sharing")
        revoked = validated("select_session", await asyncio.wait_for(pending, 10))
        check(revoked == {"status": "rejected", "code": "revoked"}, "the pending navigation answers revoked")

        gone = validated("get_view_context", await session.call_tool("get_view_context", {}))
        check(gone == {"status": "rejected", "code": "target_unavailable", "detail": "tui_unreachable"},
              f"after revocation the endpoint is gone: target_unavailable / tui_unreachable: {gone}")
    print("PASS", flush=True)


if __name__ == "__main__":
    run_checks(main, *sys.argv[1:5])
