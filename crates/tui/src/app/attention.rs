//! What each session needs from the person, as the session list shows it (the board of
//! unread and failed turn ends is `crate::attention`).

use crate::app::App;
use ax_protocol::{PermissionState, Session, SessionStatus};

use crate::attention::Attention;

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
            SessionStatus::Idle if self.board.is_failed(&s.id) => Attention::Failed,
            SessionStatus::Idle if self.board.is_unread(&s.id) => Attention::Unread,
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
