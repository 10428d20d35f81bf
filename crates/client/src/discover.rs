//! Finding a backend and its credential without a secret on the command line: the data
//! directory's `servers/` registry (one record per running backend) and the credential files
//! `ax-code serve` writes.

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use ax_protocol::local::{
    CREDENTIALS_DIR, CredentialFile, PASSWORD_ENV, SERVERS_DIR, ServerRecord, data_dir,
};

use crate::{Client, screen_credential};

fn records(dir: &Path) -> Vec<(PathBuf, SystemTime)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, SystemTime)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let modified = fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (p, modified)
        })
        .collect();
    // Newest first: the most recently started backend wins.
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    files
}

/// Whether `pid` is gone. A process of another user still counts as alive (EPERM).
fn pid_gone(pid: u32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
        return true;
    };
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
}

/// Removes a `servers/` record whose process is gone (a crash or `kill -9` left it) and says
/// so. A live pid proves nothing (pids are reused): callers still ask the backend itself.
fn remove_if_dead(path: &Path, record: &ServerRecord) -> bool {
    let dead = pid_gone(record.pid);
    if dead {
        let _ = fs::remove_file(path);
    }
    dead
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    // Records hold secrets: only read small regular files.
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return None;
    }
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// The registered backend serving `project_dir`, as `(url, token)`, if one answers.
///
/// Records whose backend does not answer at all are stale and removed; records that answer
/// for another project or refuse the credential are skipped.
pub async fn discover(project_dir: &Path, data_dir: &Path) -> Option<(String, String)> {
    let project = fs::canonicalize(project_dir).ok()?;
    let project = project.to_string_lossy();
    for (path, _) in records(&data_dir.join(SERVERS_DIR)) {
        let Some(record) = read_json::<ServerRecord>(&path) else {
            continue;
        };
        if record.project != project || remove_if_dead(&path, &record) {
            continue;
        }
        let Ok(client) = Client::new(&record.url, &record.token) else {
            continue;
        };
        match tokio::time::timeout(Duration::from_secs(2), client.project()).await {
            Ok(Ok(served)) if served.directory == project => {
                return Some((record.url, record.token));
            }
            Ok(Err(crate::ClientError::Transport(_))) => {
                let _ = fs::remove_file(&path);
            }
            _ => {}
        }
    }
    None
}

/// Scheme, host and port equal; the loopback names `localhost`, `127.0.0.1` and `[::1]` count
/// as the same host.
pub fn same_origin(a: &str, b: &str) -> bool {
    let (Ok(a), Ok(b)) = (reqwest::Url::parse(a), reqwest::Url::parse(b)) else {
        return false;
    };
    let loopback = |h: Option<&str>| matches!(h, Some("localhost" | "127.0.0.1" | "[::1]"));
    a.scheme() == b.scheme()
        && a.port_or_known_default() == b.port_or_known_default()
        && (a.host_str() == b.host_str() || (loopback(a.host_str()) && loopback(b.host_str())))
}

/// The credential for the backend at `url`: `$AX_CODE_SERVER_PASSWORD`, else a `servers/`
/// record for that URL, else the credential file `ax-code serve` wrote, in the default data
/// directory.
pub fn credential_for_url(url: &str) -> Option<String> {
    if let Some(password) = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()) {
        return Some(password);
    }
    credential_for_url_in(url, &data_dir()?)
}

/// [`credential_for_url`] without the environment variable, in a given data directory.
pub fn credential_for_url_in(url: &str, data_dir: &Path) -> Option<String> {
    for (path, _) in records(&data_dir.join(SERVERS_DIR)) {
        if let Some(record) = read_json::<ServerRecord>(&path)
            && same_origin(&record.url, url)
            && !remove_if_dead(&path, &record)
        {
            return Some(record.token);
        }
    }
    for (path, _) in records(&data_dir.join(CREDENTIALS_DIR)) {
        if let Some(record) = read_json::<CredentialFile>(&path)
            && same_origin(&record.url, url)
        {
            return Some(record.token);
        }
    }
    None
}

/// Where a screen credential was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScreenLookup {
    /// The screen credential (never the full one).
    Found(String),
    /// A record for the URL exists but was written by an older backend without a screen
    /// credential: restart the backend.
    OldRecord,
    /// No record for the URL.
    Missing,
}

/// The screen credential for the backend at `url` (for `ax-code mcp screen`):
/// `$AX_CODE_SERVER_PASSWORD` turned into the screen credential at once (the password itself
/// is not kept), else the `screenToken` of a `servers/` record or credential file for that URL
/// in the default data directory. The full credential is never returned.
pub fn screen_credential_for_url(url: &str) -> ScreenLookup {
    if let Some(password) = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty()) {
        let screen = screen_credential(&password);
        drop(password);
        return ScreenLookup::Found(screen);
    }
    match data_dir() {
        Some(dir) => screen_credential_for_url_in(url, &dir),
        None => ScreenLookup::Missing,
    }
}

