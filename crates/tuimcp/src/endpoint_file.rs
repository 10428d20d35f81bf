//! `endpoint.json`: the capability file beside the socket (docs/tuimcp.md §2, §3).
//!
//! The TUI side creates the private directory, and writes the file exclusively without
//! following symlinks; the adapter side re-checks path, owner, type and mode every time it
//! reads it.

use std::{
    ffi::OsStr,
    fs::File,
    io::Write,
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
};

use ax_core::Secret;
use rustix::fs::{FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::{controller::Identity, protocol::WireUuid};

/// The file's name inside the private directory.
pub const FILE_NAME: &str = "endpoint.json";
/// The socket's name inside the private directory.
pub const SOCKET_NAME: &str = "s";
const PRIVATE_DIR: Mode = Mode::from_bits_truncate(0o700);
const PRIVATE_FILE: Mode = Mode::from_bits_truncate(0o600);

/// Largest accepted `endpoint.json`.
pub const MAX_FILE: u64 = 16 * 1024;

/// The file's content. `Debug` is derived: the token is a [`Secret`] and prints redacted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointFile {
    /// Format version; 1 is the only one.
    pub version: u8,
    /// The TUI's [`Identity::instance_id`].
    pub instance_id: WireUuid,
    /// The share's [`Identity::generation`].
    pub generation: WireUuid,
    /// The bearer token every request carries.
    pub token: Secret,
}

impl EndpointFile {
    /// The version-1 file for `identity`.
    pub fn new(identity: Identity, token: Secret) -> Self {
        Self {
            version: 1,
            instance_id: identity.instance_id,
            generation: identity.generation,
            token,
        }
    }
}

/// 32 random bytes as 64 lowercase hex digits.
pub fn new_token() -> std::io::Result<Secret> {
    Secret::generate(32).map_err(std::io::Error::other)
}

fn is_token(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why an endpoint file was refused. Messages name the path, never the content.
#[derive(Debug, thiserror::Error)]
pub enum EndpointFileError {
    /// Not absolute, or not named `endpoint.json`.
    #[error("{0}: the endpoint path must be absolute and end in /{FILE_NAME}")]
    BadPath(PathBuf),
    /// The file or a directory on its path fails a check (owner, mode, type, size, symlink).
    #[error("{path}: {reason}")]
    Unsafe {
        /// The path that failed.
        path: PathBuf,
        /// Which check failed.
        reason: String,
    },
    /// Opening or reading failed.
    #[error("{path}: {reason}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// What the system said.
        reason: std::io::Error,
    },
    /// Not the JSON shape of [`EndpointFile`], or a token that is not 64 lowercase hex digits.
    #[error("{0}: not a valid endpoint file (expected version, instanceId, generation, token)")]
    Malformed(PathBuf),
}

