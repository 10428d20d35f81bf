//! `fs/read_text_file` and `fs/write_text_file`, confined to the project directory.
//!
//! "Inside the project" is decided before anything is opened (docs/agents.md §6): the path is
//! normalised lexically against the canonical project root (anything that is not under it is
//! refused at once, with the one error every outside path gets, so no answer tells what exists
//! outside), then walked one component at a time from a descriptor of the project root. Each
//! directory is entered with `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)`, never by a path that
//! could be swapped; a symlink is read with `readlinkat` and its target walked the same way
//! (an absolute target must lie under the project, `..` never climbs above the root). The file
//! itself is taken as an `O_PATH` descriptor (which opens nothing: a FIFO's writer is not
//! released, a device is not touched), checked to be a regular file, and only then reopened
//! for reading through `/proc/self/fd`. Nothing is cached between requests. Writes go to a
//! temporary file in the same directory, then `rename` over the target, so a crash leaves the
//! old file.

use std::{
    collections::VecDeque,
    ffi::OsString,
    io::{Read, Write},
    os::{
        fd::{AsFd, AsRawFd, OwnedFd},
        unix::ffi::OsStringExt,
    },
    path::{Component, Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Largest file read or written for an agent.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Symlinks followed for one path before it is refused (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Why a file request was refused.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The path lies outside the project (also through a symlink). Every outside path gets
    /// this one error, whatever is or is not there.
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

/// One step of a walk: a name to enter, or `..`.
#[derive(Debug, Clone)]
enum Step {
    Up,
    Name(OsString),
}

/// The steps of `path` (absolute) below `project`, after lexical normalisation; `None` when
/// the normalised path is not under the project. Touches nothing on disk.
fn steps_below(project: &Path, path: &Path) -> Option<VecDeque<Step>> {
    let mut normal: Vec<&std::ffi::OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            Component::Normal(n) => normal.push(n),
        }
    }
    let mut root = 0;
    for c in project.components() {
        match c {
            Component::Normal(n) => {
                if normal.get(root) != Some(&n) {
                    return None;
                }
                root += 1;
            }
            Component::RootDir => {}
            _ => return None,
        }
    }
    Some(
        normal[root..]
            .iter()
            .map(|n| Step::Name(n.to_os_string()))
            .collect(),
    )
}

/// The steps of a symlink's target, or `None` when an absolute target is not under the
/// project. A relative target continues from the directory holding the link.
fn link_steps(project: &Path, target: &Path) -> Option<(bool, Vec<Step>)> {
    if target.is_absolute() {
        return steps_below(project, target).map(|s| (true, s.into_iter().collect()));
    }
    let steps = target
        .components()
        .filter_map(|c| match c {
            Component::ParentDir => Some(Step::Up),
            Component::Normal(n) => Some(Step::Name(n.to_os_string())),
            _ => None,
        })
        .collect();
    Some((false, steps))
}

/// What a walk ends on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// An existing entry, symlinks followed: the directory holding it and its name.
    Entry,
    /// A directory, symlinks followed, missing levels created.
    CreateDir,
    /// An existing directory, symlinks followed.
    Dir,
}

