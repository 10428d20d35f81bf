//! Which project a directory belongs to, and the lock that lets one backend serve it.
//!
//! A project is the nearest enclosing git work tree root (a directory holding a `.git`
//! directory or file), else the directory itself; so `ax-code` run from `src/` of a checkout
//! finds the same sessions as from its root.
//!
//! One backend per project: a backend holds an exclusive `flock` on
//! `locks/<sha256 of the project path>.lock` in the data directory for as long as it runs. The
//! kernel drops the lock when the process dies, however it dies, so a crash never leaves the
//! project locked. The file also names the holder (pid and URL) for the refusal message.

use std::{
    fs, io,
    os::fd::OwnedFd,
    path::{Path, PathBuf},
};

use rustix::fs::{FlockOperation, Mode, OFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Folder of the lock files inside the data directory.
pub const LOCKS_DIR: &str = "locks";

/// The project root for `dir`: the nearest enclosing directory (itself included) that holds
/// `.git`, else `dir` itself; canonical either way.
pub fn project_root(dir: &Path) -> io::Result<PathBuf> {
    let dir = fs::canonicalize(dir)?;
    if !dir.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        ));
    }
    Ok(dir
        .ancestors()
        .find(|d| fs::symlink_metadata(d.join(".git")).is_ok())
        .unwrap_or(&dir)
        .to_owned())
}

/// Who holds a project's lock, as written in its lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    /// The holder's process id.
    pub pid: u32,
    /// Empty until the holder is listening.
    #[serde(default)]
    pub url: String,
}

/// The held lock; released when dropped or when the process ends.
#[derive(Debug)]
pub struct ProjectLock {
    file: fs::File,
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another backend serves the project; `holder` is what its lock file says, if readable.
    #[error("{}", busy_message(.project, .holder.as_ref()))]
    Busy {
        /// The canonical project directory.
        project: PathBuf,
        /// What the lock file says, if it is readable.
        holder: Option<LockHolder>,
    },
    /// The lock file could not be created or locked.
    #[error("cannot lock the project in {path}: {error}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
}

fn busy_message(project: &Path, holder: Option<&LockHolder>) -> String {
    match holder {
        Some(h) if !h.url.is_empty() => format!(
            "another ax-code backend already serves {} at {} (pid {}); attach to it with \
             `ax-code attach {}`, or stop it first",
            project.display(),
            h.url,
            h.pid,
            h.url
        ),
        Some(h) => format!(
            "another ax-code backend (pid {}) is starting for {}; attach to it once it listens",
            h.pid,
            project.display()
        ),
        None => format!(
            "another ax-code backend already serves {}; stop it first",
            project.display()
        ),
    }
}

fn lock_path(data_dir: &Path, project: &Path) -> PathBuf {
    let digest = Sha256::digest(project.as_os_str().as_encoded_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    data_dir.join(LOCKS_DIR).join(format!("{name}.lock"))
}

impl ProjectLock {
    /// Takes the lock of `project` (canonical) without waiting.
    pub fn acquire(data_dir: &Path, project: &Path) -> Result<ProjectLock, LockError> {
        let path = lock_path(data_dir, project);
        let io_err = |error: io::Error| LockError::Io {
            path: path.clone(),
            error,
        };
        crate::secure::private_dir(&data_dir.join(LOCKS_DIR)).map_err(io_err)?;
        // CLOEXEC: commands the backend runs must not inherit (and so prolong) the lock.
        let fd: OwnedFd = rustix::fs::open(
            &path,
            OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io_err(e.into()))?;
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let holder = fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                return Err(LockError::Busy {
                    project: project.to_owned(),
                    holder,
                });
            }
            Err(e) => return Err(io_err(e.into())),
        }
        let lock = ProjectLock {
            file: fs::File::from(fd),
        };
        lock.record(&LockHolder {
            pid: std::process::id(),
            url: String::new(),
        })
        .map_err(io_err)?;
        Ok(lock)
    }

    /// Writes who holds the lock (called again once the URL is known).
    pub fn record(&self, holder: &LockHolder) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let bytes = serde_json::to_vec(holder).map_err(io::Error::other)?;
        self.file.set_len(0)?;
        self.file.write_all_at(&bytes, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_nearest_git_work_tree_else_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        let deep = root.join("repo/src/bin");
        fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_root(&deep).unwrap(), deep, "no .git: the directory");
        fs::create_dir(root.join("repo/.git")).unwrap();
        assert_eq!(project_root(&deep).unwrap(), root.join("repo"));
        // A worktree or submodule has a `.git` file; the nearest one wins.
        fs::write(root.join("repo/src/.git"), "gitdir: elsewhere").unwrap();
        assert_eq!(project_root(&deep).unwrap(), root.join("repo/src"));
        assert!(project_root(&root.join("repo/src/.git")).is_err());
    }

    #[test]
    fn a_second_lock_is_refused_and_names_the_holder() {
        let data = tempfile::tempdir().unwrap();
        let project = Path::new("/some/project");
        let lock = ProjectLock::acquire(data.path(), project).unwrap();
        lock.record(&LockHolder {
            pid: 42,
            url: "http://127.0.0.1:4096".into(),
        })
        .unwrap();
        let err = ProjectLock::acquire(data.path(), project).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("http://127.0.0.1:4096") && text.contains("pid 42"),
            "{text}"
        );
        // Another project is independent; the lock goes with its holder.
        ProjectLock::acquire(data.path(), Path::new("/other")).unwrap();
        drop(lock);
        ProjectLock::acquire(data.path(), project).unwrap();
    }
}
