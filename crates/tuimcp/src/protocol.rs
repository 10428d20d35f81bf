//! Wire types of the private endpoint (docs/tuimcp.md §4, §5): strict, closed shapes.
//!
//! Parsing goes through `serde_json::Value` first so the `operation` / `status` tags can be
//! checked by hand: serde's internally tagged enums do not combine reliably with
//! `deny_unknown_fields`, and every shape here must reject unknown keys.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Largest frame on the socket, the trailing `\n` included.
pub const MAX_FRAME: usize = 16384;

/// A UUID in RFC 9562 text form (`8-4-4-4-12` hex digits). Accepted in either case, compared
/// and keyed by value, always written in lowercase.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WireUuid(uuid::Uuid);

impl WireUuid {
    /// A fresh random (version 4) UUID.
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4())
    }

    /// Parses the hyphenated 36-character form only (no braces, no `urn:`, no bare hex).
    pub fn parse(text: &str) -> Option<Self> {
        if text.len() != 36 {
            return None;
        }
        uuid::Uuid::try_parse(text).ok().map(Self)
    }
}

impl fmt::Display for WireUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for WireUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for WireUuid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for WireUuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom("expected a UUID like 123e4567-e89b-42d3-a456-426614174000")
        })
    }
}

/// A backend session ID: `ses_` followed by 26 characters of `[0-9A-Za-z]`. The one type from the
/// leaf crate, shared with the backend's protocol, so the TUI never converts between two.
pub use ax_core::ids::SessionId;

/// Which screen the TUI shows, as far as the agent may know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// The session list.
    Home,
    /// One session (its id is in [`View::session_id`]).
    Session,
}

/// The bounded view an agent may read. Never transcripts, drafts, titles, paths or secrets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct View {
    /// The TUI process, as in the endpoint file.
    pub instance_id: WireUuid,
    /// The share, as in the endpoint file.
    pub generation: WireUuid,
    /// What `select_session` must name as `expectedRevision`.
    pub revision: u64,
    /// Which screen is shown.
    pub route: Route,
    /// Present only on the session route: omitted, never null.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_session_id"
    )]
    pub session_id: Option<SessionId>,
    /// Whether navigation may happen now (else `not_ready`).
    pub ready: bool,
    /// Whether the person is in the middle of something (then `user_active`).
    pub blocked: bool,
}

fn present_session_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SessionId>, D::Error> {
    // A present key must hold a session ID; `null` is not an allowed spelling of "absent".
    SessionId::deserialize(d).map(Some)
}

impl View {
    /// `sessionId` is present exactly on the session route.
    pub fn is_consistent(&self) -> bool {
        (self.route == Route::Session) == self.session_id.is_some()
    }
}

/// Every rejection code of docs/tuimcp.md §5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// A malformed frame, a bad schema, an unknown tool or an extra argument.
    InvalidRequest,
    /// Wrong peer uid or wrong token.
    Unauthorized,
    /// The instance or generation is not this TUI's.
    StaleTarget,
    /// The expected revision is not the current one.
    StaleRevision,
    /// Stream disconnected, initial sync unfinished, or the session route not loaded.
    NotReady,
    /// Something blocks navigation, or the person typed within the quiet period.
    UserActive,
    /// Another navigation is in flight, or the connection cap is reached.
    Busy,
    /// The request id was seen before with other arguments.
    RequestConflict,
    /// This TUI process already took [`RECEIPT_LIMIT`](crate::RECEIPT_LIMIT) navigation requests.
    RequestLimit,
    /// The session is unknown or in another project, or the endpoint was unreachable before sending.
    TargetUnavailable,
    /// The caller cancelled before anything could apply.
    Cancelled,
    /// Sharing was revoked, or the TUI is closing.
    Revoked,
    /// Validation did not finish in time; nothing was navigated.
    DeadlineExceeded,
    /// A bug; nothing was navigated.
    InternalError,
    /// Sent, but no definitive answer came in time (the client decides this one).
    TimeoutUnknown,
    /// Navigation may have happened (the router failed, or the answer after sending was unreadable).
    OutcomeUnknown,
}

impl Code {
    /// Every code, for schemas and exhaustive tests.
    pub const ALL: [Code; 16] = [
        Code::InvalidRequest,
        Code::Unauthorized,
        Code::StaleTarget,
        Code::StaleRevision,
        Code::NotReady,
        Code::UserActive,
        Code::Busy,
        Code::RequestConflict,
        Code::RequestLimit,
        Code::TargetUnavailable,
        Code::Cancelled,
        Code::Revoked,
        Code::DeadlineExceeded,
        Code::InternalError,
        Code::TimeoutUnknown,
        Code::OutcomeUnknown,
    ];

