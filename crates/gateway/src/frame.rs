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
    #[serde(rename = "type")]
    pub kind: RequestTag,
    pub id: String,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl RequestFrame {
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
    Req,
}

/// `{"type":"res","id","ok","payload"?,"error"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseFrame {
    #[serde(rename = "type")]
    pub kind: ResponseTag,
    pub id: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorShape>,
}

impl ResponseFrame {
    pub fn success(id: impl Into<String>, payload: Value) -> Self {
        ResponseFrame {
            kind: ResponseTag::Res,
            id: id.into(),
            ok: true,
            payload: Some(payload),
            error: None,
        }
    }

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
    Res,
}

/// `{"type":"event","event","payload"?,"seq"}`; `seq` counts per connection from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventFrame {
    #[serde(rename = "type")]
    pub kind: EventTag,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    pub seq: u64,
}

/// The literal `"event"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventTag {
    Event,
}

/// Any frame the gateway sends, as a client reads it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ServerFrame {
    Response(ResponseFrame),
    Event(EventFrame),
}

/// The machine-readable error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidRequest,
    Forbidden,
    Unavailable,
    NotFound,
    Internal,
}

impl ErrorCode {
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
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorShape {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorShape {
            code,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

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
