//! What each session needs from the person, at a glance (docs/tui.md §2b): derived from the
//! session's status, the pending approvals and the events the TUI already receives, and the
//! order of the session list (what needs the person first).
//!
//! "Unread" is a turn that ended while the person did not have the session open; it stays
//! until they open it. A turn "failed" when its events carried an error notice, a non-zero
//! exit or a signal (a `shell` session's command: its call failed with an exit status), or a
//! run cut short by a backend restart (an abort by the person is not a failure).

use std::collections::HashSet;

use ax_protocol::turn::{NoticeKind, ToolStatus, TurnDelta, TurnPart};
use ax_protocol::{Event, Part, SessionId, SessionStatus};

/// A session's state for the list, in the list's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attention {
    /// An approval waits, or the agent needs authentication.
    NeedsYou,
    /// A turn runs.
    Working,
    /// A turn ended since the person last had the session open.
    Unread,
    /// Like [`Attention::Unread`], and that turn failed.
    Failed,
    /// Nothing new.
    Idle,
}

impl Attention {
    /// The list's marker for a session in this state (nine columns).
    pub fn marker(self, status: SessionStatus) -> &'static str {
        match self {
            Attention::NeedsYou if status == SessionStatus::NeedsAuth => "! auth   ",
            Attention::NeedsYou => "? waiting",
            Attention::Working => "● busy   ",
            Attention::Unread => "✓ unread ",
            Attention::Failed => "✗ failed ",
            Attention::Idle => "         ",
        }
    }
}

/// The marks the events leave: which sessions have an unread turn end, which of those failed,
/// and which are in a turn that has failed so far.
#[derive(Debug, Clone, Default)]
pub struct Board {
    unread: HashSet<SessionId>,
    failed: HashSet<SessionId>,
    failing: HashSet<SessionId>,
}

impl Board {
    /// Whether `session`'s last turn went wrong and the person has not opened it since.
    pub fn is_failed(&self, session: &SessionId) -> bool {
        self.failed.contains(session)
    }

    /// Whether `session` has a turn end the person has not seen.
    pub fn is_unread(&self, session: &SessionId) -> bool {
        self.unread.contains(session)
    }
}

/// Whether a streamed part says the turn went wrong.
fn part_failed(part: &Part) -> bool {
    match part {
        Part::Exit { code, signal } => code.is_some_and(|c| c != 0) || signal.is_some(),
        Part::Interrupted => true,
        Part::Turn(TurnPart::Notice(n)) => n.kind == NoticeKind::Error,
        _ => false,
    }
}

/// Whether a delta of a `shell` session's turn says its command failed: its `execute` call
/// ended `failed` with an exit status or a signal in its raw output (the `shell` agent's
/// `{exitCode, signal}`). A rejected command fails its call with neither, an abort cancels
/// it: neither is a failure, as before.
fn run_failed(delta: &TurnDelta) -> bool {
    let TurnDelta::ToolCallUpdated { fields, .. } = delta else {
        return false;
    };
    let Some(out) = fields.raw_output.as_ref() else {
        return false;
    };
    let code = ["exitCode", "exit_code"]
        .iter()
        .find_map(|k| out.get(k).and_then(|v| v.as_i64()));
    let signal = out.get("signal").is_some_and(|v| !v.is_null());
    fields.status == Some(ToolStatus::Failed) && (code.is_some_and(|c| c != 0) || signal)
}

impl Board {
    /// Notes the failure signals of any session's message events; `shell` says which
    /// sessions are the `shell` agent's, whose failed command is a failed turn.
    pub(crate) fn observe(&mut self, event: &Event, shell: impl Fn(&SessionId) -> bool) {
        let (session, failed) = match event {
            Event::MessagePart {
                session_id, part, ..
            } => (session_id, part_failed(part)),
            Event::MessageDelta {
                session_id, delta, ..
            } => (
                session_id,
                matches!(delta, TurnDelta::Notice { notice } if notice.kind == NoticeKind::Error)
                    || (shell(session_id) && run_failed(delta)),
            ),
            Event::MessageCreated { message } => {
                (&message.session_id, message.parts.iter().any(part_failed))
            }
            _ => return,
        };
        if failed {
            self.failing.insert(session.clone());
        }
    }

    /// A turn began: what failed before is over.
    pub(crate) fn turn_started(&mut self, id: &SessionId) {
        self.failing.remove(id);
    }

    /// A turn ended; unless the person is looking at the session it becomes unread. Returns
    /// whether the turn failed.
    pub(crate) fn turn_ended(&mut self, id: &SessionId, looking: bool) -> bool {
        let failed = self.failing.remove(id);
        if !looking {
            self.unread.insert(id.clone());
            // The mark tells how the latest turn went.
            if failed {
                self.failed.insert(id.clone());
            } else {
                self.failed.remove(id);
            }
        }
        failed
    }

    /// The person opened the session: nothing is unread there any more.
    pub(crate) fn seen(&mut self, id: &SessionId) {
        self.unread.remove(id);
        self.failed.remove(id);
    }

    /// The session is gone.
    pub(crate) fn forget(&mut self, id: &SessionId) {
        self.seen(id);
        self.failing.remove(id);
    }
}