    /// True when the code proves that nothing was navigated.
    pub fn is_definitive(self) -> bool {
        !matches!(self, Code::TimeoutUnknown | Code::OutcomeUnknown)
    }

    /// The wire name, e.g. `stale_revision`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidRequest => "invalid_request",
            Code::Unauthorized => "unauthorized",
            Code::StaleTarget => "stale_target",
            Code::StaleRevision => "stale_revision",
            Code::NotReady => "not_ready",
            Code::UserActive => "user_active",
            Code::Busy => "busy",
            Code::RequestConflict => "request_conflict",
            Code::RequestLimit => "request_limit",
            Code::TargetUnavailable => "target_unavailable",
            Code::Cancelled => "cancelled",
            Code::Revoked => "revoked",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::InternalError => "internal_error",
            Code::TimeoutUnknown => "timeout_unknown",
            Code::OutcomeUnknown => "outcome_unknown",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The arguments of `select_session`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectSession {
    /// Names the request; a retry with the same id gets the first answer.
    pub request_id: WireUuid,
    /// The TUI process the caller read from the endpoint.
    pub instance_id: WireUuid,
    /// The share the caller read from the endpoint.
    pub generation: WireUuid,
    /// The revision of the view the caller decided on.
    pub expected_revision: u64,
    /// Where to go.
    pub session_id: SessionId,
}

impl SelectSession {
    /// Canonical signature of the arguments: equal exactly when the parsed requests are equal
    /// (UUIDs are lowercased by construction, so case does not matter).
    pub fn signature(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}",
            self.request_id,
            self.instance_id,
            self.generation,
            self.expected_revision,
            self.session_id
        )
    }
}

/// A request on the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Read the bounded view.
    GetViewContext,
    /// Navigate to a session.
    SelectSession(SelectSession),
}

/// Why a shape was refused; the message shows the expected form.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(String);

impl ShapeError {
    fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

fn take_tag(value: Value, tag: &str) -> Result<(String, Map<String, Value>), ShapeError> {
    let Value::Object(mut object) = value else {
        return Err(ShapeError::new("expected a JSON object"));
    };
    match object.remove(tag) {
        Some(Value::String(name)) => Ok((name, object)),
        _ => Err(ShapeError::new(format!(
            "expected a string field \"{tag}\""
        ))),
    }
}

impl Request {
    /// Parses a request frame's JSON, strictly (no extra field).
    pub fn from_value(value: Value) -> Result<Self, ShapeError> {
        let (operation, rest) = take_tag(value, "operation")?;
        match operation.as_str() {
            "get_view_context" if rest.is_empty() => Ok(Request::GetViewContext),
            "get_view_context" => Err(ShapeError::new("get_view_context takes no other field")),
            "select_session" => serde_json::from_value(Value::Object(rest))
                .map(Request::SelectSession)
                .map_err(|e| ShapeError::new(format!("select_session: {e}"))),
            _ => Err(ShapeError::new(
                "operation must be get_view_context or select_session",
            )),
        }
    }

    /// The request's JSON, as [`Request::from_value`] reads it.
    pub fn to_value(&self) -> Value {
        match self {
            Request::GetViewContext => serde_json::json!({"operation": "get_view_context"}),
            Request::SelectSession(args) => {
                let mut value = serde_json::to_value(args).unwrap_or(Value::Null);
                if let Value::Object(object) = &mut value {
                    object.insert("operation".into(), "select_session".into());
                }
                value
            }
        }
    }
}

/// A response on the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The view, answering `get_view_context`.
    Context(View),
    /// Navigated; the view right after.
    Applied(View),
    /// Refused, with the reason.
    Rejected(Code),
}

impl Response {
    /// Parses a response frame's JSON, strictly (no extra field, a consistent view).
    pub fn from_value(value: Value) -> Result<Self, ShapeError> {
        let (status, mut rest) = take_tag(value, "status")?;
        let one = |rest: &mut Map<String, Value>, key: &str| {
            let field = rest.remove(key);
            match field {
                Some(field) if rest.is_empty() => Ok(field),
                _ => Err(ShapeError::new(format!(
                    "status {status} takes exactly the field \"{key}\""
                ))),
            }
        };
        let view = |field: Value| {
            let view: View =
                serde_json::from_value(field).map_err(|e| ShapeError::new(format!("view: {e}")))?;
            if view.is_consistent() {
                Ok(view)
            } else {
                Err(ShapeError::new(
                    "view: sessionId belongs to the session route",
                ))
            }
        };
        match status.as_str() {
            "context" => Ok(Response::Context(view(one(&mut rest, "context")?)?)),
            "applied" => Ok(Response::Applied(view(one(&mut rest, "context")?)?)),
            "rejected" => serde_json::from_value(one(&mut rest, "code")?)
                .map(Response::Rejected)
                .map_err(|e| ShapeError::new(format!("code: {e}"))),
            _ => Err(ShapeError::new(
                "status must be context, applied or rejected",
            )),
        }
    }

