//! Slash commands and the command palette's entries: one list, one name per action.

/// Something the person asks the TUI to do by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Start a new session.
    New,
    /// Go to the session list.
    Sessions,
    /// Attach a file to the next prompt.
    Attach(String),
    /// Stop the open session's running turn.
    Abort,
    Help,
    Quit,
    /// Stop sharing this TUI over TUIMCP (only while sharing).
    RevokeSharing,
}

/// A palette entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: &'static str,
    pub help: &'static str,
    /// Needs an argument, so the palette types it into the composer instead of running it.
    pub takes_arg: bool,
    pub sharing_only: bool,
}

pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "/new",
        help: "start a new session",
        takes_arg: false,
        sharing_only: false,
    },
    CommandInfo {
        name: "/sessions",
        help: "show the session list",
        takes_arg: false,
        sharing_only: false,
    },
    CommandInfo {
        name: "/attach",
        help: "attach a file: /attach PATH",
        takes_arg: true,
        sharing_only: false,
    },
    CommandInfo {
        name: "/abort",
        help: "stop the running turn (also Esc)",
        takes_arg: false,
        sharing_only: false,
    },
    CommandInfo {
        name: "/help",
        help: "keys and commands",
        takes_arg: false,
        sharing_only: false,
    },
    CommandInfo {
        name: "/quit",
        help: "exit ax-code",
        takes_arg: false,
        sharing_only: false,
    },
    CommandInfo {
        name: "/tui-mcp-revoke",
        help: "stop sharing this TUI (TUIMCP)",
        takes_arg: false,
        sharing_only: true,
    },
];

/// The commands available now.
pub fn available(sharing: bool) -> impl Iterator<Item = &'static CommandInfo> {
    COMMANDS.iter().filter(move |c| sharing || !c.sharing_only)
}

/// Parses a submitted draft that starts with `/`. `Err` carries a message for the person.
pub fn parse(draft: &str, sharing: bool) -> Result<Command, String> {
    let line = draft.trim();
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    let no_arg = |c: Command| {
        if arg.is_empty() {
            Ok(c)
        } else {
            Err(format!("{name} takes no argument"))
        }
    };
    match name {
        "/new" => no_arg(Command::New),
        "/sessions" => no_arg(Command::Sessions),
        "/abort" => no_arg(Command::Abort),
        "/help" => no_arg(Command::Help),
        "/quit" => no_arg(Command::Quit),
        "/tui-mcp-revoke" if sharing => no_arg(Command::RevokeSharing),
        "/tui-mcp-revoke" => Err("this TUI is not shared (start with --tui-mcp)".into()),
        "/attach" if arg.is_empty() => Err("usage: /attach PATH".into()),
        "/attach" => Ok(Command::Attach(arg.to_owned())),
        _ => Err(format!("unknown command {name}; /help lists them")),
    }
}

/// Turns a palette entry into a command (entries that take an argument have none).
pub fn from_name(name: &str) -> Option<Command> {
    match name {
        "/new" => Some(Command::New),
        "/sessions" => Some(Command::Sessions),
        "/abort" => Some(Command::Abort),
        "/help" => Some(Command::Help),
        "/quit" => Some(Command::Quit),
        "/tui-mcp-revoke" => Some(Command::RevokeSharing),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_strictly() {
        assert_eq!(parse("/new", false), Ok(Command::New));
        assert_eq!(parse(" /quit \n", false), Ok(Command::Quit));
        assert_eq!(
            parse("/attach  src/main.rs ", false),
            Ok(Command::Attach("src/main.rs".into()))
        );
        assert!(parse("/attach", false).is_err());
        assert!(parse("/new x", false).is_err());
        assert!(parse("/tui-mcp-revoke", false).is_err());
        assert_eq!(parse("/tui-mcp-revoke", true), Ok(Command::RevokeSharing));
        assert!(parse("/nope", true).is_err());
    }

    #[test]
    fn revoke_is_listed_only_while_sharing() {
        assert!(!available(false).any(|c| c.name == "/tui-mcp-revoke"));
        assert!(available(true).any(|c| c.name == "/tui-mcp-revoke"));
    }
}
