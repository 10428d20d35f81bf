//! What every handler shares: the store, the event bus, the agent, the active runs, and the
//! exposure rules (credential, accepted Host names).

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_agents::Agent;
use ax_protocol::{Permission, PermissionId, PermissionReply, SessionId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{events::EventBus, store::Store, turn_error::TurnError};

pub type Shared = Arc<App>;

/// Bounds on what a request may carry.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request body.
    pub body_bytes: usize,
    /// Largest total text of one prompt.
    pub prompt_text_bytes: usize,
    /// Most parts in one prompt.
    pub prompt_parts: usize,
    /// Largest body of `POST /session/{id}/prompt`, which may carry images (base64).
    pub prompt_body_bytes: usize,
    /// Largest image, decoded.
    pub image_bytes: usize,
    /// Largest total of a prompt's images, decoded.
    pub prompt_image_bytes: usize,
    /// Longest session title, in characters.
    pub title_chars: usize,
    /// Output kept per reply message; beyond it a truncation marker says how much was dropped.
    pub output_bytes_per_message: usize,
    /// Time to read a request head, also the longest a kept-alive connection may sit idle
    /// between requests and the longest a request without the credential may take (its body
    /// included).
    pub header_read_timeout: Duration,
    /// Open connections that have not carried the credential; the next one evicts the oldest
    /// idle one. Also capped at a quarter of the file-descriptor limit.
    pub unauthenticated_connections: usize,
    /// How long an abort waits for the run to end before it says the run did not stop.
    pub abort_wait: Duration,
    /// After an abort, how long an ACP agent has to end its turn before its process group is
    /// killed (an abort of an agent turn waits this long plus 5 s).
    pub agent_watchdog: Duration,
    /// Most prompts waiting in one session's queue (docs/backend.md §3); one more is a 429.
    pub queue_len: usize,
    /// Largest queued prompt, as its JSON body; a larger one is a 413.
    pub queued_prompt_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 512 * 1024,
            prompt_text_bytes: 64 * 1024,
            prompt_parts: 64,
            // 10 MiB of images in base64 (4/3) plus the rest of a prompt.
            prompt_body_bytes: 14 * 1024 * 1024,
            image_bytes: ax_core::image::MAX_IMAGE_BYTES,
            prompt_image_bytes: ax_core::image::MAX_PROMPT_IMAGE_BYTES,
            title_chars: 200,
            output_bytes_per_message: 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            unauthenticated_connections: 256,
            abort_wait: Duration::from_secs(15),
            agent_watchdog: Duration::from_secs(15),
            queue_len: 16,
            queued_prompt_bytes: 32 * 1024,
        }
    }
}

/// What a run's task is waiting for or doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Pending {
        permission_id: PermissionId,
    },
    Busy,
    /// An ACP agent's turn: busy while its `session/prompt` is outstanding; permissions are
    /// answered through [`Control::AgentReply`].
    Agent,
    /// No run: the slot is held (see `runner::hold_slot`) while the session's standing answers
    /// are revoked or the session is deleted, so no prompt starts in the middle of that.
    Held(HeldFor),
}

/// Why a session's run slot is held without a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldFor {
    /// `DELETE /session/{id}/standing` is stopping the agent and forgetting the answers.
    Revoking,
    /// `DELETE /session/{id}` is removing the session.
    Deleting,
    /// `POST /session/{id}/mode` is starting the session's agent to switch its mode.
    StartingAgent,
}

/// A message to a run's task.
pub enum Control {
    Reply {
        reply: PermissionReply,
        ack: oneshot::Sender<Result<Permission, TurnError>>,
    },
    Abort {
        ack: oneshot::Sender<()>,
    },
    /// The person answers one of an agent turn's pending permissions.
    AgentReply {
        permission_id: PermissionId,
        reply: PermissionReply,
        /// The exact option chosen, when the answer named one (docs/agents.md §5).
        option_id: Option<String>,
        ack: oneshot::Sender<Result<Permission, TurnError>>,
    },
}

pub struct RunHandle {
    pub phase: Phase,
    pub control: mpsc::UnboundedSender<Control>,
}

pub struct App {
    pub store: Store,
    pub project_id: i64,
    /// Canonical project directory.
    pub project_dir: PathBuf,
    pub bus: EventBus,
    pub agent: Arc<dyn Agent>,
    /// The named agents sessions can be created with.
    pub agents: ax_acp::AgentsConfig,
    /// What every agent tag of this backend starts with: one value per data directory and
    /// project (docs/agents.md §2, [`crate::acp_run::tag_scope`]).
    pub agent_tag_scope: String,
    /// Running ACP agent processes by session (one per session that has work).
    pub agent_slots: Mutex<HashMap<SessionId, Arc<crate::acp_run::AgentSlot>>>,
    /// The session-scoped screen credentials and gates of ACP sessions.
    pub screens: Arc<crate::agent_screen::AgentScreens>,
    pub token: ax_core::Secret,
    /// The screen credential derived from `token` (gateway only, read and write scopes).
    pub screen_token: ax_core::Secret,
    /// Values accepted in the Host header (lowercase): the bound address and the loopback
    /// names with the port, plus the names the person allowed. Never empty, never "any".
    pub allowed_hosts: Vec<String>,
    /// The `--allow-host` names (alone and with the port, lowercase), for which an `https://`
    /// Origin is accepted too (a TLS-terminating proxy in front).
    pub proxied_hosts: Vec<String>,
    pub limits: Limits,
    pub heartbeat: Duration,
    /// Active runs by session; a std mutex, held for map operations only.
    pub runs: Mutex<HashMap<SessionId, RunHandle>>,
    /// Each session's prompt-queue gate (see `crate::queue`).
    pub queue_gates: crate::queue::Gates,
    pub tasks: TaskTracker,
    pub shutdown: CancellationToken,
    pub version: String,
}

impl App {
    pub fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, RunHandle>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn agent_slots(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<crate::acp_run::AgentSlot>>> {
        self.agent_slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}
