//! Paths confined to the project directory: the one place that says what "inside the project"
//! means ([`is_inside`]), and the rules for a file the person names ([`resolve`]): prompt
//! attachments in the backend, `/attach` in the TUI. The ACP file service walks paths with
//! its own descriptor-based walk and ends each walk with [`is_inside`].
//!
//! A path is checked by resolving it (symlinks followed) and requiring the result inside the
//! canonical project directory. A check is only true at the moment it is made, so whoever
//! uses a path checks it again right before the use ([`recheck`]).

use std::path::{Component, Path, PathBuf};

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// A file inside the project, as the person named it and as it resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The path relative to the project, as shown to the person (and in the approval).
    pub shown: String,
    /// The canonical absolute path it resolved to.
    pub resolved: PathBuf,
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty, too long, or holding a control character (NUL, line breaks, escapes).
    #[error(
        "attachment paths must be 1 to {MAX_PATH_BYTES} bytes without control characters or \
         bidi controls"
    )]
    Malformed,
    /// Names a parent directory.
    #[error("attachment {0:?}: `..` is not allowed")]
    ParentDir(String),
    /// Nothing there.
    #[error("attachment {0:?}: no such file in the project")]
    Missing(String),
    /// Resolves outside the project.
    #[error("attachment {0:?} resolves outside the project (symlinks are followed)")]
    Outside(String),
    /// Not a regular file.
    #[error("attachment {0:?} is not a regular file")]
    NotAFile(String),
    /// The resolved path is not UTF-8 or holds a control character, so it cannot be shown
    /// truthfully or passed on unambiguously.
    #[error(
        "attachment {0:?} resolves to a path with control characters, bidi controls or \
         invalid UTF-8"
    )]
    UnsafeName(String),
    /// Resolves elsewhere than when the prompt was checked (swapped for a symlink, renamed).
    #[error("attachment {0:?} changed since it was approved: it now resolves elsewhere")]
    Changed(String),
}

/// Control characters, and bidi controls (a name that reads differently from what it is in
/// the approval, docs/SECURITY.md).
fn has_control(s: &str) -> bool {
    s.chars().any(crate::text::is_unsafe_char)
}

/// Whether the resolved path `real` is the canonical `project` directory or below it.
/// Compared by whole components, so `/work/app2` is not inside `/work/app`. Both paths must
/// already be resolved (symlinks followed): this looks at names only.
pub fn is_inside(project: &Path, real: &Path) -> bool {
    real.starts_with(project)
}

/// `real` relative to `project`, or `None` when it is not inside ([`is_inside`]).
pub fn relative<'a>(project: &Path, real: &'a Path) -> Option<&'a Path> {
    real.strip_prefix(project).ok()
}

/// Resolves `raw` (relative to the canonical `project`, or absolute inside it): no `..`, no
/// control characters, and after following symlinks a regular file inside the project whose
/// resolved path has no control characters either.
pub fn resolve(project: &Path, raw: &str) -> Result<Attachment, PathError> {
    if raw.is_empty() || raw.len() > MAX_PATH_BYTES || has_control(raw) {
        return Err(PathError::Malformed);
    }
    let path = Path::new(raw);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(PathError::ParentDir(raw.to_owned()));
    }
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        project.join(path)
    };
    let resolved =
        std::fs::canonicalize(&joined).map_err(|_| PathError::Missing(raw.to_owned()))?;
    let Some(relative) = relative(project, &resolved) else {
        return Err(PathError::Outside(raw.to_owned()));
    };
    let shown = match (relative.to_str(), resolved.to_str()) {
        (Some(shown), Some(full)) if !has_control(full) => shown.to_owned(),
        _ => return Err(PathError::UnsafeName(raw.to_owned())),
    };
    if !resolved.is_file() {
        return Err(PathError::NotAFile(raw.to_owned()));
    }
    Ok(Attachment { shown, resolved })
}

/// Checks `attachment` again right before it is used: it must still resolve, by the same
/// rules, to the same file path it resolved to when it was first checked.
pub fn recheck(project: &Path, attachment: &Attachment) -> Result<PathBuf, PathError> {
    let now = resolve(project, &attachment.shown)?;
    if now.resolved != attachment.resolved {
        return Err(PathError::Changed(attachment.shown.clone()));
    }
    Ok(now.resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_compares_whole_components() {
        let project = Path::new("/work/app");
        assert!(is_inside(project, Path::new("/work/app")));
        assert!(is_inside(project, Path::new("/work/app/src/main.rs")));
        assert!(!is_inside(project, Path::new("/work/app2/x")));
        assert!(!is_inside(project, Path::new("/work")));
        assert_eq!(
            relative(project, Path::new("/work/app/src")),
            Some(Path::new("src"))
        );
        assert_eq!(relative(project, Path::new("/work/app2")), None);
    }

    #[test]
    fn confinement_rules() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(project.join("a.txt"), "a").unwrap();
        std::fs::create_dir(project.join("sub")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), project.join("link")).unwrap();

        let a = resolve(&project, "a.txt").unwrap();
        assert_eq!(a.shown, "a.txt");
        assert_eq!(a.resolved, project.join("a.txt"));
        assert_eq!(
            resolve(&project, project.join("a.txt").to_str().unwrap()).unwrap(),
            a
        );
        assert_eq!(resolve(&project, ""), Err(PathError::Malformed));
        for bad in ["a\nb", "a\rb", "a\0b", "a\tb", "a\u{1b}[2Jb", "a\u{85}b"] {
            assert_eq!(resolve(&project, bad), Err(PathError::Malformed), "{bad:?}");
        }
        assert!(matches!(
            resolve(&project, "../x"),
            Err(PathError::ParentDir(_))
        ));
        assert!(matches!(
            resolve(&project, "nope"),
            Err(PathError::Missing(_))
        ));
        assert!(matches!(
            resolve(&project, "link"),
            Err(PathError::Outside(_))
        ));
        assert!(matches!(
            resolve(&project, "sub"),
            Err(PathError::NotAFile(_))
        ));
        assert_eq!(recheck(&project, &a).unwrap(), project.join("a.txt"));
    }

    #[test]
    fn a_resolved_name_with_a_line_break_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        // The name the person typed is clean; what it resolves to is not.
        std::fs::write(project.join("evil\nname"), "x").unwrap();
        std::os::unix::fs::symlink(project.join("evil\nname"), project.join("clean")).unwrap();
        assert!(matches!(
            resolve(&project, "clean"),
            Err(PathError::UnsafeName(_))
        ));
    }

    #[test]
    fn bidi_controls_are_refused_typed_and_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(project.join("report\u{202e}fdp.sh"), "x").unwrap();
        assert_eq!(
            resolve(&project, "report\u{202e}fdp.sh"),
            Err(PathError::Malformed)
        );
        std::os::unix::fs::symlink(project.join("report\u{202e}fdp.sh"), project.join("clean"))
            .unwrap();
        assert!(matches!(
            resolve(&project, "clean"),
            Err(PathError::UnsafeName(_))
        ));
    }

    #[test]
    fn a_file_swapped_for_a_symlink_fails_the_recheck() {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(project.join("notes.txt"), "n").unwrap();
        std::fs::write(project.join("other.txt"), "o").unwrap();
        let first = resolve(&project, "notes.txt").unwrap();
        std::fs::remove_file(project.join("notes.txt")).unwrap();
        std::os::unix::fs::symlink(project.join("other.txt"), project.join("notes.txt")).unwrap();
        assert_eq!(
            recheck(&project, &first),
            Err(PathError::Changed("notes.txt".into()))
        );
    }
}
