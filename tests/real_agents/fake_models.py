"""Scripted fake model servers for the real ACP adapters (docs/agents.md §9, §10).

One HTTP server on a loopback port answers the three model APIs the adapters speak:
- Anthropic Messages (`POST /v1/messages`, streamed SSE) for Claude Code,
- OpenAI Responses (`POST .../responses`, streamed SSE) for Codex,
- Gemini (`POST .../models/M:streamGenerateContent?alt=sse`, `:generateContent`,
  `:countTokens`) for Gemini CLI.

A conversation is chosen by a marker in the person's prompt, `[[ax:NAME]]`; `SCRIPTS[NAME]`
is a list of *moves*. The server counts the tool results that follow the marked prompt in the
request it gets and answers with the move of that index, so the same request always gets the
same answer (deterministic, whatever the timing). A move is a list of steps:
`("think", text)`, `("text", text)`, `("slow", n, text)` (n chunks, one every 0.1 s),
`("tool", kind, args)` with kind `read`, `edit`, `shell`, `plan` or `screen` (mapped to each
agent's own tool name and argument shape). A move ends the model's message; it ends the turn
unless it calls a tool.

Every request is appended to `log_path` as one JSON line (path, body), so a test can check
what the agent asked the model (e.g. which tools it listed).
"""

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARK = re.compile(r"\[\[ax:([a-z0-9_-]+)\]\]")

# The scripted conversations. Paths are relative to the project directory.
SCRIPTS = {
    "hello": [[("think", "The person greets me."), ("text", "Hello from the fake model.")]],
    "read": [
        [("text", "Reading the notes."), ("tool", "read", {"path": "notes.txt"})],
        [("text", "The notes were read.")],
    ],
    # Claude Code edits only files it has read.
    "edit": [
        [("think", "Edit the notes."), ("tool", "read", {"path": "notes.txt"})],
        [("tool", "edit", {"path": "notes.txt", "old": "alpha", "new": "omega"})],
        [("text", "The notes were edited.")],
    ],
    "edit_back": [
        [("tool", "read", {"path": "notes.txt"})],
        [("tool", "edit", {"path": "notes.txt", "old": "omega", "new": "alpha"})],
        [("text", "The notes were edited back.")],
    ],
    "shell": [
        [("tool", "shell", {"command": "echo conformance-shell-output"})],
        [("text", "The command ran.")],
    ],
    "plan": [
        [("tool", "plan", {"items": ["inspect the notes", "edit the notes"]})],
        [("text", "The plan is set.")],
    ],
    "screen": [
        [("tool", "screen", {"action": "sidebar_hide"})],
        [("text", "screen done.")],
    ],
    "screen_show": [
        [("tool", "screen", {"action": "sidebar_show"})],
        [("text", "screen done.")],
    ],
    "full": [
        [("think", "Plan first."), ("tool", "plan", {"items": ["read", "edit", "run"]})],
        [("text", "Reading."), ("tool", "read", {"path": "notes.txt"})],
        [("tool", "edit", {"path": "notes.txt", "old": "alpha", "new": "omega"})],
        [("tool", "shell", {"command": "echo conformance-shell-output"})],
        [("text", "All done.")],
    ],
    "slow": [[("slow", 60, "chunk ")]],
    "long": [
        [("tool", "shell", {"command": "for i in 1 2 3 4 5 6; do sleep 10; done; echo finished-long"})],
        [("text", "The long command ended.")],
    ],
}


def _now():
    return int(time.time())


class Conversation:
    """What a request says: the script's name and how many tool results follow its prompt."""

    def __init__(self, name, results, tools):
        self.name = name
        self.results = results
        self.tools = tools

    def move(self):
        script = SCRIPTS.get(self.name)
        if script is None:
            return [("text", f"no script {self.name!r}")]
        if self.results >= len(script):
            return [("text", "The script is over.")]
        return script[self.results]


def _marked(texts):
    """The LAST marker among `texts`: Claude Code folds the person's messages that follow an
    interrupted request into one user message (`[old prompt, "[Request interrupted by user]",
    new prompt]`), and the newest prompt is the one to answer."""
    found = None
    for t in texts:
        for m in MARK.finditer(t):
            found = m.group(1)
    return found


def _texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def _pick(tools, *candidates, contains=None):
    """The first of `candidates` the agent offers, else one containing `contains`."""
    for c in candidates:
        if c in tools:
            return c
    if contains:
        for t in tools:
            if contains in t:
                return t
    return candidates[0] if candidates else None


# --- Anthropic Messages (Claude Code) -------------------------------------------------------