    /// The response's JSON, as [`Response::from_value`] reads it.
    pub fn to_value(&self) -> Value {
        match self {
            Response::Context(view) => serde_json::json!({"status": "context", "context": view}),
            Response::Applied(view) => serde_json::json!({"status": "applied", "context": view}),
            Response::Rejected(code) => serde_json::json!({"status": "rejected", "code": code}),
        }
    }

    /// The rejection code, if this is a rejection.
    pub fn code(&self) -> Option<Code> {
        match self {
            Response::Rejected(code) => Some(*code),
            _ => None,
        }
    }

    /// The frame bytes: compact JSON (the same object as [`Response::to_value`]) and one
    /// `\n`, written straight from the typed value.
    pub fn to_frame(&self) -> Vec<u8> {
        frame_of(&WireResponse(self))
    }
}

/// Serialises a [`Response`] directly (no intermediate `Value`).
struct WireResponse<'a>(&'a Response);

impl Serialize for WireResponse<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        match self.0 {
            Response::Context(view) => {
                map.serialize_entry("status", "context")?;
                map.serialize_entry("context", view)?;
            }
            Response::Applied(view) => {
                map.serialize_entry("status", "applied")?;
                map.serialize_entry("context", view)?;
            }
            Response::Rejected(code) => {
                map.serialize_entry("status", "rejected")?;
                map.serialize_entry("code", code)?;
            }
        }
        map.end()
    }
}

/// Serialises a [`Request`] directly: the same object as [`Request::to_value`].
struct WireRequest<'a>(&'a Request);

impl Serialize for WireRequest<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Request::GetViewContext => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("operation", "get_view_context")?;
                map.end()
            }
            Request::SelectSession(args) => {
                let mut map = serializer.serialize_map(Some(6))?;
                map.serialize_entry("operation", "select_session")?;
                map.serialize_entry("requestId", &args.request_id)?;
                map.serialize_entry("instanceId", &args.instance_id)?;
                map.serialize_entry("generation", &args.generation)?;
                map.serialize_entry("expectedRevision", &args.expected_revision)?;
                map.serialize_entry("sessionId", &args.session_id)?;
                map.end()
            }
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    token: &'a str,
    request: WireRequest<'a>,
}

fn frame_of(value: &impl Serialize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(256);
    // Writing into a Vec cannot fail, and these shapes have only string keys.
    let _ = serde_json::to_writer(&mut bytes, value);
    bytes.push(b'\n');
    bytes
}

