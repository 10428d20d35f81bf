//! The two registries every turn goes through (docs/backend.md §2): a session's **run slot**
//! (at most one turn, or one hold, per session; the turn's task owns it and is reached through
//! its [`Control`] channel) and the session's **agent slot** (its running ACP agent process,
//! kept between turns). A leaf: it knows nothing of the store, the event bus or the app, so
//! `state.rs` can hold both registries without depending on the turn logic.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, atomic::AtomicBool},
};

use ax_acp::{AcpEvent, AgentHandle};
use ax_protocol::{Permission, PermissionId, PermissionReply, SessionId};
use tokio::sync::{mpsc, oneshot};

use crate::turn_error::TurnError;

/// What a session's run slot is taken for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// An agent's turn (the `shell` agent's too): busy while its `session/prompt` is
    /// outstanding; permissions are answered through [`Control::AgentReply`].
    Agent,
    /// No run: the slot is held (see [`crate::turn::hold_slot`]) while the session's standing
    /// answers are revoked, the session is deleted or its agent starts for a mode change, so
    /// no prompt starts in the middle of that.
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

/// A message to a turn's task.
pub enum Control {
    /// Stop the turn; `ack` is answered once it has ended.
    Abort { ack: oneshot::Sender<()> },
    /// The person answers one of an agent turn's pending permissions.
    AgentReply {
        permission_id: PermissionId,
        reply: PermissionReply,
        /// The exact option chosen, when the answer named one (docs/agents.md §5).
        option_id: Option<String>,
        ack: oneshot::Sender<Result<Permission, TurnError>>,
    },
}

/// The receiving end of a turn's [`Control`] channel, owned by the turn's task.
pub type Inbox = mpsc::UnboundedReceiver<Control>;

struct RunHandle {
    phase: Phase,
    control: mpsc::UnboundedSender<Control>,
}

/// Every session's run slot. A std mutex, held for map operations only.
#[derive(Default)]
pub struct Runs(Mutex<HashMap<SessionId, RunHandle>>);

impl Runs {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, RunHandle>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the session's slot for a turn in `phase` and gives the turn its inbox, or says
    /// what holds the slot.
    pub fn take(&self, id: &SessionId, phase: Phase) -> Result<Inbox, TurnError> {
        let mut runs = self.lock();
        if let Some(run) = runs.get(id) {
            return Err(TurnError::not_now(busy_message(id, &run.phase)));
        }
        let (control, inbox) = mpsc::unbounded_channel();
        runs.insert(id.clone(), RunHandle { phase, control });
        Ok(inbox)
    }

    /// Frees the session's slot (the turn or hold that had it is over).
    pub fn free(&self, id: &SessionId) {
        self.lock().remove(id);
    }

    /// What the session's slot is taken for, if it is.
    pub fn phase(&self, id: &SessionId) -> Option<Phase> {
        self.lock().get(id).map(|r| r.phase.clone())
    }

    /// The running turn's phase and control channel; `None` when no turn runs (a hold has no
    /// turn to talk to).
    pub fn turn(&self, id: &SessionId) -> Option<(Phase, mpsc::UnboundedSender<Control>)> {
        self.lock()
            .get(id)
            .filter(|r| !matches!(r.phase, Phase::Held(_)))
            .map(|r| (r.phase.clone(), r.control.clone()))
    }
}

/// Why a prompt cannot start while the slot is taken for `phase` (the 409's message).
pub fn busy_message(id: &SessionId, phase: &Phase) -> String {
    match phase {
        Phase::Agent => {
            format!("session {id} is busy with its agent's turn; wait or abort first")
        }
        Phase::Held(HeldFor::Revoking) => format!(
            "session {id} is revoking its standing answers (its agent is being stopped); try again when that is done"
        ),
        Phase::Held(HeldFor::Deleting) => format!("session {id} is being deleted"),
        Phase::Held(HeldFor::StartingAgent) => {
            format!("session {id} is starting its agent to switch its mode; try again in a moment")
        }
    }
}

/// A running agent process of one session.
pub struct AgentSlot {
    pub handle: AgentHandle,
    /// The agent's events; a turn holds the lock while it runs.
    pub events: tokio::sync::Mutex<mpsc::UnboundedReceiver<AcpEvent>>,
    /// The last turn of this process was cancelled (see `turn::acp::stale_after_cancel`).
    pub after_cancel: AtomicBool,
}

impl AgentSlot {
    pub fn new(handle: AgentHandle, events: mpsc::UnboundedReceiver<AcpEvent>) -> Self {
        AgentSlot {
            handle,
            events: tokio::sync::Mutex::new(events),
            after_cancel: AtomicBool::new(false),
        }
    }
}

/// Every session's running agent process (one per session that has work). A std mutex, held
/// for map operations only.
#[derive(Default)]
pub struct AgentSlots(Mutex<HashMap<SessionId, Arc<AgentSlot>>>);

impl AgentSlots {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<AgentSlot>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session's agent while its process lives; a dead one is forgotten.
    pub fn alive(&self, id: &SessionId) -> Option<Arc<AgentSlot>> {
        let mut slots = self.lock();
        match slots.get(id) {
            Some(slot) if slot.handle.is_alive() => Some(slot.clone()),
            Some(_) => {
                slots.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn insert(&self, id: SessionId, slot: Arc<AgentSlot>) {
        self.lock().insert(id, slot);
    }

    /// Takes the session's agent out of the registry (to stop it).
    pub fn remove(&self, id: &SessionId) -> Option<Arc<AgentSlot>> {
        self.lock().remove(id)
    }

    /// Forgets `slot` as the session's agent, unless another process took its place.
    pub fn forget(&self, id: &SessionId, slot: &Arc<AgentSlot>) {
        let mut slots = self.lock();
        if slots.get(id).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(id);
        }
    }

    /// Takes every agent out of the registry (the backend stops).
    pub fn drain(&self) -> Vec<Arc<AgentSlot>> {
        self.lock().drain().map(|(_, slot)| slot).collect()
    }
}
