//! The state's requests for I/O: each [`Effect`] leaves through [`super::App::take_effects`]
//! and its answer comes back through an `on_*` method.

use ax_protocol::{PermissionReply, PromptPart, SessionId};

/// Work for the owner loop. Results come back through the `on_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Load the session list and pending permissions.
    Resync {
        /// Results of an older resync are dropped.
        generation: u64,
    },
    /// Load a session's messages.
    LoadTranscript {
        /// The session to load.
        session: SessionId,
        /// Results for a route left since are dropped.
        generation: u64,
    },
    /// Send a prompt; `session: None` creates a session for it first.
    Submit {
        /// The target session, or `None` for a new one.
        session: Option<SessionId>,
        /// The prompt's text and attachments.
        parts: Vec<PromptPart>,
        /// Results for a route left since are dropped.
        generation: u64,
        /// Through `POST /session/{id}/queue`: a turn runs or prompts wait (docs/tui.md §3d).
        queue: bool,
    },
    /// Change one of the agent's session options (`POST /session/{id}/config`).
    SetConfig {
        /// The session.
        session: SessionId,
        /// The option's id.
        config_id: String,
        /// A select's value id or a boolean's state.
        value: ax_protocol::ConfigValue,
    },
    /// Find the project's files matching `query` for the `@` picker (`GET /find/file`).
    FindFiles {
        /// What follows the `@`.
        query: String,
        /// Answers for an older query are dropped.
        generation: u64,
    },
    /// Load a session's prompt queue.
    LoadQueue {
        /// The session.
        session: SessionId,
        /// The `queue.updated` count when asked; an answer older than an event is dropped.
        generation: u64,
    },
    /// Replace a queued prompt with what the composer holds.
    EditQueued {
        /// Its session.
        session: SessionId,
        /// The item.
        id: ax_protocol::QueuedId,
        /// The new prompt.
        parts: Vec<PromptPart>,
        /// The composer's submission generation.
        generation: u64,
    },
    /// Cancel a queued prompt.
    CancelQueued {
        /// Its session.
        session: SessionId,
        /// The item.
        id: ax_protocol::QueuedId,
    },
    /// Send a queued prompt now (the running turn is stopped first).
    SendQueuedNow {
        /// Its session.
        session: SessionId,
        /// The item.
        id: ax_protocol::QueuedId,
    },
    /// Let a paused queue flow again.
    ResumeQueue {
        /// The session.
        session: SessionId,
    },
    /// List the configured agents, for the new-session picker.
    ListAgents {
        /// Results for a route left since are dropped.
        generation: u64,
    },
    /// Create an empty session with `agent` (`None`: the backend's default) and open it.
    CreateSession {
        /// Results for a route left since are dropped.
        generation: u64,
        /// The agent the person picked.
        agent: Option<String>,
    },
    /// Switch the session's agent to another of its modes.
    SetMode {
        /// The session whose agent switches.
        session: SessionId,
        /// One of the modes the agent offers.
        mode_id: String,
    },
    /// Forget every standing "always" answer of the session.
    RevokeStanding {
        /// The session whose answers are forgotten.
        session: SessionId,
    },
    /// Answer a permission request.
    ReplyPermission {
        /// The session that asks.
        session: SessionId,
        /// The request.
        permission_id: ax_protocol::PermissionId,
        /// The person's answer.
        reply: PermissionReply,
        /// The exact option chosen (docs/agents.md §5).
        option_id: String,
    },
    /// Stop the session's running turn.
    Abort {
        /// The session to stop.
        session: SessionId,
    },
    /// Check an attachment at once: it exists, is a file, and is inside the project.
    CheckAttachment {
        /// The project directory the path must stay inside.
        workspace: String,
        /// The path as typed.
        path: String,
    },
    /// Read an image for the next prompt (`/image PATH`): a regular file, relative to the
    /// project or absolute, checked by size and magic bytes.
    LoadImage {
        /// The project directory a relative path starts from.
        workspace: String,
        /// The path as typed.
        path: String,
    },
    /// Give a session a new title.
    RenameSession {
        /// The session.
        session: SessionId,
        /// The new title.
        title: String,
    },
    /// Delete a session (the person confirmed).
    DeleteSession {
        /// The session.
        session: SessionId,
    },
    /// Close the TUIMCP endpoint for good.
    RevokeSharing,
    /// Ring the terminal: write `sequence` (BEL, or an OSC 9 / OSC 777 notification).
    Ring {
        /// The bytes, already built and sanitised by `notify.rs`.
        sequence: String,
    },
    /// Clear the terminal and draw everything again (Ctrl+L).
    Redraw,
    /// Capture the mouse, or leave it to the terminal (its own selection then works).
    SetMouseCapture {
        /// Capture (`true`) or release.
        on: bool,
    },
    /// Put `text` on the clipboard through the terminal (OSC 52).
    CopyToClipboard {
        /// What to copy.
        text: String,
    },
    /// Shut down (the exit overlay is showing).
    Quit,
}