fn unsafe_path(path: &Path, reason: impl Into<String>) -> EndpointFileError {
    EndpointFileError::Unsafe {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EndpointFileError + '_ {
    move |reason| EndpointFileError::Io {
        path: path.to_owned(),
        reason,
    }
}

/// What one of §3's three paths must be: its type (named in errors) and its exact mode.
struct Expected {
    kind: FileType,
    what: &'static str,
    mode: Mode,
}

const DIRECTORY: Expected = Expected {
    kind: FileType::Directory,
    what: "directory",
    mode: PRIVATE_DIR,
};
const REGULAR_FILE: Expected = Expected {
    kind: FileType::RegularFile,
    what: "regular file",
    mode: PRIVATE_FILE,
};
const SOCKET: Expected = Expected {
    kind: FileType::Socket,
    what: "socket",
    mode: PRIVATE_FILE,
};

fn check_stat(
    path: &Path,
    stat: &rustix::fs::Stat,
    expected: &Expected,
) -> Result<(), EndpointFileError> {
    let Expected { kind, what, mode } = *expected;
    if FileType::from_raw_mode(stat.st_mode) != kind {
        return Err(unsafe_path(path, format!("is not a {what}")));
    }
    if stat.st_uid != rustix::process::getuid().as_raw() {
        return Err(unsafe_path(path, "is owned by another user"));
    }
    let actual = Mode::from_raw_mode(stat.st_mode);
    if actual != mode {
        return Err(unsafe_path(
            path,
            format!(
                "has mode {:o}; it must be exactly {:o}",
                actual.bits(),
                mode.bits()
            ),
        ));
    }
    Ok(())
}

/// Reads and checks `endpoint.json` in the order of §3. Returns the content and the socket
/// path.
///
/// On Linux the checks walk the path once: `openat2(RESOLVE_NO_SYMLINKS)` opens the directory
/// (an exact stand-in for `realpath(path) == path` together with the syntax check, see
/// `open_canonical_dir`), and every later check is relative to that handle (`fstatat` with
/// `AT_SYMLINK_NOFOLLOW`, `openat` with `O_NOFOLLOW`). Where `openat2` is missing, the
/// path-based checks run instead; both refuse the same paths.
pub fn read_endpoint_file(path: &Path) -> Result<(EndpointFile, PathBuf), EndpointFileError> {
    // 1. Absolute, named exactly endpoint.json.
    let dir = checked_dir(path)?;
    #[cfg(target_os = "linux")]
    if let Some(found) = read_endpoint_file_at(path, dir)? {
        return Ok(found);
    }
    read_endpoint_file_by_path(path, dir)
}

/// Step 1 of §3: the path is absolute and named exactly `endpoint.json`; returns its directory.
fn checked_dir(path: &Path) -> Result<&Path, EndpointFileError> {
    if !path.is_absolute() || path.file_name() != Some(OsStr::new(FILE_NAME)) {
        return Err(EndpointFileError::BadPath(path.to_owned()));
    }
    path.parent()
        .ok_or_else(|| EndpointFileError::BadPath(path.to_owned()))
}

fn not_canonical(path: &Path) -> EndpointFileError {
    unsafe_path(
        path,
        "is not a canonical path (symlink, `..` or `//` in it)",
    )
}

/// The syntactic half of `realpath(path) == path`: absolute, and every component after the
/// leading `/` is non-empty and neither `.` nor `..` (so no `//`, no trailing `/`).
fn is_normal_syntax(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    let Some(rest) = bytes.strip_prefix(b"/") else {
        return false;
    };
    rest.split(|&b| b == b'/')
        .all(|part| !part.is_empty() && part != b"." && part != b"..")
}

/// Step 2 of §3 on Linux, returning a handle on the directory: with the syntax already normal,
/// `realpath(path) == path` holds exactly when every component exists and none is a symlink.
/// `openat2` with `RESOLVE_NO_SYMLINKS` checks that for the directory in one path walk, and an
/// `lstat` through the handle (`fstatat`, `AT_SYMLINK_NOFOLLOW`) for the file itself; that
/// `lstat` is returned for step 3. `Ok(None)`: `openat2` is unavailable here.
#[cfg(target_os = "linux")]
fn open_canonical_dir(
    path: &Path,
    dir: &Path,
) -> Result<Option<(rustix::fd::OwnedFd, rustix::fs::Stat)>, EndpointFileError> {
    use rustix::{
        fs::{AtFlags, ResolveFlags},
        io::Errno,
    };
    if !is_normal_syntax(path) {
        return Err(not_canonical(path));
    }
    let dir_fd = match rustix::fs::openat2(
        rustix::fs::CWD,
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    ) {
        Ok(fd) => fd,
        // A symlinked component (or, with O_DIRECTORY, a symlink as the directory itself).
        Err(Errno::LOOP) => return Err(not_canonical(path)),
        // Old kernels and some seccomp filters: fall back to the path-based checks.
        Err(Errno::NOSYS | Errno::PERM) => return Ok(None),
        Err(e) => return Err(io_err(path)(e.into())),
    };
    let stat = rustix::fs::statat(&dir_fd, FILE_NAME, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| io_err(path)(e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
        return Err(not_canonical(path));
    }
    Ok(Some((dir_fd, stat)))
}

/// §3 relative to a handle on the directory (see [`open_canonical_dir`]). `Ok(None)`:
/// `openat2` is unavailable, use [`read_endpoint_file_by_path`].
#[cfg(target_os = "linux")]
fn read_endpoint_file_at(
    path: &Path,
    dir: &Path,
) -> Result<Option<(EndpointFile, PathBuf)>, EndpointFileError> {
    use rustix::fs::AtFlags;
    // 2. Canonical: no `..`, `.`, `//`, no symlinked component.
    let Some((dir_fd, file_stat)) = open_canonical_dir(path, dir)? else {
        return Ok(None);
    };
    // 3. lstat the directory (the handle is the directory itself: no symlink was followed),
    // the file (its lstat from step 2) and the socket.
    let stat = rustix::fs::fstat(&dir_fd).map_err(|e| io_err(dir)(e.into()))?;
    check_stat(dir, &stat, &DIRECTORY)?;
    check_stat(path, &file_stat, &REGULAR_FILE)?;
    let socket = dir.join(SOCKET_NAME);
    let stat = rustix::fs::statat(&dir_fd, SOCKET_NAME, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| io_err(&socket)(e.into()))?;
    check_stat(&socket, &stat, &SOCKET)?;
    // 4. Open without following symlinks, check the handle itself.
    let fd = rustix::fs::openat(&dir_fd, FILE_NAME, READ_FLAGS, Mode::empty())
        .map_err(|e| io_err(path)(e.into()))?;
    drop(dir_fd);
    // 5. Strict JSON.
    let file = read_checked(path, fd, |text| {
        parse_endpoint_content(text).ok_or_else(|| EndpointFileError::Malformed(path.to_owned()))
    })?;
    Ok(Some((file, socket)))
}

/// §3 by path: `realpath`, three `lstat`, `open`. The reference for the handle-based checks,
/// and what runs where `openat2` does not exist.
fn read_endpoint_file_by_path(
    path: &Path,
    dir: &Path,
) -> Result<(EndpointFile, PathBuf), EndpointFileError> {
    // 2. The canonical path is the given path, byte for byte.
    let real = std::fs::canonicalize(path).map_err(io_err(path))?;
    if real.as_os_str().as_bytes() != path.as_os_str().as_bytes() {
        return Err(not_canonical(path));
    }
    // 3. lstat the directory, the file and the socket.
    let socket = dir.join(SOCKET_NAME);
    let stat = rustix::fs::lstat(dir).map_err(|e| io_err(dir)(e.into()))?;
    check_stat(dir, &stat, &DIRECTORY)?;
    let stat = rustix::fs::lstat(path).map_err(|e| io_err(path)(e.into()))?;
    check_stat(path, &stat, &REGULAR_FILE)?;
    let stat = rustix::fs::lstat(&socket).map_err(|e| io_err(&socket)(e.into()))?;
    check_stat(&socket, &stat, &SOCKET)?;
    // 4. Open without following symlinks, check the handle itself.
    let text = read_private_file(path)?;
    // 5. Strict JSON.
    let file = parse_endpoint_content(&text)
        .ok_or_else(|| EndpointFileError::Malformed(path.to_owned()))?;
    Ok((file, socket))
}

/// `O_NONBLOCK` because the file may have been swapped for a FIFO since the `lstat`: opening a
/// FIFO would otherwise wait for a writer forever.
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY)
    .union(OFlags::NONBLOCK);

/// Step 4 of §3: opens `path` without following a symlink and checks the handle itself (regular,
/// ours, 0600, at most [`MAX_FILE`]) before reading it.
fn read_private_file(path: &Path) -> Result<Vec<u8>, EndpointFileError> {
    let fd =
        rustix::fs::open(path, READ_FLAGS, Mode::empty()).map_err(|e| io_err(path)(e.into()))?;
    read_checked(path, fd, |text| Ok(text.to_vec()))
}

/// `fstat` the open handle (regular, ours, 0600, at most [`MAX_FILE`]), read it whole into a
/// stack buffer and hand the bytes to `then`.
fn read_checked<T>(
    path: &Path,
    fd: rustix::fd::OwnedFd,
    then: impl FnOnce(&[u8]) -> Result<T, EndpointFileError>,
) -> Result<T, EndpointFileError> {
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(path)(e.into()))?;
    check_stat(path, &stat, &REGULAR_FILE)?;
    if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > MAX_FILE {
        return Err(unsafe_path(path, "is larger than 16 KiB"));
    }
    // One read: the handle is a regular file, and a regular file answers a read in full up to
    // its end. Asking for one byte more than allowed still catches a file that grew after the
    // fstat; a short read on an unusual file system can only truncate the JSON, which step 5
    // then refuses.
    let mut buf = [0u8; MAX_FILE as usize + 1];
    let len = loop {
        match rustix::io::read(&fd, &mut buf) {
            Ok(n) => break n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(io_err(path)(e.into())),
        }
    };
    if len as u64 > MAX_FILE {
        return Err(unsafe_path(path, "is larger than 16 KiB"));
    }
    then(&buf[..len])
}

