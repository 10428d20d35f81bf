//! A session's prompt history, walked with ↑/↓ and searched with Ctrl+R, as in a shell or
//! Claude Code's TUI (docs/tui.md §3a).
//!
//! The entries are the session's own prompts, oldest first: the stored user messages when the
//! session is opened, then each prompt as it is sent. Walking keeps the draft the person was
//! writing: ↓ past the newest entry gives it back unchanged. Consecutive duplicates are kept
//! once, and an entry is bounded so a huge paste does not make the history heavy.

/// Most entries kept per session; the oldest go first.
pub const MAX_ENTRIES: usize = 1000;
/// Longest entry kept, in bytes; a longer prompt is not recalled.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// The prompts of one session and where a walk or a search stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    entries: Vec<String>,
    /// While walking: the index shown and the draft to give back at the end.
    walk: Option<Walk>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Walk {
    at: usize,
    draft: String,
}

/// A reverse search (Ctrl+R): the query and the entry it found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    /// What the person typed.
    pub query: String,
    /// The index of the entry shown, if any matches.
    pub found: Option<usize>,
}

impl History {
    /// A history of `prompts`, oldest first.
    pub fn from_prompts<I, S>(prompts: I) -> History
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut history = History::default();
        for p in prompts {
            history.push(p);
        }
        history
    }

    /// Adds a sent prompt as the newest entry and ends any walk.
    pub fn push(&mut self, prompt: impl Into<String>) {
        self.walk = None;
        let prompt = prompt.into();
        if prompt.trim().is_empty()
            || prompt.len() > MAX_ENTRY_BYTES
            || self.entries.last() == Some(&prompt)
        {
            return;
        }
        if self.entries.len() == MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(prompt);
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Whether a walk is under way (so ↓ belongs to the history, not to the transcript).
    pub fn walking(&self) -> bool {
        self.walk.is_some()
    }

    /// ↑: the entry before the one shown (the newest when the walk starts with `draft`), or
    /// `None` when there is nothing older.
    pub fn older(&mut self, draft: &str) -> Option<&str> {
        let at = match &self.walk {
            None => {
                let newest = self.entries.len().checked_sub(1)?;
                self.walk = Some(Walk {
                    at: newest,
                    draft: draft.to_owned(),
                });
                newest
            }
            Some(walk) => {
                let at = walk.at.checked_sub(1)?;
                self.walk.as_mut()?.at = at;
                at
            }
        };
        self.entries.get(at).map(String::as_str)
    }

    /// ↓: the entry after the one shown, or, past the newest, the draft the walk started
    /// with (and the walk ends). `None` when no walk is under way.
    pub fn newer(&mut self) -> Option<String> {
        let walk = self.walk.as_mut()?;
        if walk.at + 1 < self.entries.len() {
            walk.at += 1;
            return Some(self.entries[walk.at].clone());
        }
        self.walk.take().map(|w| w.draft)
    }

    /// Ends a walk without giving anything back (the person edited the recalled text).
    pub fn stop_walking(&mut self) {
        self.walk = None;
    }

    /// The newest entry older than `before` (all entries when `None`) that contains
    /// `query`, ignoring case. An empty query finds nothing.
    pub fn search(&self, query: &str, before: Option<usize>) -> Option<usize> {
        if query.is_empty() {
            return None;
        }
        let needle = query.to_lowercase();
        let end = before.unwrap_or(self.entries.len()).min(self.entries.len());
        self.entries[..end]
            .iter()
            .rposition(|e| e.to_lowercase().contains(&needle))
    }

    /// Ctrl+R again: the next older match of `search`, keeping the current one when there
    /// is none.
    pub fn search_older(&self, search: &mut Search) {
        if let Some(found) = self.search(&search.query, search.found) {
            search.found = Some(found);
        }
    }

    /// The search's query changed: look again from the newest entry.
    pub fn search_again(&self, search: &mut Search) {
        search.found = self.search(&search.query, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_goes_through_every_entry_and_gives_the_draft_back() {
        let mut h = History::from_prompts(["one", "two", "three"]);
        assert_eq!(h.older("my draft"), Some("three"));
        assert_eq!(h.older("ignored"), Some("two"));
        assert_eq!(h.older(""), Some("one"));
        assert_eq!(h.older(""), None, "nothing older than the first");
        assert_eq!(h.newer().as_deref(), Some("two"));
        assert_eq!(h.newer().as_deref(), Some("three"));
        assert_eq!(h.newer().as_deref(), Some("my draft"));
        assert!(!h.walking());
        assert_eq!(h.newer(), None);
    }

    #[test]
    fn duplicates_blanks_and_huge_prompts_are_not_kept() {
        let mut h = History::default();
        h.push("ls");
        h.push("ls");
        h.push("  ");
        h.push("x".repeat(MAX_ENTRY_BYTES + 1));
        h.push("pwd");
        h.push("ls");
        assert_eq!(h.entries(), ["ls", "pwd", "ls"]);
        assert_eq!(History::default().clone().older("d"), None);
    }

    #[test]
    fn the_oldest_entries_go_first() {
        let h = History::from_prompts((0..MAX_ENTRIES + 5).map(|i| format!("p{i}")));
        assert_eq!(h.entries().len(), MAX_ENTRIES);
        assert_eq!(h.entries()[0], "p5");
    }

    #[test]
    fn a_reverse_search_finds_newer_matches_first_and_steps_back() {
        let h = History::from_prompts(["cargo test", "git status", "Cargo build", "ls"]);
        let mut s = Search {
            query: "CARGO".into(),
            found: None,
        };
        h.search_again(&mut s);
        assert_eq!(s.found, Some(2));
        h.search_older(&mut s);
        assert_eq!(s.found, Some(0));
        h.search_older(&mut s);
        assert_eq!(s.found, Some(0), "the oldest match stays");
        s.query = "nothing".into();
        h.search_again(&mut s);
        assert_eq!(s.found, None);
        assert_eq!(h.search("", None), None);
    }
}
