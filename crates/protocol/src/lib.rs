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
pub mod queue;
#[cfg(feature = "serve")]
pub mod signin;
pub mod time;
pub mod turn;
pub mod web;

/// Credentials and one-time codes on the wire are [`Secret`]s (redacted `Debug`).
pub use ax_core::Secret;
/// Typed IDs live in the leaf crate `ax-core`; re-exported so wire types and their users agree.
pub use ax_core::ids::{
    IdError, IdError as SessionIdError, MessageId, PermissionId, QueuedId, SessionId,
};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// An enum whose wire text (JSON and the store's columns) comes from one table: `as_str`,
/// `FromStr`, `Display` and serde all go through it, so the three can never disagree.
macro_rules! text_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($(#[$vmeta])* $variant,)+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire text.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownVariant;

            fn from_str(s: &str) -> Result<Self, UnknownVariant> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownVariant { kind: stringify!($name), found: s.chars().take(64).collect() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// Text that names no variant of a `text_enum!` enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {found:?}")]
pub struct UnknownVariant {
    /// The enum's name.
    pub kind: &'static str,
    /// The text found (at most 64 characters of it).
    pub found: String,
}

text_enum! {
    /// What a session's agent is doing right now.
    #[derive(Default)]
    pub enum SessionStatus {
        /// Nothing runs and nothing waits.
        #[default]
        Idle => "idle",
        /// A permission request waits for the person's reply.
        Pending => "pending",
        /// A command is running.
        Busy => "busy",
        /// The session's agent needs authentication before it can work (see
        /// [`AgentState::auth_methods`]); the next prompt tries again.
        NeedsAuth => "needs_auth",
    }
}

impl SessionStatus {
    /// Whether a new prompt would be refused (one run per session at a time).
    pub fn is_active(self) -> bool {
        matches!(self, SessionStatus::Pending | SessionStatus::Busy)
    }
}

/// A project session as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Session {
    /// Stable for the session's life; the key in every path and event about it.
    pub id: SessionId,
    /// Shown in lists; set at creation or by a rename.
    pub title: String,
    /// When the session was created.
    pub created: Millis,
    /// When anything in the session last changed (lists sort by it).
    pub updated: Millis,
    /// Whether a run is going on, waits for the person, or the agent needs attention.
    pub status: SessionStatus,
    /// The session's agent, fixed when the session was created (`shell` for sessions stored
    /// before agents could be chosen).
    #[serde(default = "shell_agent")]
    pub agent: String,
    /// What the agent told us (modes, authentication methods); absent until it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_state: Option<AgentState>,
    /// The standing "always" answers the person gave in this session, oldest first; the UIs
    /// show them in the session's header and revoke them with `DELETE /session/{id}/standing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub standing: Vec<StandingGrant>,
}

fn shell_agent() -> String {
    "shell".into()
}

/// One standing "always" answer: from then on the agent does not ask again for what it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StandingGrant {
    /// What it covers, in words (for `shell`: every command of the session; for an ACP agent:
    /// the option's name and the tool call it was given for, as the agent scopes it).
    pub title: String,
    /// When the person granted it.
    pub granted: Millis,
}

text_enum! {
    /// How a configured agent runs.
    pub enum AgentKindName {
        /// The built-in agent that runs a prompt as one shell command.
        Shell => "shell",
        /// An agent speaking the Agent Client Protocol, started as a subprocess.
        Acp => "acp",
    }
}

text_enum! {
    /// Where a configured agent comes from.
    pub enum AgentOrigin {
        /// Built into ax-code (a preset).
        Builtin => "builtin",
        /// The user's agents configuration file.
        Config => "config",
    }
}

/// One agent a session can be created with (`GET /agent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentInfo {
    /// The name `POST /session {"agent"}` and `ax-code session create --agent` take.
    pub name: String,
    /// How it runs.
    pub kind: AgentKindName,
    /// Built in, or from the user's agents configuration file.
    pub origin: AgentOrigin,
}

/// `GET /agent`: the configured agents, the default first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentList {
    /// The agent a session gets when `POST /session` names none.
    pub default: String,
    /// Every configured agent, the default first.
    pub agents: Vec<AgentInfo>,
}

