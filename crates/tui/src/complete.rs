//! `/` in the composer: ax-code's own commands and the open session's agent commands
//! (`agentState.commands`, the agent's `available_commands_update`, docs/agents.md §4) listed
//! as the person types the name, completed with Tab (docs/tui.md §3e). A prompt `/name ARGS`
//! whose name is not ax-code's goes to an ACP agent as a prompt, which is how ACP runs an
//! agent command. The list is read from the session each time, so it follows the agent's
//! updates.

use ax_protocol::AgentCommand;

use crate::command::Command;

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
