//! Prompt history in the app: ↑/↓ recall and Ctrl-R search in the composer (the history and
//! its search are `crate::recall` and `crate::history`).

use crate::app::{App, NoticeKind};
use crate::history::{History, Search};

impl App {
    /// The open session's prompt history.
    pub fn history(&self) -> &History {
        self.recall.history()
    }

    /// The Ctrl+R search, while one is under way.
    pub fn history_search(&self) -> Option<&Search> {
        self.recall.search()
    }

    /// The entry a Ctrl+R search shows, if it found one.
    pub fn history_search_found(&self) -> Option<&str> {
        self.recall.search_found()
    }

    /// Ctrl+R: starts a reverse search of the history, or says there is none.
    pub(crate) fn start_history_search(&mut self) {
        if !self.recall.start_search() {
            self.notify(
                NoticeKind::Info,
                "no prompt history here: open a session with prompts",
            );
        }
    }
}
