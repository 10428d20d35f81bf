//! What every handler shares: the store, the event bus, the active runs, and the
//! exposure rules (credential, accepted Host names).

use std::{path::PathBuf, sync::Arc, time::Duration};

use ax_protocol::SessionId;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    events::EventBus,
    store::Store,
    turn_outcome::TurnOutcome,
    turn_slots::{AgentSlots, Runs},
};

pub type Shared = Arc<App>;

/// What runs after every turn's end (the prompt queue's hook, set where the app is built), so
/// the turn logic does not depend on what drives it.
pub type AfterTurn = fn(&Shared, &SessionId, TurnOutcome);

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
    /// How long an abort waits for the turn to end before it says the turn did not stop.
    /// Longer than [`Limits::agent_watchdog`], so an agent that ignores the abort is killed
    /// within it.
    pub abort_wait: Duration,
    /// After an abort, how long an agent has to end its turn before its process group (or
    /// the task of an agent served inside the backend) is killed.
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
            abort_wait: Duration::from_secs(20),
            agent_watchdog: Duration::from_secs(15),
            queue_len: 16,
            queued_prompt_bytes: 32 * 1024,
        }
    }
}

pub struct App {
    pub store: Store,
    pub project_id: i64,
    /// Canonical project directory.
    pub project_dir: PathBuf,
    pub bus: EventBus,
    /// The named agents sessions can be created with.
    pub agents: ax_acp::AgentsConfig,
    /// What every agent tag of this backend starts with: one value per data directory and
    /// project (docs/agents.md §2, [`crate::turn::acp::tag_scope`]).
    pub agent_tag_scope: String,
    /// Running ACP agent processes by session (one per session that has work).
    pub agent_slots: AgentSlots,
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
    /// Each session's run slot: its turn, or a hold.
    pub runs: Runs,
    /// Each session's prompt-queue gate (see `crate::queue`).
    pub queue_gates: crate::queue_gate::Gates,
    /// What runs after every turn's end: the prompt queue going on (`crate::queue::after_turn`).
    pub after_turn: AfterTurn,
    pub tasks: TaskTracker,
    pub shutdown: CancellationToken,
    pub version: String,
}
