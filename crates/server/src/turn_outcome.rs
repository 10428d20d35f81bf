//! How a turn ended, for what comes after it (the prompt queue's hook, `state::AfterTurn`).
//! A leaf: the app state names it without depending on the turn logic.

/// How a turn ended, as far as what comes after it is concerned (the prompt queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    /// It did its work: the next queued prompt goes.
    Completed,
    /// The agent or the command failed, or asked for something the person must give.
    Failed,
    /// The person refused what the turn asked to run (`shell`).
    Rejected,
    /// Aborted (by the person, or to send a queued prompt now).
    Aborted,
    /// The backend is stopping.
    Interrupted,
}
