//! `ax-code mcp tui` over stdio JSON-RPC, and checks of TUIMCP answers.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use ax_tuimcp::SessionId;
use serde_json::{Value, json};

use super::{AX, Env, WAIT};

/// `ax-code mcp tui --endpoint PATH`, driven over stdio JSON-RPC (initialized on spawn).
pub struct Adapter {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Answers read while waiting for another id.
    early: Vec<Value>,
    next_id: i64,
}

impl Adapter {
    pub fn spawn(env: &Env, endpoint: &Path) -> Adapter {
        let mut child = Command::new(AX)
            .args(["mcp", "tui", "--endpoint"])
            .arg(endpoint)
            .envs(env.vars())
            .env_remove("AX_CODE_SERVER_PASSWORD")
            .env_remove("XDG_DATA_HOME")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value =
                    serde_json::from_str(&line).unwrap_or_else(|_| json!({"notJsonRpc": line}));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut adapter = Adapter {
            child,
            stdin,
            lines,
            early: Vec::new(),
            next_id: 0,
        };
        let init = adapter.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ax-adversarial", "version": "0"}
            }),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "ax-code-tuimcp",
            "{init}"
        );
        adapter.notify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        adapter
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn notify(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request without waiting; returns its id.
    pub fn send(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.notify(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The answer to `id`, or `None` after `limit`. Every stdout line must be JSON-RPC.
    pub fn try_answer(&mut self, id: i64, limit: Duration) -> Option<Value> {
        if let Some(i) = self.early.iter().position(|m| m["id"] == json!(id)) {
            return Some(self.early.remove(i));
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.lines.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => panic!("the adapter's stdout closed"),
            };
            assert_eq!(
                message["jsonrpc"], "2.0",
                "stdout carries JSON-RPC only: {message}"
            );
            if message["id"] == json!(id) {
                return Some(message);
            }
            if message.get("id").is_some() {
                self.early.push(message);
            }
        }
    }

    /// The answer to `id` (bounded by [`WAIT`]).
    pub fn answer(&mut self, id: i64) -> Value {
        self.try_answer(id, WAIT)
            .unwrap_or_else(|| panic!("the adapter did not answer request {id} within {WAIT:?}"))
    }

    /// Sends a request and waits for its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.answer(id)
    }

    /// Starts a tool call; returns its JSON-RPC id.
    pub fn start_call(&mut self, tool: &str, arguments: Value) -> i64 {
        self.send("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Waits for a tool call started with [`Adapter::start_call`]; returns its checked
    /// `structuredContent`.
    pub fn finish_call(&mut self, id: i64) -> Value {
        let answer = self.answer(id);
        structured(&answer["result"])
    }

    /// Calls a tool; returns its checked `structuredContent`.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.start_call(tool, arguments);
        self.finish_call(id)
    }

    /// `get_view_context`.
    pub fn context(&mut self) -> Value {
        self.call("get_view_context", json!({}))
    }

    /// Reads the context until `pred` holds (bounded).
    pub fn wait_context(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let v = self.context();
            if pred(&v) {
                return v;
            }
            assert!(
                start.elapsed() < WAIT,
                "timed out waiting for context {what}: last {v}"
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Closes stdin and waits (bounded) for a clean exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < WAIT, "the adapter did not exit on EOF");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// structuredContent, checked against the text content and isError.
pub fn structured(result: &Value) -> Value {
    let content = result["structuredContent"].clone();
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("text content in {result}"));
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), content);
    let rejected = content["status"] == "rejected";
    assert_eq!(
        result["isError"],
        json!(rejected),
        "isError exactly for rejected: {result}"
    );
    content
}

/// The rejection code of an answer (`""` if none).
pub fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

/// The context is ready and unblocked.
pub fn unblocked(v: &Value) -> bool {
    v["status"] == "context" && v["context"]["blocked"] == false && v["context"]["ready"] == true
}

/// select_session arguments for `session` against the identity and revision of `view`
/// (a `get_view_context` answer).
pub fn select_args(view: &Value, request_id: &str, session: &str) -> Value {
    json!({
        "requestId": request_id,
        "instanceId": view["context"]["instanceId"],
        "generation": view["context"]["generation"],
        "expectedRevision": view["context"]["revision"],
        "sessionId": session,
    })
}

/// The n-th well-formed session id (`ses_000…n`), for fake TUIs.
pub fn sid(n: u32) -> SessionId {
    format!("ses_{n:026}").parse::<SessionId>().unwrap()
}