/// An ACP agent's state as a session shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentState {
    /// The agent's modes and the current one, if it offers modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<AgentModes>,
    /// How to authenticate, while the session is `needs_auth`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auth_methods: Vec<turn::AuthMethod>,
    /// The agent's latest `usage_update`: a meter, not transcript lines (docs/agents.md §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<AgentUsage>,
    /// The agent's latest `available_commands_update`: what `/name` in a prompt runs
    /// (docs/agents.md §4). Bounded by [`AgentCommand::MAX_COUNT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<AgentCommand>,
    /// The agent's session options (model, reasoning effort, switches...), its latest full
    /// list from `session/new|load|resume`, `config_option_update` or
    /// `session/set_config_option` (docs/agents.md §3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_options: Vec<AgentConfigOption>,
}

text_enum! {
    /// How a config option is chosen.
    pub enum ConfigKind {
        /// One of the option's `options`.
        Select => "select",
        /// On or off.
        Boolean => "boolean",
    }
}

/// A config option's value: a select's value id, or a boolean's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConfigValue {
    /// A boolean option's state.
    Bool(bool),
    /// One of a select option's [`AgentConfigChoice::value`]s.
    Text(String),
}

/// One session option the agent offers (`configOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentConfigOption {
    /// The agent's id for it; what `POST /session/{id}/config` names.
    pub id: String,
    /// The label shown to the person.
    pub name: String,
    /// The agent's explanation, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent's category (`mode`, `model`, `thought_level`, or its own), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Select or boolean.
    #[serde(rename = "type")]
    pub kind: ConfigKind,
    /// The value now: a string for a select, a boolean for a boolean.
    pub current_value: ConfigValue,
    /// A select's choices in the agent's order (groups flattened); empty for a boolean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<AgentConfigChoice>,
}

impl AgentConfigOption {
    /// At most this many options are kept, and this many choices per option.
    pub const MAX_COUNT: usize = 64;
}

/// One choice of a select option.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentConfigChoice {
    /// The agent's value id; what is sent back.
    pub value: String,
    /// The label shown to the person.
    pub name: String,
    /// The agent's explanation, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `POST /session/{id}/config` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetConfigOption {
    /// One of the agent's [`AgentConfigOption::id`]s.
    pub config_id: String,
    /// A select's value id (a string) or a boolean's new state.
    pub value: ConfigValue,
}

/// One command the agent offers; a prompt whose text starts with `/name` runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentCommand {
    /// Without the `/`: no whitespace, no control character, at most [`Self::MAX_NAME`] bytes.
    pub name: String,
    /// The agent's one-line explanation (controls escaped, at most [`Self::MAX_TEXT`] bytes).
    pub description: String,
    /// What to type after the name, when the command takes input (bounded like `description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_hint: Option<String>,
}

impl AgentCommand {
    /// At most this many commands are kept; an agent's further ones are dropped.
    pub const MAX_COUNT: usize = 200;
    /// The longest name kept, in bytes; a longer one drops the command.
    pub const MAX_NAME: usize = 64;
    /// The longest description or hint kept, in bytes; longer ones are cut.
    pub const MAX_TEXT: usize = 512;
}

/// How much of its context the agent uses, and what the session has cost so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentUsage {
    /// Tokens currently in the agent's context.
    pub used: u64,
    /// The size of the agent's context window, in tokens.
    pub size: u64,
    /// The session's cumulative cost, when the agent reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<AgentCost>,
}

/// A cumulative cost as the agent reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentCost {
    /// The amount; always finite (JSON cannot carry anything else, and the backend drops a
    /// cost that is not), which is why this type can be `Eq`.
    pub amount: f64,
    /// The unit: an ISO 4217 code such as `USD`, or another unit the agent names.
    pub currency: String,
}

impl Eq for AgentCost {}

/// The modes an agent offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentModes {
    /// The id of the mode the agent is in now.
    pub current: String,
    /// Every mode the person may switch to, in the agent's order.
    pub available: Vec<AgentMode>,
}

/// One mode of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentMode {
    /// The agent's id for the mode; what `SetMode` sends back.
    pub id: String,
    /// The label shown to the person.
    pub name: String,
    /// The agent's one-line explanation, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `POST /session/{id}/mode` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetMode {
    /// One of the agent's [`AgentMode::id`]s.
    pub mode_id: String,
}