fn open_dir_at(dir: &impl AsFd, name: &std::ffi::OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Walks `steps` from the project root (see the module comment). For [`Want::Entry`] returns
/// the directory holding the last entry and its name; otherwise the directory itself (and an
/// empty name). Never opens anything but directories, and those only as `O_PATH`.
fn walk(
    project: &Path,
    mut steps: VecDeque<Step>,
    want: Want,
    named: &Path,
) -> Result<(OwnedFd, OsString), FsError> {
    let io = |e: rustix::io::Errno| io(named)(e.into());
    let outside = || FsError::Outside(shown(named));
    let root = rustix::fs::open(
        project,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)?;
    let mut stack: Vec<OwnedFd> = vec![root];
    let mut links = 0;
    while let Some(step) = steps.pop_front() {
        let top = stack.last().expect("the root stays on the stack");
        let name = match step {
            Step::Up => {
                if stack.len() == 1 {
                    return Err(outside());
                }
                stack.pop();
                continue;
            }
            Step::Name(name) => name,
        };
        let last = steps.is_empty();
        let stat = match rustix::fs::statat(top, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some(FileType::from_raw_mode(st.st_mode)),
            Err(rustix::io::Errno::NOENT) => None,
            Err(e) => return Err(io(e)),
        };
        match stat {
            Some(FileType::Symlink) => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io(rustix::io::Errno::LOOP));
                }
                let target = rustix::fs::readlinkat(top, &name, Vec::new()).map_err(io)?;
                let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                let (absolute, more) = link_steps(project, &target).ok_or_else(outside)?;
                if absolute {
                    stack.truncate(1);
                }
                for s in more.into_iter().rev() {
                    steps.push_front(s);
                }
            }
            Some(FileType::Directory) if !(last && want == Want::Entry) => {
                stack.push(open_dir_at(top, &name).map_err(io)?);
            }
            None if want == Want::CreateDir => {
                match rustix::fs::mkdirat(top, &name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(io(e)),
                }
                stack.push(open_dir_at(top, &name).map_err(io)?);
            }
            None => return Err(FsError::NotFound(shown(named))),
            Some(_) if last && want == Want::Entry => {
                let dir = stack.pop().expect("the root stays on the stack");
                return Ok((dir, name));
            }
            Some(_) => return Err(io(rustix::io::Errno::NOTDIR)),
        }
    }
    if want == Want::Entry {
        // The path named the project root or ended in a directory.
        return Err(FsError::NotAFile(shown(named)));
    }
    let dir = stack.pop().expect("the root stays on the stack");
    check_inside(project, &real_path(&dir).map_err(io_std(named))?, named)?;
    Ok((dir, OsString::new()))
}

/// Where an open descriptor really is.
fn real_path(fd: &impl AsFd) -> std::io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

