//! `GET /find/file?query=…&limit=…`: the project's files ranked by a fuzzy match, for the
//! composers' `@` picker (docs/backend.md §3, "Finding files").
//!
//! The list is what `git status` would consider: `.gitignore`, `.ignore`, the global git
//! excludes and `.git/info/exclude` are respected (the `ignore` crate, as ripgrep does),
//! hidden files are included but `.git` itself is not, and symlinks are not followed (a link
//! out of the project is never listed; `@` resolves what it picks with the attachment rules
//! anyway). Walking a large tree on every keystroke would be slow, so the list is kept for a
//! short while and rebuilt after [`FRESH_FOR`]; a rebuild runs on the blocking pool and only
//! one at a time.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use ax_protocol::{FoundFile, FoundFiles};
use axum::{
    Extension, Json, Router,
    extract::{Query, State, rejection::QueryRejection},
    routing::get,
};
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::{error::Failure, state::Shared};

/// How long a listing is reused before the tree is walked again.
pub const FRESH_FOR: Duration = Duration::from_secs(3);
/// Most files listed; a bigger tree is cut (and the answer says so).
pub const MAX_FILES: usize = 200_000;
/// Longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 256;
/// Most results one answer may ask for.
pub const MAX_LIMIT: usize = 200;
const DEFAULT_LIMIT: usize = 50;

/// The routes of this module, merged into the protected API.
pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/find/file", get(find))
        .layer(Extension(Arc::new(FileIndex::default())))
}

/// The last listing of the project and when it was made.
#[derive(Default)]
struct FileIndex {
    listing: Mutex<Option<(Instant, Arc<Listing>)>>,
}

struct Listing {
    /// Project-relative paths with `/` separators, sorted.
    paths: Vec<String>,
    truncated: bool,
}

impl FileIndex {
    async fn current(&self, project: &Path) -> Result<Arc<Listing>, Failure> {
        // Held across the walk: concurrent queries wait for one walk instead of each walking.
        let mut slot = self.listing.lock().await;
        if let Some((at, listing)) = slot.as_ref()
            && at.elapsed() < FRESH_FOR
        {
            return Ok(listing.clone());
        }
        let root = project.to_owned();
        let listing = tokio::task::spawn_blocking(move || list(&root, MAX_FILES))
            .await
            .map_err(|_| Failure::internal("listing the project's files failed"))?;
        let listing = Arc::new(listing);
        *slot = Some((Instant::now(), listing.clone()));
        Ok(listing)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FindQuery {
    #[serde(default)]
    query: String,
    limit: Option<usize>,
}

async fn find(
    State(app): State<Shared>,
    Extension(index): Extension<Arc<FileIndex>>,
    query: Result<Query<FindQuery>, QueryRejection>,
) -> Result<Json<FoundFiles>, Failure> {
    let Query(q) = query.map_err(|e| Failure::bad_request(e.body_text()))?;
    if q.query.chars().count() > MAX_QUERY_CHARS {
        return Err(Failure::bad_request(format!(
            "a file query is at most {MAX_QUERY_CHARS} characters"
        )));
    }
    if q.query.chars().any(ax_core::text::is_unsafe_char) {
        return Err(Failure::bad_request(
            "a file query may not hold control characters or bidi controls",
        ));
    }
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Failure::bad_request(format!("limit is 1 to {MAX_LIMIT}")));
    }
    let listing = index.current(&app.project_dir).await?;
    let truncated = listing.truncated;
    let query = q.query;
    let files = tokio::task::spawn_blocking(move || rank(&listing.paths, &query, limit))
        .await
        .map_err(|_| Failure::internal("ranking the project's files failed"))?;
    Ok(Json(FoundFiles { files, truncated }))
}

/// Walks `root` (see the module docs for what is skipped) and keeps at most `max` files.
fn list(root: &Path, max: usize) -> Listing {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    let mut paths = Vec::new();
    let mut truncated = false;
    for entry in walker.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(relative) = shown(root, entry.path()) else {
            continue;
        };
        if paths.len() == max {
            truncated = true;
            break;
        }
        paths.push(relative);
    }
    paths.sort_unstable();
    Listing { paths, truncated }
}

/// The path as the person sees it: relative, `/`-separated, and only if every character can
/// be shown as it is (a name with control or bidi characters is left out, as an attachment
/// with one would be refused).
fn shown(root: &Path, path: &Path) -> Option<String> {
    let relative: PathBuf = path.strip_prefix(root).ok()?.to_owned();
    let text = relative.to_str()?;
    if text.is_empty() || text.chars().any(ax_core::text::is_unsafe_char) {
        return None;
    }
    Some(text.to_owned())
}

