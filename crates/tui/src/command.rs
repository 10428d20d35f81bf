//! Slash commands: one enum. Each command's name, help, argument rule and availability live
//! in its `match` arms here, so the palette, `/help` and the parser can never disagree.

/// Something the person asks the TUI to do by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Start a new session.
    New,
    /// Go to the session list.
    Sessions,
    /// Attach a file to the next prompt (takes the path).
    Attach,
    /// Attach an image to the next prompt (takes the path; sent as an image block).
    Image,
    /// Stop the open session's running turn (also Esc).
    Abort,
    /// Rename the open (or, at home, the selected) session (takes the title).
    Rename,
    /// Delete the open (or selected) session, after a confirmation.
    Delete,
    /// Show the open session's agent and its state (modes, authentication).
    Agent,
    /// Switch the agent's mode: `/mode` lists them, `/mode ID` switches.
    Mode,
    /// Forget the open session's standing "always" answers.
    Revoke,
    /// Every approval that waits, across the sessions (the approvals inbox).
    Approvals,
    /// The open session's queued prompts: `/queue [edit N|cancel N|send N|resume]`.
    Queue,
    /// The agent's session options: `/config [ID [VALUE]]` (a picker without arguments).
    Config,
    /// The agent's model: `/model [ID]` (a picker without an argument).
    Model,
    /// Find in the open transcript: `/find TEXT` (also Ctrl+F).
    Find,
    /// Copy the focused part, the last reply, a code block or the prompt: `/copy [WHAT]`.
    Copy,
    /// Capture the mouse or leave it to the terminal: `/mouse [on|off]` (also F2).
    Mouse,
    /// How the terminal is rung: `/notify [off|bell|osc9|osc777|auto]`.
    Notify,
    /// Show the key and command reference.
    Help,
    /// Leave the TUI (asks first while a session is busy).
    Quit,
    /// Show the MCP client configuration for this TUI's endpoint (only while sharing).
    TuiMcpConfig,
    /// Stop sharing this TUI over TUIMCP (only while sharing).
    TuiMcpRevoke,
}

/// Where TUIMCP sharing stands, for the commands that need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharingState {
    /// Not started with `--tui-mcp`.
    Off,
    /// Sharing now.
    On,
    /// Was shared; revoked (or the endpoint failed) since.
    Revoked,
}

/// A parsed command line: the command and its argument, if it takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Which command.
    pub command: Command,
    /// The rest of the line, trimmed; present exactly when the command takes one.
    pub arg: Option<String>,
}

impl Command {
    /// Every command, in palette and `/help` order.
    pub const ALL: [Command; 22] = [
        Command::New,
        Command::Sessions,
        Command::Attach,
        Command::Image,
        Command::Abort,
        Command::Rename,
        Command::Delete,
        Command::Agent,
        Command::Mode,
        Command::Revoke,
        Command::Approvals,
        Command::Queue,
        Command::Config,
        Command::Model,
        Command::Find,
        Command::Copy,
        Command::Mouse,
        Command::Notify,
        Command::Help,
        Command::Quit,
        Command::TuiMcpConfig,
        Command::TuiMcpRevoke,
    ];

