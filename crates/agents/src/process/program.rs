//! Finding a bare program name on the child's `PATH` before the start, as `execvp` would.
//!
//! Why: the standard library starts a child with `posix_spawn` (a `vfork`-like clone that
//! shares this process's memory until the exec) only when it knows the program's path. Given
//! a bare name together with a changed `PATH` (every command here gets an environment of its
//! own, see [`super::env`]) it must `fork`, which copies this process's page tables: a start
//! then costs more the more memory the backend holds (measured in docs/PERFORMANCE-backend.md).
//! Looking the name up ourselves, with the same `PATH` and the same rules, keeps what runs the
//! same and makes every start a spawn.

use std::{
    ffi::OsStr,
    os::unix::{ffi::OsStrExt, fs::PermissionsExt},
    path::{Path, PathBuf},
};

/// Where exec would find `program` on `path` (the child's `PATH`), for a child starting in
/// `cwd`: the first entry holding an executable file of that name. Empty and relative entries
/// count from `cwd`, as they would in the child. `None` when `program` already names a path
/// (it has a `/`), when there is no `PATH` (exec's own default search then applies), when
/// nothing is found (the start then fails the usual way, with the usual error), or when the
/// file found is neither a binary nor a `#!` script: `execvp` runs such a file with `/bin/sh`,
/// `posix_spawn` refuses it, so it is left to the old way.
pub(super) fn find(program: &OsStr, path: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    if program.is_empty() || program.as_bytes().contains(&b'/') {
        return None;
    }
    let found = std::env::split_paths(path?).find_map(|dir| {
        let candidate = cwd.join(dir).join(program);
        is_executable_file(&candidate).then_some(candidate)
    })?;
    spawns_directly(&found).then_some(found)
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether the kernel runs the file itself: an ELF binary or a `#!` script.
fn spawns_directly(path: &Path) -> bool {
    let mut head = [0u8; 4];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let n = std::io::Read::read(&mut file, &mut head).unwrap_or(0);
    head[..n].starts_with(b"#!") || head[..n].starts_with(b"\x7fELF")
}

#[cfg(test)]
mod tests {
    use std::{ffi::OsString, fs};

    use super::*;

    fn touch(path: &Path, mode: u32) {
        fs::write(path, "#!/bin/sh\n").unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_binary_is_found_and_a_script_without_a_shebang_is_left_to_exec() {
        let dir = tempfile::tempdir().unwrap();
        let sh = find(
            OsStr::new("sh"),
            Some(OsStr::new("/usr/bin:/bin")),
            dir.path(),
        )
        .expect("sh is on the usual PATH");
        assert!(sh.ends_with("sh"), "{sh:?}");
        fs::write(dir.path().join("bare"), "echo hi\n").unwrap();
        fs::set_permissions(dir.path().join("bare"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            find(OsStr::new("bare"), Some(dir.path().as_os_str()), dir.path()),
            None
        );
    }

    #[test]
    fn the_first_executable_on_the_path_wins() {
        let root = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            root.path().join("a"),
            root.path().join("b"),
            root.path().join("c"),
        );
        for d in [&a, &b, &c] {
            fs::create_dir(d).unwrap();
        }
        touch(&a.join("tool"), 0o644); // not executable: skipped, as exec skips it
        fs::create_dir(b.join("tool")).unwrap(); // a directory: skipped
        touch(&c.join("tool"), 0o755);
        let path = std::env::join_paths([&a, &b, &c]).unwrap();
        assert_eq!(
            find(OsStr::new("tool"), Some(&path), root.path()),
            Some(c.join("tool"))
        );
        assert_eq!(find(OsStr::new("missing"), Some(&path), root.path()), None);
    }

    #[test]
    fn empty_and_relative_entries_count_from_the_working_directory() {
        let cwd = tempfile::tempdir().unwrap();
        fs::create_dir(cwd.path().join("bin")).unwrap();
        touch(&cwd.path().join("bin/tool"), 0o755);
        touch(&cwd.path().join("here"), 0o755);
        let path = OsString::from("/nonexistent:bin");
        assert_eq!(
            find(OsStr::new("tool"), Some(&path), cwd.path()),
            Some(cwd.path().join("bin/tool"))
        );
        let path = OsString::from("/nonexistent::/also-not");
        assert_eq!(
            find(OsStr::new("here"), Some(&path), cwd.path()),
            Some(cwd.path().join("here"))
        );
    }

    #[test]
    fn paths_and_a_missing_path_are_left_to_exec() {
        let cwd = tempfile::tempdir().unwrap();
        touch(&cwd.path().join("tool"), 0o755);
        let path = cwd.path().as_os_str().to_owned();
        assert_eq!(find(OsStr::new("./tool"), Some(&path), cwd.path()), None);
        assert_eq!(find(OsStr::new("/bin/sh"), Some(&path), cwd.path()), None);
        assert_eq!(find(OsStr::new("tool"), None, cwd.path()), None);
        assert_eq!(find(OsStr::new(""), Some(&path), cwd.path()), None);
    }
}
