//! `fs/read_text_file` and `fs/write_text_file`, confined to the project directory.
//!
//! Confinement is checked on what is actually opened: the file (or, for a write, its parent
//! directory) is opened following symlinks, and the kernel's name for the open descriptor
//! (`/proc/self/fd/N`) must lie inside the project. A symlink planted at any time before the
//! open is therefore caught; nothing is cached between requests. Writes go to a temporary file
//! in the same directory, then `rename` over the target, so a crash leaves the old file.

use std::{
    io::{Read, Write},
    os::fd::{AsFd, AsRawFd, OwnedFd},
    path::{Component, Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use rustix::fs::{Mode, OFlags};

/// Largest file read or written for an agent.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Why a file request was refused.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The path resolves outside the project (also through a symlink).
    #[error("{0} is outside the project directory")]
    Outside(String),
    /// Not absolute, or it holds parts that cannot name a file.
    #[error("{0}: not a usable path")]
    BadPath(String),
    /// Over [`MAX_FILE_BYTES`].
    #[error("{path} is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge {
        /// The file, as the agent named it.
        path: String,
    },
    /// A directory, device or other non-file.
    #[error("{0} is not a regular file")]
    NotAFile(String),
    /// Agents read and write text only.
    #[error("{0} is not UTF-8 text")]
    NotText(String),
    /// The file does not exist.
    #[error("{0}: no such file")]
    NotFound(String),
    /// Any other I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// The file, as the agent named it.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

impl FsError {
    /// Whether the request itself is at fault (answered `-32602`).
    pub fn is_invalid_params(&self) -> bool {
        matches!(
            self,
            FsError::Outside(_)
                | FsError::BadPath(_)
                | FsError::TooLarge { .. }
                | FsError::NotAFile(_)
                | FsError::NotText(_)
        )
    }
}

fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The path an agent named, made absolute against the project (ACP paths are absolute;
/// a relative one is taken as relative to the project).
fn absolute(project: &Path, path: &Path) -> Result<PathBuf, FsError> {
    let raw = path.as_os_str();
    if raw.is_empty() || raw.len() > 4096 || raw.as_encoded_bytes().contains(&0) {
        return Err(FsError::BadPath(shown(path)));
    }
    Ok(if path.is_absolute() {
        path.to_owned()
    } else {
        project.join(path)
    })
}

/// Where an open descriptor really is.
fn real_path(fd: &impl AsFd) -> std::io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

fn check_inside(project: &Path, real: &Path, shown_as: &Path) -> Result<(), FsError> {
    if real.starts_with(project) {
        Ok(())
    } else {
        Err(FsError::Outside(shown(shown_as)))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FsError + '_ {
    move |source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            FsError::NotFound(shown(path))
        } else {
            FsError::Io {
                path: shown(path),
                source,
            }
        }
    }
}

/// Reads a text file inside `project` (canonical). `line` is 1-based; `limit` counts lines.
pub fn read_text_file(
    project: &Path,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, FsError> {
    let target = absolute(project, path)?;
    // Non-blocking so a FIFO cannot hang us; NOCTTY so a terminal cannot become ours.
    let fd: OwnedFd = rustix::fs::open(
        &target,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| match e {
        // Say nothing about what does or does not exist outside the project.
        rustix::io::Errno::NOENT if !ancestor_inside(project, &target) => {
            FsError::Outside(shown(&target))
        }
        e => io(&target)(e.into()),
    })?;
    check_inside(project, &real_path(&fd).map_err(io(&target))?, &target)?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| io(&target)(e.into()))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(FsError::NotAFile(shown(&target)));
    }
    if stat.st_size as u64 > MAX_FILE_BYTES {
        return Err(FsError::TooLarge {
            path: shown(&target),
        });
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io(&target))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(FsError::TooLarge {
            path: shown(&target),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| FsError::NotText(shown(&target)))?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

/// The 1-based line of `path` (inside `project`) where an edit starts: where `old_text` is
/// now, found exactly once (the edit is still to come), else where `new_text` is, found
/// exactly once (it is done). `None` for a new file (no `old_text`), a file that cannot be
/// read for an agent, or a fragment found nowhere or more than once. docs/agents.md §4.
pub fn diff_line(
    project: &Path,
    path: &Path,
    old_text: Option<&str>,
    new_text: &str,
) -> Option<u32> {
    let old = old_text.filter(|o| !o.is_empty())?;
    let text = read_text_file(project, path, None, None).ok()?;
    let at = only_match(&text, old).or_else(|| only_match(&text, new_text))?;
    u32::try_from(text[..at].bytes().filter(|b| *b == b'\n').count() + 1).ok()
}

/// Where `needle` starts in `hay`, if it occurs exactly once.
fn only_match(hay: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let first = hay.find(needle)?;
    // Overlapping occurrences count too: look again one character further.
    let next = first + needle.chars().next().map_or(1, char::len_utf8);
    (!hay[next..].contains(needle)).then_some(first)
}

/// Whether the deepest existing ancestor of `path` resolves inside the project.
fn ancestor_inside(project: &Path, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .find_map(|a| a.canonicalize().ok())
        .is_some_and(|real| real.starts_with(project))
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes a text file inside `project` (canonical) atomically, creating missing parent
/// directories (each checked to be inside the project).
pub fn write_text_file(project: &Path, path: &Path, content: &str) -> Result<(), FsError> {
    let target = absolute(project, path)?;
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(FsError::TooLarge {
            path: shown(&target),
        });
    }
    let Some(Component::Normal(name)) = target.components().next_back() else {
        return Err(FsError::BadPath(shown(&target)));
    };
    let name = name.to_owned();
    let parent = target
        .parent()
        .ok_or_else(|| FsError::BadPath(shown(&target)))?;
    let dir = open_or_create_dir(project, parent, &target)?;

    // Keep the mode of a file we replace; new files get 0644 (less the umask).
    let mode = match rustix::fs::statat(&dir, &name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
            if kind == rustix::fs::FileType::Directory {
                return Err(FsError::NotAFile(shown(&target)));
            }
            if kind == rustix::fs::FileType::RegularFile {
                Mode::from_raw_mode(st.st_mode & 0o7777)
            } else {
                Mode::from_raw_mode(0o644)
            }
        }
        Err(_) => Mode::from_raw_mode(0o644),
    };
    let temp = format!(
        ".{}.ax-tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let fd = rustix::fs::openat(
        &dir,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|e| io(&target)(e.into()))?;
    let written = (|| {
        let mut file = std::fs::File::from(fd);
        file.write_all(content.as_bytes())?;
        file.sync_all()?;
        rustix::fs::renameat(&dir, temp.as_str(), &dir, &name)?;
        Ok::<_, std::io::Error>(())
    })();
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), rustix::fs::AtFlags::empty());
        return Err(io(&target)(e));
    }
    // Make the rename durable too; a failure here does not undo the write.
    let _ = rustix::fs::fsync(&dir);
    Ok(())
}

