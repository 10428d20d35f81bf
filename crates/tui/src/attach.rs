//! `/attach PATH` is checked at once, with the backend's rules (docs/backend.md §2): the path is
//! relative to the project or absolute inside it, has no `..`, names a regular file, and
//! resolves (symlinks followed) inside the project. The backend checks again on submit; this
//! only tells the person now instead of after they wrote the prompt.

use std::path::Path;

use ax_core::project::{self, PathError};

/// Checks `path` against the project directory `workspace` with the backend's own rules
/// ([`ax_core::project::resolve`]). `Err` says why, briefly, for the person.
pub fn check(workspace: &Path, path: &str) -> Result<(), String> {
    let root = workspace
        .canonicalize()
        .map_err(|e| format!("the project directory is not readable ({e})"))?;
    project::resolve(&root, path).map(drop).map_err(|e| {
        match e {
            PathError::Malformed => "the path is empty, too long or holds control characters",
            PathError::ParentDir(_) => "`..` is not allowed",
            PathError::Missing(_) => "no such file",
            PathError::Outside(_) => "it is outside the project",
            PathError::NotAFile(_) => "not a regular file",
            PathError::UnsafeName(_) => "it resolves to a name with control characters",
            PathError::Changed(_) => "it changed while it was checked",
        }
        .to_owned()
    })
}

/// Largest image `/image` reads (the backend's bound, docs/agents.md §11).
pub const MAX_IMAGE_BYTES: u64 = ax_core::image::MAX_IMAGE_BYTES as u64;

/// The last component of `path`, when it is a name that shows truthfully.
pub fn file_name(path: &str) -> Option<String> {
    let name = Path::new(path).file_name()?.to_str()?;
    (name.chars().count() <= 200 && !name.chars().any(ax_core::text::is_unsafe_char))
        .then(|| name.to_owned())
}

/// Reads `path` (relative to `workspace`, or absolute: an image to show the agent may live
/// anywhere the person can read) for `/image`: a regular file of at most
/// [`MAX_IMAGE_BYTES`] whose bytes are a PNG, JPEG, GIF or WebP image.
pub fn load_image(workspace: &Path, path: &str) -> Result<crate::composer::ComposerImage, String> {
    use base64::Engine as _;
    use std::io::Read as _;
    if path.trim().is_empty() {
        return Err("usage: /image PATH".into());
    }
    let full = workspace.join(path);
    let file = std::fs::File::open(&full).map_err(|_| "no such file".to_owned())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "an image is limited to {} MiB",
            MAX_IMAGE_BYTES >> 20
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(format!(
            "an image is limited to {} MiB",
            MAX_IMAGE_BYTES >> 20
        ));
    }
    let mime = ax_core::image::sniff(&bytes).ok_or("not a PNG, JPEG, GIF or WebP image")?;
    Ok(crate::composer::ComposerImage {
        path: path.to_owned(),
        mime,
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        bytes: bytes.len() as u64,
    })
}

/// The chip that shows an image part of a message: its name (else its number and type) and
/// its size, e.g. `image shot.png (12 KiB)`.
pub fn image_chip(index: u32, mime_type: &str, bytes: u64, name: &Option<String>) -> String {
    let size = if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    };
    match name {
        Some(name) => format!("image {} ({size})", ax_core::text::escape_controls(name)),
        None => format!(
            "image {} ({}, {size})",
            index + 1,
            ax_core::text::escape_controls(mime_type)
        ),
    }
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
