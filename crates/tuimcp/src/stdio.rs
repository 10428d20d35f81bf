//! The adapter's stdio transport: newline-delimited JSON-RPC 2.0 in which every line gets
//! the answer the JSON-RPC specification names, at once.
//!
//! rmcp's own line transport drops unparsable input silently (and answers other shape
//! errors with `-32600` but no `"id": null`), so a client that sent a broken line waits for
//! its own timeout. This transport reads and classifies each line itself ([`classify`]) and
//! hands rmcp only messages it can decode:
//!
//! | line | answer |
//! | --- | --- |
//! | not JSON, or nested deeper than serde_json's limit (128) | `-32700`, `"id": null` |
//! | longer than [`MAX_LINE`] bytes | `-32600`, `"id": null` (the rest of the line is skipped) |
//! | a batch (array), not an object, `jsonrpc` other than `"2.0"`, a bad `method` or `id` | `-32600`, `"id": null` |
//! | a known method whose params do not decode (e.g. `tools/call` with non-object `arguments`) | `-32602` with the request's id |
//! | a notification or a client response that does not decode | nothing (JSON-RPC never answers those) |

use std::{io, sync::Arc};

use rmcp::{
    RoleServer,
    model::{ClientRequest, JsonRpcMessage},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::Mutex,
    task::JoinHandle,
};

/// Longest line read from the client, its `\n` included. Tool calls here are a few hundred
/// bytes; an `initialize` with large capabilities still fits many times over.
pub const MAX_LINE: usize = 1 << 20;

/// JSON-RPC error codes used here.
pub const PARSE_ERROR: i64 = -32700;
/// The message is not a valid JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// The method exists but its parameters are wrong.
pub const INVALID_PARAMS: i64 = -32602;

/// Methods of the MCP specification a client may send to a server. A request for one of
/// them that rmcp can only decode as a custom request has malformed params.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// What to do with one line.
#[derive(Debug)]
pub enum Verdict {
    /// Hand the message to rmcp.
    Deliver(Box<RxJsonRpcMessage<RoleServer>>),
    /// Answer with this JSON-RPC error object (already a whole message).
    Answer(Value),
    /// Say nothing (blank line, undecodable notification or client response).
    Ignore,
}

/// A JSON-RPC error message.
pub fn error_message(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn invalid_request(why: &str) -> Verdict {
    Verdict::Answer(error_message(
        Value::Null,
        INVALID_REQUEST,
        &format!("Invalid Request: {why}"),
    ))
}

/// Classifies one line (without its `\n`).
pub fn classify(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Verdict::Answer(error_message(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ));
        }
    };
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => return invalid_request("batches are not supported"),
        _ => return invalid_request("a message is a JSON object"),
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid_request("\"jsonrpc\" must be \"2.0\"");
    }
    let method = match object.get("method") {
        None => None,
        Some(Value::String(method)) => Some(method.as_str()),
        Some(_) => return invalid_request("\"method\" must be a string"),
    };
    let id = object.get("id");
    if let Some(id) = id
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return invalid_request("\"id\" must be a string or an integer");
    }
    let invalid_params = |method: &str| {
        Verdict::Answer(error_message(
            id.cloned().unwrap_or(Value::Null),
            INVALID_PARAMS,
            &format!("Invalid params for {method}"),
        ))
    };
    match RxJsonRpcMessage::<RoleServer>::deserialize(&value) {
        Ok(JsonRpcMessage::Request(request)) => match &request.request {
            ClientRequest::CustomRequest(custom)
                if KNOWN_METHODS.contains(&custom.method.as_str()) =>
            {
                invalid_params(&custom.method)
            }
            _ => Verdict::Deliver(Box::new(JsonRpcMessage::Request(request))),
        },
        Ok(message) => Verdict::Deliver(Box::new(message)),
        Err(e) => match (method, id) {
            (Some(method), Some(_)) if KNOWN_METHODS.contains(&method) => invalid_params(method),
            (Some(_), Some(_)) => invalid_request(&e.to_string()),
            // A notification or a client response: JSON-RPC never answers these.
            (Some(_), None) => Verdict::Ignore,
            (None, _) if object.contains_key("result") || object.contains_key("error") => {
                Verdict::Ignore
            }
            (None, _) => invalid_request("neither a request, a notification nor a response"),
        },
    }
}

enum LineRead {
    Line,
    Oversized,
    Eof,
}

