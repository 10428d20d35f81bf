//! The `@` file picker (docs/tui.md §3g): `@` at the start of a word opens a fuzzy list of the
//! project's files above the composer, asked of the backend's `GET /find/file` as the person
//! types (docs/backend.md §3 "Finding files"); choosing one removes the `@word` and attaches
//! the file as `/attach PATH` does (a chip, checked at once).
//!
//! While the answer for the newest query is on its way, the files of the last answer are
//! narrowed and ranked here by the same rule ([`fuzzy_score`]), so the list follows every key
//! without waiting; an answer for an older query is dropped by generation.

/// Rows the picker shows at most (the selection scrolls it).
pub const PICKER_ROWS: usize = 6;
/// Files asked of the backend per query.
pub const FIND_LIMIT: u32 = 50;
/// The longest query sent, in chars; a longer word is no longer a file search.
pub const QUERY_MAX: usize = 200;

/// The `@word` being typed: its byte start (at the `@`) and the query after the `@`. The `@`
/// starts the draft or follows whitespace (so `me@host` is not one), and the cursor is at the
/// word's end.
pub fn at_token(draft: &str, cursor: usize) -> Option<(usize, &str)> {
    let before = draft.get(..cursor)?;
    let start = before.rfind(|c: char| c.is_whitespace()).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    let query = word.strip_prefix('@')?;
    let at_end = draft[cursor..]
        .chars()
        .next()
        .is_none_or(char::is_whitespace);
    (at_end && query.chars().count() <= QUERY_MAX).then_some((start, query))
}

/// How well `path` matches `query`: `None` unless the query's characters appear in order
/// (case ignored). Characters at the start of a path segment or word, consecutive ones and
/// ones in the file name score more; skipped characters and longer paths less.
pub fn fuzzy_score(query: &str, path: &str) -> Option<i64> {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let chars: Vec<(usize, char)> = path.char_indices().collect();
    let mut score = 0i64;
    let mut at = 0usize;
    let mut last: Option<usize> = None;
    for q in query.chars().filter(|c| !c.is_whitespace()) {
        let q = q.to_lowercase().next().unwrap_or(q);
        let found = (at..chars.len()).find(|&i| chars[i].1.to_lowercase().next() == Some(q))?;
        let (byte, _) = chars[found];
        let prev = found.checked_sub(1).map(|i| chars[i].1);
        score += 10;
        if matches!(prev, None | Some('/' | '_' | '-' | '.' | ' ')) {
            score += 8;
        }
        if last.is_some_and(|l| l + 1 == found) {
            score += 6;
        }
        if byte >= name_start {
            score += 4;
        }
        score -= (found - last.map_or(0, |l| l + 1)) as i64;
        last = Some(found);
        at = found + 1;
    }
    Some(score - chars.len() as i64 / 4)
}

/// `files` that match `query`, best first (ties keep the given order).
pub fn ranked<'a>(query: &str, files: &'a [String]) -> Vec<&'a str> {
    let mut scored: Vec<(i64, usize, &str)> = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| fuzzy_score(query, f).map(|s| (s, i, f.as_str())))
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, f)| f).collect()
}

/// The picker's state: what was asked last, the last answer, the selection.
#[derive(Debug, Default)]
pub struct FilePicker {
    /// The query of the newest request (`None`: nothing asked since the picker closed).
    asked: Option<String>,
    generation: u64,
    files: Vec<String>,
    truncated: bool,
    selected: usize,
    /// The `@word` (start and query) Esc hid the picker for.
    dismissed: Option<(usize, String)>,
}

impl FilePicker {
    /// The files of the last answer that match `query`, best first.
    pub fn ranked<'a>(&'a self, query: &str) -> Vec<&'a str> {
        ranked(query, &self.files)
    }

    /// The highlighted row, kept within a list of `len` rows.
    pub fn selected(&self, len: usize) -> usize {
        self.selected.min(len.saturating_sub(1))
    }

    /// Whether the backend said the project has more files than it lists.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Whether Esc hid the picker for the `@word` at `start` with this `query`.
    pub fn is_dismissed(&self, start: usize, query: &str) -> bool {
        self.dismissed
            .as_ref()
            .is_some_and(|(s, d)| *s == start && d == query)
    }

    /// Hides the picker for the `@word` at `start` until it changes.
    pub fn dismiss(&mut self, start: usize, query: String) {
        self.dismissed = Some((start, query));
    }

    /// Records a request for `query` under `generation` (the selection goes back to the
    /// top), unless that query is the one asked last: then `false`, nothing to ask.
    pub fn ask(&mut self, query: &str, generation: u64) -> bool {
        if self.asked.as_deref() == Some(query) {
            return false;
        }
        self.generation = generation;
        self.asked = Some(query.to_owned());
        self.selected = 0;
        true
    }

    /// Whether an answer tagged `generation` is for the newest request.
    pub fn is_current(&self, generation: u64) -> bool {
        generation == self.generation
    }

    /// The newest request's answer.
    pub fn answered(&mut self, files: Vec<String>, truncated: bool) {
        self.files = files;
        self.truncated = truncated;
    }

    /// Moves the highlight one row up or down within `len` rows.
    pub fn step(&mut self, down: bool, len: usize) {
        let at = self.selected(len);
        self.selected = if down {
            (at + 1).min(len.saturating_sub(1))
        } else {
            at.saturating_sub(1)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_at_word_under_the_cursor_is_the_query() {
        assert_eq!(at_token("@", 1), Some((0, "")));
        assert_eq!(at_token("look at @src/ma", 15), Some((8, "src/ma")));
        assert_eq!(at_token("look at @src/ma now", 15), Some((8, "src/ma")));
        assert_eq!(
            at_token("look at @src/ma", 12),
            None,
            "not at the word's end"
        );
        assert_eq!(at_token("me@host", 7), None);
        assert_eq!(at_token("a\n@x", 4), Some((2, "x")));
        assert_eq!(at_token("é @ü", 6), Some((3, "ü")));
        assert_eq!(at_token("plain", 5), None);
        let long = format!("@{}", "x".repeat(QUERY_MAX + 1));
        assert_eq!(at_token(&long, long.len()), None);
    }

    #[test]
    fn fuzzy_matches_need_the_characters_in_order() {
        assert!(fuzzy_score("mr", "src/main.rs").is_some());
        assert!(fuzzy_score("MAIN", "src/main.rs").is_some());
        assert!(
            fuzzy_score("rm", "src/main.rs").is_some(),
            "r of src, m of main"
        );
        assert!(fuzzy_score("zz", "src/main.rs").is_none());
        assert!(fuzzy_score("", "anything").is_some());
    }

    #[test]
    fn segment_starts_file_names_and_short_paths_rank_first() {
        let files: Vec<String> = [
            "docs/a/very/long/path/remain.md",
            "src/main.rs",
            "crates/tui/src/main_loop.rs",
            "mains.txt",
        ]
        .map(String::from)
        .to_vec();
        let r = ranked("main", &files);
        assert_eq!(r[0], "mains.txt");
        assert_eq!(r[1], "src/main.rs");
        assert_eq!(r.last(), Some(&"docs/a/very/long/path/remain.md"));
        assert_eq!(ranked("xyz", &files), Vec::<&str>::new());
        let r = ranked("tui", &files);
        assert_eq!(r, ["crates/tui/src/main_loop.rs"]);
    }
}