/// The best `limit` of `paths` for `query`, best first. An empty query lists the first
/// `limit` paths in order.
fn rank(paths: &[String], query: &str, limit: usize) -> Vec<FoundFile> {
    let needle: Vec<char> = query
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(lower)
        .collect();
    if needle.is_empty() {
        return paths
            .iter()
            .take(limit)
            .map(|p| FoundFile {
                path: p.clone(),
                score: 0,
            })
            .collect();
    }
    let mut scored: Vec<(i64, &String)> = paths
        .iter()
        .filter_map(|p| score(p, &needle).map(|s| (s, p)))
        .collect();
    // Best score first; among equals the shorter path, then by name, so answers are stable.
    scored.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored
        .into_iter()
        .take(limit)
        .map(|(score, p)| FoundFile {
            path: p.clone(),
            score,
        })
        .collect()
}

/// One character lowercased to one character, so positions in the lowercased path are
/// positions in the original (a character whose lowercase is longer keeps its first).
fn lower(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// How well `path` matches the lowercase `needle`, or `None` when the needle's characters do
/// not all appear in order. Matches at the start of a path segment or a word, runs of
/// consecutive characters and matches in the file name score more; each skipped character
/// costs a little, so tighter matches win.
///
/// Greedy from the right end of the file name backwards would miss better placements; this
/// scans once left to right, preferring a boundary match when the next needle character
/// appears at a boundary later in the same segment. Good enough for a picker and linear in
/// the path's length.
fn score(path: &str, needle: &[char]) -> Option<i64> {
    let original: Vec<char> = path.chars().collect();
    let hay: Vec<char> = original.iter().map(|&c| lower(c)).collect();
    let name_start = hay.iter().rposition(|&c| c == '/').map_or(0, |i| i + 1);
    let boundary = |i: usize| {
        i == 0
            || matches!(hay[i - 1], '/' | '_' | '-' | '.' | ' ')
            || (original[i].is_uppercase() && original[i - 1].is_lowercase())
    };
    let mut total = 0i64;
    let mut at = 0usize;
    let mut previous: Option<usize> = None;
    for &wanted in needle {
        // The first occurrence from `at`, unless a boundary occurrence follows soon after in
        // the same segment.
        let first = (at..hay.len()).find(|&i| hay[i] == wanted)?;
        let mut pick = first;
        if !boundary(first) && previous.is_none_or(|p| p + 1 != first) {
            let segment_end = (first..hay.len())
                .find(|&i| hay[i] == '/')
                .unwrap_or(hay.len());
            if let Some(b) = (first + 1..segment_end).find(|&i| hay[i] == wanted && boundary(i)) {
                pick = b;
            }
        }
        let mut points = 1;
        if boundary(pick) {
            points += 8;
        }
        if previous.is_some_and(|p| p + 1 == pick) {
            points += 6;
        }
        if pick >= name_start {
            points += 3;
        }
        let gap = pick - previous.map_or(0, |p| p + 1);
        total += points - i64::try_from(gap.min(20)).unwrap_or(20);
        previous = Some(pick);
        at = pick + 1;
    }
    // Shorter paths are a little better.
    Some(total * 16 - i64::try_from(hay.len().min(512)).unwrap_or(512))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &[FoundFile]) -> Vec<&str> {
        found.iter().map(|f| f.path.as_str()).collect()
    }

    #[test]
    fn characters_must_appear_in_order() {
        assert!(score("src/main.rs", &['m', 'r', 's']).is_some());
        assert!(score("src/main.rs", &['r', 'm']).is_some());
        assert!(score("src/main.rs", &['z']).is_none());
        assert!(score("ab", &['b', 'a']).is_none());
    }

    #[test]
    fn tight_and_name_matches_rank_first() {
        let paths: Vec<String> = [
            "docs/manual/install.md",
            "src/main.rs",
            "crates/server/src/main_loop.rs",
            "tests/smoke/anim.rs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let found = rank(&paths, "main", 10);
        assert_eq!(found[0].path, "src/main.rs", "{:?}", names(&found));
        let found = rank(&paths, "mainrs", 10);
        assert_eq!(found[0].path, "src/main.rs", "{:?}", names(&found));
        let found = rank(&paths, "install", 10);
        assert_eq!(names(&found), ["docs/manual/install.md"]);
        // Word starts inside a name count: `ml` is main_loop's m and l.
        let found = rank(&paths, "ml", 10);
        assert_eq!(
            found[0].path,
            "crates/server/src/main_loop.rs",
            "{:?}",
            names(&found)
        );
    }

    #[test]
    fn an_empty_query_lists_in_order_and_limit_bounds() {
        let paths: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        assert_eq!(names(&rank(&paths, "", 3)), ["f0", "f1", "f2"]);
        assert_eq!(rank(&paths, "f", 4).len(), 4);
    }

    #[test]
    fn the_walk_respects_gitignore_and_skips_git_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("target/debug/out"), "").unwrap();
        std::fs::write(root.join("run.log"), "").unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join(".env.example"), "").unwrap();
        std::fs::write(root.join("bad\u{202e}name"), "").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link")).unwrap();
        let listing = list(&root, 100);
        assert_eq!(listing.paths, [".env.example", ".gitignore", "src/lib.rs"]);
        assert!(!listing.truncated);
        let cut = list(&root, 2);
        assert_eq!(cut.paths.len(), 2);
        assert!(cut.truncated);
    }
}
