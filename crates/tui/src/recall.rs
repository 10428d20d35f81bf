//! The open session's prompt history wired to the composer (docs/tui.md §3a): ↑/↓ walk it,
//! Ctrl+R searches it backwards. The pure walk and search live in [`crate::history`];
//! [`Recall`] owns the history, the search and what the walk put in the draft, decides what a
//! key does to them and moves text in and out of the composer it is handed.

use ax_protocol::{Message, Part, Role};

use crate::composer::Composer;
use crate::history::{History, Search};
use crate::input::{Key, KeyCode};

/// The person's prompts among `messages`, oldest first: the text parts of each user message
/// joined as they were sent.
pub fn stored_prompts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        .filter_map(|m| {
            let text: Vec<&str> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then(|| text.join("\n"))
        })
        .collect()
}

/// The open session's prompt history, the Ctrl+R search and the walk's state.
#[derive(Debug, Clone, Default)]
pub struct Recall {
    history: History,
    /// The Ctrl+R search, while one is under way.
    search: Option<Search>,
    /// The text the last ↑/↓ put in the composer; a draft that differs was edited since.
    recalled: Option<String>,
}

impl Recall {
    /// The prompt history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The Ctrl+R search, while one is under way.
    pub fn search(&self) -> Option<&Search> {
        self.search.as_ref()
    }

    /// Whether a Ctrl+R search is under way (it takes the keys).
    pub fn searching(&self) -> bool {
        self.search.is_some()
    }

    /// The entry a Ctrl+R search shows, if it found one.
    pub fn search_found(&self) -> Option<&str> {
        let s = self.search.as_ref()?;
        s.found
            .and_then(|i| self.history.entries().get(i))
            .map(String::as_str)
    }

    /// A transcript (re)load: the history becomes the session's stored prompts. A walk under
    /// way ends; the draft is left as it is.
    pub fn load(&mut self, messages: &[Message]) {
        self.history = History::from_prompts(stored_prompts(messages));
        self.recalled = None;
    }

    /// A prompt was sent: it becomes the newest entry.
    pub fn remember(&mut self, prompt: &str) {
        self.history.push(prompt);
        self.recalled = None;
    }

    /// Leaving a session forgets its history (the next one loads its own).
    pub fn forget(&mut self) {
        *self = Recall::default();
    }

    /// The person changed the recalled text: the walk ends there, and the next ↑ starts a
    /// new walk that gives their edited text back at the end.
    fn edited_since_recall(&mut self, composer: &Composer) {
        if self.history.walking() && self.recalled.as_deref() != Some(composer.draft()) {
            self.history.stop_walking();
            self.recalled = None;
        }
    }

    fn show_recalled(&mut self, composer: &mut Composer, text: String) {
        composer.clear_draft();
        composer.paste(&text);
        self.recalled = Some(composer.draft().to_owned());
    }

    /// ↑ with the cursor on the draft's first line: the previous prompt. Returns whether the
    /// history took the key (at the oldest entry it does, and nothing changes); an empty
    /// history leaves ↑ to the transcript.
    pub fn older(&mut self, composer: &mut Composer) -> bool {
        self.edited_since_recall(composer);
        let draft = composer.draft().to_owned();
        match self.history.older(&draft) {
            Some(entry) => {
                let entry = entry.to_owned();
                self.show_recalled(composer, entry);
                true
            }
            None => self.history.walking(),
        }
    }

    /// ↓ with the cursor on the draft's last line during a walk: the next prompt, and past
    /// the newest the draft the walk began with. Returns whether the history took the key.
    pub fn newer(&mut self, composer: &mut Composer) -> bool {
        self.edited_since_recall(composer);
        match self.history.newer() {
            Some(text) => {
                let walking = self.history.walking();
                self.show_recalled(composer, text);
                if !walking {
                    self.recalled = None;
                }
                true
            }
            None => false,
        }
    }

    /// Ctrl+R: starts a reverse search of the history; `false` (and nothing starts) when
    /// there is no history to search.
    pub fn start_search(&mut self) -> bool {
        if self.history.entries().is_empty() {
            return false;
        }
        self.history.stop_walking();
        // The draft is not touched until a match is taken, so Esc has nothing to restore.
        self.search = Some(Search::default());
        true
    }

    /// A key while the Ctrl+R search is open. Typing refines the query, Ctrl+R steps to an
    /// older match, Enter (or Tab, →) takes the match into the composer without sending it,
    /// Esc (or Ctrl+C, Ctrl+G) gives the draft back.
    pub fn search_key(&mut self, key: Key, composer: &mut Composer) {
        let Some(mut s) = self.search.take() else {
            return;
        };
        if key == Key::ctrl('r') {
            self.history.search_older(&mut s);
        } else if key == Key::ctrl('c') || key == Key::ctrl('g') || key.code == KeyCode::Esc {
            return;
        } else if matches!(key.code, KeyCode::Enter | KeyCode::Tab | KeyCode::Right) {
            if let Some(found) = s.found.and_then(|i| self.history.entries().get(i)) {
                let found = found.clone();
                composer.clear_draft();
                composer.paste(&found);
            }
            return;
        } else if key.code == KeyCode::Backspace {
            s.query.pop();
            self.history.search_again(&mut s);
        } else if let Some(c) = key.printable()
            && s.query.len() < 256
        {
            s.query.push(c);
            self.history.search_again(&mut s);
        }
        self.search = Some(s);
    }

    /// A paste while searching goes into the query.
    pub fn search_paste(&mut self, text: &str) {
        if let Some(s) = &mut self.search {
            let room = 256usize.saturating_sub(s.query.len());
            let clean: String = text.chars().filter(|c| !c.is_control()).collect();
            let mut take = clean.len().min(room);
            while !clean.is_char_boundary(take) {
                take -= 1;
            }
            s.query.push_str(&clean[..take]);
            self.history.search_again(s);
        }
    }
}
