//! The approvals inbox (docs/tui.md §3h): every approval of this backend that waits, across
//! its sessions, newest first. The rows are derived from the pending permissions the TUI
//! already keeps (loaded with the session list from `GET /permission`, then followed by
//! `permission.asked` / `permission.replied`), so an approval answered elsewhere leaves the
//! list with the event. Enter opens the row's session, where the approval dialog shows the
//! request whole and is answered as always.

use ax_protocol::{PermissionId, SessionId};

/// What the empty inbox says.
pub const EMPTY: &str = "No approval waits.";

/// The longest one-line summary, in chars (a row is cut to the screen anyway).
pub(crate) const SUMMARY_CHARS: usize = 160;

/// One waiting approval, as plain text for the renderer and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxRow {
    /// The approval.
    pub permission: PermissionId,
    /// Its session.
    pub session: SessionId,
    /// The session's title (sanitized).
    pub title: String,
    /// The session's agent.
    pub agent: String,
    /// What the agent wants, in one line: the dialog's heading and the request's first line.
    pub summary: String,
}
