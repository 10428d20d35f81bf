//! The operator terminal through the hub (docs/hub.md §1-§4): what travels over NATS between
//! the hub's gateway for a machine (`hub/terminal.rs`) and the machine's join
//! (`join/terminal.rs`).
//!
//! Control is a [`crate::wire::Request::Terminal`] on `ax.req.<machine>`, naming the terminal
//! by an ID the hub chose ([`TerminalId`]) and one [`TerminalAction`]; the join answers it
//! through its own backend's gateway, so the backend applies its own bounds. Output is a
//! [`TerminalOutput`] on `ax.<machine>.term.<id>` (core NATS, never kept), which the hub
//! subscribes to before it asks to open. Every output message carries the byte offset of the
//! terminal's output it starts at, so the hub tells a viewer exactly what was lost on the way.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest terminal ID.
pub const MAX_TERMINAL_ID: usize = 32;
/// Most output bytes in one [`TerminalOutput::Data`] (as the gateway's `terminal.data`).
pub const CHUNK: usize = 32 * 1024;
/// Output a join holds for a terminal while NATS takes it (beyond it the oldest is dropped and
/// counted, as a gateway viewer's scrollback does).
pub const JOIN_BUFFER: usize = 256 * 1024;
/// How long a join keeps a terminal its hub stopped renewing (the default of
/// [`crate::join::JoinConfig::terminal_lease`]); a hub renews at a third of it.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(15);

/// A terminal's ID on NATS, chosen by the hub: 1 to 32 of `a-z` and `0-9` (one subject token).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TerminalId(String);

/// A string that is not a valid [`TerminalId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("terminal id: expected 1 to {MAX_TERMINAL_ID} of a-z and 0-9")]
pub struct BadTerminalId;

impl TerminalId {
    /// Checks `id`.
    pub fn new(id: &str) -> Result<TerminalId, BadTerminalId> {
        let ok = !id.is_empty()
            && id.len() <= MAX_TERMINAL_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if ok {
            Ok(TerminalId(id.to_owned()))
        } else {
            Err(BadTerminalId)
        }
    }

    /// A fresh random one (`t` and 16 hex digits).
    pub fn random() -> Result<TerminalId, ax_core::RandomError> {
        Ok(TerminalId(format!("t{}", ax_core::random::random_hex(8)?)))
    }

    /// The ID.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for TerminalId {
    type Error = BadTerminalId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        TerminalId::new(&s)
    }
}

impl From<TerminalId> for String {
    fn from(t: TerminalId) -> String {
        t.0
    }
}

impl fmt::Display for TerminalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the hub asks of a machine's terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum TerminalAction {
    /// Start the operator's shell (the backend's `terminal.open`); answered with
    /// [`TerminalOpened`]. Output goes to `ax.<machine>.term.<id>`.
    Open {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// Typed text (the backend's `terminal.input`, its bound applied there).
    Input {
        /// The text.
        data: String,
    },
    /// New size (the backend's `terminal.resize`).
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// The hub still wants it: the lease runs for another [`TerminalOpened::lease_ms`].
    Renew {},
    /// End it (the backend's `terminal.close`); the exit still follows on the subject.
    Close {},
}

/// The answer to [`TerminalAction::Open`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalOpened {
    /// The terminal (the hub's ID).
    pub terminal_id: TerminalId,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// The join closes the terminal when this long passes without a renewal.
    pub lease_ms: u64,
}

/// One message on `ax.<machine>.term.<id>`. `offset` is where it starts in the terminal's
/// output as the join read it from its backend (bytes, dropped ones counted): a hub that
/// expected a smaller offset lost the difference on the way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum TerminalOutput {
    /// Output text (whole UTF-8 characters, at most [`CHUNK`] bytes).
    Data {
        /// Where it starts.
        offset: u64,
        /// The text.
        data: String,
    },
    /// Output the join could not pass on (its backend's `terminal.dropped`, or its own
    /// buffer of [`JOIN_BUFFER`] full while NATS was slow).
    Dropped {
        /// Where the gap starts.
        offset: u64,
        /// Its size.
        dropped_bytes: u64,
    },
    /// The terminal ended (its shell exited or it was closed); the last message.
    Exit {
        /// The end of its output.
        offset: u64,
        /// Exit code, if it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that ended it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Request, decode};

    #[test]
    fn ids_are_one_short_token() {
        for bad in ["", "a.b", "T1", "a*", ">", "a b", &"a".repeat(33)] {
            assert!(TerminalId::new(bad).is_err(), "{bad:?}");
        }
        let id = TerminalId::random().unwrap();
        assert_eq!(TerminalId::new(id.as_str()).unwrap(), id);
        assert_eq!(id.as_str().len(), 17);
    }

    #[test]
    fn terminal_requests_and_output_are_strict() {
        let r: Request = decode(
            br#"{"op":"terminal","terminal":"t1","action":{"kind":"open","cols":80,"rows":24}}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Request::Terminal {
                terminal: TerminalId::new("t1").unwrap(),
                action: TerminalAction::Open { cols: 80, rows: 24 },
            }
        );
        for bad in [
            &br#"{"op":"terminal","terminal":"T.1","action":{"kind":"renew"}}"#[..],
            br#"{"op":"terminal","terminal":"t1","action":{"kind":"run","command":"ls"}}"#,
            br#"{"op":"terminal","terminal":"t1","action":{"kind":"close","x":1}}"#,
            br#"{"op":"terminal","terminal":"t1"}"#,
        ] {
            assert!(decode::<Request>(bad).is_err(), "{bad:?}");
        }
        let out: TerminalOutput =
            decode(br#"{"kind":"dropped","offset":3,"droppedBytes":9}"#).unwrap();
        assert_eq!(
            out,
            TerminalOutput::Dropped {
                offset: 3,
                dropped_bytes: 9
            }
        );
        let exit = serde_json::to_string(&TerminalOutput::Exit {
            offset: 1,
            code: Some(0),
            signal: None,
        })
        .unwrap();
        assert_eq!(exit, r#"{"kind":"exit","offset":1,"code":0}"#);
        assert!(decode::<TerminalOutput>(br#"{"kind":"data","offset":0}"#).is_err());
    }
}
