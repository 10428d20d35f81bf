//! `ax-code mcp tui` end to end: the real binary over stdio JSON-RPC, against a live endpoint
//! served in-process by a fake TUI (a real owner loop).

mod support;

use std::{path::Path, process::Stdio, time::Duration};

use ax_tuimcp::fake::{FakeOptions, FakeTui};
use serde_json::{Value, json};
use support::{AX, chmod, private_temp_root, sid, structured};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout, Command},
};

async fn fake_tui(root: &Path) -> FakeTui {
    let mut options = FakeOptions {
        sessions: vec![sid(1), sid(2)],
        ..FakeOptions::default()
    };
    options.endpoint.temp_root = Some(root.to_owned());
    FakeTui::start(options).await.unwrap()
}

struct Adapter {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl Adapter {
    fn spawn(endpoint: &Path, log: &str) -> Self {
        let mut child = Command::new(AX)
            .args(["mcp", "tui", "--endpoint"])
            .arg(endpoint)
            .env("RUST_LOG", log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Writes `bytes` as they are (a line the client got wrong).
    async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next stdout message, which must come within 5 s ("at once", not the client's own
    /// timeout).
    async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.stdout.next_line())
            .await
            .expect("an answer at once")
            .unwrap()
            .expect("stdout open");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON-RPC: {line}"))
    }

    /// Sends a request and returns its response (every stdout line must be JSON-RPC).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.stdout.next_line())
                .await
                .expect("an answer within 10 s")
                .unwrap()
                .expect("stdout open");
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("stdout carries JSON-RPC only, got: {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    async fn initialize(&mut self) -> Value {
        let answer = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "ax-test", "version": "0"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        answer
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        answer["result"].clone()
    }

    /// Closes stdin and waits for the exit; returns the status and stderr.
    async fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let output = tokio::time::timeout(Duration::from_secs(10), self.child.wait_with_output())
            .await
            .expect("exits when stdin closes")
            .unwrap();
        (
            output.status,
            String::from_utf8_lossy(&output.stderr).into(),
        )
    }
}

#[tokio::test]
async fn tools_list_and_calls_over_stdio() {
    let root = private_temp_root("axa");
    let tui = fake_tui(root.path()).await;
    let mut adapter = Adapter::spawn(tui.endpoint_path(), "warn");
    let init = adapter.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "ax-code-tuimcp");
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let list = adapter.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_view_context", "select_session"]);
    for tool in tools {
        assert_eq!(tool["inputSchema"]["additionalProperties"], false);
        assert_eq!(tool["outputSchema"]["type"], "object");
        assert_eq!(tool["annotations"]["destructiveHint"], false);
        assert_eq!(tool["annotations"]["openWorldHint"], false);
    }
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], false);
    assert_eq!(tools[1]["annotations"]["idempotentHint"], true);
    let mut required: Vec<&str> = tools[1]["inputSchema"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(
        required,
        [
            "expectedRevision",
            "generation",
            "instanceId",
            "requestId",
            "sessionId"
        ]
    );
    let description = tools[1]["description"].as_str().unwrap();
    for teaching in [
        "get_view_context",
        "requestId",
        "timeout_unknown",
        "never retry",
    ] {
        assert!(
            description.contains(teaching),
            "description teaches {teaching}"
        );
    }

    let context = structured(&adapter.call("get_view_context", json!({})).await);
    assert_eq!(context["status"], "context");
    let view = &context["context"];
    assert_eq!(view["route"], "home");
    assert!(view.get("sessionId").is_none());

    let args = json!({
        "requestId": "6f1c1a44-1b7e-4b8e-9a39-0c7f2f7f0e11",
        "instanceId": view["instanceId"],
        "generation": view["generation"],
        "expectedRevision": view["revision"],
        "sessionId": sid(1).as_str(),
    });
    let applied = structured(&adapter.call("select_session", args.clone()).await);
    assert_eq!(applied["status"], "applied", "{applied}");
    assert_eq!(applied["context"]["sessionId"], sid(1).as_str());
    assert_eq!(tui.navigations(), 1);
    // The same requestId again: the original receipt.
    let again = structured(&adapter.call("select_session", args.clone()).await);
    assert_eq!(again, applied);

    // Bad arguments are checked in code: invalid_request with isError.
    let mut bad = Vec::new();
    let mut extra = args.clone();
    extra["extra"] = json!(1);
    bad.push(extra);
    for key in ["requestId", "sessionId", "expectedRevision"] {
        let mut missing = args.clone();
        missing.as_object_mut().unwrap().remove(key);
        bad.push(missing);
    }
    for value in [json!(-1), json!(1.5), json!("1")] {
        let mut wrong = args.clone();
        wrong["expectedRevision"] = value;
        bad.push(wrong);
    }
    let mut short = args.clone();
    short["sessionId"] = json!("ses_123");
    bad.push(short);
    let mut not_uuid = args.clone();
    not_uuid["requestId"] = json!("not-a-uuid");
    bad.push(not_uuid);
    for arguments in bad {
        let result = structured(&adapter.call("select_session", arguments.clone()).await);
        assert_eq!(
            result,
            json!({"status": "rejected", "code": "invalid_request"}),
            "{arguments}"
        );
    }
    let result = structured(&adapter.call("get_view_context", json!({"x": 1})).await);
    assert_eq!(result["code"], "invalid_request");
    assert_eq!(tui.navigations(), 1);

    let unknown = adapter
        .request("tools/call", json!({"name": "type_text", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let method = adapter.request("tools/type", json!({})).await;
    assert_eq!(method["error"]["code"], -32601, "{method}");
    let ping = adapter.request("ping", json!({})).await;
    assert!(ping["result"].is_object(), "{ping}");

    // An unknown session: the TUI answered, so the detail says the session is unknown.
    let now = structured(&adapter.call("get_view_context", json!({})).await)["context"].clone();
    let mut unknown = args.clone();
    unknown["requestId"] = json!("3d0b6c1e-6a55-4f0a-9d1e-6f2b8c1d9a01");
    unknown["expectedRevision"] = now["revision"].clone();
    unknown["sessionId"] = json!(sid(77).as_str());
    let result = structured(&adapter.call("select_session", unknown).await);
    assert_eq!(
        result,
        json!({"status": "rejected", "code": "target_unavailable", "detail": "unknown_session"})
    );

    // After revocation the endpoint is gone: nothing can be sent, and the detail says so.
    tui.revoke().await;
    let gone = structured(&adapter.call("get_view_context", json!({})).await);
    assert_eq!(
        gone,
        json!({"status": "rejected", "code": "target_unavailable", "detail": "tui_unreachable"})
    );
    let mut late = args.clone();
    late["requestId"] = json!("3d0b6c1e-6a55-4f0a-9d1e-6f2b8c1d9a02");
    let result = structured(&adapter.call("select_session", late).await);
    assert_eq!(result["detail"], "tui_unreachable", "{result}");

    let (status, _stderr) = adapter.finish().await;
    assert!(status.success(), "{status}");
    tui.shutdown().await;
}

#[tokio::test]
async fn the_token_never_reaches_logs_or_arguments() {
    let root = private_temp_root("axa");
    let tui = fake_tui(root.path()).await;
    let text = std::fs::read_to_string(tui.endpoint_path()).unwrap();
    let token = serde_json::from_str::<Value>(&text).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut adapter = Adapter::spawn(tui.endpoint_path(), "trace");
    adapter.initialize().await;
    let result = adapter.call("get_view_context", json!({})).await;
    assert_eq!(result["structuredContent"]["status"], "context");
    // An unsafe file is logged with its reason, still without the token.
    chmod(tui.endpoint_path(), 0o644);
    let refused = adapter.call("get_view_context", json!({})).await;
    assert_eq!(refused["structuredContent"]["code"], "target_unavailable");
    let (status, stderr) = adapter.finish().await;
    assert!(status.success());
    assert!(
        stderr.contains("0600") || stderr.contains("600"),
        "{stderr}"
    );
    assert!(!stderr.contains(&token), "the token leaked into the log");
    tui.shutdown().await;
}

#[tokio::test]
async fn a_missing_or_unsafe_endpoint_fails_fast_with_the_reason() {
    let root = private_temp_root("axa");
    let missing = root.path().join("gone").join("endpoint.json");
    let output = tokio::time::timeout(
        Duration::from_secs(10),
        Command::new(AX)
            .args(["mcp", "tui", "--endpoint"])
            .arg(&missing)
            .stdin(Stdio::piped())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");

    let tui = fake_tui(root.path()).await;
    let dir = tui.endpoint_path().parent().unwrap().to_owned();
    chmod(&dir, 0o755);
    let output = Command::new(AX)
        .args(["mcp", "tui", "--endpoint"])
        .arg(tui.endpoint_path())
        .stdin(Stdio::piped())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("mode 755"), "{stderr}");
    chmod(&dir, 0o700);

    let output = Command::new(AX)
        .args(["mcp", "tui", "--endpoint", "endpoint.json"])
        .stdin(Stdio::piped())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("absolute"));
    tui.shutdown().await;
}

#[tokio::test]
async fn mcp_cancellation_cancels_the_pending_navigation() {
    let root = private_temp_root("axa");
    let mut options = FakeOptions {
        sessions: vec![sid(1)],
        gate_validations: true,
        ..FakeOptions::default()
    };
    options.endpoint.temp_root = Some(root.path().to_owned());
    let tui = FakeTui::start(options).await.unwrap();
    let mut adapter = Adapter::spawn(tui.endpoint_path(), "warn");
    adapter.initialize().await;
    let view = structured(&adapter.call("get_view_context", json!({})).await)["context"].clone();
    let args = json!({
        "requestId": "0b7f9a52-58c4-4d8e-8f0e-3d1f7f1e2a10",
        "instanceId": view["instanceId"],
        "generation": view["generation"],
        "expectedRevision": view["revision"],
        "sessionId": sid(1).as_str(),
    });
    adapter
        .send(json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
            "params": {"name": "select_session", "arguments": args}}))
        .await;
    for _ in 0..500 {
        if tui.validations_started() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(tui.validations_started(), 1, "the navigation is in flight");
    adapter
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 900, "reason": "test"}}),
        )
        .await;
    // The TUI learns that its caller is gone, and the receipt says cancelled.
    for _ in 0..500 {
        if !tui.in_flight() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!tui.in_flight(), "the cancellation reached the TUI");
    let replay = structured(&adapter.call("select_session", args.clone()).await);
    assert_eq!(replay, json!({"status": "rejected", "code": "cancelled"}));
    tui.release_validations(10);
    // The controller decides every validation exactly once; after that none can navigate.
    for _ in 0..500 {
        if tui.validations_settled() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        tui.validations_settled(),
        1,
        "the cancelled validation is decided"
    );
    assert_eq!(tui.navigations(), 0);
    let (status, _) = adapter.finish().await;
    assert!(status.success());
    tui.shutdown().await;
}

