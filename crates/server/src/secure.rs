//! Private files: 0700 directories and 0600 files created without following symlinks.

use std::{
    fs::{self, DirBuilder},
    io::{self, Write},
    os::unix::fs::{DirBuilderExt, PermissionsExt},
    path::Path,
};

use rustix::fs::{Mode, OFlags};

/// Creates `dir` (and parents) as 0700 and tightens an existing one we own to 0700.
/// A symlink at `dir` itself is refused: a secret must not land where the link points.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symlink; refusing to keep secrets there",
                    dir.display()
                ),
            ));
        }
        Ok(meta) if meta.is_dir() => {
            if meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            }
            return Ok(());
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} exists and is not a directory", dir.display()),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Writes `bytes` to a new 0600 file at `path` (O_EXCL | O_NOFOLLOW), replacing an older file
/// atomically through a temporary name in the same directory.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        ax_core::random::random_alnum(8).map_err(io::Error::other)?
    ));
    let fd = rustix::fs::open(
        &tmp,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    let mut file = fs::File::from(fd);
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_files_are_0600_and_dirs_0700() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        private_dir(&dir).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let file = dir.join("secret.json");
        write_private_file(&file, b"one").unwrap();
        write_private_file(&file, b"two").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::os::unix::fs::symlink(&dir, tmp.path().join("link")).unwrap();
        assert!(private_dir(&tmp.path().join("link")).is_err());
    }
}
