//! `/attach PATH` is checked at once, with the backend's rules (docs/backend.md §2): the path is
//! relative to the project or absolute inside it, has no `..`, names a regular file, and
//! resolves (symlinks followed) inside the project. The backend checks again on submit; this
//! only tells the person now instead of after they wrote the prompt.

use std::path::{Component, Path};

/// Checks `path` against the project directory `workspace`. `Err` says why, for the person.
pub fn check(workspace: &Path, path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if p.components().any(|c| c == Component::ParentDir) {
        return Err("`..` is not allowed".into());
    }
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    };
    let root = workspace
        .canonicalize()
        .map_err(|e| format!("the project directory is not readable ({e})"))?;
    let real = match full.canonicalize() {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("no such file".into());
        }
        Err(e) => return Err(e.to_string()),
    };
    if !real.starts_with(&root) {
        return Err("it is outside the project".into());
    }
    let meta = std::fs::metadata(&real).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_inside_the_project_pass() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::write(project.join("src/a.rs"), "x").unwrap();
        std::fs::write(dir.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), project.join("link")).unwrap();
        assert_eq!(check(&project, "src/a.rs"), Ok(()));
        let abs = project.join("src/a.rs");
        assert_eq!(check(&project, abs.to_str().unwrap()), Ok(()));
        assert_eq!(check(&project, "nope.txt"), Err("no such file".into()));
        assert_eq!(check(&project, "src"), Err("not a regular file".into()));
        assert_eq!(
            check(&project, "../secret"),
            Err("`..` is not allowed".into())
        );
        assert_eq!(
            check(&project, "link"),
            Err("it is outside the project".into())
        );
        let outside = dir.path().join("secret");
        assert_eq!(
            check(&project, outside.to_str().unwrap()),
            Err("it is outside the project".into())
        );
    }
}
