//! The TUI's side of TUIMCP: its router for agent navigation and its session validator.
//!
//! The controller (in `ax_tuimcp`) decides; these two only do what it asks: the validator looks
//! a session up through the TUI's own authenticated client, the router opens it.

use ax_client::Client;
use ax_tuimcp::{
    GuardInputs, Navigator, SessionId as WireSessionId, SessionValidator, ValidationOutcome,
};

use crate::app::{App, Route};

impl Navigator for App {
    type Error = String;

    /// Opens the session (called by the controller after the second guard, in the same
    /// message) and re-reads the guard inputs.
    fn navigate(&mut self, session: &WireSessionId) -> Result<GuardInputs, String> {
        let id: ax_protocol::SessionId = session
            .as_str()
            .parse()
            .map_err(|e: ax_protocol::SessionIdError| e.to_string())?;
        self.navigate_by_agent(id.clone());
        if self.route() != &Route::Session(id) {
            return Err("the router did not open the session".into());
        }
        Ok(self.guard_inputs())
    }
}

/// Validates a session through the TUI's authenticated backend client.
#[derive(Clone, Debug)]
pub struct BackendValidator {
    client: Client,
}

impl BackendValidator {
    pub fn new(client: Client) -> BackendValidator {
        BackendValidator { client }
    }
}

impl SessionValidator for BackendValidator {
    async fn validate(&self, session: WireSessionId) -> ValidationOutcome {
        let Ok(id) = session.as_str().parse::<ax_protocol::SessionId>() else {
            return ValidationOutcome::NotFound;
        };
        match self.client.get_session(&id).await {
            Ok(s) if s.id == id => ValidationOutcome::Valid,
            Ok(_) => ValidationOutcome::NotFound,
            // Unknown, or a session of another project: "not found" for this backend.
            Err(e) if matches!(e.status(), Some(400 | 404)) => ValidationOutcome::NotFound,
            Err(_) => ValidationOutcome::Unavailable,
        }
    }
}
