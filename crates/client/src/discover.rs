//! Finding a backend and its credential without a secret on the command line, in the data
//! directory: `servers/` (one record per running backend, full credential), `screen/` (the
//! same backends, screen credential only) and the credential files `ax-code serve` writes.
//!
//! One walk ([`records`]) reads them all; a lookup says which credential it wants ([`Kind`]),
//! and so which files it may open: the screen lookup never opens a file holding the full
//! credential. Records match a URL exactly (scheme, host as written, port): `localhost`,
//! `127.0.0.1` and `[::1]` are different URLs, because a different program may listen on each.

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use ax_protocol::local::{
    CREDENTIALS_DIR, CredentialRecord, PASSWORD_ENV, SCREEN_DIR, SERVERS_DIR, ScreenRecord,
    ServerRecord, data_dir,
};

use crate::{Client, ClientError, Secret, screen_credential};

/// Which credential a lookup is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The backend credential: `servers/`, then `credentials/`.
    Full,
    /// The screen credential (gateway only): `screen/` and nothing else.
    Screen,
}

/// A backend and the credential of the asked [`Kind`] for it. `Debug` hides the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Base URL as the backend registered it.
    pub url: String,
    /// The credential (the full one or the screen one, as asked).
    pub credential: Secret,
}

/// One record, whatever file it came from.
struct Entry {
    path: PathBuf,
    /// `None` for `credentials/` files, which name no project.
    project: Option<String>,
    found: Found,
}

/// Small regular files only (records hold secrets; a FIFO or a huge file is not one).
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return None;
    }
    serde_json::from_slice(&fs::read(path).ok()?).ok()
}

/// `*.json` in `dir`, newest first (the most recently started backend wins).
fn json_files(dir: &Path) -> Vec<PathBuf> {
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
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    files.into_iter().map(|(p, _)| p).collect()
}

/// Whether `pid` is gone. A process of another user still counts as alive (EPERM).
fn pid_gone(pid: u32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
        return true;
    };
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
}

/// Removes a `servers/` or `screen/` record whose process is gone (a crash or `kill -9` left
/// it) and says so. A live pid proves nothing (pids are reused): callers still match the URL
/// exactly and ask the backend itself for a proof.
fn remove_if_dead(path: &Path, pid: u32) -> bool {
    let dead = pid_gone(pid);
    if dead {
        let _ = fs::remove_file(path);
    }
    dead
}

/// Every readable record of `kind` in `data_dir`, in lookup order. Records of processes that
/// are gone are removed as they are read, and skipped.
fn records(kind: Kind, data_dir: &Path) -> impl Iterator<Item = Entry> {
    let dirs: &[&str] = match kind {
        Kind::Full => &[SERVERS_DIR, CREDENTIALS_DIR],
        Kind::Screen => &[SCREEN_DIR],
    };
    let data_dir = data_dir.to_owned();
    dirs.iter().flat_map(move |&dir| {
        json_files(&data_dir.join(dir))
            .into_iter()
            .filter_map(move |path| {
                let (project, url, credential) = match dir {
                    SERVERS_DIR => {
                        let r: ServerRecord = read_json(&path)?;
                        if remove_if_dead(&path, r.pid) {
                            return None;
                        }
                        (Some(r.project), r.url, r.token)
                    }
                    SCREEN_DIR => {
                        let r: ScreenRecord = read_json(&path)?;
                        if remove_if_dead(&path, r.pid) {
                            return None;
                        }
                        (Some(r.project), r.url, r.screen_token)
                    }
                    _ => {
                        let r: CredentialRecord = read_json(&path)?;
                        (None, r.url, r.token)
                    }
                };
                Some(Entry {
                    path,
                    project,
                    found: Found { url, credential },
                })
            })
    })
}