/// The request frame a client sends: `{"token": ..., "request": ...}` and one `\n`.
pub fn request_frame(token: &str, request: &Request) -> Vec<u8> {
    frame_of(&Envelope {
        token,
        request: WireRequest(request),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SID: &str = "ses_0123456789abcdefghijABCDEF";

    #[test]
    fn uuid_is_case_insensitive_and_written_lowercase() {
        let upper = WireUuid::parse("123E4567-E89B-42D3-A456-426614174000").unwrap();
        let lower = WireUuid::parse("123e4567-e89b-42d3-a456-426614174000").unwrap();
        assert_eq!(upper, lower);
        assert_eq!(upper.to_string(), "123e4567-e89b-42d3-a456-426614174000");
        assert!(WireUuid::parse("123e4567e89b42d3a456426614174000").is_none());
        assert!(WireUuid::parse("{123e4567-e89b-42d3-a456-426614174000}").is_none());
        assert!(WireUuid::parse("123e4567-e89b-42d3-a456-42661417400g").is_none());
    }

    #[test]
    fn session_id_shape() {
        assert!(SID.parse::<SessionId>().is_ok());
        assert!(
            "ses_0123456789abcdefghijABCDE"
                .parse::<SessionId>()
                .is_err()
        );
        assert!(
            "ses_0123456789abcdefghijABCDEFG"
                .parse::<SessionId>()
                .is_err()
        );
        assert!(
            "ses_0123456789abcdefghijABCDE-"
                .parse::<SessionId>()
                .is_err()
        );
        assert!(
            "SES_0123456789abcdefghijABCDEF"
                .parse::<SessionId>()
                .is_err()
        );
        assert!(
            "ses_0123456789abcdefghijABCDEé"
                .parse::<SessionId>()
                .is_err()
        );
    }

    fn select_json() -> Value {
        json!({
            "operation": "select_session",
            "requestId": "00000000-0000-4000-8000-000000000001",
            "instanceId": "00000000-0000-4000-8000-000000000002",
            "generation": "00000000-0000-4000-8000-000000000003",
            "expectedRevision": 7,
            "sessionId": SID,
        })
    }

    #[test]
    fn requests_are_closed() {
        assert_eq!(
            Request::from_value(json!({"operation": "get_view_context"})).unwrap(),
            Request::GetViewContext
        );
        assert!(Request::from_value(json!({"operation": "get_view_context", "x": 1})).is_err());
        let parsed = Request::from_value(select_json()).unwrap();
        assert_eq!(Request::from_value(parsed.to_value()).unwrap(), parsed);
        let mut extra = select_json();
        extra["extra"] = json!(true);
        assert!(Request::from_value(extra).is_err());
        for key in [
            "requestId",
            "instanceId",
            "generation",
            "expectedRevision",
            "sessionId",
        ] {
            let mut missing = select_json();
            missing.as_object_mut().unwrap().remove(key);
            assert!(Request::from_value(missing).is_err(), "{key} is required");
        }
        for bad in [json!(-1), json!(1.5), json!("1"), json!(null)] {
            let mut value = select_json();
            value["expectedRevision"] = bad;
            assert!(Request::from_value(value).is_err());
        }
        assert!(Request::from_value(json!({"operation": "type_text"})).is_err());
        assert!(Request::from_value(json!([1])).is_err());
    }

    #[test]
    fn signature_ignores_uuid_case() {
        let mut upper = select_json();
        upper["requestId"] = json!("00000000-0000-4000-8000-00000000000A");
        let mut lower = select_json();
        lower["requestId"] = json!("00000000-0000-4000-8000-00000000000a");
        let (Request::SelectSession(a), Request::SelectSession(b)) = (
            Request::from_value(upper).unwrap(),
            Request::from_value(lower).unwrap(),
        ) else {
            panic!("select_session expected");
        };
        assert_eq!(a.signature(), b.signature());
    }

    #[test]
    fn direct_frames_equal_the_value_forms() {
        let view = View {
            instance_id: WireUuid::random(),
            generation: WireUuid::random(),
            revision: 9,
            route: Route::Session,
            session_id: SID.parse().ok(),
            ready: true,
            blocked: false,
        };
        let home = View {
            route: Route::Home,
            session_id: None,
            ..view.clone()
        };
        for response in [
            Response::Context(view.clone()),
            Response::Context(home.clone()),
            Response::Applied(view),
            Response::Rejected(Code::StaleRevision),
        ] {
            let frame = response.to_frame();
            assert_eq!(frame.last(), Some(&b'\n'));
            assert_eq!(frame.iter().filter(|&&b| b == b'\n').count(), 1);
            let parsed: Value = serde_json::from_slice(&frame).unwrap();
            assert_eq!(parsed, response.to_value());
            assert_eq!(Response::from_value(parsed).unwrap(), response);
        }
        let token = "ab".repeat(32);
        for request in [
            Request::GetViewContext,
            Request::from_value(select_json()).unwrap(),
        ] {
            let frame = request_frame(&token, &request);
            assert_eq!(frame.iter().filter(|&&b| b == b'\n').count(), 1);
            let parsed: Value = serde_json::from_slice(&frame).unwrap();
            assert_eq!(
                parsed,
                json!({"token": token, "request": request.to_value()})
            );
        }
    }

    #[test]
    fn responses_are_closed() {
        let view = View {
            instance_id: WireUuid::random(),
            generation: WireUuid::random(),
            revision: 3,
            route: Route::Home,
            session_id: None,
            ready: true,
            blocked: false,
        };
        for response in [
            Response::Context(view.clone()),
            Response::Applied(view.clone()),
            Response::Rejected(Code::Busy),
        ] {
            let value = response.to_value();
            assert_eq!(Response::from_value(value).unwrap(), response);
        }
        let mut value = Response::Context(view).to_value();
        assert!(
            value["context"].get("sessionId").is_none(),
            "omitted, not null"
        );
        value["context"]["sessionId"] = Value::Null;
        assert!(Response::from_value(value.clone()).is_err());
        value["context"]["sessionId"] = json!(SID);
        assert!(
            Response::from_value(value).is_err(),
            "home route with a session"
        );
        assert!(Response::from_value(json!({"status": "rejected", "code": "nope"})).is_err());
        assert!(
            Response::from_value(json!({"status": "rejected", "code": "busy", "x": 1})).is_err()
        );
        for code in Code::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, json!(code.as_str()));
        }
    }
}