/// The project a backend serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    /// Canonical absolute directory.
    pub directory: String,
}

/// `GET /find/file` answer: the project's files that match a query, best first
/// (docs/backend.md §3, "Finding files").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FoundFiles {
    /// The matches, best first.
    pub files: Vec<FoundFile>,
    /// The project has more files than the backend lists, so a file may be missing.
    pub truncated: bool,
}

/// One file that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FoundFile {
    /// Relative to the project, `/`-separated: what a prompt's file part names.
    pub path: String,
    /// Higher is a better match; only the order within one answer means anything.
    pub score: i64,
}

/// `POST /session` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateSession {
    /// The title to show; the backend picks one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent's name (see `ax-code agents`); the configured default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// `PATCH /session/{id}` body: the new title (1 to 200 characters, no control characters and
/// no bidi controls).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameSession {
    /// Replaces the old title whole.
    pub title: String,
}

text_enum! {
    /// Who wrote a message.
    pub enum Role {
        /// The person.
        User => "user",
        /// The session's agent.
        Assistant => "assistant",
    }
}

text_enum! {
    /// Which output stream a chunk came from.
    pub enum Stream {
        /// Standard output.
        Stdout => "stdout",
        /// Standard error.
        Stderr => "stderr",
    }
}

/// One ordered piece of a message.
// An agent's tool call is the large variant; parts live in a message's Vec, served whole, so
// matching by value (no box) is worth the size here.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Part {
    /// Text the person wrote.
    Text {
        /// As typed, unchanged.
        text: String,
    },
    /// An attachment: a path inside the project.
    File {
        /// Relative to the project directory.
        path: String,
    },
    /// An image the person attached; its bytes are served by
    /// `GET /session/{id}/message/{mid}/image/{index}` (docs/backend.md §3).
    Image {
        /// Which of the message's images (0-based, in the order given).
        index: u32,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, as its bytes say.
        mime_type: String,
        /// Its size in bytes.
        bytes: u64,
        /// The file name it came with, if any (shown on its chip).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A chunk of the agent's command output, in arrival order.
    Output {
        /// Which pipe the chunk came from.
        stream: Stream,
        /// The chunk, decoded as UTF-8 (invalid bytes replaced).
        text: String,
    },
    /// The per-message output bound was hit; later output was dropped.
    Truncated {
        /// How many bytes of output were not kept.
        dropped_bytes: u64,
    },
    /// The run ended. `code` is the exit status, `signal` the terminating signal, if any.
    Exit {
        /// The exit status, when the process exited on its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal number, when a signal ended the process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// The person rejected the command: nothing ran.
    Rejected,
    /// The run was aborted by the person.
    Aborted,
    /// The run was cut short by a backend restart.
    Interrupted,
    /// A part of an ACP agent's message (`thought`, `tool_call`, `plan`, `permission`,
    /// `notice`; its `text` reads back as [`Part::Text`], the same JSON).
    #[serde(untagged)]
    Turn(turn::TurnPart),
}

impl Part {
    /// The message part for an agent's turn part (text maps to [`Part::Text`], whose JSON is
    /// the same, so a part reads back equal to what was sent).
    pub fn from_turn(part: turn::TurnPart) -> Part {
        match part {
            turn::TurnPart::Text { text } => Part::Text { text },
            other => Part::Turn(other),
        }
    }
}

/// A transcript entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Message {
    /// Unique within the backend; events about the message name it.
    pub id: MessageId,
    /// The session the message belongs to.
    pub session_id: SessionId,
    /// Who wrote it.
    pub role: Role,
    /// When it was stored.
    pub created: Millis,
    /// In order; `message.part` and `message.delta` events extend them.
    pub parts: Vec<Part>,
    /// When the reply's turn ended; absent while it runs and for the person's messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Millis>,
    /// The `seq` of the last `message.delta` folded into `parts` (0: none), so a client that
    /// loads a transcript mid-turn applies only the later deltas.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deltas: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A part of `POST /session/{id}/prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum PromptPart {
    /// Text the person typed.
    Text {
        /// As typed, unchanged.
        text: String,
    },
    /// A file to attach, relative to the project.
    File {
        /// Must resolve inside the project directory, or the prompt is refused.
        path: String,
    },
    /// An image (pasted, dropped or read from a file by the UI), for agents that advertise
    /// `promptCapabilities.image` (docs/agents.md §11).
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`; must match the bytes.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// The image, base64 (standard alphabet, padded).
        data: String,
        /// A file name to show on its chip (at most 200 characters, no control characters).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

/// `POST /session/{id}/prompt` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Prompt {
    /// Text and attachments, in the order the person gave them.
    pub parts: Vec<PromptPart>,
}

text_enum! {
    /// State of a permission request.
    pub enum PermissionState {
        /// Waiting for the person.
        Pending => "pending",
        /// The person allowed it.
        Approved => "approved",
        /// The person refused it.
        Rejected => "rejected",
        /// The run it belonged to was aborted or interrupted before a reply.
        Cancelled => "cancelled",
    }
}

/// The agent asks before it runs a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Permission {
    /// Unique within the backend; the `{pid}` of the answer's path.
    pub id: PermissionId,
    /// The session whose run asks.
    pub session_id: SessionId,
    /// What is asked: the command line the agent wants to run.
    pub command: String,
    /// The files the command gets, relative to the project, as they resolved when the prompt
    /// was sent (the agent checks again, and refuses to run, if one resolves elsewhere when
    /// the command starts). Empty when nothing is attached.
    pub attachments: Vec<String>,
    /// Pending until the person answers or the run ends.
    pub state: PermissionState,
    /// When the request was made.
    pub created: Millis,
    /// For an ACP agent: the tool call it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<turn::ToolCallPart>,
    /// For an ACP agent: the options it offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<turn::PermissionChoice>,
    /// For an ACP agent, once answered: the id of the option that was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
}

text_enum! {
    /// The person's answer to a permission request.
    pub enum PermissionReply {
        /// The same as [`PermissionReply::AllowOnce`] (older clients send it).
        Once => "once",
        /// The same as [`PermissionReply::AllowAlways`] (older clients send it).
        Always => "always",
        /// The same as [`PermissionReply::RejectOnce`] (older clients send it).
        Reject => "reject",
        /// The agent's first `allow_once` option.
        AllowOnce => "allow_once",
        /// The agent's first `allow_always` option.
        AllowAlways => "allow_always",
        /// The agent's first `reject_once` option.
        RejectOnce => "reject_once",
        /// The agent's first `reject_always` option.
        RejectAlways => "reject_always",
    }
}

impl PermissionReply {
    /// The ACP option kind it asks for.
    pub fn kind(self) -> turn::PermissionKind {
        match self {
            PermissionReply::Once | PermissionReply::AllowOnce => turn::PermissionKind::AllowOnce,
            PermissionReply::Always | PermissionReply::AllowAlways => {
                turn::PermissionKind::AllowAlways
            }
            PermissionReply::Reject | PermissionReply::RejectOnce => {
                turn::PermissionKind::RejectOnce
            }
            PermissionReply::RejectAlways => turn::PermissionKind::RejectAlways,
        }
    }
}

/// `POST /session/{id}/permission/{pid}` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionAnswer {
    /// The person's answer.
    pub reply: PermissionReply,
    /// For an ACP agent: the exact option chosen, one of the permission's `options` (an
    /// agent may offer several of one kind, docs/agents.md §5). Without it the first option
    /// of the reply's kind is sent. Its kind wins over `reply`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
}

/// One item of the `/event` stream. The SSE `id:` line carries [`EventEnvelope::id`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventEnvelope {
    /// Strictly increasing per backend process.
    pub id: u64,
    /// What happened.
    pub event: Event,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Event {
    /// A session was created.
    #[serde(rename = "session.created")]
    SessionCreated {
        /// The new session as stored.
        session: Session,
    },
    /// A session's title, agent state or timestamps changed.
    #[serde(rename = "session.updated")]
    SessionUpdated {
        /// The session after the change.
        session: Session,
    },
    /// A session and its messages were deleted.
    #[serde(rename = "session.deleted", rename_all = "camelCase")]
    SessionDeleted {
        /// The deleted session.
        session_id: SessionId,
    },
    /// A session's status changed (without the whole session).
    #[serde(rename = "session.status", rename_all = "camelCase")]
    SessionStatus {
        /// The session that changed.
        session_id: SessionId,
        /// Its new status.
        status: SessionStatus,
    },
    /// A new message (its parts so far).
    #[serde(rename = "message.created")]
    MessageCreated {
        /// The message as stored so far.
        message: Message,
    },
    /// A part appended to a message; `index` is its position in `parts`.
    #[serde(rename = "message.part", rename_all = "camelCase")]
    MessagePart {
        /// The session of the message.
        session_id: SessionId,
        /// The message the part is appended to.
        message_id: MessageId,
        /// The part's position in the message's parts.
        index: u32,
        /// The appended part.
        part: Part,
    },
    /// A change to an ACP agent's message: fold `delta` into its parts with
    /// [`turn::apply`] (`seq` counts the message's deltas from 1).
    #[serde(rename = "message.delta", rename_all = "camelCase")]
    MessageDelta {
        /// The session of the message.
        session_id: SessionId,
        /// The agent's message that changed.
        message_id: MessageId,
        /// Counts from 1 per message, so a client sees a gap.
        seq: u64,
        /// The change to fold in.
        delta: turn::TurnDelta,
    },
    /// A reply's turn ended: `ended` is what the store now holds as the message's
    /// [`Message::ended`], so a client that watched the turn shows the same duration a reload
    /// would. Sent before the session's status turns idle.
    #[serde(rename = "message.ended", rename_all = "camelCase")]
    MessageEnded {
        /// The session of the message.
        session_id: SessionId,
        /// The reply whose turn ended.
        message_id: MessageId,
        /// When, as stored (ms since the epoch, never before the message's `created`).
        ended: Millis,
    },
    /// A run asks the person before it goes on.
    #[serde(rename = "permission.asked")]
    PermissionAsked {
        /// The request, `pending`.
        permission: Permission,
    },
    /// A permission request was answered or cancelled.
    #[serde(rename = "permission.replied", rename_all = "camelCase")]
    PermissionReplied {
        /// The session of the request.
        session_id: SessionId,
        /// The request, by [`Permission::id`].
        permission_id: PermissionId,
        /// How it ended.
        state: PermissionState,
    },
    /// A session's prompt queue changed (added, edited, cancelled, sent, paused, resumed):
    /// the whole queue as it now is (docs/backend.md §3).
    #[serde(rename = "queue.updated")]
    QueueUpdated {
        /// The queue after the change.
        queue: queue::PromptQueue,
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
    /// Always `true`: an answer at all means the backend is up.
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

/// `POST /signin/code` answer (201; the request needs the credential): a one-time code for the
/// Control UI's `#code=` link, valid for one `POST /signin` within `expiresInMs`.
///
/// The code and the credential below are [`ax_core::Secret`]s: the JSON carries their text
/// (that is what these shapes are for), their `Debug` shows `<redacted>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInCode {
    /// Single use; a secret until exchanged, so `Debug` hides it.
    pub code: Secret,
    /// How long the code stays valid.
    pub expires_in_ms: u64,
}