def anthropic_conversation(body):
    msgs = body.get("messages") or []
    name, results = None, 0
    for m in msgs:
        content = m.get("content")
        items = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if m.get("role") == "user":
            texts = [i.get("text", "") for i in items if i.get("type") == "text"]
            found = _marked(texts)
            if found:
                name, results = found, 0
            results += sum(1 for i in items if i.get("type") == "tool_result")
    tools = [t.get("name") for t in body.get("tools") or []]
    return Conversation(name, results, tools)


def anthropic_tool(kind, args, tools, cwd):
    if kind == "read":
        return "Read", {"file_path": f"{cwd}/{args['path']}"}
    if kind == "edit":
        return "Edit", {"file_path": f"{cwd}/{args['path']}", "old_string": args["old"],
                        "new_string": args["new"]}
    if kind == "shell":
        return "Bash", {"command": args["command"], "description": "Run the command"}
    if kind == "plan":
        return "TodoWrite", {"todos": [{"content": i, "status": "pending", "activeForm": i}
                                       for i in args["items"]]}
    if kind == "screen":
        return _pick(tools, "mcp__ax-code-screen__screen", contains="screen"), {"action": args["action"]}
    raise ValueError(kind)


def anthropic_stream(handler, conv, cwd):
    """Streams one move as Messages SSE events."""
    def event(kind, data):
        data["type"] = kind
        handler.sse(f"event: {kind}\ndata: {json.dumps(data)}\n\n")

    event("message_start", {"message": {
        "id": f"msg_{time.monotonic_ns()}", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 0,
                  "cache_creation_input_tokens": 0}}})
    stop = "end_turn"
    for index, step in enumerate(conv.move()):
        if step[0] == "think":
            event("content_block_start", {"index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            event("content_block_delta", {"index": index, "delta": {"type": "thinking_delta", "thinking": step[1]}})
            event("content_block_delta", {"index": index, "delta": {"type": "signature_delta", "signature": "c2ln"}})
        elif step[0] in ("text", "slow"):
            event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            chunks = [step[1]] if step[0] == "text" else [step[2]] * step[1]
            for c in chunks:
                event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": c}})
                if step[0] == "slow":
                    time.sleep(0.1)
        elif step[0] == "tool":
            name, args = anthropic_tool(step[1], step[2], conv.tools, cwd)
            tid = f"toolu_{conv.name}_{conv.results}"
            event("content_block_start", {"index": index, "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}})
            event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}})
            stop = "tool_use"
        event("content_block_stop", {"index": index})
    event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 20}})
    event("message_stop", {})


# --- OpenAI Responses (Codex) ---------------------------------------------------------------

def responses_conversation(body):
    name, results = None, 0
    for item in body.get("input") or []:
        if item.get("type") == "message" and item.get("role") == "user":
            found = _marked(list(_texts(item.get("content"))))
            if found:
                name, results = found, 0
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            results += 1
    tools = []
    for t in body.get("tools") or []:
        if t.get("type") == "namespace":
            # Codex groups an MCP server's tools in a namespace (`mcp__SERVER`); a call names
            # both: {"namespace": "mcp__ax_code_screen", "name": "screen"}.
            tools += [f"{t['name']}.{i.get('name')}" for i in t.get("tools") or []]
        elif t.get("name"):
            tools.append(t["name"])
    return Conversation(name, results, tools)


def responses_tool(kind, args, tools, cwd):
    """(type, name, arguments-or-input) of a Codex tool call."""
    if kind == "read":
        return "function_call", _pick(tools, "shell", "exec_command", "shell_command"), _codex_shell(tools, f"cat {args['path']}", cwd)
    if kind == "shell":
        return "function_call", _pick(tools, "shell", "exec_command", "shell_command"), _codex_shell(tools, args["command"], cwd)
    if kind == "edit":
        patch = (f"*** Begin Patch\n*** Update File: {args['path']}\n@@\n-{args['old']}\n+{args['new']}\n"
                 "*** End Patch\n")
        if "apply_patch" in tools:
            return "custom_tool_call", "apply_patch", patch
        return "function_call", _pick(tools, "shell"), _codex_shell(tools, ["apply_patch", patch], cwd)
    if kind == "plan":
        return "function_call", "update_plan", json.dumps(
            {"plan": [{"step": i, "status": "pending"} for i in args["items"]]})
    if kind == "screen":
        return "function_call", _pick(tools, "mcp__ax_code_screen.screen", contains="screen"), json.dumps({"action": args["action"]})
    raise ValueError(kind)


