//! Each session's queue gate (see [`crate::queue`]): an async mutex per session, kept in a
//! registry the app state holds. A module of its own so that the state does not import the
//! queue, which imports the state.

use std::{collections::HashMap, sync::Arc};

use ax_protocol::SessionId;

/// What the gate guards besides the store's rows.
#[derive(Default)]
pub struct GateState {
    /// "Send now" stopped the running turn: its end sends the queue's first item whatever the
    /// outcome.
    pub(crate) steering: bool,
}

/// Each session's gate.
#[derive(Default)]
pub struct Gates(std::sync::Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<GateState>>>>);

impl Gates {
    pub(crate) fn of(&self, id: &SessionId) -> Arc<tokio::sync::Mutex<GateState>> {
        let mut gates = self.0.lock().unwrap_or_else(|e| e.into_inner());
        gates.entry(id.clone()).or_default().clone()
    }

    /// Forgets a deleted session's gate.
    pub fn forget(&self, id: &SessionId) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    }
}
