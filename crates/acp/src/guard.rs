//! What the backend does around the file writes and terminals it serves to an agent
//! (docs/agents.md §6, docs/SECURITY.md "The agent hosted in a session"): each one leaves a
//! notice in the running turn (stored like every delta, so a reload shows it), none is served
//! outside a turn (no one would see it), and a write to a place a person would never expect
//! an agent to touch asks the person first.

use std::path::{Component, Path};

use ax_core::text::escape_controls;

/// Why a write to `relative` (a path inside the project, relative to its root) needs the
/// person's approval, or `None`. Version-control internals (hooks run code on the next
/// checkout or commit) and files tools execute on entering the directory.
pub fn needs_approval(relative: &Path) -> Option<&'static str> {
    let mut names = relative.components().filter_map(|c| match c {
        Component::Normal(n) => n.to_str(),
        _ => None,
    });
    let all: Vec<&str> = names.by_ref().collect();
    for dir in &all[..all.len().saturating_sub(1)] {
        if matches!(*dir, ".git" | ".hg" | ".svn" | ".jj") {
            return Some("it is inside version-control internals (hooks there run code)");
        }
    }
    match all.last().copied() {
        Some(".git" | ".hg" | ".svn" | ".jj") => {
            Some("it is a version-control internal (hooks there run code)")
        }
        Some(".envrc") => Some("direnv runs it on entering the directory"),
        _ => None,
    }
}

/// The notice a served write leaves in the turn.
pub fn wrote(relative: &Path, bytes: usize) -> String {
    format!(
        "ax-code wrote a file for the agent: {} ({bytes} bytes)",
        escape_controls(&relative.to_string_lossy())
    )
}

/// The notice a write leaves when it was not done.
pub fn not_written(shown: &str, why: &str) -> String {
    format!(
        "ax-code did not write {} for the agent: {}",
        escape_controls(shown),
        escape_controls(why)
    )
}

/// The notice a served terminal leaves in the turn.
pub fn started(terminal_id: &str, command: &str, args: &[String], cwd: &Path) -> String {
    let line = std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "ax-code started a terminal for the agent ({terminal_id}, in {}): {}",
        escape_controls(&cwd.to_string_lossy()),
        escape_controls(&line)
    )
}

/// What an agent hears when it asks for a write or a terminal outside a turn.
pub const OUTSIDE_A_TURN: &str = "ax-code writes files and starts terminals for an agent only \
     during a turn, where the person sees them";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_control_internals_and_envrc_need_approval() {
        for p in [
            ".git/hooks/post-checkout",
            ".git/config",
            "sub/.git/hooks/pre-commit",
            ".git",
            ".hg/hgrc",
            ".envrc",
            "sub/.envrc",
        ] {
            assert!(needs_approval(Path::new(p)).is_some(), "{p}");
        }
        for p in [
            "src/main.rs",
            ".gitignore",
            ".github/workflows/ci.yml",
            "git/x",
        ] {
            assert!(needs_approval(Path::new(p)).is_none(), "{p}");
        }
    }
}
