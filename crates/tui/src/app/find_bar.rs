//! Find in the open transcript (docs/tui.md §3b): Ctrl+F or `/find TEXT` open a find bar in
//! the composer's place; its keys move between matches and scroll each into view. The search
//! itself is the pure [`crate::find`]; drawing the highlights is in `render/session.rs` and `render/bars.rs`.
//!
//! `/` does not open it: in the composer `/` starts a slash command, and printable keys
//! always go to the composer.

use crate::app::{App, NoticeKind, Route};
use crate::find::Find;
use crate::input::{Key, KeyCode};

/// Longest query kept.
const QUERY_MAX: usize = 256;

impl App {
    /// The find bar's search, while it is open.
    pub fn find(&self) -> Option<&Find> {
        self.find.as_ref()
    }

    /// Ctrl+F (or `/find QUERY`): opens the find bar on the session route.
    pub(crate) fn open_find(&mut self, query: Option<String>) {
        if !matches!(self.route, Route::Session(_)) {
            self.notify(NoticeKind::Error, "find works in a session: open one first");
            return;
        }
        let mut find = self.find.take().unwrap_or_default();
        if let Some(q) = query {
            self.search_transcript(&mut find, &q);
        }
        self.find = Some(find);
        self.show_current_match();
    }

    /// Closes the find bar; the highlights go with it.
    pub(crate) fn close_find(&mut self) {
        self.find = None;
    }

    fn search_transcript(&self, find: &mut Find, query: &str) {
        let h = self.transcript_height();
        let top = self.transcript.window_start(h, self.scroll);
        // The first match at or below the top of the view, as a pager does.
        let top_line = self.transcript.line_at_row(top);
        find.search(query, self.transcript.line_texts(), top_line);
    }

    /// The transcript changed under an open find bar: its matches follow.
    pub(crate) fn refresh_find(&mut self) {
        if let Some(mut find) = self.find.take() {
            find.refresh(self.transcript.line_texts());
            self.find = Some(find);
        }
    }

    /// A key while the find bar is open. Typing edits the query; Enter, Ctrl+N or ↓ go to the
    /// next match, Shift+Enter, Ctrl+P or ↑ to the previous one; Esc (or Ctrl+C) closes it.
    /// Returns whether the key was the find bar's (PgUp/PgDn and the like stay the route's).
    pub(crate) fn find_key(&mut self, key: Key) -> bool {
        let Some(mut find) = self.find.take() else {
            return false;
        };
        let used = if key == Key::ctrl('c') || key == Key::ctrl('g') || key.code == KeyCode::Esc {
            self.notify(NoticeKind::Info, "find closed");
            return true;
        } else if key == Key::ctrl('n')
            || key == Key::ctrl('f')
            || key.code == KeyCode::Down
            || (key.code == KeyCode::Enter && !key.mods.shift && !key.mods.alt)
        {
            find.next_match();
            true
        } else if key == Key::ctrl('p') || key.code == KeyCode::Up || key.code == KeyCode::Enter {
            find.previous_match();
            true
        } else if key.code == KeyCode::Backspace {
            let mut q = find.query().to_owned();
            q.pop();
            self.search_transcript(&mut find, &q);
            true
        } else if let Some(c) = key.printable() {
            let mut q = find.query().to_owned();
            if q.len() < QUERY_MAX {
                q.push(c);
                self.search_transcript(&mut find, &q);
            }
            true
        } else {
            false
        };
        self.find = Some(find);
        if used {
            self.show_current_match();
        }
        used
    }

    /// A paste while the find bar is open goes into the query.
    pub(crate) fn find_paste(&mut self, text: &str) {
        if let Some(mut find) = self.find.take() {
            let mut q = find.query().to_owned();
            q.extend(
                text.chars()
                    .filter(|c| !c.is_control())
                    .take(QUERY_MAX.saturating_sub(q.chars().count())),
            );
            self.search_transcript(&mut find, &q);
            self.find = Some(find);
            self.show_current_match();
        }
    }

    /// Scrolls so the current match is in view (a third of the way down when it was not).
    fn show_current_match(&mut self) {
        let Some(m) = self.find.as_ref().and_then(Find::current) else {
            return;
        };
        let row = self.transcript.row_of(m.line, m.range.start);
        let h = self.transcript_height().max(1);
        let start = self.transcript.window_start(h, self.scroll);
        if row < start || row >= start + h {
            let want_start = row.saturating_sub(h / 3);
            let total = self.transcript.total_rows();
            let max = self.transcript.max_scroll(h);
            self.scroll = total.saturating_sub(want_start + h).min(max);
        }
    }
}