    /// What the person types, e.g. `/rename`.
    pub fn name(self) -> &'static str {
        match self {
            Command::New => "/new",
            Command::Sessions => "/sessions",
            Command::Attach => "/attach",
            Command::Image => "/image",
            Command::Abort => "/abort",
            Command::Rename => "/rename",
            Command::Delete => "/delete",
            Command::Agent => "/agent",
            Command::Mode => "/mode",
            Command::Revoke => "/revoke",
            Command::Approvals => "/approvals",
            Command::Queue => "/queue",
            Command::Config => "/config",
            Command::Model => "/model",
            Command::Find => "/find",
            Command::Copy => "/copy",
            Command::Mouse => "/mouse",
            Command::Notify => "/notify",
            Command::Help => "/help",
            Command::Quit => "/quit",
            Command::TuiMcpConfig => "/tui-mcp-config",
            Command::TuiMcpRevoke => "/tui-mcp-revoke",
        }
    }

    /// A one-line description for the palette and `/help`.
    pub fn help(self) -> &'static str {
        match self {
            Command::New => "start a new session",
            Command::Sessions => "show the session list",
            Command::Attach => "attach a file: /attach PATH",
            Command::Image => "attach an image: /image PATH",
            Command::Abort => "stop the running turn (also Esc)",
            Command::Rename => "new title: /rename TITLE",
            Command::Delete => "delete this session (asks first)",
            Command::Agent => "this session's agent, its modes and state",
            Command::Mode => "switch the agent's mode: /mode [ID]",
            Command::Revoke => "forget this session's standing “always”",
            Command::Approvals => "every approval that waits, in all sessions",
            Command::Queue => "queued prompts: /queue [ACTION]",
            Command::Config => "agent's options: /config [ID]",
            Command::Model => "the agent's model: /model [ID]",
            Command::Find => "find in the transcript: /find [TEXT] (also ^F)",
            Command::Copy => "copy the last reply (OSC 52): /copy [code|prompt]",
            Command::Mouse => "mouse to the terminal to select: /mouse [on|off] (F2)",
            Command::Notify => "ring when a session needs you: /notify [MODE]",
            Command::Help => "keys and commands",
            Command::Quit => "exit ax-code",
            Command::TuiMcpConfig => "MCP client config of this TUI",
            Command::TuiMcpRevoke => "stop sharing this TUI (TUIMCP)",
        }
    }

    /// How to type it.
    pub fn usage(self) -> &'static str {
        match self {
            Command::Attach => "/attach PATH",
            Command::Image => "/image PATH",
            Command::Rename => "/rename TITLE",
            Command::Mode => "/mode [ID]",
            Command::Queue => "/queue [edit N|cancel N|send N|resume]",
            Command::Config => "/config [ID [VALUE]]",
            Command::Model => "/model [ID]",
            Command::Find => "/find [TEXT]",
            Command::Copy => "/copy [reply|code|prompt|N]",
            Command::Mouse => "/mouse [on|off]",
            Command::Notify => "/notify [off|bell|osc9|osc777|auto]",
            other => other.name(),
        }
    }

    /// Needs an argument, so the palette types it into the composer instead of running it.
    pub fn takes_arg(self) -> bool {
        matches!(self, Command::Attach | Command::Image | Command::Rename)
    }

    /// Takes an argument if one is given (`/mode` alone lists, `/mode ID` switches).
    pub fn optional_arg(self) -> bool {
        matches!(
            self,
            Command::Mode
                | Command::Find
                | Command::Notify
                | Command::Copy
                | Command::Mouse
                | Command::Queue
                | Command::Config
                | Command::Model
        )
    }

    /// Listed only while the TUI is shared.
    pub fn sharing_only(self) -> bool {
        matches!(self, Command::TuiMcpConfig | Command::TuiMcpRevoke)
    }

    /// The command with this exact name (`/new`, ...).
    pub fn from_name(name: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The commands available now.
pub fn available(sharing: bool) -> impl Iterator<Item = Command> {
    Command::ALL
        .into_iter()
        .filter(move |c| sharing || !c.sharing_only())
}

/// Parses a submitted draft that starts with `/`. `Err` carries a message for the person.
pub fn parse(draft: &str, sharing: SharingState) -> Result<Invocation, String> {
    let line = draft.trim();
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    let Some(command) = Command::from_name(name) else {
        return Err(format!("unknown command {name}; /help lists them"));
    };
    if command.sharing_only() {
        match sharing {
            SharingState::On => {}
            SharingState::Off => return Err("this TUI is not shared (start with --tui-mcp)".into()),
            SharingState::Revoked => {
                return Err(
                    "TUIMCP sharing was revoked; start a new TUI with --tui-mcp to share again"
                        .into(),
                );
            }
        }
    }
    if command.optional_arg() {
        return Ok(Invocation {
            command,
            arg: (!arg.is_empty()).then(|| arg.to_owned()),
        });
    }
    match (command.takes_arg(), arg.is_empty()) {
        (true, true) => Err(format!("usage: {}", command.usage())),
        (true, false) => Ok(Invocation {
            command,
            arg: Some(arg.to_owned()),
        }),
        (false, true) => Ok(Invocation { command, arg: None }),
        (false, false) => Err(format!("{name} takes no argument")),
    }
}

/// The palette's entries matching `query`, by name or help text.
pub fn palette_entries(query: &str, sharing: bool) -> Vec<Command> {
    let q = query.trim().trim_start_matches('/').to_lowercase();
    available(sharing)
        .filter(|c| c.name().contains(&q) || c.help().to_lowercase().contains(&q))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: Command) -> Result<Invocation, String> {
        Ok(Invocation { command, arg: None })
    }

    #[test]
    fn parses_commands_strictly() {
        let off = SharingState::Off;
        assert_eq!(parse("/new", off), run(Command::New));
        assert_eq!(parse(" /quit \n", off), run(Command::Quit));
        assert_eq!(
            parse("/attach  src/main.rs ", off),
            Ok(Invocation {
                command: Command::Attach,
                arg: Some("src/main.rs".into())
            })
        );
        assert_eq!(parse("/attach", off), Err("usage: /attach PATH".into()));
        assert!(parse("/new x", off).is_err());
        assert!(parse("/tui-mcp-revoke", off).is_err());
        assert_eq!(
            parse("/tui-mcp-revoke", SharingState::On),
            run(Command::TuiMcpRevoke)
        );
        assert_eq!(
            parse("/tui-mcp-config", SharingState::On),
            run(Command::TuiMcpConfig)
        );
        assert!(parse("/nope", SharingState::On).is_err());
        assert_eq!(
            parse("/rename  new title ", off),
            Ok(Invocation {
                command: Command::Rename,
                arg: Some("new title".into())
            })
        );
        assert!(parse("/rename", off).is_err());
        assert_eq!(parse("/delete", off), run(Command::Delete));
        assert!(parse("/delete now", off).is_err());
    }

    #[test]
    fn after_a_revoke_the_sharing_commands_say_so() {
        for name in ["/tui-mcp-revoke", "/tui-mcp-config"] {
            let off = parse(name, SharingState::Off).unwrap_err();
            assert!(off.contains("not shared"), "{off}");
            let revoked = parse(name, SharingState::Revoked).unwrap_err();
            assert!(revoked.contains("was revoked"), "{revoked}");
        }
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        for c in Command::ALL {
            assert_eq!(Command::from_name(c.name()), Some(c));
            assert!(c.name().starts_with('/'));
        }
        let mut names: Vec<_> = Command::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Command::ALL.len());
    }

    #[test]
    fn sharing_commands_are_listed_only_while_sharing() {
        assert!(!available(false).any(|c| c.sharing_only()));
        assert!(available(true).any(|c| c == Command::TuiMcpRevoke));
        assert!(available(true).any(|c| c == Command::TuiMcpConfig));
    }
}