def _codex_shell(tools, command, cwd):
    name = _pick(tools, "shell", "exec_command", "shell_command")
    if name == "shell":
        argv = command if isinstance(command, list) else ["bash", "-lc", command]
        return json.dumps({"command": argv, "workdir": cwd, "timeout_ms": 120000})
    if name == "exec_command":
        return json.dumps({"cmd": command if isinstance(command, str) else " ".join(command), "workdir": cwd})
    return json.dumps({"command": command, "workdir": cwd})


def responses_stream(handler, conv, cwd):
    seq = [0]

    def event(kind, data):
        data["type"] = kind
        data["sequence_number"] = seq[0]
        seq[0] += 1
        handler.sse(f"event: {kind}\ndata: {json.dumps(data)}\n\n")

    rid = f"resp_{time.monotonic_ns()}"
    event("response.created", {"response": {"id": rid, "object": "response", "status": "in_progress", "output": []}})
    out = 0
    for step in conv.move():
        if step[0] == "think":
            iid = f"rs_{rid}_{out}"
            event("response.output_item.added", {"output_index": out, "item": {"type": "reasoning", "id": iid, "summary": []}})
            event("response.reasoning_summary_part.added", {"item_id": iid, "output_index": out, "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
            event("response.reasoning_summary_text.delta", {"item_id": iid, "output_index": out, "summary_index": 0, "delta": step[1]})
            event("response.reasoning_summary_text.done", {"item_id": iid, "output_index": out, "summary_index": 0, "text": step[1]})
            event("response.output_item.done", {"output_index": out, "item": {"type": "reasoning", "id": iid, "summary": [{"type": "summary_text", "text": step[1]}]}})
        elif step[0] in ("text", "slow"):
            iid = f"msg_{rid}_{out}"
            event("response.output_item.added", {"output_index": out, "item": {"type": "message", "id": iid, "role": "assistant", "status": "in_progress", "content": []}})
            chunks = [step[1]] if step[0] == "text" else [step[2]] * step[1]
            for c in chunks:
                event("response.output_text.delta", {"item_id": iid, "output_index": out, "content_index": 0, "delta": c})
                if step[0] == "slow":
                    time.sleep(0.1)
            full = "".join(chunks)
            event("response.output_item.done", {"output_index": out, "item": {"type": "message", "id": iid, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": full, "annotations": []}]}})
        elif step[0] == "tool":
            kind, name, payload = responses_tool(step[1], step[2], conv.tools, cwd)
            call_id = f"call_{conv.name}_{conv.results}"
            iid = f"fc_{rid}_{out}"
            if kind == "function_call":
                item = {"type": "function_call", "id": iid, "call_id": call_id, "name": name, "arguments": payload, "status": "completed"}
                if "." in name:
                    item["namespace"], item["name"] = name.split(".", 1)
            else:
                item = {"type": "custom_tool_call", "id": iid, "call_id": call_id, "name": name, "input": payload, "status": "completed"}
            event("response.output_item.added", {"output_index": out, "item": item})
            event("response.output_item.done", {"output_index": out, "item": item})
        out += 1
    event("response.completed", {"response": {"id": rid, "object": "response", "status": "completed", "output": [],
                                              "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                                                        "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                                                        "total_tokens": 120}}})


# --- Gemini -----------------------------------------------------------------------------------

def gemini_conversation(body):
    name, results = None, 0
    for c in body.get("contents") or []:
        parts = c.get("parts") or []
        if c.get("role") == "user":
            found = _marked([p.get("text", "") for p in parts if "text" in p])
            if found:
                name, results = found, 0
            # One model move answered = one user content of function responses.
            if any("functionResponse" in p for p in parts):
                results += 1
    tools = []
    for t in body.get("tools") or []:
        tools += [d.get("name") for d in t.get("functionDeclarations") or []]
    return Conversation(name, results, tools)


def gemini_tool(kind, args, tools, cwd):
    if kind == "read":
        return "read_file", {"file_path": f"{cwd}/{args['path']}", "absolute_path": f"{cwd}/{args['path']}"}
    if kind == "edit":
        return "replace", {"file_path": f"{cwd}/{args['path']}", "old_string": args["old"],
                           "new_string": args["new"], "instruction": "Replace the word"}
    if kind == "shell":
        return "run_shell_command", {"command": args["command"], "description": "Run the command"}
    if kind == "plan":
        return _pick(tools, "write_todos"), {"todos": [{"description": i, "status": "pending"} for i in args["items"]]}
    if kind == "screen":
        return _pick(tools, "screen", contains="screen"), {"action": args["action"]}
    raise ValueError(kind)


def gemini_chunks(conv, cwd):
    """The streamed chunks (each a GenerateContentResponse) of one move."""
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
    for step in conv.move():
        if step[0] == "think":
            yield [{"text": step[1], "thought": True}], 0
        elif step[0] == "text":
            yield [{"text": step[1]}], 0
        elif step[0] == "slow":
            for _ in range(step[1]):
                yield [{"text": step[2]}], 0.1
        elif step[0] == "tool":
            name, args = gemini_tool(step[1], step[2], conv.tools, cwd)
            yield [{"functionCall": {"name": name, "args": args}}], 0
    yield None, usage


def gemini_stream(handler, conv, cwd):
    for parts, extra in gemini_chunks(conv, cwd):
        if parts is None:
            chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
                     "usageMetadata": extra, "modelVersion": "gemini-2.5-pro"}
        else:
            chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                     "modelVersion": "gemini-2.5-pro"}
        handler.sse(f"data: {json.dumps(chunk)}\r\n\r\n")
        if parts is not None and extra:
            time.sleep(extra)


# --- The server -------------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def sse(self, text):
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def end_sse(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def json_reply(self, value, status=200):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.server.record(self.path, None)
        if "/models" in self.path:
            self.json_reply({"models": [], "data": []})
        else:
            self.json_reply({})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd" or (raw[:4] == b"\x28\xb5\x2f\xfd"):
            self.server.record(self.path, {"undecodable": "zstd"})
            self.json_reply({"error": "zstd bodies are not understood"}, 400)
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"undecodable": raw[:200].decode(errors="replace")}
        self.server.record(self.path, body)
        cwd = self.server.cwd
        path = self.path.split("?")[0]
        try:
            if path.endswith("/messages/count_tokens"):
                self.json_reply({"input_tokens": 100})
            elif path.endswith("/messages"):
                conv = anthropic_conversation(body)
                if not body.get("stream"):
                    # Side requests (titles, quota checks): one short text.
                    self.json_reply({"id": "msg_side", "type": "message", "role": "assistant",
                                     "model": body.get("model", "m"), "content": [{"type": "text", "text": "Conformance"}],
                                     "stop_reason": "end_turn", "stop_sequence": None,
                                     "usage": {"input_tokens": 10, "output_tokens": 1}})
                    return
                self.start_sse()
                if conv.name is None:
                    conv = Conversation("hello", 0, conv.tools)
                anthropic_stream(self, conv, cwd)
                self.end_sse()
            elif path.endswith("/responses"):
                conv = responses_conversation(body)
                if conv.name is None:
                    conv = Conversation("hello", 0, conv.tools)
                self.start_sse()
                responses_stream(self, conv, cwd)
                self.end_sse()
            elif ":streamGenerateContent" in path:
                conv = gemini_conversation(body)
                if conv.name is None:
                    conv = Conversation("hello", 0, conv.tools)
                self.start_sse()
                gemini_stream(self, conv, cwd)
                self.end_sse()
            elif ":generateContent" in path:
                # Gemini CLI's side questions (next speaker, loop checks, summaries): JSON
                # answers that end the turn.
                text = json.dumps({"reasoning": "The model's turn is complete.", "next_speaker": "user"})
                self.json_reply({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                                 "finishReason": "STOP", "index": 0}],
                                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
            elif ":countTokens" in path:
                self.json_reply({"totalTokens": 100})
            else:
                self.json_reply({"error": {"message": f"unknown path {path}"}}, 404)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent went away (abort)


class FakeModels(ThreadingHTTPServer):
    """The fake model server on 127.0.0.1:PORT, recording every request into `log_path`."""

    daemon_threads = True

    def __init__(self, log_path, cwd, port=0):
        super().__init__(("127.0.0.1", port), Handler)
        self.log_path = log_path
        self.cwd = cwd
        self.lock = threading.Lock()
        self.requests = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def record(self, path, body):
        with self.lock:
            self.requests.append({"path": path, "body": body})
            with open(self.log_path, "a") as f:
                f.write(json.dumps({"path": path, "body": body}) + "\n")

    def tool_lists(self):
        """The tool names of each recorded model request that listed tools."""
        with self.lock:
            reqs = list(self.requests)
        out = []
        for r in reqs:
            b = r["body"] or {}
            if b.get("tools"):
                names = []
                for t in b["tools"]:
                    names.append(t.get("name"))
                    names += [d.get("name") for d in t.get("functionDeclarations") or []]
                out.append([n for n in names if n])
        return out

    def stop(self):
        self.shutdown()
        self.server_close()


if __name__ == "__main__":
    import sys
    server = FakeModels(sys.argv[1] if len(sys.argv) > 1 else "/dev/null", sys.argv[2] if len(sys.argv) > 2 else "/tmp")
    print(server.url, flush=True)
    server.thread.join()
