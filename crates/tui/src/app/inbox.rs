//! The approvals inbox in the app: every pending approval across sessions, and its keys (the
//! row's shape is `crate::inbox`).

use crate::app::{App, Modal};
use crate::input::{Key, KeyCode};
use ax_protocol::PermissionState;

use crate::inbox::{InboxRow, SUMMARY_CHARS};

impl App {
    /// Every pending approval across the sessions, newest first.
    pub fn inbox_rows(&self) -> Vec<InboxRow> {
        let mut pending: Vec<_> = self
            .permissions
            .iter()
            .filter(|p| p.state == PermissionState::Pending && !self.replying.contains(&p.id))
            .collect();
        pending.sort_by_key(|p| std::cmp::Reverse(p.created));
        pending
            .into_iter()
            .map(|p| {
                let session = self.sessions.iter().find(|s| s.id == p.session_id);
                let first = p.command.split('\n').next().unwrap_or_default();
                let mut summary = format!(
                    "{}: {}",
                    crate::approval::heading(p, &self.workspace),
                    crate::tool_input::visible(first)
                );
                if let Some((cut, _)) = summary.char_indices().nth(SUMMARY_CHARS) {
                    summary.truncate(cut);
                    summary.push('…');
                }
                InboxRow {
                    permission: p.id.clone(),
                    session: p.session_id.clone(),
                    title: session
                        .map(|s| crate::markdown::sanitize(&s.title))
                        .unwrap_or_else(|| p.session_id.to_string()),
                    agent: session
                        .map(|s| crate::markdown::sanitize(&s.agent))
                        .unwrap_or_default(),
                    summary,
                }
            })
            .collect()
    }

    /// `/approvals`: the inbox.
    pub(crate) fn open_inbox(&mut self) {
        self.modal = Some(Modal::Approvals { selected: 0 });
    }

    /// A key in the inbox: ↑↓ choose, Enter opens the row's session, Esc closes.
    pub(crate) fn inbox_key(&mut self, selected: usize, key: Key) -> Option<Modal> {
        let rows = self.inbox_rows();
        let selected = selected.min(rows.len().saturating_sub(1));
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => None,
            KeyCode::Up => Some(Modal::Approvals {
                selected: selected.saturating_sub(1),
            }),
            KeyCode::Down => Some(Modal::Approvals {
                selected: (selected + 1).min(rows.len().saturating_sub(1)),
            }),
            KeyCode::Enter => {
                let Some(row) = rows.get(selected) else {
                    return Some(Modal::Approvals { selected: 0 });
                };
                if self.route != crate::app::Route::Session(row.session.clone()) {
                    self.open(row.session.clone());
                }
                // Chosen from the inbox: the dialog asks now, even if it was left for later.
                self.deferred.remove(&row.permission);
                None
            }
            _ => Some(Modal::Approvals { selected }),
        }
    }
}