/// Step 5 of §3 on its own: the content of `endpoint.json` as strict JSON, version 1, a token
/// of 64 lowercase hex digits, at most [`MAX_FILE`] bytes. `None` for anything else.
pub fn parse_endpoint_content(bytes: &[u8]) -> Option<EndpointFile> {
    if bytes.len() as u64 > MAX_FILE {
        return None;
    }
    let file: EndpointFile = serde_json::from_slice(bytes).ok()?;
    (file.version == 1 && is_token(file.token.expose())).then_some(file)
}

/// Creates a private directory `<root>/ax-tui-XXXXXX` with mode 0700 (mkdtemp).
pub fn make_private_dir(root: &Path) -> std::io::Result<PathBuf> {
    for _ in 0..100 {
        let suffix = ax_core::random::random_alnum(6).map_err(std::io::Error::other)?;
        let dir = root.join(format!("ax-tui-{suffix}"));
        match rustix::fs::mkdir(&dir, PRIVATE_DIR) {
            Ok(()) => {
                // Never trust the umask: set the mode on the handle, then verify it.
                let fd = rustix::fs::open(
                    &dir,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                rustix::fs::fchmod(&fd, PRIVATE_DIR)?;
                let stat = rustix::fs::fstat(&fd)?;
                if stat.st_uid != rustix::process::getuid().as_raw() {
                    return Err(std::io::Error::other("new directory is not ours"));
                }
                return Ok(dir);
            }
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(std::io::Error::other(
        "could not create a unique private directory",
    ))
}

/// Writes `endpoint.json` into `dir`: O_CREAT|O_EXCL|O_NOFOLLOW, explicit fchmod 0600.
pub fn write_endpoint_file(dir: &Path, file: &EndpointFile) -> std::io::Result<PathBuf> {
    let path = dir.join(FILE_NAME);
    let fd = rustix::fs::open(
        &path,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        PRIVATE_FILE,
    )?;
    rustix::fs::fchmod(&fd, PRIVATE_FILE)?;
    let mut line = serde_json::to_vec(file).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut handle = File::from(fd);
    handle.write_all(&line)?;
    handle.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let token = new_token().unwrap();
        assert!(is_token(token.expose()));
        assert!(!is_token(&token.expose().to_uppercase()));
        assert!(!is_token(&token.expose()[1..]));
        assert_ne!(token, new_token().unwrap());
    }

    #[test]
    fn content_is_strict() {
        let file = EndpointFile::new(Identity::random(), new_token().unwrap());
        let mut line = serde_json::to_vec(&file).unwrap();
        assert_eq!(parse_endpoint_content(&line), Some(file.clone()));
        line.push(b'\n');
        assert_eq!(parse_endpoint_content(&line), Some(file.clone()));
        let mut value = serde_json::to_value(&file).unwrap();
        value["extra"] = 1.into();
        assert_eq!(parse_endpoint_content(value.to_string().as_bytes()), None);
        let mut v2 = serde_json::to_value(&file).unwrap();
        v2["version"] = 2.into();
        assert_eq!(parse_endpoint_content(v2.to_string().as_bytes()), None);
        let mut upper = serde_json::to_value(&file).unwrap();
        upper["token"] = file.token.expose().to_uppercase().into();
        assert_eq!(parse_endpoint_content(upper.to_string().as_bytes()), None);
        let mut padded = serde_json::to_vec(&file).unwrap();
        padded.resize(MAX_FILE as usize + 1, b' ');
        assert_eq!(parse_endpoint_content(&padded), None);
        assert_eq!(parse_endpoint_content(b"\xff{}"), None);
    }

    #[test]
    fn debug_hides_the_token() {
        let file = EndpointFile::new(Identity::random(), Secret::new("ab".repeat(32)));
        let debug = format!("{file:?} {file:#?}");
        assert!(!debug.contains(&"ab".repeat(32)), "{debug}");
        assert!(debug.contains("instance_id"), "{debug}");
    }

    /// A live endpoint directory (socket listening, file written) under a canonical root.
    fn live_endpoint(root: &Path) -> (PathBuf, std::os::unix::net::UnixListener) {
        let dir = make_private_dir(root).unwrap();
        let socket = dir.join(SOCKET_NAME);
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        rustix::fs::chmod(&socket, PRIVATE_FILE).unwrap();
        let file = EndpointFile::new(Identity::random(), new_token().unwrap());
        (write_endpoint_file(&dir, &file).unwrap(), listener)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_handle_checks_refuse_exactly_what_the_path_checks_refuse() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let (file, _listener) = live_endpoint(&root);
        let dir = file.parent().unwrap().to_owned();
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let text = file.to_str().unwrap().to_owned();
        // Symlinks: to the directory, to the file, and above the directory.
        std::os::unix::fs::symlink(&dir, root.join("linked-dir")).unwrap();
        let other = make_private_dir(&root).unwrap();
        std::os::unix::fs::symlink(&file, other.join(FILE_NAME)).unwrap();
        std::os::unix::fs::symlink(&root, root.join("linked-root")).unwrap();
        // A directory in the file's place, and a directory without a socket.
        let (swapped, _l2) = live_endpoint(&root);
        std::fs::remove_file(&swapped).unwrap();
        std::fs::create_dir(&swapped).unwrap();
        let (no_socket, _l3) = live_endpoint(&root);
        std::fs::remove_file(no_socket.parent().unwrap().join(SOCKET_NAME)).unwrap();
        let cases: Vec<(PathBuf, bool)> = vec![
            (file.clone(), true),
            (PathBuf::from(format!("{text}/")), false),
            (
                PathBuf::from(text.replace(&name, &format!("{name}/."))),
                false,
            ),
            (
                PathBuf::from(text.replace(&name, &format!("{name}/../{name}"))),
                false,
            ),
            (PathBuf::from(text.replacen('/', "//", 1)), false),
            (
                PathBuf::from(text.replace(&format!("/{name}"), &format!("//{name}"))),
                false,
            ),
            (root.join("linked-dir").join(FILE_NAME), false),
            (other.join(FILE_NAME), false),
            (root.join("linked-root").join(&name).join(FILE_NAME), false),
            (root.join("missing").join(FILE_NAME), false),
            (dir.join("endpoint.JSON"), false),
            (swapped.clone(), false),
            (no_socket.clone(), false),
        ];
        for (path, ok) in cases {
            let parent = checked_dir(&path).map(Path::to_owned);
            let by_handle =
                parent.as_ref().map_err(|e| e.to_string()).and_then(
                    |d| match read_endpoint_file_at(&path, d) {
                        Ok(Some(found)) => Ok(found),
                        Ok(None) => panic!("openat2 is missing on this kernel"),
                        Err(e) => Err(e.to_string()),
                    },
                );
            let by_path = parent
                .as_ref()
                .map_err(|e| e.to_string())
                .and_then(|d| read_endpoint_file_by_path(&path, d).map_err(|e| e.to_string()));
            assert_eq!(by_handle.is_ok(), ok, "{}: {by_handle:?}", path.display());
            assert_eq!(by_path.is_ok(), ok, "{}: {by_path:?}", path.display());
            if let (Ok(a), Ok(b)) = (&by_handle, &by_path) {
                assert_eq!(a, b);
            }
            // Symlinks and unusual spellings are named as such by both.
            if let (Err(a), Err(b)) = (&by_handle, &by_path)
                && b.contains("canonical")
            {
                assert!(a.contains("canonical"), "{}: {a} vs {b}", path.display());
            }
        }
        // Loosened modes: both refuse, naming the same reason.
        for (target, bad, good) in [
            (dir.clone(), 0o750, 0o700),
            (file.clone(), 0o640, 0o600),
            (dir.join(SOCKET_NAME), 0o666, 0o600),
        ] {
            rustix::fs::chmod(&target, Mode::from_raw_mode(bad)).unwrap();
            let a = read_endpoint_file_at(&file, &dir).map(|_| ()).unwrap_err();
            let b = read_endpoint_file_by_path(&file, &dir)
                .map(|_| ())
                .unwrap_err();
            assert_eq!(a.to_string(), b.to_string());
            rustix::fs::chmod(&target, Mode::from_raw_mode(good)).unwrap();
        }
        assert!(read_endpoint_file(&file).is_ok());
    }

    #[test]
    fn a_fifo_swapped_in_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("endpoint.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Without O_NONBLOCK the open below waits for a writer that never comes.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(read_private_file(&fifo).map(|_| ()));
        });
        let outcome = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("opening a FIFO must not block");
        let err = outcome.expect_err("a FIFO is not a regular file");
        assert!(err.to_string().contains("regular file"), "{err}");
    }
}