/// Opens `dir` (creating what is missing, one level at a time) and checks that what was
/// opened is inside the project.
fn open_or_create_dir(project: &Path, dir: &Path, target: &Path) -> Result<OwnedFd, FsError> {
    let open = |p: &Path| {
        rustix::fs::open(
            p,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    match open(dir) {
        Ok(fd) => {
            check_inside(project, &real_path(&fd).map_err(io(target))?, target)?;
            return Ok(fd);
        }
        Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(io(target)(e.into())),
    }
    // Walk down from the deepest existing ancestor, creating each missing level inside an
    // opened (and checked) directory, never through a path that could be swapped.
    let mut missing = Vec::new();
    let mut existing = dir;
    let mut fd = loop {
        let Some(Component::Normal(last)) = existing.components().next_back() else {
            return Err(FsError::BadPath(shown(target)));
        };
        missing.push(last.to_owned());
        existing = existing
            .parent()
            .ok_or_else(|| FsError::BadPath(shown(target)))?;
        match open(existing) {
            Ok(fd) => break fd,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(io(target)(e.into())),
        }
    };
    check_inside(project, &real_path(&fd).map_err(io(target))?, target)?;
    for name in missing.into_iter().rev() {
        match rustix::fs::mkdirat(&fd, &name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(io(target)(e.into())),
        }
        fd = rustix::fs::openat(
            &fd,
            &name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io(target)(e.into()))?;
        check_inside(project, &real_path(&fd).map_err(io(target))?, target)?;
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn project() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let canon = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "top secret").unwrap();
        (dir, canon, outside)
    }

    #[test]
    fn a_diff_is_numbered_by_where_its_fragment_is_in_the_file() {
        let (_d, p, o) = project();
        let file = p.join("m.py");
        write_text_file(&p, &file, "a\nb\nc\nd\nreturn a - b\nz\n").unwrap();
        // Before the edit: the old fragment, line 5.
        assert_eq!(
            diff_line(&p, &file, Some("return a - b"), "return a + b"),
            Some(5)
        );
        // After it: the new fragment.
        write_text_file(&p, &file, "a\nb\nc\nd\nreturn a + b\nz\n").unwrap();
        assert_eq!(
            diff_line(&p, &file, Some("return a - b"), "return a + b"),
            Some(5)
        );
        // Ambiguous (also overlapping), nowhere, a new file, outside: no number.
        write_text_file(&p, &file, "aaa\n").unwrap();
        assert_eq!(diff_line(&p, &file, Some("aa"), "x"), None);
        assert_eq!(diff_line(&p, &file, Some("q"), "r"), None);
        assert_eq!(diff_line(&p, &file, None, "aaa\n"), None);
        assert_eq!(
            diff_line(&p, &o.path().join("secret"), Some("top"), "x"),
            None
        );
    }

    #[test]
    fn reads_and_writes_inside_the_project() {
        let (_d, p, _o) = project();
        write_text_file(&p, &p.join("a/b/c.txt"), "one\ntwo\nthree\n").unwrap();
        assert_eq!(
            read_text_file(&p, &p.join("a/b/c.txt"), None, None).unwrap(),
            "one\ntwo\nthree\n"
        );
        assert_eq!(
            read_text_file(&p, Path::new("a/b/c.txt"), Some(2), Some(1)).unwrap(),
            "two\n"
        );
        assert!(matches!(
            read_text_file(&p, &p.join("missing"), None, None),
            Err(FsError::NotFound(_))
        ));
    }

    #[test]
    fn dot_dot_absolute_outside_and_symlinks_are_refused() {
        let (_d, p, o) = project();
        let secret = o.path().join("secret");
        let e = read_text_file(
            &p,
            &p.join("../")
                .join(o.path().file_name().unwrap())
                .join("secret"),
            None,
            None,
        )
        .unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        let e = read_text_file(&p, &secret, None, None).unwrap_err();
        assert!(e.is_invalid_params(), "{e}");
        let e = write_text_file(&p, &o.path().join("new.txt"), "x").unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        assert!(!o.path().join("new.txt").exists());
        let e = write_text_file(&p, &p.join("../escape.txt"), "x").unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");

        // A directory that is fine at first, then swapped for a symlink to the outside:
        // resolved at the moment of use, so the second request is refused.
        std::fs::create_dir(p.join("sub")).unwrap();
        std::fs::write(p.join("sub/secret"), "inside").unwrap();
        assert_eq!(
            read_text_file(&p, &p.join("sub/secret"), None, None).unwrap(),
            "inside"
        );
        std::fs::remove_dir_all(p.join("sub")).unwrap();
        std::os::unix::fs::symlink(o.path(), p.join("sub")).unwrap();
        let e = read_text_file(&p, &p.join("sub/secret"), None, None).unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        let e = write_text_file(&p, &p.join("sub/planted.txt"), "x").unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        assert!(!o.path().join("planted.txt").exists());
        // Missing parents under a planted link are refused too.
        let e = write_text_file(&p, &p.join("sub/deep/er.txt"), "x").unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        assert!(!o.path().join("deep").exists());
        // A symlinked file pointing outside.
        std::os::unix::fs::symlink(&secret, p.join("link")).unwrap();
        let e = read_text_file(&p, &p.join("link"), None, None).unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        // Writing to the link's name replaces the link, never the file it points to.
        write_text_file(&p, &p.join("link"), "replaced").unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret");
        assert!(
            !std::fs::symlink_metadata(p.join("link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn oversize_is_refused_both_ways() {
        let (_d, p, _o) = project();
        let big = vec![b'a'; MAX_FILE_BYTES as usize + 1];
        std::fs::write(p.join("big"), &big).unwrap();
        assert!(matches!(
            read_text_file(&p, &p.join("big"), None, None),
            Err(FsError::TooLarge { .. })
        ));
        let big = "a".repeat(MAX_FILE_BYTES as usize + 1);
        std::fs::write(p.join("keep"), "old").unwrap();
        assert!(matches!(
            write_text_file(&p, &p.join("keep"), &big),
            Err(FsError::TooLarge { .. })
        ));
        assert_eq!(std::fs::read_to_string(p.join("keep")).unwrap(), "old");
    }

    #[test]
    fn write_is_atomic_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, p, _o) = project();
        let f = p.join("f.sh");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750)).unwrap();
        let before = std::fs::metadata(&f).unwrap().ino();
        // A reader holding the old file keeps seeing the old content: it was replaced by a
        // rename, not rewritten in place.
        let mut held = std::fs::File::open(&f).unwrap();
        write_text_file(&p, &f, "new").unwrap();
        let mut old = String::new();
        held.read_to_string(&mut old).unwrap();
        assert_eq!(old, "old");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let meta = std::fs::metadata(&f).unwrap();
        assert_ne!(meta.ino(), before);
        assert_eq!(meta.permissions().mode() & 0o777, 0o750);
        let leftovers: Vec<_> = std::fs::read_dir(&p)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().contains("ax-tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // A write that cannot happen (target is a directory) leaves everything as it was.
        std::fs::create_dir(p.join("d")).unwrap();
        assert!(write_text_file(&p, &p.join("d"), "x").is_err());
        assert!(p.join("d").is_dir());
    }
}