#[tokio::test]
async fn the_descriptions_explain_every_code_and_the_request_id_rule() {
    let root = private_temp_root("axa");
    let tui = fake_tui(root.path()).await;
    let mut adapter = Adapter::spawn(tui.endpoint_path(), "warn");
    adapter.initialize().await;
    let list = adapter.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    let select = tools[1]["description"].as_str().unwrap();
    for code in [
        "stale_target",
        "stale_revision",
        "not_ready",
        "user_active",
        "busy",
        "request_conflict",
        "request_limit",
        "target_unavailable",
        "unknown_session",
        "tui_unreachable",
        "cancelled",
        "revoked",
        "deadline_exceeded",
        "internal_error",
        "invalid_request",
        "unauthorized",
        "timeout_unknown",
        "outcome_unknown",
    ] {
        assert!(select.contains(code), "select_session explains {code}");
    }
    assert!(select.contains("Every attempt"), "{select}");
    assert!(select.contains("retries included"), "{select}");
    assert!(select.contains("back off"), "a backoff rule for blocked");
    let view = tools[0]["description"].as_str().unwrap();
    for code in [
        "target_unavailable",
        "tui_unreachable",
        "revoked",
        "busy",
        "blocked",
    ] {
        assert!(view.contains(code), "get_view_context explains {code}");
    }
    // The schema allows the detail, only with the two values.
    let rejected = &tools[1]["outputSchema"]["oneOf"][1]["properties"]["detail"]["enum"];
    assert_eq!(rejected, &json!(["unknown_session", "tui_unreachable"]));
    let _ = adapter.finish().await;
    tui.shutdown().await;
}

