//! Wire types of the ax-code backend API, shared by the server, the typed client, the TUI
//! and the CLI.
//!
//! Every request shape is strict (`deny_unknown_fields`) so a typo in a field is a clear 400,
//! never a silently ignored option. Response shapes are strict too: the client and the server
//! are built from the same crate, and a mismatch should fail loudly in tests.

use std::fmt;

use serde::{Deserialize, Serialize};

pub mod local;
pub mod proof;
mod session_id;
pub mod time;

pub use session_id::{SessionId, SessionIdError};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// What a session's agent is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Nothing runs and nothing waits.
    #[default]
    Idle,
    /// A permission request waits for the person's reply.
    Pending,
    /// A command is running.
    Busy,
}

impl SessionStatus {
    /// Whether a new prompt would be refused (one run per session at a time).
    pub fn is_active(self) -> bool {
        !matches!(self, SessionStatus::Idle)
    }
}

/// A project session as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Session {
    pub id: SessionId,
    pub title: String,
    pub created: Millis,
    pub updated: Millis,
    pub status: SessionStatus,
}

/// The project a backend serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    /// Canonical absolute directory.
    pub directory: String,
}

/// `POST /session` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSession {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One ordered piece of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Part {
    /// Text the person wrote.
    Text { text: String },
    /// An attachment: a path inside the project.
    File { path: String },
    /// A chunk of the agent's command output, in arrival order.
    Output { stream: Stream, text: String },
    /// The per-message output bound was hit; later output was dropped.
    Truncated { dropped_bytes: u64 },
    /// The run ended. `code` is the exit status, `signal` the terminating signal, if any.
    Exit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// The person rejected the command: nothing ran.
    Rejected,
    /// The run was aborted by the person.
    Aborted,
    /// The run was cut short by a backend restart.
    Interrupted,
}

/// A transcript entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Message {
    pub id: String,
    pub session_id: SessionId,
    pub role: Role,
    pub created: Millis,
    pub parts: Vec<Part>,
}

/// A part of `POST /session/{id}/prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum PromptPart {
    Text { text: String },
    File { path: String },
}

/// `POST /session/{id}/prompt` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Prompt {
    pub parts: Vec<PromptPart>,
}

/// State of a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionState {
    Pending,
    Approved,
    Rejected,
    /// The run it belonged to was aborted or interrupted before a reply.
    Cancelled,
}

/// The agent asks before it runs a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Permission {
    pub id: String,
    pub session_id: SessionId,
    /// What is asked: the command line the agent wants to run.
    pub command: String,
    pub state: PermissionState,
    pub created: Millis,
}

/// The person's answer to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionReply {
    Once,
    Always,
    Reject,
}

/// `POST /session/{id}/permission/{pid}` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionAnswer {
    pub reply: PermissionReply,
}

/// One item of the `/event` stream. The SSE `id:` line carries [`EventEnvelope::id`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventEnvelope {
    /// Strictly increasing per backend process.
    pub id: u64,
    pub event: Event,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Event {
    #[serde(rename = "session.created")]
    SessionCreated { session: Session },
    #[serde(rename = "session.updated")]
    SessionUpdated { session: Session },
    #[serde(rename = "session.deleted", rename_all = "camelCase")]
    SessionDeleted { session_id: SessionId },
    #[serde(rename = "session.status", rename_all = "camelCase")]
    SessionStatus {
        session_id: SessionId,
        status: SessionStatus,
    },
    /// A new message (its parts so far).
    #[serde(rename = "message.created")]
    MessageCreated { message: Message },
    /// A part appended to a message; `index` is its position in `parts`.
    #[serde(rename = "message.part", rename_all = "camelCase")]
    MessagePart {
        session_id: SessionId,
        message_id: String,
        index: u32,
        part: Part,
    },
    #[serde(rename = "permission.asked")]
    PermissionAsked { permission: Permission },
    #[serde(rename = "permission.replied", rename_all = "camelCase")]
    PermissionReplied {
        session_id: SessionId,
        permission_id: String,
        state: PermissionState,
    },
    /// The stream could not replay the gap since `Last-Event-ID`: resync everything.
    #[serde(rename = "reset")]
    Reset,
}

/// `GET /health` (no credential needed).
///
/// `GET /health?proof=<nonce>` (64 lowercase hex characters, fresh and random per check) also
/// answers `proof`: lowercase hex of HMAC-SHA256 with the credential as the key over
/// `"ax-code-server-proof-v2:" + nonce + "@" + the server's socket address on that connection`
/// (see [`proof::health_proof`]). Clients check it against the address they connected to
/// before they send the credential, so whoever took a dead backend's port, or relays the check
/// to the real backend from another address, never receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Health {
    pub ok: bool,
    /// The backend's version.
    pub version: String,
    /// The answer to `?proof=<nonce>`; absent when no nonce was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<String>,
    /// The same proof keyed by the screen credential (see [`SCREEN_CREDENTIAL_MESSAGE`]), so a
    /// holder of only that credential can check the server too; absent without a nonce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen_proof: Option<String>,
}

/// The message prefix of the `/health` proof (see [`Health`]).
pub const HEALTH_PROOF_PREFIX: &str = "ax-code-server-proof-v2:";

/// The screen credential is lowercase hex of HMAC-SHA256(key = the backend credential,
/// message = this). The gateway grants it at most `operator.read` and `operator.write`; the
/// HTTP API refuses it. `ax-code mcp screen` holds only this credential.
pub const SCREEN_CREDENTIAL_MESSAGE: &str = "ax-code-screen-credential-v1";

/// `POST /session/{id}/prompt` answer (202): what was stored and what happens next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptAccepted {
    /// The person's message as stored.
    pub message: Message,
    /// The agent's reply message; its parts arrive as `message.part` events.
    pub reply_id: String,
    /// The approval the agent waits for; `None` when the session already allows its commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Permission>,
}

/// `POST /session/{id}/abort` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbortResult {
    /// Whether there was work to stop.
    pub aborted: bool,
}

/// `{"error":{"code","message"}}`, the body of every API error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: ApiError,
}

/// A machine-readable code and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiError {
    pub code: String,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_rejects_unknown_fields() {
        let bad = r#"{"parts":[{"type":"text","text":"ls","extra":1}]}"#;
        assert!(serde_json::from_str::<Prompt>(bad).is_err());
        let bad = r#"{"parts":[],"x":1}"#;
        assert!(serde_json::from_str::<Prompt>(bad).is_err());
        let good = r#"{"parts":[{"type":"text","text":"ls"},{"type":"file","path":"a.txt"}]}"#;
        let p: Prompt = serde_json::from_str(good).unwrap();
        assert_eq!(p.parts.len(), 2);
    }

    #[test]
    fn event_shape_is_tagged() {
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let e = Event::SessionStatus {
            session_id: id.clone(),
            status: SessionStatus::Busy,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "session.status");
        assert_eq!(v["sessionId"], id.as_str());
        assert_eq!(v["status"], "busy");
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }
}