/// `POST /signin` body (no credential needed): the one-time code to exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInExchange {
    /// The code from [`SignInCode`]; `Debug` hides it.
    pub code: Secret,
}

impl SignInExchange {
    /// A `POST /signin` body: a JSON object with the one field `code` (serde alone would also
    /// take `["…"]`), holding a code of the right shape (`ax_core::signin::well_formed`), so a
    /// malformed one gets a clear "bad request" rather than "unknown". `Err` says what is wrong.
    pub fn from_body(value: serde_json::Value) -> Result<SignInExchange, String> {
        if !value.is_object() {
            return Err(r#"expected a JSON object {"code": "…"}"#.to_owned());
        }
        let exchange: SignInExchange = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if !ax_core::signin::well_formed(exchange.code.expose()) {
            return Err(format!(
                "a sign-in code is {} characters of [0-9A-Za-z]",
                ax_core::signin::CODE_LEN
            ));
        }
        Ok(exchange)
    }
}

/// `POST /signin` answer: the backend credential, for the page's `sessionStorage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInGrant {
    /// The backend credential; `Debug` hides it.
    pub token: Secret,
}

/// `POST /session/{id}/prompt` answer (202): what was stored and what happens next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptAccepted {
    /// The person's message as stored.
    pub message: Message,
    /// The agent's reply message; its parts arrive as `message.part` events.
    pub reply_id: MessageId,
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
    /// What went wrong.
    pub error: ApiError,
}

