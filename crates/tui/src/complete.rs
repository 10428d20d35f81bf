//! `/` in the composer: ax-code's own commands and the open session's agent commands
//! (`agentState.commands`, the agent's `available_commands_update`, docs/agents.md §4) listed
//! as the person types the name, completed with Tab (docs/tui.md §3e). A prompt `/name ARGS`
//! whose name is not ax-code's goes to an ACP agent as a prompt, which is how ACP runs an
//! agent command. The list is read from the session each time, so it follows the agent's
//! updates.

use ax_protocol::AgentCommand;

use crate::app::{App, Route};
use crate::command::{self, Command};
use crate::input::{Key, KeyCode};

/// Rows the completion list shows at most (the selection scrolls it).
pub const COMPLETION_ROWS: usize = 6;

/// Whose command a completion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One of ax-code's own commands.
    Tui,
    /// The open session's agent's; `shadowed` when ax-code has a command of that name (which
    /// is the one `/name` runs).
    Agent {
        /// ax-code's command of the same name wins.
        shadowed: bool,
    },
}

/// One entry of the list, plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// With its `/`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// What to type after it, when the agent says.
    pub hint: Option<String>,
    /// ax-code's or the agent's.
    pub source: Source,
}

/// The name being typed: the whole draft when it is one `/word` with the cursor at its end
/// (no space yet, one line). `None` otherwise: once arguments start, the list goes away.
pub fn slash_token(draft: &str, cursor: usize) -> Option<&str> {
    let token = draft.strip_prefix('/')?;
    (cursor == draft.len() && !token.contains(char::is_whitespace)).then_some(draft)
}

/// The commands whose name starts with `typed` (with its `/`, case ignored): ax-code's
/// first, in `/help` order, then the agent's in its order.
pub fn completions(typed: &str, tui: &[Command], agent: &[AgentCommand]) -> Vec<Completion> {
    let q = typed.trim_start_matches('/').to_lowercase();
    let mut out: Vec<Completion> = tui
        .iter()
        .filter(|c| c.name()[1..].to_lowercase().starts_with(&q))
        .map(|c| Completion {
            name: c.name().to_owned(),
            description: c.help().to_owned(),
            hint: None,
            source: Source::Tui,
        })
        .collect();
    out.extend(
        agent
            .iter()
            .filter(|c| c.name.to_lowercase().starts_with(&q))
            .map(|c| Completion {
                name: format!("/{}", c.name),
                description: crate::markdown::sanitize(&c.description),
                hint: c.input_hint.as_deref().map(crate::markdown::sanitize),
                source: Source::Agent {
                    shadowed: Command::from_name(&format!("/{}", c.name)).is_some(),
                },
            }),
    );
    out
}

/// The first `count` rows of a list scrolled so `selected` shows: its first index.
pub fn window_start(selected: usize, len: usize, count: usize) -> usize {
    if len <= count {
        0
    } else {
        selected.saturating_sub(count - 1).min(len - count)
    }
}

/// The selection of the `/` list and the draft it was dismissed for (Esc).
#[derive(Debug, Default)]
pub struct SlashState {
    pub(crate) selected: usize,
    pub(crate) dismissed: Option<String>,
}

impl App {
    /// The open session's agent commands (empty at home, for `shell`, or before the agent
    /// said).
    pub fn agent_commands(&self) -> &[AgentCommand] {
        self.open_session()
            .and_then(|s| s.agent_state.as_ref())
            .map_or(&[], |a| a.commands.as_slice())
    }

    /// The `/` list showing now: the matches for the name being typed (none when dismissed,
    /// or a bar or modal has the keys).
    pub fn completions(&self) -> Vec<Completion> {
        let c = &self.composer;
        let Some(typed) = slash_token(c.draft(), c.cursor()) else {
            return Vec::new();
        };
        if self.slash.dismissed.as_deref() == Some(typed)
            || self.modal.is_some()
            || self.recall.searching()
            || self.find.is_some()
        {
            return Vec::new();
        }
        let tui: Vec<Command> = command::available(self.sharing.is_some()).collect();
        completions(typed, &tui, self.agent_commands())
    }

    /// The highlighted completion's index (kept inside the list).
    pub fn completion_selected(&self) -> usize {
        self.slash
            .selected
            .min(self.completions().len().saturating_sub(1))
    }

