//! The gateway's request methods and events, each name written once.
//!
//! The dispatcher matches on [`Method`], `hello-ok.features` lists [`Method::advertised`] and
//! [`Event::ALL`], and the client sends [`Method::as_str`]: a new method is one line here.

/// Declares a name enum with its wire spelling, `ALL` and `as_str`/`from_name`.
macro_rules! names {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every value, in the order `hello-ok` lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The name on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }

            /// The value named `name` on the wire, if any.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $($wire => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names! {
    /// A request method.
    Method {
        /// The handshake; only as the first frame.
        Connect = "connect",
        /// `{ts}`; needs `operator.read`.
        Ping = "ping",
        /// Whether a session exists in the served project; needs `operator.read`.
        SessionCheck = "session.check",
        /// Layout command to every Control UI; needs `operator.write`.
        UiCommand = "ui.command",
        /// A Control UI's outcome for one command; only UI targets.
        UiCommandResult = "ui.command.result",
        /// A Control UI's current layout (after each change); only UI targets.
        UiLayoutReport = "ui.layout.report",
        /// Each Control UI's reported layout; needs `operator.read`.
        UiLayout = "ui.layout",
        /// Run a command in the operator terminal; needs `operator.admin`.
        TerminalRun = "terminal.run",
        /// Kill the operator terminal's command; needs `operator.admin`.
        TerminalKill = "terminal.kill",
        /// Start a shell under a pseudo-terminal and attach to it; needs `operator.admin`.
        TerminalOpen = "terminal.open",
        /// Become a terminal's viewer (its scrollback is replayed); needs `operator.admin`.
        TerminalAttach = "terminal.attach",
        /// Type into the attached terminal; needs `operator.admin`.
        TerminalInput = "terminal.input",
        /// Resize the attached terminal; needs `operator.admin`.
        TerminalResize = "terminal.resize",
        /// End a terminal (kills its session); needs `operator.admin`.
        TerminalClose = "terminal.close",
        /// The gateway's terminals; needs `operator.admin`.
        TerminalList = "terminal.list",
        /// `{enabled}`: whether the session's screen tool works now; only a session's screen
        /// credential ([`crate::SessionScreens`]).
        ScreenGate = "screen.gate",
    }
}

names! {
    /// An event the gateway sends.
    Event {
        /// First frame of every connection: `{nonce, ts}`.
        ConnectChallenge = "connect.challenge",
        /// Keepalive: `{ts}`.
        Tick = "tick",
        /// A layout command for a Control UI.
        UiCommand = "ui.command",
        /// Output of the operator terminal's command.
        TerminalOutput = "terminal.output",
        /// Output was dropped between the head and the kept tail (`droppedBytes`).
        TerminalTruncated = "terminal.truncated",
        /// The operator terminal's command, or a terminal's shell, ended.
        TerminalExit = "terminal.exit",
        /// Output of an interactive terminal (`terminalId`, `data`).
        TerminalData = "terminal.data",
        /// A viewer fell behind the scrollback; `droppedBytes` it never saw.
        TerminalDropped = "terminal.dropped",
        /// Another connection attached to the terminal.
        TerminalDetached = "terminal.detached",
        /// `{enabled}`: a session's screen gate changed; only to that session's screen
        /// credential.
        ScreenGate = "screen.gate",
    }
}

impl Method {
    /// What a client may call after `connect` (listed in `hello-ok.features.methods`).
    pub fn advertised() -> impl Iterator<Item = Method> {
        Method::ALL
            .iter()
            .copied()
            .filter(|m| *m != Method::Connect)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for m in Method::ALL {
            assert_eq!(Method::from_name(m.as_str()), Some(*m));
        }
        for e in Event::ALL {
            assert_eq!(Event::from_name(e.as_str()), Some(*e));
        }
        let mut names: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Method::ALL.len());
        assert_eq!(Method::from_name("sessions.delete"), None);
        assert!(!Method::advertised().any(|m| m == Method::Connect));
    }
}