/// A machine-readable code and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiError {
    /// Stable and machine-readable, e.g. `not_found`; clients match on it.
    pub code: String,
    /// For the person; may change between versions.
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

    #[test]
    fn text_enums_have_one_mapping_for_serde_and_text() {
        fn check<T>(all: &[T])
        where
            T: Copy + fmt::Debug + PartialEq + Serialize + std::str::FromStr + fmt::Display,
            for<'de> T: Deserialize<'de>,
        {
            for &v in all {
                let json = serde_json::to_string(&v).unwrap();
                assert_eq!(json, format!("\"{v}\""));
                assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v);
                assert!(v.to_string().parse::<T>().ok() == Some(v));
            }
        }
        check(SessionStatus::ALL);
        check(Role::ALL);
        check(Stream::ALL);
        check(PermissionState::ALL);
        check(PermissionReply::ALL);
        let err = "Idle".parse::<SessionStatus>().unwrap_err();
        assert_eq!(err.to_string(), "unknown SessionStatus \"Idle\"");
        assert!(serde_json::from_str::<Role>("\"system\"").is_err());
    }

    /// Every key of every object in `v` is camelCase (no `_`, no leading capital).
    fn assert_camel_case(v: &serde_json::Value, path: &str) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    assert!(
                        k.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                            && k.chars().all(|c| c.is_ascii_alphanumeric()),
                        "wire field {path}.{k} is not camelCase"
                    );
                    assert_camel_case(child, &format!("{path}.{k}"));
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    assert_camel_case(child, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }

    /// One value of every part kind; the match makes a new kind fail to compile until added.
    fn every_part() -> Vec<Part> {
        let parts = vec![
            Part::Text { text: "t".into() },
            Part::File { path: "a".into() },
            Part::Image {
                index: 0,
                mime_type: "image/png".into(),
                bytes: 3,
                name: Some("a.png".into()),
            },
            Part::Output {
                stream: Stream::Stdout,
                text: "o".into(),
            },
            Part::Truncated { dropped_bytes: 3 },
            Part::Exit {
                code: Some(0),
                signal: Some(9),
            },
            Part::Rejected,
            Part::Aborted,
            Part::Interrupted,
            Part::Turn(turn::TurnPart::Thought { text: "th".into() }),
            Part::Turn(turn::TurnPart::ToolCall(turn::ToolCallPart {
                tool_call_id: "t1".into(),
                title: "ls".into(),
                ..Default::default()
            })),
        ];
        for p in &parts {
            match p {
                Part::Text { .. }
                | Part::File { .. }
                | Part::Image { .. }
                | Part::Output { .. }
                | Part::Truncated { .. }
                | Part::Exit { .. }
                | Part::Rejected
                | Part::Aborted
                | Part::Interrupted
                | Part::Turn(_) => {}
            }
        }
        parts
    }

    #[test]
    fn agent_parts_read_back_equal() {
        for part in every_part() {
            let json = serde_json::to_string(&part).unwrap();
            assert_eq!(serde_json::from_str::<Part>(&json).unwrap(), part, "{json}");
        }
        let text = Part::from_turn(turn::TurnPart::Text { text: "a".into() });
        assert_eq!(text, Part::Text { text: "a".into() });
        assert!(serde_json::from_str::<Part>(r#"{"type":"thought","text":"a","x":1}"#).is_err());
        assert!(serde_json::from_str::<Part>(r#"{"type":"nope"}"#).is_err());
    }

    #[test]
    fn every_wire_field_is_camel_case() {
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let session = Session {
            id: id.clone(),
            title: "t".into(),
            created: 1,
            updated: 2,
            status: SessionStatus::Busy,
            agent: "shell".into(),
            agent_state: Some(AgentState {
                modes: Some(AgentModes {
                    current: "default".into(),
                    available: vec![AgentMode {
                        id: "default".into(),
                        name: "Default".into(),
                        description: None,
                    }],
                }),
                auth_methods: Vec::new(),
                usage: Some(AgentUsage {
                    used: 1200,
                    size: 200_000,
                    cost: Some(AgentCost {
                        amount: 0.5,
                        currency: "USD".into(),
                    }),
                }),
                commands: vec![AgentCommand {
                    name: "review".into(),
                    description: "Review the changes".into(),
                    input_hint: Some("what to review".into()),
                }],
                config_options: vec![AgentConfigOption {
                    id: "reasoning_effort".into(),
                    name: "Reasoning effort".into(),
                    description: None,
                    category: Some("thought_level".into()),
                    kind: ConfigKind::Select,
                    current_value: ConfigValue::Text("low".into()),
                    options: vec![AgentConfigChoice {
                        value: "low".into(),
                        name: "Low".into(),
                        description: None,
                    }],
                }],
            }),
            standing: vec![StandingGrant {
                title: "every command".into(),
                granted: 3,
            }],
        };
        let mid: MessageId = "msg_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let pid: PermissionId = "per_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let message = Message {
            id: mid.clone(),
            session_id: id.clone(),
            role: Role::Assistant,
            created: 1,
            parts: every_part(),
            ended: Some(2),
            deltas: 3,
        };
        let permission = Permission {
            id: pid.clone(),
            session_id: id.clone(),
            command: "ls".into(),
            attachments: vec!["a.txt".into()],
            state: PermissionState::Pending,
            created: 1,
            tool_call: None,
            options: Vec::new(),
            option_id: Some("allow".into()),
        };
        let mut values = vec![
            serde_json::to_value(&session).unwrap(),
            serde_json::to_value(&message).unwrap(),
            serde_json::to_value(PromptAccepted {
                message: message.clone(),
                reply_id: mid.clone(),
                permission: Some(permission.clone()),
            })
            .unwrap(),
            serde_json::to_value(Health {
                ok: true,
                version: "1".into(),
                proof: Some("p".into()),
                screen_proof: Some("s".into()),
            })
            .unwrap(),
            serde_json::to_value(AbortResult { aborted: true }).unwrap(),
            serde_json::to_value(AgentList {
                default: "shell".into(),
                agents: vec![AgentInfo {
                    name: "shell".into(),
                    kind: AgentKindName::Shell,
                    origin: AgentOrigin::Builtin,
                }],
            })
            .unwrap(),
        ];
        let events = [
            Event::SessionCreated {
                session: session.clone(),
            },
            Event::SessionUpdated {
                session: session.clone(),
            },
            Event::SessionDeleted {
                session_id: id.clone(),
            },
            Event::SessionStatus {
                session_id: id.clone(),
                status: SessionStatus::Idle,
            },
            Event::MessageCreated {
                message: message.clone(),
            },
            Event::MessagePart {
                session_id: id.clone(),
                message_id: mid.clone(),
                index: 0,
                part: Part::Truncated { dropped_bytes: 1 },
            },
            Event::MessageDelta {
                session_id: id.clone(),
                message_id: mid.clone(),
                seq: 1,
                delta: turn::TurnDelta::ToolCallUpdated {
                    tool_call_id: "t".into(),
                    fields: turn::ToolCallFields {
                        status: Some(turn::ToolStatus::Completed),
                        ..Default::default()
                    },
                },
            },
            Event::MessageEnded {
                session_id: id.clone(),
                message_id: mid.clone(),
                ended: 2,
            },
            Event::PermissionAsked {
                permission: permission.clone(),
            },
            Event::PermissionReplied {
                session_id: id.clone(),
                permission_id: pid.clone(),
                state: PermissionState::Approved,
            },
            Event::QueueUpdated {
                queue: queue::PromptQueue {
                    session_id: id.clone(),
                    paused: Some("why".into()),
                    items: vec![queue::QueuedPrompt {
                        id: "que_0123456789abABCDEFGHIJKLMN".parse().unwrap(),
                        session_id: id.clone(),
                        prompt: Prompt { parts: vec![] },
                        created: 1,
                        updated: 1,
                    }],
                },
            },
            Event::Reset,
        ];
        for e in &events {
            // Exhaustive on purpose: a new event kind must be added above.
            match e {
                Event::SessionCreated { .. }
                | Event::SessionUpdated { .. }
                | Event::SessionDeleted { .. }
                | Event::SessionStatus { .. }
                | Event::MessageCreated { .. }
                | Event::MessagePart { .. }
                | Event::MessageDelta { .. }
                | Event::MessageEnded { .. }
                | Event::PermissionAsked { .. }
                | Event::PermissionReplied { .. }
                | Event::QueueUpdated { .. }
                | Event::Reset => {}
            }
            values.push(
                serde_json::to_value(EventEnvelope {
                    id: 1,
                    event: e.clone(),
                })
                .unwrap(),
            );
        }
        for v in &values {
            assert_camel_case(v, "$");
        }
        // And the fixed field reads back.
        // Typed IDs are the same strings on the wire.
        let v = serde_json::to_value(&message).unwrap();
        assert_eq!(v["id"], "msg_0123456789abABCDEFGHIJKLMN");
        let v = serde_json::to_value(&permission).unwrap();
        assert_eq!(v["id"], "per_0123456789abABCDEFGHIJKLMN");
        let v = serde_json::to_value(Part::Truncated { dropped_bytes: 7 }).unwrap();
        assert_eq!(v["droppedBytes"], 7);
        assert!(serde_json::from_str::<Part>(r#"{"type":"truncated","dropped_bytes":7}"#).is_err());
        // A turn's end and delta count: present when set, absent when not.
        let v = serde_json::to_value(&message).unwrap();
        assert_eq!(
            (v["ended"].as_i64(), v["deltas"].as_u64()),
            (Some(2), Some(3))
        );
        let running = Message {
            ended: None,
            deltas: 0,
            ..message
        };
        let v = serde_json::to_value(&running).unwrap();
        assert!(v.get("ended").is_none() && v.get("deltas").is_none(), "{v}");
        assert_eq!(serde_json::from_value::<Message>(v).unwrap(), running);
    }

    #[test]
    fn ids_on_the_wire_are_checked_when_read() {
        let good = r#"{"type":"permission.replied","sessionId":"ses_0123456789abABCDEFGHIJKLMN","permissionId":"per_0123456789abABCDEFGHIJKLMN","state":"approved"}"#;
        let event: Event = serde_json::from_str(good).unwrap();
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            good,
            "byte-identical"
        );
        let wrong_kind = good.replace("per_0123", "msg_0123");
        let err = serde_json::from_str::<Event>(&wrong_kind).unwrap_err();
        assert!(err.to_string().contains("invalid permission ID"), "{err}");
    }

    #[test]
    fn sign_in_secrets_travel_in_json_but_never_print() {
        let grant: SignInGrant = serde_json::from_str(r#"{"token":"tok-abcdef-123456"}"#).unwrap();
        let code = SignInCode {
            code: Secret::from("code-987654321"),
            expires_in_ms: 60_000,
        };
        let exchange = SignInExchange {
            code: Secret::from("code-987654321"),
        };
        let printed = format!("{grant:?} {code:?} {exchange:#?}");
        assert!(
            !printed.contains("tok-abcdef") && !printed.contains("987654321"),
            "{printed}"
        );
        assert_eq!(
            serde_json::to_string(&grant).unwrap(),
            r#"{"token":"tok-abcdef-123456"}"#
        );
        assert_eq!(
            serde_json::to_string(&code).unwrap(),
            r#"{"code":"code-987654321","expiresInMs":60000}"#
        );
    }

    #[test]
    fn a_signin_body_is_an_object_with_one_well_formed_code() {
        let good = "a".repeat(ax_core::signin::CODE_LEN);
        let parsed = SignInExchange::from_body(serde_json::json!({ "code": good })).unwrap();
        assert_eq!(parsed.code.expose(), good);
        let refused = |body: serde_json::Value| SignInExchange::from_body(body).unwrap_err();
        assert!(refused(serde_json::json!([good])).contains("JSON object"));
        assert!(refused(serde_json::json!({ "code": good, "x": 1 })).contains("unknown field"));
        assert!(refused(serde_json::json!({ "code": "short" })).contains("characters of"));
        let with_dash = format!("{}-", &good[1..]);
        assert!(refused(serde_json::json!({ "code": with_dash })).contains("characters of"));
    }
}
