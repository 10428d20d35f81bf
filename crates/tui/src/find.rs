//! Find in the open transcript (Ctrl+F or `/find`; Enter or Ctrl+N next, Ctrl+P previous), as a
//! pager does (docs/tui.md §3b).
//!
//! The search runs over the transcript's display lines as plain text. Case is ignored unless
//! the query holds an upper-case letter ("smart case", as in Helix and ripgrep). Matches are
//! byte ranges in their line, so the drawing code can highlight them; the current match wraps
//! around at both ends.

use std::ops::Range;

/// Most matches kept; a query that matches more says so instead of growing without bound.
pub const MAX_MATCHES: usize = 10_000;

/// One match: the display line and the byte range in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Index of the display line.
    pub line: usize,
    /// Byte range of the match in that line.
    pub range: Range<usize>,
}

/// A query, its matches and the current one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Find {
    query: String,
    matches: Vec<Match>,
    current: Option<usize>,
    /// More than [`MAX_MATCHES`] matched.
    pub capped: bool,
}

impl Find {
    /// The query.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Every match, in reading order.
    pub fn matches(&self) -> &[Match] {
        &self.matches
    }

    /// The current match.
    pub fn current(&self) -> Option<&Match> {
        self.current.and_then(|i| self.matches.get(i))
    }

    /// "3/17", or "no match" — what the status line shows.
    pub fn status(&self) -> String {
        match self.current {
            _ if self.query.is_empty() => String::new(),
            None => "no match".to_owned(),
            Some(i) if self.capped => format!("{}/{}+", i + 1, self.matches.len()),
            Some(i) => format!("{}/{}", i + 1, self.matches.len()),
        }
    }

    /// Searches `lines` for `query`; the current match becomes the first one at or after
    /// line `from` (the top of the view), else the first.
    pub fn search<'a>(
        &mut self,
        query: &str,
        lines: impl IntoIterator<Item = &'a str>,
        from: usize,
    ) {
        self.query = query.to_owned();
        self.matches.clear();
        self.capped = false;
        self.current = None;
        if query.is_empty() {
            return;
        }
        let fold = !query.chars().any(char::is_uppercase);
        let needle = if fold {
            query.to_lowercase()
        } else {
            query.to_owned()
        };
        'lines: for (line, text) in lines.into_iter().enumerate() {
            for range in find_in(text, &needle, fold) {
                if self.matches.len() == MAX_MATCHES {
                    self.capped = true;
                    break 'lines;
                }
                self.matches.push(Match { line, range });
            }
        }
        if !self.matches.is_empty() {
            let at = self.matches.iter().position(|m| m.line >= from);
            self.current = Some(at.unwrap_or(0));
        }
    }

    /// Runs the same query again over changed `lines` (output streamed in, a reload),
    /// keeping the current match's position in the list where it still exists.
    pub fn refresh<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        let keep = self.current;
        let query = std::mem::take(&mut self.query);
        self.search(&query, lines, usize::MAX);
        if let Some(i) = keep
            && !self.matches.is_empty()
        {
            self.current = Some(i.min(self.matches.len() - 1));
        }
    }

    /// The matches in display line `line` (the list is in reading order).
    pub fn line_matches(&self, line: usize) -> &[Match] {
        let from = self.matches.partition_point(|m| m.line < line);
        let to = self.matches.partition_point(|m| m.line <= line);
        &self.matches[from..to]
    }

    /// The next match, wrapping to the first.
    pub fn next_match(&mut self) -> Option<&Match> {
        let n = self.matches.len();
        self.current = self.current.map(|i| (i + 1) % n);
        self.current()
    }

    /// The previous match, wrapping to the last.
    pub fn previous_match(&mut self) -> Option<&Match> {
        let n = self.matches.len();
        self.current = self.current.map(|i| (i + n - 1) % n);
        self.current()
    }
}