/// [`screen_credential_for_url`] without the environment variable, in a given data directory.
pub fn screen_credential_for_url_in(url: &str, data_dir: &Path) -> ScreenLookup {
    let mut old = false;
    for (path, _) in records(&data_dir.join(SERVERS_DIR)) {
        if let Some(record) = read_json::<ServerRecord>(&path)
            && same_origin(&record.url, url)
            && !remove_if_dead(&path, &record)
        {
            match record.screen_token {
                Some(t) => return ScreenLookup::Found(t),
                None => old = true,
            }
        }
    }
    for (path, _) in records(&data_dir.join(CREDENTIALS_DIR)) {
        if let Some(record) = read_json::<CredentialFile>(&path)
            && same_origin(&record.url, url)
        {
            match record.screen_token {
                Some(t) => return ScreenLookup::Found(t),
                None => old = true,
            }
        }
    }
    if old {
        ScreenLookup::OldRecord
    } else {
        ScreenLookup::Missing
    }
}

/// The registered backend serving `project_dir`, as `(url, screen credential)`, if one proves
/// it holds that credential (`screenProof` of `/health`; the full credential is never read
/// out of the record). [`ScreenDiscovery::OldRecord`] when the only matching records came
/// from an older backend without a screen credential. Records whose backend does not answer are removed.
pub async fn discover_screen(project_dir: &Path, data_dir: &Path) -> ScreenDiscovery {
    let Some(project) = fs::canonicalize(project_dir).ok() else {
        return ScreenDiscovery::Missing;
    };
    let project = project.to_string_lossy();
    let mut old = false;
    for (path, _) in records(&data_dir.join(SERVERS_DIR)) {
        let Some(record) = read_json::<ServerRecord>(&path) else {
            continue;
        };
        if record.project != project || remove_if_dead(&path, &record) {
            continue;
        }
        let Some(screen) = record.screen_token else {
            old = true;
            continue;
        };
        let Ok(client) = Client::new(&record.url, &screen) else {
            continue;
        };
        match tokio::time::timeout(Duration::from_secs(2), client.verify_screen()).await {
            Ok(Ok(_)) => {
                return ScreenDiscovery::Found {
                    url: record.url,
                    screen_token: screen,
                };
            }
            Ok(Err(crate::ClientError::Transport(_))) => {
                let _ = fs::remove_file(&path);
            }
            _ => {}
        }
    }
    if old {
        ScreenDiscovery::OldRecord
    } else {
        ScreenDiscovery::Missing
    }
}

/// What [`discover_screen`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScreenDiscovery {
    /// A backend of the project that proved it holds `screen_token`.
    Found { url: String, screen_token: String },
    /// Only records of an older backend without a screen credential: restart the backend.
    OldRecord,
    /// No answering backend of the project.
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_of_a_dead_process_is_removed_not_used() {
        let data = std::env::temp_dir().join(format!("ax-stale-{}", std::process::id()));
        let servers = data.join(SERVERS_DIR);
        fs::create_dir_all(&servers).unwrap();
        // A real process that has exited and been reaped: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let record = |pid: u32, token: &str| ServerRecord {
            project: "/p".into(),
            url: "http://127.0.0.1:1".into(),
            token: token.into(),
            pid,
            screen_token: Some("s".repeat(64)),
        };
        let stale = servers.join(format!("{dead}-1.json"));
        fs::write(
            &stale,
            serde_json::to_vec(&record(dead, "stale-token")).unwrap(),
        )
        .unwrap();
        assert_eq!(credential_for_url_in("http://127.0.0.1:1", &data), None);
        assert!(!stale.exists(), "the stale record is removed when read");
        // A live process's record is used.
        let live = servers.join("live-1.json");
        let me = std::process::id();
        fs::write(
            &live,
            serde_json::to_vec(&record(me, "live-token")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            credential_for_url_in("http://127.0.0.1:1", &data).as_deref(),
            Some("live-token")
        );
        fs::remove_dir_all(&data).unwrap();
    }

    #[test]
    fn loopback_names_are_one_origin() {
        assert!(same_origin(
            "http://localhost:4096",
            "http://127.0.0.1:4096/"
        ));
        assert!(same_origin("http://[::1]:4096", "http://127.0.0.1:4096"));
        assert!(!same_origin(
            "http://127.0.0.1:4096",
            "http://127.0.0.1:4097"
        ));
        assert!(!same_origin(
            "http://example.com:4096",
            "http://127.0.0.1:4096"
        ));
    }
}
