//! Files the backend shares with local clients through the data directory: where that
//! directory is, the `servers/` registry records (full credential), the `screen/` records
//! (screen credential only) and the `serve` credential file.
//!
//! The credentials are [`Secret`]s: written to the file, redacted in `Debug`.
//!
//! These are not HTTP wire types, but the server writes them and the client and the CLI read
//! them, so their shape lives here, strict like everything else.

use std::path::PathBuf;

use ax_core::Secret;
use serde::{Deserialize, Serialize};

/// Environment variable that overrides the data directory.
pub const DATA_DIR_ENV: &str = "AX_CODE_DATA_DIR";
/// Environment variable holding a backend credential chosen by the person.
pub const PASSWORD_ENV: &str = "AX_CODE_SERVER_PASSWORD";
/// Sub-directory of the data directory with one record per running backend.
pub const SERVERS_DIR: &str = "servers";
/// Sub-directory of the data directory with one screen-credential record per running backend.
pub const SCREEN_DIR: &str = "screen";
/// Sub-directory of the data directory with the credentials `ax-code serve` generated.
pub const CREDENTIALS_DIR: &str = "credentials";

/// `$AX_CODE_DATA_DIR`, else `$XDG_DATA_HOME/ax-code`, else `~/.local/share/ax-code`.
///
/// Empty or relative values are ignored, as the XDG base directory rules ask. `None` only when
/// no home directory is known either.
pub fn data_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = absolute(DATA_DIR_ENV) {
        return Some(dir);
    }
    if let Some(dir) = absolute("XDG_DATA_HOME") {
        return Some(dir.join("ax-code"));
    }
    absolute("HOME").map(|home| home.join(".local/share/ax-code"))
}

/// `servers/<pid>-<port>.json`: a running backend (created 0600, removed on a clean exit).
/// It holds the full credential; `ax-code mcp screen` never reads it (see [`ScreenRecord`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerRecord {
    /// Canonical absolute project directory.
    pub project: String,
    /// Base URL, e.g. `http://127.0.0.1:4096`.
    pub url: String,
    /// The bearer credential.
    pub token: Secret,
    /// The backend's process id, so a stale record (dead process) can be removed.
    pub pid: u32,
}

/// `screen/<pid>-<port>.json`: the screen credential of a running backend (gateway only, at
/// most `operator.write`; see `ax_protocol::SCREEN_CREDENTIAL_MESSAGE`), in a file of its own
/// so that what reads it (`ax-code mcp screen`, or a sandbox granted this file) never reads
/// the full credential. Created 0600, removed on a clean exit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScreenRecord {
    /// Canonical absolute project directory.
    pub project: String,
    /// Base URL, e.g. `http://127.0.0.1:4096`.
    pub url: String,
    /// The screen credential.
    pub screen_token: Secret,
    /// The backend's process id, so a stale record (dead process) can be removed.
    pub pid: u32,
}

/// `credentials/<host>_<port>.json`: written by `ax-code serve` when it generated the token, so
/// `ax-code attach URL` run by the same OS user finds it without a secret on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialRecord {
    /// Base URL of the backend, e.g. `http://127.0.0.1:4096`.
    pub url: String,
    /// The bearer credential `ax-code serve` generated for it.
    pub token: Secret,
}

/// File name (without directory) of the credential record for `host:port`.
pub fn credential_file_name(host: &str, port: u16) -> String {
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{host}_{port}.json")
}