/// Byte ranges of `needle` in `text`, without overlaps. With `fold`, compared in lower case
/// character by character, so ranges stay ranges of `text` itself.
fn find_in(text: &str, needle: &str, fold: bool) -> Vec<Range<usize>> {
    if !fold {
        return text
            .match_indices(needle)
            .map(|(i, m)| i..i + m.len())
            .collect();
    }
    let wanted: Vec<char> = needle.chars().collect();
    let hay: Vec<(usize, char)> = text.char_indices().collect();
    let lower = |c: char| c.to_lowercase().next().unwrap_or(c);
    let mut out = Vec::new();
    let mut i = 0;
    while i + wanted.len() <= hay.len() {
        let hit = wanted
            .iter()
            .enumerate()
            .all(|(k, w)| lower(hay[i + k].1) == *w);
        if hit {
            let start = hay[i].0;
            let end = hay
                .get(i + wanted.len())
                .map_or(text.len(), |&(byte, _)| byte);
            out.push(start..end);
            i += wanted.len();
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINES: [&str; 4] = [
        "Running cargo test",
        "error: cannot find value",
        "Error again, ERROR three",
        "done",
    ];

    #[test]
    fn smart_case_and_byte_ranges() {
        let mut f = Find::default();
        f.search("error", LINES, 0);
        let lines: Vec<usize> = f.matches().iter().map(|m| m.line).collect();
        assert_eq!(lines, [1, 2, 2]);
        assert_eq!(&LINES[2][f.matches()[2].range.clone()], "ERROR");
        f.search("Error", LINES, 0);
        assert_eq!(f.matches().len(), 1, "an upper-case letter makes it exact");
        assert_eq!(f.matches()[0].line, 2);
    }

    #[test]
    fn next_and_previous_wrap_and_start_at_the_view() {
        let mut f = Find::default();
        f.search("error", LINES, 2);
        assert_eq!(
            f.current().unwrap().line,
            2,
            "the first match at or below the top"
        );
        assert_eq!(f.status(), "2/3");
        f.next_match();
        assert_eq!(f.status(), "3/3");
        f.next_match();
        assert_eq!(f.status(), "1/3", "wraps to the first");
        f.previous_match();
        assert_eq!(f.status(), "3/3", "wraps to the last");
        f.search("zzz", LINES, 0);
        assert_eq!(f.status(), "no match");
        assert_eq!(f.next_match(), None);
        f.search("", LINES, 0);
        assert_eq!(f.status(), "");
    }

    #[test]
    fn multibyte_text_keeps_char_boundaries() {
        let mut f = Find::default();
        let lines = ["Größe ÄNDERN, größe"];
        f.search("größe", lines, 0);
        let found: Vec<&str> = f
            .matches()
            .iter()
            .map(|m| &lines[0][m.range.clone()])
            .collect();
        assert_eq!(found, ["Größe", "größe"]);
        f.search("ändern", lines, 0);
        assert_eq!(&lines[0][f.matches()[0].range.clone()], "ÄNDERN");
    }

    #[test]
    fn a_refresh_keeps_the_place_and_lines_index_their_matches() {
        let mut f = Find::default();
        f.search("error", LINES, 0);
        f.next_match();
        assert_eq!(f.status(), "2/3");
        let more = [LINES[0], LINES[1], LINES[2], LINES[3], "error four"];
        f.refresh(more);
        assert_eq!(f.status(), "2/4", "the same place, one more match");
        assert_eq!(f.line_matches(2).len(), 2);
        assert_eq!(f.line_matches(3).len(), 0);
        assert_eq!(f.line_matches(4)[0].range, 0..5);
        f.refresh(["nothing here"]);
        assert_eq!(f.status(), "no match");
    }

    #[test]
    fn matches_are_bounded() {
        let line = "a".repeat(MAX_MATCHES + 10);
        let mut f = Find::default();
        f.search("a", [line.as_str()], 0);
        assert_eq!(f.matches().len(), MAX_MATCHES);
        assert!(f.capped);
        assert_eq!(f.status(), format!("1/{MAX_MATCHES}+"));
    }
}
