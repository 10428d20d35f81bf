//! The subject scheme (docs/hub.md §1). Everything a backend publishes is under
//! `ax.<machine>.`; requests to it go to `ax.req.<machine>`, a subject outside its own
//! prefix, so subject permissions can let only the hub send requests and each backend
//! publish only its own subjects.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The stream keeping every backend's events (`ax.*.event`), replayed by hubs.
pub const EVENTS_STREAM: &str = "AX_EVENTS";
/// The stream keeping each backend's last machine record and session snapshot.
pub const STATE_STREAM: &str = "AX_STATE";
/// Subjects of [`EVENTS_STREAM`].
pub const EVENTS_SUBJECTS: &str = "ax.*.event";
/// Subjects of [`STATE_STREAM`].
pub const STATE_SUBJECTS: [&str; 2] = ["ax.*.machine", "ax.*.sessions"];
/// Longest machine name.
pub const MAX_MACHINE_NAME: usize = 64;

/// A machine's name: 1 to 64 of `a-z`, `0-9`, `-` and `_`, starting with a letter or digit.
/// It is one subject token, so it can never contain `.`, `*`, `>` or whitespace, and one
/// backend's subjects can never overlap another's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MachineName(String);

/// A name that is not a valid [`MachineName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "machine name {0:?}: expected 1 to 64 of a-z, 0-9, '-' and '_', starting with a letter or \
     digit"
)]
pub struct BadMachineName(pub String);

impl MachineName {
    /// Checks `name`.
    pub fn new(name: &str) -> Result<MachineName, BadMachineName> {
        // `req` is taken: `ax.req.<machine>` carries the requests.
        let ok = !name.is_empty()
            && name != "req"
            && name.len() <= MAX_MACHINE_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
            && name.as_bytes()[0].is_ascii_alphanumeric();
        if ok {
            Ok(MachineName(name.to_owned()))
        } else {
            let shown: String = name.chars().take(MAX_MACHINE_NAME + 1).collect();
            Err(BadMachineName(shown))
        }
    }

    /// A default name from the host name, lowercased, other characters as `-`.
    pub fn from_hostname(host: &str) -> Result<MachineName, BadMachineName> {
        let cleaned: String = host
            .to_ascii_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .take(MAX_MACHINE_NAME)
            .collect();
        MachineName::new(cleaned.trim_start_matches(['-', '_']))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the backend publishes its events (in [`EVENTS_STREAM`]).
    pub fn event_subject(&self) -> String {
        format!("ax.{}.event", self.0)
    }

    /// Where the backend publishes its machine record (in [`STATE_STREAM`]).
    pub fn machine_subject(&self) -> String {
        format!("ax.{}.machine", self.0)
    }

    /// Where the backend publishes its session snapshot (in [`STATE_STREAM`]).
    pub fn sessions_subject(&self) -> String {
        format!("ax.{}.sessions", self.0)
    }

    /// Where the backend publishes the `ui.command`s its agents send (core NATS, not kept).
    pub fn ui_subject(&self) -> String {
        format!("ax.{}.ui", self.0)
    }

    /// Where the backend publishes the output of the operator terminal `id` it runs for a hub
    /// (core NATS, not kept; `crate::terminal`).
    pub fn terminal_subject(&self, id: &crate::terminal::TerminalId) -> String {
        format!("ax.{}.term.{id}", self.0)
    }

    /// Every terminal subject of the backend (what its NATS user may publish).
    pub fn terminal_subjects(&self) -> String {
        format!("ax.{}.term.*", self.0)
    }

    /// Where the hub sends requests to the backend.
    pub fn request_subject(&self) -> String {
        format!("ax.req.{}", self.0)
    }

    /// The inbox prefix the backend's connection uses, so its permissions can allow its own
    /// replies and nobody else's.
    pub fn inbox_prefix(&self) -> String {
        format!("_INBOX_{}", self.0)
    }
}

impl TryFrom<String> for MachineName {
    type Error = BadMachineName;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        MachineName::new(&s)
    }
}

impl From<MachineName> for String {
    fn from(m: MachineName) -> String {
        m.0
    }
}

impl fmt::Display for MachineName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The machine named by an `ax.<machine>.<kind>` subject.
pub fn machine_of(subject: &str) -> Option<MachineName> {
    let mut parts = subject.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("ax"), Some(m), Some(_), None) if m != "req" => MachineName::new(m).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_token() {
        for bad in [
            "",
            "a.b",
            "*",
            ">",
            "a b",
            "A",
            "-x",
            "req",
            "req.x",
            &"x".repeat(65),
        ] {
            assert!(MachineName::new(bad).is_err(), "{bad:?}");
        }
        let m = MachineName::new("laptop-1").unwrap();
        assert_eq!(m.event_subject(), "ax.laptop-1.event");
        let t = crate::terminal::TerminalId::new("t0a").unwrap();
        assert_eq!(m.terminal_subject(&t), "ax.laptop-1.term.t0a");
        assert_eq!(machine_of(&m.terminal_subject(&t)), None);
        assert_eq!(machine_of("ax.laptop-1.sessions"), Some(m));
        assert_eq!(machine_of("ax.req.x"), None);
        assert_eq!(
            MachineName::from_hostname("My.Box").unwrap().as_str(),
            "my-box"
        );
    }
}