/// See the module docs. Writes (rmcp's messages and this transport's own answers) go through
/// one lock, one whole line at a time.
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    write: Arc<Mutex<W>>,
    /// Answers being written; awaited before the transport reports the end of input, so an
    /// answer to the last line is never lost.
    answers: Vec<JoinHandle<()>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport over `read` (lines in) and `write` (lines out).
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(write)),
            answers: Vec::new(),
        }
    }

    /// Reads one line into `self.line`, never letting it grow past [`MAX_LINE`]. Cancel-safe:
    /// a partial line stays in `self.line` for the next call.
    async fn read_line(&mut self) -> io::Result<LineRead> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(LineRead::Eof);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let step = if self.discarding {
                self.discarding = newline.is_none();
                None
            } else if self.line.len() + take > MAX_LINE {
                self.line.clear();
                self.discarding = newline.is_none();
                Some(LineRead::Oversized)
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| LineRead::Line)
            };
            self.read.consume(take);
            if let Some(step) = step {
                return Ok(step);
            }
        }
    }

    /// Writes an answer in its own task, so a cancelled `receive` can never leave half a
    /// line on stdout.
    fn answer(&mut self, message: &Value) {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        let write = self.write.clone();
        self.answers.retain(|task| !task.is_finished());
        self.answers.push(tokio::spawn(async move {
            let mut write = write.lock().await;
            if write.write_all(&bytes).await.is_ok() {
                let _ = write.flush().await;
            }
        }));
    }

    async fn finish_answers(&mut self) {
        for task in self.answers.drain(..) {
            let _ = task.await;
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        async move {
            let bytes = bytes.map_err(io::Error::other)?;
            let mut write = write.lock().await;
            write.write_all(&bytes).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(LineRead::Line) => {}
                Ok(LineRead::Oversized) => {
                    tracing::warn!(limit = MAX_LINE, "tuimcp: a JSON-RPC line was too long");
                    let why = format!("Invalid Request: message longer than {MAX_LINE} bytes");
                    self.answer(&error_message(Value::Null, INVALID_REQUEST, &why));
                    continue;
                }
                Ok(LineRead::Eof) => {
                    self.finish_answers().await;
                    return None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "tuimcp: reading stdin failed");
                    self.finish_answers().await;
                    return None;
                }
            }
            let verdict = classify(self.line.strip_suffix(b"\n").unwrap_or(&self.line));
            self.line.clear();
            match verdict {
                Verdict::Deliver(message) => return Some(*message),
                Verdict::Answer(error) => {
                    tracing::debug!(%error, "tuimcp: answered a malformed JSON-RPC line");
                    self.answer(&error);
                }
                Verdict::Ignore => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.finish_answers().await;
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match classify(line.as_bytes()) {
            Verdict::Answer(value) => value,
            other => panic!("expected an answer to {line}, got {other:?}"),
        }
    }

    fn code_and_id(value: &Value) -> (i64, Value) {
        (
            value["error"]["code"].as_i64().unwrap(),
            value["id"].clone(),
        )
    }

    #[test]
    fn malformed_lines_get_the_named_errors() {
        assert_eq!(code_and_id(&answer("{nope")), (PARSE_ERROR, Value::Null));
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(code_and_id(&answer(&deep)), (PARSE_ERROR, Value::Null));
        let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        assert_eq!(code_and_id(&answer(batch)), (INVALID_REQUEST, Value::Null));
        let old = r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#;
        assert_eq!(code_and_id(&answer(old)), (INVALID_REQUEST, Value::Null));
        assert_eq!(code_and_id(&answer("42")), (INVALID_REQUEST, Value::Null));
        let bad_id = r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#;
        assert_eq!(code_and_id(&answer(bad_id)), (INVALID_REQUEST, Value::Null));
        let neither = r#"{"jsonrpc":"2.0","id":3}"#;
        assert_eq!(
            code_and_id(&answer(neither)),
            (INVALID_REQUEST, Value::Null)
        );
        for arguments in ["[]", "\"x\"", "7"] {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"get_view_context","arguments":{arguments}}}}}"#
            );
            assert_eq!(
                code_and_id(&answer(&call)),
                (INVALID_PARAMS, json!(5)),
                "{call}"
            );
        }
    }

    #[test]
    fn good_lines_reach_rmcp_and_notifications_are_never_answered() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"get_view_context","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/type","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            assert!(
                matches!(classify(line.as_bytes()), Verdict::Deliver(_)),
                "{line}"
            );
        }
        assert!(matches!(classify(b"  \r"), Verdict::Ignore));
        let broken_note = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#;
        assert!(!matches!(
            classify(broken_note.as_bytes()),
            Verdict::Answer(_)
        ));
    }
}
