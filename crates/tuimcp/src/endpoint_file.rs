//! `endpoint.json`: the capability file beside the socket (SPEC-tuimcp §2, §3).
//!
//! The TUI side creates the private directory, and writes the file exclusively without
//! following symlinks; the adapter side re-checks path, owner, type and mode every time it
//! reads it.

use std::{
    ffi::OsStr,
    fs::File,
    io::{Read, Write},
    os::unix::ffi::OsStrExt,
    path::{Path, PathBuf},
};

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

/// The file's content.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointFile {
    pub version: u8,
    pub instance_id: WireUuid,
    pub generation: WireUuid,
    pub token: String,
}

impl std::fmt::Debug for EndpointFile {
    // The token is a secret: never in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointFile")
            .field("version", &self.version)
            .field("instance_id", &self.instance_id)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl EndpointFile {
    pub fn new(identity: Identity, token: String) -> Self {
        Self {
            version: 1,
            instance_id: identity.instance_id,
            generation: identity.generation,
            token,
        }
    }
}

/// 32 random bytes as 64 lowercase hex digits.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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
    #[error("{0}: the endpoint path must be absolute and end in /{FILE_NAME}")]
    BadPath(PathBuf),
    #[error("{path}: {reason}")]
    Unsafe { path: PathBuf, reason: String },
    #[error("{path}: {reason}")]
    Io {
        path: PathBuf,
        reason: std::io::Error,
    },
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

fn check_stat(
    path: &Path,
    stat: &rustix::fs::Stat,
    kind: FileType,
    what: &str,
    mode: Mode,
) -> Result<(), EndpointFileError> {
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
pub fn read_endpoint_file(path: &Path) -> Result<(EndpointFile, PathBuf), EndpointFileError> {
    // 1. Absolute, named exactly endpoint.json.
    if !path.is_absolute() || path.file_name() != Some(OsStr::new(FILE_NAME)) {
        return Err(EndpointFileError::BadPath(path.to_owned()));
    }
    let dir = path
        .parent()
        .ok_or_else(|| EndpointFileError::BadPath(path.to_owned()))?;
    // 2. The canonical path is the given path, byte for byte.
    let real = std::fs::canonicalize(path).map_err(io_err(path))?;
    if real.as_os_str().as_bytes() != path.as_os_str().as_bytes() {
        return Err(unsafe_path(
            path,
            "is not a canonical path (symlink, `..` or `//` in it)",
        ));
    }
    // 3. lstat the directory, the file and the socket.
    let socket = dir.join(SOCKET_NAME);
    let stat = rustix::fs::lstat(dir).map_err(|e| io_err(dir)(e.into()))?;
    check_stat(dir, &stat, FileType::Directory, "directory", PRIVATE_DIR)?;
    let stat = rustix::fs::lstat(path).map_err(|e| io_err(path)(e.into()))?;
    check_stat(
        path,
        &stat,
        FileType::RegularFile,
        "regular file",
        PRIVATE_FILE,
    )?;
    let stat = rustix::fs::lstat(&socket).map_err(|e| io_err(&socket)(e.into()))?;
    check_stat(&socket, &stat, FileType::Socket, "socket", PRIVATE_FILE)?;
    // 4. Open without following symlinks, check the handle itself.
    let text = read_private_file(path)?;
    // 5. Strict JSON.
    let file = parse_endpoint_content(&text)
        .ok_or_else(|| EndpointFileError::Malformed(path.to_owned()))?;
    Ok((file, socket))
}

/// Step 4 of §3: opens `path` without following a symlink and checks the handle itself (regular,
/// ours, 0600, at most [`MAX_FILE`]) before reading it. `O_NONBLOCK` because the file may have been
/// swapped for a FIFO since the `lstat`: opening a FIFO would otherwise wait for a writer forever.
fn read_private_file(path: &Path) -> Result<Vec<u8>, EndpointFileError> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| io_err(path)(e.into()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(path)(e.into()))?;
    check_stat(
        path,
        &stat,
        FileType::RegularFile,
        "regular file",
        PRIVATE_FILE,
    )?;
    if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > MAX_FILE {
        return Err(unsafe_path(path, "is larger than 16 KiB"));
    }
    let mut text = Vec::new();
    File::from(fd)
        .take(MAX_FILE + 1)
        .read_to_end(&mut text)
        .map_err(io_err(path))?;
    if text.len() as u64 > MAX_FILE {
        return Err(unsafe_path(path, "is larger than 16 KiB"));
    }
    Ok(text)
}

/// Step 5 of §3 on its own: the content of `endpoint.json` as strict JSON, version 1, a token
/// of 64 lowercase hex digits, at most [`MAX_FILE`] bytes. `None` for anything else.
pub fn parse_endpoint_content(bytes: &[u8]) -> Option<EndpointFile> {
    if bytes.len() as u64 > MAX_FILE {
        return None;
    }
    let file: EndpointFile = serde_json::from_slice(bytes).ok()?;
    (file.version == 1 && is_token(&file.token)).then_some(file)
}

/// Creates a private directory `<root>/ax-tui-XXXXXX` with mode 0700 (mkdtemp).
pub fn make_private_dir(root: &Path) -> std::io::Result<PathBuf> {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for _ in 0..100 {
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).map_err(std::io::Error::other)?;
        let suffix: String = random
            .iter()
            .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
            .collect();
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
        assert!(is_token(&token));
        assert!(!is_token(&token.to_uppercase()));
        assert!(!is_token(&token[1..]));
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
        upper["token"] = file.token.to_uppercase().into();
        assert_eq!(parse_endpoint_content(upper.to_string().as_bytes()), None);
        let mut padded = serde_json::to_vec(&file).unwrap();
        padded.resize(MAX_FILE as usize + 1, b' ');
        assert_eq!(parse_endpoint_content(&padded), None);
        assert_eq!(parse_endpoint_content(b"\xff{}"), None);
    }

    #[test]
    fn debug_hides_the_token() {
        let file = EndpointFile::new(Identity::random(), "ab".repeat(32));
        assert!(!format!("{file:?}").contains(&"ab".repeat(32)));
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