    /// Whether a prompt starting with `/` goes to the agent: its name is not ax-code's and
    /// the open session's agent is an ACP agent (the `shell` agent has no commands).
    pub(crate) fn goes_to_agent(&self, draft: &str) -> bool {
        let name = draft.split_whitespace().next().unwrap_or_default();
        Command::from_name(name).is_none()
            && matches!(self.route, Route::Session(_))
            && self.open_session().is_some_and(|s| s.agent != "shell")
    }

    /// Keys while the `/` list shows: ↑↓ choose, Tab completes, Enter completes a partial
    /// name and runs it, Esc hides the list. Returns whether the key was taken.
    pub(crate) fn completion_key(&mut self, key: Key) -> bool {
        if key.mods.ctrl || key.mods.alt {
            return false;
        }
        let list = self.completions();
        if list.is_empty() {
            return false;
        }
        let selected = self.completion_selected();
        match key.code {
            KeyCode::Up => self.slash.selected = selected.saturating_sub(1),
            KeyCode::Down => self.slash.selected = (selected + 1).min(list.len() - 1),
            KeyCode::Esc => self.slash.dismissed = Some(self.composer.draft().to_owned()),
            KeyCode::Tab => self.complete_with(&list[selected].name),
            KeyCode::Enter if !key.mods.shift => {
                if !list.iter().any(|c| c.name == self.composer.draft()) {
                    let name = list[selected].name.clone();
                    let end = self.composer.draft().len();
                    self.composer.replace_range(0..end, &name);
                }
                self.slash = SlashState::default();
                self.submit();
            }
            _ => return false,
        }
        true
    }

    /// Puts `/name ` in the draft, ready for its arguments.
    fn complete_with(&mut self, name: &str) {
        let end = self.composer.draft().len();
        self.composer.replace_range(0..end, &format!("{name} "));
        self.slash = SlashState::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, hint: Option<&str>) -> AgentCommand {
        AgentCommand {
            name: name.into(),
            description: format!("the agent's {name}"),
            input_hint: hint.map(str::to_owned),
        }
    }

    #[test]
    fn the_token_is_a_lone_slash_word_with_the_cursor_at_its_end() {
        assert_eq!(slash_token("/", 1), Some("/"));
        assert_eq!(slash_token("/rev", 4), Some("/rev"));
        assert_eq!(slash_token("/rev", 2), None);
        assert_eq!(slash_token("/review this", 12), None);
        assert_eq!(slash_token("/a\nb", 4), None);
        assert_eq!(slash_token("hi /x", 5), None);
        assert_eq!(slash_token("", 0), None);
    }

    #[test]
    fn ax_codes_commands_come_first_then_the_agents() {
        let tui = [Command::Rename, Command::Revoke, Command::Help];
        let agent = [
            agent("review", Some("what to review")),
            agent("compact", None),
            agent("help", None),
        ];
        let names = |typed: &str| -> Vec<String> {
            completions(typed, &tui, &agent)
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        assert_eq!(names("/re"), ["/rename", "/revoke", "/review"]);
        assert_eq!(names("/REV"), ["/revoke", "/review"]);
        assert_eq!(names("/c"), ["/compact"]);
        assert_eq!(names("/zz"), Vec::<String>::new());
        assert_eq!(names("/").len(), 6);
        let all = completions("/", &tui, &agent);
        assert_eq!(all[3].hint.as_deref(), Some("what to review"));
        assert_eq!(all[3].source, Source::Agent { shadowed: false });
        assert_eq!(all[5].source, Source::Agent { shadowed: true });
        assert_eq!(all[0].source, Source::Tui);
    }

    #[test]
    fn agent_text_is_made_safe() {
        let hostile = AgentCommand {
            name: "x".into(),
            description: "\u{1b}]52;c;AAAA\u{7}clip".into(),
            input_hint: Some("\u{1b}[2J".into()),
        };
        let c = &completions("/", &[], &[hostile])[0];
        assert!(!c.description.contains('\u{1b}'), "{c:?}");
        assert!(!c.hint.as_deref().unwrap().contains('\u{1b}'), "{c:?}");
    }

    #[test]
    fn the_window_follows_the_selection() {
        assert_eq!(window_start(0, 3, 6), 0);
        assert_eq!(window_start(5, 20, 6), 0);
        assert_eq!(window_start(6, 20, 6), 1);
        assert_eq!(window_start(19, 20, 6), 14);
    }
}