/// The same URL: scheme, host as written and port equal (a trailing slash or path aside).
fn same_url(a: &str, b: &str) -> bool {
    let (Ok(a), Ok(b)) = (reqwest::Url::parse(a), reqwest::Url::parse(b)) else {
        return false;
    };
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// Whether `url` names a host on this machine (where the records of every local backend are).
fn is_local(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return true;
    };
    let Some(host) = url.host_str() else {
        return true;
    };
    match host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
    {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => {
            let host = host.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

/// The credential of `kind` recorded for exactly `url` in `data_dir` (no environment, no
/// network).
pub fn credential_for_url_in(kind: Kind, url: &str, data_dir: &Path) -> Option<Secret> {
    records(kind, data_dir)
        .find(|e| same_url(&e.found.url, url))
        .map(|e| e.found.credential)
}

/// The credential of `kind` for the backend at `url`, from the default data directory's
/// records for exactly that URL. `$AX_CODE_SERVER_PASSWORD` (turned at once into the screen
/// credential for [`Kind::Screen`]; the password itself is not kept) is used only for a URL
/// on another machine, which has no records here: on this machine, only a backend that
/// registered that very URL gets a credential.
pub fn credential_for_url(kind: Kind, url: &str) -> Option<Secret> {
    if let Some(found) = data_dir().and_then(|dir| credential_for_url_in(kind, url, &dir)) {
        return Some(found);
    }
    if is_local(url) {
        return None;
    }
    let password = Secret::new(std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty())?);
    Some(match kind {
        Kind::Full => password,
        Kind::Screen => screen_credential(password.expose()),
    })
}

/// The registered backend serving `project_dir` that proves it holds the credential of `kind`
/// (`proof`, or `screenProof` for [`Kind::Screen`], of `/health`; nothing carrying the
/// credential is sent). Records whose backend does not answer at all are stale and removed;
/// records that answer for another project or fail the proof are skipped.
pub async fn discover(kind: Kind, project_dir: &Path, data_dir: &Path) -> Option<Found> {
    let project = fs::canonicalize(project_dir).ok()?;
    let project = project.to_string_lossy();
    let candidates = records(kind, data_dir).filter(|e| e.project.as_deref() == Some(&project));
    for entry in candidates {
        let Ok(client) = Client::new(&entry.found.url, &entry.found.credential) else {
            continue;
        };
        let answered = match kind {
            // The full credential also asks which project is served.
            Kind::Full => tokio::time::timeout(Duration::from_secs(2), client.project())
                .await
                .map(|r| r.map(|served| served.directory == project)),
            Kind::Screen => tokio::time::timeout(Duration::from_secs(2), client.verify_screen())
                .await
                .map(|r| r.map(|_| true)),
        };
        match answered {
            Ok(Ok(true)) => return Some(entry.found),
            Ok(Err(ClientError::Transport(_))) => {
                let _ = fs::remove_file(&entry.path);
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_dead_processes_are_removed_not_used() {
        let data = std::env::temp_dir().join(format!("ax-stale-{}", std::process::id()));
        let servers = data.join(SERVERS_DIR);
        let screen = data.join(SCREEN_DIR);
        fs::create_dir_all(&servers).unwrap();
        fs::create_dir_all(&screen).unwrap();
        // A real process that has exited and been reaped: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let url = "http://127.0.0.1:1";
        let server = |pid: u32, token: &str| ServerRecord {
            project: "/p".into(),
            url: url.into(),
            token: token.into(),
            pid,
        };
        let screen_record = |pid: u32, token: &str| ScreenRecord {
            project: "/p".into(),
            url: url.into(),
            screen_token: token.into(),
            pid,
        };
        let stale = servers.join(format!("{dead}-1.json"));
        fs::write(&stale, serde_json::to_vec(&server(dead, "stale")).unwrap()).unwrap();
        let stale_screen = screen.join(format!("{dead}-1.json"));
        fs::write(
            &stale_screen,
            serde_json::to_vec(&screen_record(dead, "stale-screen")).unwrap(),
        )
        .unwrap();
        assert_eq!(credential_for_url_in(Kind::Full, url, &data), None);
        assert_eq!(credential_for_url_in(Kind::Screen, url, &data), None);
        assert!(!stale.exists(), "the stale record is removed when read");
        assert!(!stale_screen.exists(), "the stale screen record is removed");
        // A live process's records are used.
        let me = std::process::id();
        fs::write(
            servers.join("live-1.json"),
            serde_json::to_vec(&server(me, "live")).unwrap(),
        )
        .unwrap();
        fs::write(
            screen.join("live-1.json"),
            serde_json::to_vec(&screen_record(me, "live-screen")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            credential_for_url_in(Kind::Full, url, &data),
            Some(Secret::from("live"))
        );
        assert_eq!(
            credential_for_url_in(Kind::Screen, url, &data),
            Some(Secret::from("live-screen"))
        );
        fs::remove_dir_all(&data).unwrap();
    }

    #[test]
    fn urls_match_exactly() {
        assert!(same_url("http://127.0.0.1:4096", "http://127.0.0.1:4096/"));
        assert!(!same_url("http://localhost:4096", "http://127.0.0.1:4096"));
        assert!(!same_url("http://[::1]:4096", "http://127.0.0.1:4096"));
        assert!(!same_url("http://127.0.0.1:4096", "http://127.0.0.1:4097"));
        assert!(!same_url(
            "http://example.com:4096",
            "http://127.0.0.1:4096"
        ));
    }

    #[test]
    fn local_urls() {
        for url in [
            "http://127.0.0.1:1",
            "http://[::1]:1",
            "http://localhost:1",
            "http://LOCALHOST:1",
            "http://0.0.0.0:1",
            "not a url",
        ] {
            assert!(is_local(url), "{url}");
        }
        assert!(!is_local("http://192.0.2.1:1"));
        assert!(!is_local("http://ax.example:1"));
    }
}