#[tokio::test]
async fn malformed_json_rpc_gets_the_named_error_at_once() {
    let root = private_temp_root("axa");
    let tui = fake_tui(root.path()).await;
    let mut adapter = Adapter::spawn(tui.endpoint_path(), "warn");
    adapter.initialize().await;
    let error = |m: &Value| (m["error"]["code"].as_i64(), m.get("id").cloned());
    // Non-object arguments: invalid params, with the request's id.
    for (id, arguments) in [(10, json!([])), (11, json!("x")), (12, json!(5))] {
        adapter
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "get_view_context", "arguments": arguments}}))
            .await;
        let m = adapter.next_message().await;
        assert_eq!(error(&m), (Some(-32602), Some(json!(id))), "{m}");
    }
    // Not JSON, and nesting far too deep: parse error, id null.
    adapter
        .send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1,\n")
        .await;
    let m = adapter.next_message().await;
    assert_eq!(error(&m), (Some(-32700), Some(Value::Null)), "{m}");
    let deep = format!("{}{}\n", "[".repeat(5000), "]".repeat(5000));
    adapter.send_raw(deep.as_bytes()).await;
    let m = adapter.next_message().await;
    assert_eq!(error(&m), (Some(-32700), Some(Value::Null)), "{m}");
    // A line over the limit: invalid request, id null; the next line is read normally.
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(2 << 20)
    );
    adapter.send_raw(long.as_bytes()).await;
    let m = adapter.next_message().await;
    assert_eq!(error(&m), (Some(-32600), Some(Value::Null)), "{m}");
    // A batch and an old protocol version: invalid request with "id": null.
    adapter
        .send(json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]))
        .await;
    let m = adapter.next_message().await;
    assert_eq!(error(&m), (Some(-32600), Some(Value::Null)), "{m}");
    adapter
        .send(json!({"jsonrpc": "1.0", "id": 4, "method": "ping"}))
        .await;
    let m = adapter.next_message().await;
    assert_eq!(error(&m), (Some(-32600), Some(Value::Null)), "{m}");
    // The session is fine afterwards.
    let ping = adapter.request("ping", json!({})).await;
    assert!(ping["result"].is_object(), "{ping}");
    let context = structured(&adapter.call("get_view_context", json!({})).await);
    assert_eq!(context["status"], "context");
    let (status, _) = adapter.finish().await;
    assert!(status.success());
    tui.shutdown().await;
}

#[tokio::test]
async fn stdin_closed_before_initialize_says_the_client_went_away() {
    let root = private_temp_root("axa");
    let tui = fake_tui(root.path()).await;
    let output = tokio::time::timeout(
        Duration::from_secs(10),
        Command::new(AX)
            .args(["mcp", "tui", "--endpoint"])
            .arg(tui.endpoint_path())
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("went away"), "{stderr}");
    assert!(
        !stderr.contains("endpoint path"),
        "nothing is wrong with the path: {stderr}"
    );
    tui.shutdown().await;
}
