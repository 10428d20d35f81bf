//! Tab completion of `/` commands in the composer: the open session's agent commands and the
//! TUI's own (the matching is `crate::complete`).

use crate::app::{App, Route};
use crate::command::{self, Command};
use crate::input::{Key, KeyCode};
use ax_protocol::AgentCommand;

use crate::complete::{Completion, SlashState, completions, slash_token};

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
