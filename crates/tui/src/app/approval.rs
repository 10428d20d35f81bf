//! The approval dialog in the app: its geometry and answers for the pending approval, and its
//! keys (the dialog's state, choices and layout are `crate::approval`).

use crate::app::App;
use crate::approval::{Choice, DialogKey, Geometry, choices, permission_geometry};
use crate::input::Key;

impl App {
    /// The approval dialog's layout for the pending approval, if one shows.
    pub fn approval_geometry(&self) -> Option<Geometry> {
        let p = self.pending_approval()?;
        let shell = self.is_shell(&p.session_id);
        Some(permission_geometry(p, shell, self.size.0, self.size.1))
    }

    /// Whether session `id` is the `shell` agent's.
    pub(crate) fn is_shell(&self, id: &ax_protocol::SessionId) -> bool {
        self.sessions
            .iter()
            .any(|s| &s.id == id && s.agent == "shell")
    }

    /// The answers of the pending approval.
    pub fn approval_choices(&self) -> Vec<Choice> {
        self.pending_approval().map(choices).unwrap_or_default()
    }

    /// The highlighted answer of the approval dialog (an index into
    /// [`App::approval_choices`]): the one the person moved to, else allow once; `None` when
    /// the agent offers no allow-once and the person has not chosen (Enter does nothing).
    pub fn approval_choice(&self) -> Option<usize> {
        let pending = self.pending_approval()?;
        self.approval.choice(&pending.id, &choices(pending))
    }

    /// Rows of the request scrolled out of view above (0 for a request not scrolled yet).
    pub fn approval_scroll(&self) -> usize {
        self.pending_approval()
            .map_or(0, |p| self.approval.scroll(&p.id))
    }

    /// Scrolls the request by `delta` rows (clamped).
    pub(crate) fn scroll_approval(&mut self, delta: isize) {
        let (Some(g), Some(p)) = (self.approval_geometry(), self.pending_approval()) else {
            return;
        };
        let id = p.id.clone();
        self.approval.scroll_by(&id, g.max_scroll(), delta);
    }

    /// A key while the approval dialog shows: the dialog's own keys, then what they ask for.
    pub(crate) fn approval_key(&mut self, key: Key) {
        let (Some(g), Some(p)) = (self.approval_geometry(), self.pending_approval()) else {
            return;
        };
        let (id, choices) = (p.id.clone(), choices(p));
        match self.approval.key(key, &id, &choices, &g) {
            DialogKey::Done => {}
            DialogKey::Answer(c) => self.answer(c),
            DialogKey::Later => self.defer_approval(),
        }
    }
}
