//! The data directory's `servers/` registry (one 0600 record per running backend, with the full
//! credential), the `screen/` records beside it (the screen credential only, in files of their
//! own), and the credential file `ax-code serve` writes for a generated token.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use ax_protocol::local::{
    CREDENTIALS_DIR, CredentialRecord, SCREEN_DIR, SERVERS_DIR, ScreenRecord, ServerRecord,
    credential_file_name,
};
use serde::Serialize;

use crate::secure;

/// A backend's `servers/` and `screen/` records, removed when dropped (a clean exit).
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
    screen_path: PathBuf,
}

/// Writes `record` as `<dir>/<pid>-<port>.json` (0600, in a 0700 directory), first removing
/// records in `dir` whose process is gone.
fn write_record<T: Serialize>(dir: &Path, pid: u32, port: u16, record: &T) -> io::Result<PathBuf> {
    secure::private_dir(dir)?;
    clean_stale(dir);
    let path = dir.join(format!("{pid}-{port}.json"));
    let bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    secure::write_private_file(&path, &bytes)?;
    Ok(path)
}

impl Registration {
    /// Writes `servers/<pid>-<port>.json` with `record` and `screen/<pid>-<port>.json` with the
    /// screen credential derived from its token.
    pub fn create(data_dir: &Path, record: &ServerRecord, port: u16) -> io::Result<Registration> {
        let path = write_record(&data_dir.join(SERVERS_DIR), record.pid, port, record)?;
        let screen = ScreenRecord {
            project: record.project.clone(),
            url: record.url.clone(),
            screen_token: ax_protocol::proof::screen_credential(record.token.expose()),
            pid: record.pid,
        };
        let screen_path = match write_record(&data_dir.join(SCREEN_DIR), record.pid, port, &screen)
        {
            Ok(p) => p,
            Err(e) => {
                let _ = fs::remove_file(&path);
                return Err(e);
            }
        };
        Ok(Registration { path, screen_path })
    }

    /// The `servers/` record (full credential).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `screen/` record (screen credential only).
    pub fn screen_path(&self) -> &Path {
        &self.screen_path
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_file(&self.screen_path);
    }
}

/// Whether a process with this pid exists (it may belong to another user: EPERM).
pub fn pid_alive(pid: u32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e != rustix::io::Errno::SRCH,
    }
}

/// The `pid` of a `servers/` or `screen/` record, without caring which.
#[derive(serde::Deserialize)]
struct Pid {
    pid: u32,
}

/// Removes records whose process is gone (left by a crash or `kill -9`).
pub fn clean_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let record: Option<Pid> = fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let stale = match record {
            Some(r) => !pid_alive(r.pid),
            None => true,
        };
        if stale {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Writes `credentials/<host>_<port>.json` (0600) with the URL and the token; returns its path.
/// The screen credential is not in it: `ax-code mcp screen` reads `screen/` only.
pub fn write_credential(
    data_dir: &Path,
    host: &str,
    port: u16,
    record: &CredentialRecord,
) -> io::Result<PathBuf> {
    let dir = data_dir.join(CREDENTIALS_DIR);
    secure::private_dir(&dir)?;
    let path = dir.join(credential_file_name(host, port));
    let bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    secure::write_private_file(&path, &bytes)?;
    Ok(path)
}
