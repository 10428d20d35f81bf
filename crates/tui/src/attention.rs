//! What each session needs from the person, at a glance (docs/tui.md §2b): derived from the
//! session's status, the pending approvals and the events the TUI already receives, and the
//! order of the session list (what needs the person first).
//!
//! "Unread" is a turn that ended while the person did not have the session open; it stays
//! until they open it. A turn "failed" when its events carried an error notice, a non-zero
//! exit or a signal, or a run cut short by a backend restart (an abort by the person is not a
//! failure).

use std::collections::HashSet;

use ax_protocol::turn::{NoticeKind, TurnDelta, TurnPart};
use ax_protocol::{Event, Part, PermissionState, Session, SessionId, SessionStatus};

use crate::app::App;

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

/// Whether a streamed part says the turn went wrong.
fn part_failed(part: &Part) -> bool {
    match part {
        Part::Exit { code, signal } => code.is_some_and(|c| c != 0) || signal.is_some(),
        Part::Interrupted => true,
        Part::Turn(TurnPart::Notice(n)) => n.kind == NoticeKind::Error,
        _ => false,
    }
}

impl Board {
    /// Notes the failure signals of any session's message events.
    pub(crate) fn observe(&mut self, event: &Event) {
        let (session, failed) = match event {
            Event::MessagePart {
                session_id, part, ..
            } => (session_id, part_failed(part)),
            Event::MessageDelta {
                session_id, delta, ..
            } => (
                session_id,
                matches!(delta, TurnDelta::Notice { notice } if notice.kind == NoticeKind::Error),
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

impl App {
    /// What session `s` needs from the person.
    pub fn attention(&self, s: &Session) -> Attention {
        let approval = self
            .permissions
            .iter()
            .any(|p| p.session_id == s.id && p.state == PermissionState::Pending);
        match s.status {
            SessionStatus::Pending | SessionStatus::NeedsAuth => Attention::NeedsYou,
            _ if approval => Attention::NeedsYou,
            SessionStatus::Busy => Attention::Working,
            SessionStatus::Idle if self.board.failed.contains(&s.id) => Attention::Failed,
            SessionStatus::Idle if self.board.unread.contains(&s.id) => Attention::Unread,
            SessionStatus::Idle => Attention::Idle,
        }
    }

    /// How many sessions need the person, and how many have an unread turn end (failed ones
    /// included), for the list's title.
    pub fn attention_counts(&self) -> (usize, usize) {
        self.sessions
            .iter()
            .fold((0, 0), |(needs, unread), s| match self.attention(s) {
                Attention::NeedsYou => (needs + 1, unread),
                Attention::Unread | Attention::Failed => (needs, unread + 1),
                _ => (needs, unread),
            })
    }

    /// Orders the list: what needs the person first, then running, unread, failed, idle;
    /// within a state the most recent activity first (the backend's own order).
    pub(crate) fn sort_sessions(&mut self) {
        let mut keyed: Vec<(Attention, Session)> = std::mem::take(&mut self.sessions)
            .into_iter()
            .map(|s| (self.attention(&s), s))
            .collect();
        keyed.sort_by(|(a, x), (b, y)| {
            a.cmp(b)
                .then_with(|| y.updated.cmp(&x.updated))
                .then_with(|| y.id.cmp(&x.id))
        });
        self.sessions = keyed.into_iter().map(|(_, s)| s).collect();
    }
}