/// Defence in depth after a walk: the descriptor must still be under the project (a
/// directory renamed away in the middle of a walk is caught here).
fn check_inside(project: &Path, real: &Path, shown_as: &Path) -> Result<(), FsError> {
    if ax_core::project::is_inside(project, real) {
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

fn io_std(path: &Path) -> impl Fn(std::io::Error) -> FsError + '_ {
    move |source| io(path)(source)
}

/// The steps below the project of the path an agent named, or the one outside error.
fn steps_of(project: &Path, path: &Path) -> Result<(PathBuf, VecDeque<Step>), FsError> {
    let target = absolute(project, path)?;
    let steps = steps_below(project, &target).ok_or_else(|| FsError::Outside(shown(&target)))?;
    Ok((target, steps))
}

/// A directory inside `project` (canonical), for a terminal's working directory: the real
/// path of the directory `path` names. Outside paths get [`FsError::Outside`], decided before
/// anything is looked at.
pub fn resolve_dir(project: &Path, path: &Path) -> Result<PathBuf, FsError> {
    let (target, steps) = steps_of(project, path)?;
    let (dir, _) = walk(project, steps, Want::Dir, &target)?;
    real_path(&dir).map_err(io(&target))
}

/// Where a write of `path` would land, without writing or creating anything: the real path
/// (symlinks of existing directories resolved; missing directories and the file's own name
/// as named). The same confinement and errors as [`write_text_file`]; used to decide whether
/// the write needs the person's approval first (docs/agents.md §6).
pub fn write_destination(project: &Path, path: &Path) -> Result<PathBuf, FsError> {
    let (target, mut steps) = steps_of(project, path)?;
    let Some(Step::Name(name)) = steps.pop_back() else {
        return Err(FsError::BadPath(shown(&target)));
    };
    let mut missing = Vec::new();
    loop {
        match walk(project, steps.clone(), Want::Dir, &target) {
            Ok((dir, _)) => {
                let mut real = real_path(&dir).map_err(io(&target))?;
                real.extend(missing.iter().rev());
                real.push(name);
                return Ok(real);
            }
            Err(FsError::NotFound(_)) => match steps.pop_back() {
                Some(Step::Name(n)) => missing.push(n),
                _ => return Err(FsError::NotFound(shown(&target))),
            },
            Err(e) => return Err(e),
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
    let (target, steps) = steps_of(project, path)?;
    let (dir, name) = walk(project, steps, Want::Entry, &target)?;
    // O_PATH opens nothing: a FIFO or device is looked at, never opened.
    let handle = rustix::fs::openat(
        &dir,
        &name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(&target)(e.into()))?;
    let stat = rustix::fs::fstat(&handle).map_err(|e| io(&target)(e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(FsError::NotAFile(shown(&target)));
    }
    check_inside(project, &real_path(&handle).map_err(io(&target))?, &target)?;
    if stat.st_size as u64 > MAX_FILE_BYTES {
        return Err(FsError::TooLarge {
            path: shown(&target),
        });
    }
    // The same inode, now opened for reading (it was checked to be a regular file).
    let fd: OwnedFd = rustix::fs::open(
        format!("/proc/self/fd/{}", handle.as_raw_fd()),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| io(&target)(e.into()))?;
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

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes a text file inside `project` (canonical) atomically, creating missing parent
/// directories (each created inside a directory already walked into).
pub fn write_text_file(project: &Path, path: &Path, content: &str) -> Result<(), FsError> {
    let (target, mut steps) = steps_of(project, path)?;
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(FsError::TooLarge {
            path: shown(&target),
        });
    }
    let Some(Step::Name(name)) = steps.pop_back() else {
        return Err(FsError::BadPath(shown(&target)));
    };
    let (parent, _) = walk(project, steps, Want::CreateDir, &target)?;
    // A real descriptor of the directory (an O_PATH one cannot be synced).
    let dir = rustix::fs::openat(
        &parent,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io(&target)(e.into()))?;

    // Keep the mode of a file we replace; new files get 0644 (less the umask).
    let mode = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let kind = FileType::from_raw_mode(st.st_mode);
            if kind == FileType::Directory {
                return Err(FsError::NotAFile(shown(&target)));
            }
            if kind == FileType::RegularFile {
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
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
        return Err(io(&target)(e));
    }
    // Make the rename durable too; a failure here does not undo the write.
    let _ = rustix::fs::fsync(&dir);
    Ok(())
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

    /// docs/SECURITY.md "Agents": a FIFO (inside or outside) is never opened, so a writer
    /// blocked in `open()` stays blocked; every outside path gets one error, whatever exists
    /// there. Before the walk, reading an outside FIFO released its writer and
    /// `/etc/passwd/x` answered "Not a directory" while `/etc/nonexistent/x` answered
    /// "outside the project".
    #[test]
    fn nothing_outside_is_opened_and_outside_paths_all_look_alike() {
        use std::sync::mpsc;
        let (_d, p, o) = project();
        let released = |fifo: PathBuf| {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &fifo,
                FileType::Fifo,
                Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap();
            let (tx, rx) = mpsc::channel();
            let writer = fifo.clone();
            // Blocks in open() until a reader opens the FIFO.
            std::thread::spawn(move || {
                let opened = std::fs::OpenOptions::new().write(true).open(&writer);
                let _ = tx.send(opened.is_ok());
            });
            // Let the writer reach open() (a read before that would not release it anyway).
            std::thread::sleep(std::time::Duration::from_millis(200));
            rx
        };
        let outside_fifo = o.path().join("fifo");
        let rx = released(outside_fifo.clone());
        let e = read_text_file(&p, &outside_fifo, None, None).unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        std::os::unix::fs::symlink(&outside_fifo, p.join("to-fifo")).unwrap();
        let e = read_text_file(&p, &p.join("to-fifo"), None, None).unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        let inside_fifo = p.join("fifo");
        let rx_inside = released(inside_fifo.clone());
        let e = read_text_file(&p, &inside_fifo, None, None).unwrap_err();
        assert!(matches!(e, FsError::NotAFile(_)), "{e}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            rx.try_recv().is_err(),
            "the outside FIFO's writer was released"
        );
        assert!(
            rx_inside.try_recv().is_err(),
            "the inside FIFO's writer was released"
        );
        // Free the writers (open for reading ourselves).
        let _r1 = std::fs::File::open(&outside_fifo).unwrap();
        let _r2 = std::fs::File::open(&inside_fifo).unwrap();
        assert!(rx.recv().unwrap() && rx_inside.recv().unwrap());

        // One error, one shape, for what exists and what does not.
        let secret = o.path().join("secret");
        let answers: Vec<String> = [
            secret.join("x"),
            o.path().join("nonexistent/x"),
            secret.clone(),
            o.path().join("nonexistent"),
            PathBuf::from("/etc/passwd/x"),
            PathBuf::from("/etc/nonexistent/x"),
        ]
        .iter()
        .map(|path| {
            let e = read_text_file(&p, path, None, None).unwrap_err();
            assert!(matches!(e, FsError::Outside(_)), "{}: {e}", path.display());
            let w = write_text_file(&p, path, "x").unwrap_err();
            assert!(matches!(w, FsError::Outside(_)), "{}: {w}", path.display());
            let d = resolve_dir(&p, path).unwrap_err();
            assert!(matches!(d, FsError::Outside(_)), "{}: {d}", path.display());
            e.to_string().replace(&shown(path), "PATH")
        })
        .collect();
        assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
        // The same through a symlink leading out, whether its target exists or not.
        std::os::unix::fs::symlink(o.path().join("nonexistent"), p.join("dangling")).unwrap();
        std::os::unix::fs::symlink(o.path(), p.join("out")).unwrap();
        for path in [
            "dangling/x",
            "out/secret/x",
            "out/nonexistent/x",
            "out/secret",
        ] {
            let e = read_text_file(&p, &p.join(path), None, None).unwrap_err();
            assert!(matches!(e, FsError::Outside(_)), "{path}: {e}");
        }
    }

    /// Symlinks that stay inside (relative, absolute, chained, through `..`) still work;
    /// `..` never climbs above the root, loops end with an error.
    #[test]
    fn symlinks_inside_the_project_are_followed() {
        let (_d, p, _o) = project();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        std::fs::write(p.join("a/b/f.txt"), "deep").unwrap();
        std::os::unix::fs::symlink("a/b", p.join("rel")).unwrap();
        std::os::unix::fs::symlink(p.join("a"), p.join("abs")).unwrap();
        std::os::unix::fs::symlink("../b/f.txt", p.join("a/b/up")).unwrap();
        std::os::unix::fs::symlink("../../..", p.join("a/b/climb")).unwrap();
        std::os::unix::fs::symlink("loop2", p.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", p.join("loop2")).unwrap();
        for path in ["rel/f.txt", "abs/b/f.txt", "abs/b/up", "a/./b/../b/f.txt"] {
            assert_eq!(
                read_text_file(&p, &p.join(path), None, None).unwrap(),
                "deep",
                "{path}"
            );
        }
        write_text_file(&p, &p.join("abs/b/new/n.txt"), "n").unwrap();
        assert_eq!(
            std::fs::read_to_string(p.join("a/b/new/n.txt")).unwrap(),
            "n"
        );
        assert_eq!(resolve_dir(&p, Path::new("rel")).unwrap(), p.join("a/b"));
        let e = read_text_file(&p, &p.join("a/b/climb/x"), None, None).unwrap_err();
        assert!(matches!(e, FsError::Outside(_)), "{e}");
        let e = read_text_file(&p, &p.join("loop1"), None, None).unwrap_err();
        assert!(!matches!(e, FsError::Outside(_)), "{e}");
        let e = read_text_file(&p, &p, None, None).unwrap_err();
        assert!(matches!(e, FsError::NotAFile(_)), "{e}");
        let e = resolve_dir(&p, &p.join("a/b/f.txt")).unwrap_err();
        assert!(!matches!(e, FsError::Outside(_)), "{e}");
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
