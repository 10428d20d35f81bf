//! The three frame shapes on the wire and the error vocabulary.
//!
//! Every frame is one JSON object in one text message. Requests come from clients, responses
//! and events from the gateway. All shapes are closed: an unknown field is a protocol error.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The only protocol version this gateway speaks.
pub const PROTOCOL: u32 = 1;

/// Longest request `id` accepted (bytes).
pub const MAX_ID_LEN: usize = 128;
/// Longest method name accepted (bytes).
pub const MAX_METHOD_LEN: usize = 64;

/// `{"type":"req","id","method","params"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFrame {
    /// Always `"req"`.
    #[serde(rename = "type")]
    pub kind: RequestTag,
    /// Chosen by the client; the response carries it back (at most [`MAX_ID_LEN`] bytes).
    pub id: String,
    /// What to do (at most [`MAX_METHOD_LEN`] bytes).
    pub method: String,
    /// The method's arguments; each method's shape is closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl RequestFrame {
    /// A request with `params`.
    pub fn new(id: impl Into<String>, method: impl Into<String>, params: Value) -> Self {
        RequestFrame {
            kind: RequestTag::Req,
            id: id.into(),
            method: method.into(),
            params: Some(params),
        }
    }
}

/// The literal `"req"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestTag {
    /// `"req"`.
    Req,
}

/// `{"type":"res","id","ok","payload"?,"error"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseFrame {
    /// Always `"res"`.
    #[serde(rename = "type")]
    pub kind: ResponseTag,
    /// The request's `id`.
    pub id: String,
    /// Whether the request succeeded: then `payload`, else `error`.
    pub ok: bool,
    /// The answer, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// What went wrong, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorShape>,
}

impl ResponseFrame {
    /// An `ok` response carrying `payload`.
    pub fn success(id: impl Into<String>, payload: Value) -> Self {
        ResponseFrame {
            kind: ResponseTag::Res,
            id: id.into(),
            ok: true,
            payload: Some(payload),
            error: None,
        }
    }

    /// A failed response carrying `error`.
    pub fn failure(id: impl Into<String>, error: ErrorShape) -> Self {
        ResponseFrame {
            kind: ResponseTag::Res,
            id: id.into(),
            ok: false,
            payload: None,
            error: Some(error),
        }
    }

    pub(crate) fn to_json(&self) -> String {
        // A response holds only strings, bools and `Value`s: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// The literal `"res"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseTag {
    /// `"res"`.
    Res,
}

/// `{"type":"event","event","payload"?,"seq"}`; `seq` counts per connection from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventFrame {
    /// Always `"event"`.
    #[serde(rename = "type")]
    pub kind: EventTag,
    /// The event's name, e.g. `tick` or `ui.command`.
    pub event: String,
    /// The event's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// Counts from 1 per connection, so a client sees a gap.
    pub seq: u64,
}

/// The literal `"event"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventTag {
    /// `"event"`.
    Event,
}

/// Any frame the gateway sends, as a client reads it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ServerFrame {
    /// The answer to a request.
    Response(ResponseFrame),
    /// An event the client did not ask for in this frame.
    Event(EventFrame),
}

/// The machine-readable error codes.
#[allow(
    missing_docs,
    reason = "a doc comment on a variant becomes a schema description and turns the schema's `enum` list into a `oneOf`; the variants are explained in plain comments"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    // The request is malformed or its arguments are wrong; do not retry as is.
    InvalidRequest,
    // The connection lacks the scope, or the client kind may not do this.
    Forbidden,
    // Nothing can serve it now (no Control UI, no terminal host); retrying later may help.
    Unavailable,
    // What it names does not exist.
    NotFound,
    // A bug in the gateway.
    Internal,
}

impl ErrorCode {
    /// The wire name, e.g. `INVALID_REQUEST`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Internal => "INTERNAL",
        }
    }
}

/// `{"code","message","details"?}` of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorShape {
    /// What kind of failure (clients act on this).
    pub code: ErrorCode,
    /// For the person or the log; never holds a credential.
    pub message: String,
    /// Structured context, when there is some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorShape {
    /// An error without details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorShape {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// Adds structured context.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// An `INVALID_REQUEST` error.
    pub fn invalid(message: impl Into<String>) -> Self {
        ErrorShape::new(ErrorCode::InvalidRequest, message)
    }
}

impl std::fmt::Display for ErrorShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event serialised once, without its `seq`: every connection appends its own counter.
///
/// Fan-out to N connections shares one allocation; each writer only formats the number and
/// the closing brace.
#[derive(Debug, Clone)]
pub(crate) struct EventPrefix(std::sync::Arc<str>);

impl EventPrefix {
    pub(crate) fn new(event: &str, payload: &Value) -> Self {
        let name = serde_json::to_string(event).unwrap_or_else(|_| String::from("\"\""));
        let payload = serde_json::to_string(payload).unwrap_or_else(|_| String::from("null"));
        let mut s = String::with_capacity(name.len() + payload.len() + 40);
        s.push_str("{\"type\":\"event\",\"event\":");
        s.push_str(&name);
        s.push_str(",\"payload\":");
        s.push_str(&payload);
        s.push_str(",\"seq\":");
        EventPrefix(s.into())
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The complete frame text for one connection.
    ///
    /// Allocated at its exact length: turning a `String` whose capacity equals its length into
    /// the socket's `Bytes` costs no second allocation.
    pub(crate) fn finish(&self, seq: u64) -> String {
        let mut digits = [0u8; 20];
        let mut n = seq;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let digits = &digits[at..];
        let mut s = String::with_capacity(self.0.len() + digits.len() + 1);
        s.push_str(&self.0);
        // ASCII digits are valid UTF-8.
        s.push_str(std::str::from_utf8(digits).unwrap_or("0"));
        s.push('}');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_is_closed() {
        let ok = r#"{"type":"req","id":"1","method":"ping"}"#;
        assert!(serde_json::from_str::<RequestFrame>(ok).is_ok());
        let extra = r#"{"type":"req","id":"1","method":"ping","x":1}"#;
        assert!(serde_json::from_str::<RequestFrame>(extra).is_err());
        let wrong_type = r#"{"type":"res","id":"1","method":"ping"}"#;
        assert!(serde_json::from_str::<RequestFrame>(wrong_type).is_err());
    }

    #[test]
    fn event_prefix_appends_seq() {
        let p = EventPrefix::new("tick", &json!({"ts": 5}));
        let frame: EventFrame = serde_json::from_str(&p.finish(42)).unwrap();
        for seq in [0, 1, 9, 10, 1234567890, u64::MAX] {
            let text = p.finish(seq);
            assert_eq!(text.len(), text.capacity());
            assert_eq!(serde_json::from_str::<EventFrame>(&text).unwrap().seq, seq);
        }
        assert_eq!(frame.seq, 42);
        assert_eq!(frame.event, "tick");
        assert_eq!(frame.payload, Some(json!({"ts": 5})));
    }

    #[test]
    fn error_code_spelling() {
        let v = serde_json::to_value(ErrorCode::InvalidRequest).unwrap();
        assert_eq!(v, json!("INVALID_REQUEST"));
        assert_eq!(ErrorCode::NotFound.as_str(), "NOT_FOUND");
    }
}
