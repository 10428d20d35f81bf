//! The TUI's router for agent navigation (TUIMCP): the controller in `ax_tuimcp` decides,
//! the app only opens the session it was asked to and reads the guard inputs again.

use ax_protocol::SessionId;
use ax_tuimcp::{GuardInputs, Navigator};

use crate::app::{App, Route};

impl Navigator for App {
    type Error = String;

    /// Opens the session (called by the controller after the second guard, in the same
    /// message) and re-reads the guard inputs.
    fn navigate(&mut self, session: &SessionId) -> Result<GuardInputs, String> {
        self.navigate_by_agent(session.clone());
        if self.route() != &Route::Session(session.clone()) {
            return Err("the router did not open the session".into());
        }
        Ok(self.guard_inputs())
    }
}
