//! The credential `ax-code serve` keeps for a project across restarts (docs/SECURITY.md,
//! "Sign-in across restarts"), so a Control UI tab and an attached TUI prove the restarted
//! backend with the credential they hold instead of needing a fresh link.
//!
//! One file per project, `project-credentials/<first 32 hex digits of SHA-256 of the project
//! path>.json`, `{"version":1,"project","token"}`: 0600 in a 0700 directory, written through
//! [`secure::write_private_file`]. Read with `O_NOFOLLOW | O_NONBLOCK`, and only when it is a
//! regular file of this user with no group or other permission, at most 4 KiB, for exactly
//! this project: anything else is an error that names the file, never a silent new
//! credential. `ax-code link --rotate` replaces it ([`rotate`]).

use std::{
    fs,
    io::{self, Read},
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

use ax_core::Secret;
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::secure;

/// The directory of the kept credentials in the data directory.
pub const DIR: &str = "project-credentials";
const MAX_BYTES: u64 = 4096;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    version: u32,
    project: String,
    token: Secret,
}

/// The file that keeps `project`'s credential.
pub fn path(data_dir: &Path, project: &Path) -> PathBuf {
    let digest = Sha256::digest(project.as_os_str().as_encoded_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    data_dir.join(DIR).join(format!("{name}.json"))
}

fn invalid(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{}: {why}; remove it (or run `ax-code link --rotate`) to make a new credential",
            path.display()
        ),
    )
}

/// The credential kept for `project`, `None` when there is none yet.
pub fn load(data_dir: &Path, project: &Path) -> io::Result<Option<Secret>> {
    let path = path(data_dir, project);
    if let Ok(meta) = fs::symlink_metadata(data_dir.join(DIR))
        && (!meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw())
    {
        return Err(invalid(&data_dir.join(DIR), "not a directory of this user"));
    }
    let fd = match rustix::fs::open(
        &path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(invalid(&path, "a symlink, not followed")),
        Err(e) => return Err(io::Error::from(e)),
    };
    let file = fs::File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(invalid(&path, "not a regular file"));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(invalid(&path, "owned by another user"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(invalid(
            &path,
            "readable or writable by others (must be 0600)",
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(invalid(&path, "too large"));
    }
    let mut text = String::new();
    file.take(MAX_BYTES).read_to_string(&mut text)?;
    let kept: Kept =
        serde_json::from_str(&text).map_err(|_| invalid(&path, "not a credential record"))?;
    if kept.version != 1 || Path::new(&kept.project) != project {
        return Err(invalid(&path, "a record of another version or project"));
    }
    if !crate::token_ok(kept.token.expose()) {
        return Err(invalid(&path, "not a usable credential"));
    }
    Ok(Some(kept.token))
}

/// Keeps `token` for `project` (replacing what was kept).
pub fn store(data_dir: &Path, project: &Path, token: &Secret) -> io::Result<PathBuf> {
    let path = path(data_dir, project);
    secure::private_dir(&data_dir.join(DIR))?;
    let kept = Kept {
        version: 1,
        project: project.to_string_lossy().into_owned(),
        token: token.clone(),
    };
    let bytes = serde_json::to_vec_pretty(&kept).map_err(io::Error::other)?;
    secure::write_private_file(&path, &bytes)?;
    Ok(path)
}

/// The credential kept for `project`, made (and kept) when there is none.
pub fn load_or_create(data_dir: &Path, project: &Path) -> io::Result<Secret> {
    if let Some(token) = load(data_dir, project)? {
        return Ok(token);
    }
    let token = crate::generate_token().map_err(io::Error::other)?;
    store(data_dir, project, &token)?;
    Ok(token)
}

/// Replaces `project`'s kept credential with a fresh one (a damaged or unsafe file included:
/// it is replaced, not read). A running backend keeps the credential it started with.
pub fn rotate(data_dir: &Path, project: &Path) -> io::Result<Secret> {
    let token = crate::generate_token().map_err(io::Error::other)?;
    let path = path(data_dir, project);
    // A symlink or other odd file at the name is removed, never written through.
    if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        fs::remove_file(&path)?;
    }
    store(data_dir, project, &token)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn kept_credentials_survive_are_private_and_refuse_unsafe_files() {
        let data = tempfile::tempdir().unwrap();
        let project = Path::new("/some/project");
        let other = Path::new("/some/other");
        assert!(load(data.path(), project).unwrap().is_none());
        let first = load_or_create(data.path(), project).unwrap();
        // The same credential at the next start; another project has its own.
        assert_eq!(load_or_create(data.path(), project).unwrap(), first);
        assert_ne!(load_or_create(data.path(), other).unwrap(), first);
        let file = path(data.path(), project);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&data.path().join(DIR)), 0o700);

        // Rotation: a new credential, kept.
        let rotated = rotate(data.path(), project).unwrap();
        assert_ne!(rotated, first);
        assert_eq!(load(data.path(), project).unwrap(), Some(rotated));

        // A file others may read is refused, with its name and what to do.
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        let err = load(data.path(), project).unwrap_err().to_string();
        assert!(err.contains("0600") && err.contains("--rotate"), "{err}");
        // A symlink at the name is not followed (its target holds a valid record).
        let target = data.path().join("elsewhere.json");
        fs::rename(&file, &target).unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&target, &file).unwrap();
        let err = load(data.path(), project).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
        // Rotation replaces the link with a file of its own and leaves the target alone.
        let target_text = fs::read_to_string(&target).unwrap();
        let fresh = rotate(data.path(), project).unwrap();
        assert!(!fs::symlink_metadata(&file).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), target_text);
        assert_eq!(load(data.path(), project).unwrap(), Some(fresh));
        // A record of another project under this project's name is refused.
        fs::copy(path(data.path(), other), &file).unwrap();
        let err = load(data.path(), project).unwrap_err().to_string();
        assert!(err.contains("another version or project"), "{err}");
        // Garbage is an error, not a silent new credential.
        fs::write(&file, b"not json").unwrap();
        assert!(load(data.path(), project).is_err());
    }
}
