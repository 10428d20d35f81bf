//! The data directory's `servers/` registry (one 0600 record per running backend) and the
//! credential file `ax-code serve` writes for a generated token.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use ax_protocol::local::{
    CREDENTIALS_DIR, CredentialFile, CredentialRecord, SERVERS_DIR, ServerRecord,
    credential_file_name,
};

use crate::secure;

/// A record in `servers/`, removed when dropped (a clean exit).
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
}

impl Registration {
    pub fn create(data_dir: &Path, record: &ServerRecord, port: u16) -> io::Result<Registration> {
        let dir = data_dir.join(SERVERS_DIR);
        secure::private_dir(&dir)?;
        clean_stale(&dir);
        let path = dir.join(format!("{}-{port}.json", record.pid));
        let bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
        secure::write_private_file(&path, &bytes)?;
        Ok(Registration { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
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
        let record: Option<ServerRecord> = fs::read(&path)
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

/// Writes `credentials/<host>_<port>.json` (0600) with the URL, the token and the screen
/// credential derived from it (what `ax-code mcp screen` reads); returns its path.
pub fn write_credential(
    data_dir: &Path,
    host: &str,
    port: u16,
    record: &CredentialRecord,
) -> io::Result<PathBuf> {
    let dir = data_dir.join(CREDENTIALS_DIR);
    secure::private_dir(&dir)?;
    let path = dir.join(credential_file_name(host, port));
    let file = CredentialFile {
        url: record.url.clone(),
        token: record.token.clone(),
        screen_token: Some(crate::screen_credential(&record.token)),
    };
    let bytes = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
    secure::write_private_file(&path, &bytes)?;
    Ok(path)
}
