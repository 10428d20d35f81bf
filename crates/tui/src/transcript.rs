//! The open session's transcript as display lines, with a row index.
//!
//! Parts stream in and are appended as logical lines; each line's wrapped row count is kept in
//! a cumulative index (`rows_end`), so drawing finds the visible window by binary search and
//! touches only the lines on screen. A very long line is split at [`MAX_LINE_CHARS`] when it
//! is appended, so one line can never make a frame expensive.

use ax_protocol::{Message, Part, Role, Stream};
use ratatui::style::Style;
use unicode_width::UnicodeWidthChar;

use crate::ansi::{AnsiParser, Op};

/// Logical lines longer than this are continued on a new line.
pub const MAX_LINE_CHARS: usize = 2048;

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    UserHeader,
    AgentHeader,
    UserText,
    File,
    Stdout,
    Stderr,
    ExitOk,
    ExitFailed,
    Marker,
    Blank,
}

#[derive(Debug, Clone)]
struct TextLine {
    style: LineStyle,
    text: String,
    /// Display width in cells.
    width: u32,
    /// Every char is exactly one cell wide, so rows are a division.
    uniform: bool,
    chars: u32,
    /// ANSI styles of command output: (byte offset, style) where each run starts. `None` for
    /// a line drawn entirely in its [`LineStyle`], which is most lines.
    runs: Option<Vec<(u32, Style)>>,
}

#[derive(Debug, Clone)]
struct MessageCursor {
    id: String,
    parts: u32,
    /// An output line still waiting for its newline.
    open_line: Option<usize>,
    /// Char column in the open line after a `\r` or backspace; `None` at its end.
    open_col: Option<u32>,
    /// Escape-sequence state per stream (stdout, stderr), carried across chunks.
    ansi: [AnsiParser; 2],
}

/// What happened to a streamed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartOutcome {
    Applied,
    /// Already seen (replayed after a resync): ignored.
    Duplicate,
    /// A gap or an unknown message: the transcript must be reloaded.
    NeedsReload,
}

/// Display lines of one session.
#[derive(Debug, Clone)]
pub struct Transcript {
    lines: Vec<TextLine>,
    rows_end: Vec<usize>,
    wrap: u16,
    messages: Vec<MessageCursor>,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::new(80)
    }
}

impl Transcript {
    pub fn new(wrap: u16) -> Transcript {
        Transcript {
            lines: Vec::new(),
            rows_end: Vec::new(),
            wrap: wrap.max(1),
            messages: Vec::new(),
        }
    }

    /// Builds the lines of a loaded transcript.
    pub fn from_messages(messages: &[Message], wrap: u16) -> Transcript {
        let mut t = Transcript::new(wrap);
        for m in messages {
            t.add_message(m);
        }
        t
    }

    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    pub fn total_rows(&self) -> usize {
        self.rows_end.last().copied().unwrap_or(0)
    }

    pub fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// Re-wraps for a new width. Costs one pass over the lines; only on resize.
    pub fn set_wrap(&mut self, wrap: u16) {
        let wrap = wrap.max(1);
        if wrap == self.wrap {
            return;
        }
        self.wrap = wrap;
        let mut acc = 0;
        for (i, line) in self.lines.iter().enumerate() {
            acc += rows_of(line, wrap);
            self.rows_end[i] = acc;
        }
    }

    /// Adds a new message with the parts it already has. A message seen before is ignored.
    pub fn add_message(&mut self, m: &Message) -> PartOutcome {
        if self.messages.iter().rev().any(|c| c.id == m.id.as_str()) {
            // Replayed: apply any parts we do not have yet.
            let mut outcome = PartOutcome::Duplicate;
            for (i, part) in m.parts.iter().enumerate() {
                match self.apply_part(m.id.as_str(), i as u32, part) {
                    PartOutcome::NeedsReload => return PartOutcome::NeedsReload,
                    PartOutcome::Applied => outcome = PartOutcome::Applied,
                    PartOutcome::Duplicate => {}
                }
            }
            return outcome;
        }
        if !self.lines.is_empty() {
            self.push(LineStyle::Blank, "");
        }
        match m.role {
            Role::User => self.push(LineStyle::UserHeader, "you"),
            Role::Assistant => self.push(LineStyle::AgentHeader, "agent"),
        }
        self.messages.push(MessageCursor {
            id: m.id.to_string(),
            parts: 0,
            open_line: None,
            open_col: None,
            ansi: Default::default(),
        });
        for (i, part) in m.parts.iter().enumerate() {
            self.apply_part(m.id.as_str(), i as u32, part);
        }
        PartOutcome::Applied
    }

    /// Appends part `index` of a message. Parts are idempotent by index.
    pub fn apply_part(&mut self, message_id: &str, index: u32, part: &Part) -> PartOutcome {
        let Some(pos) = self.messages.iter().rposition(|c| c.id == message_id) else {
            return PartOutcome::NeedsReload;
        };
        let have = self.messages[pos].parts;
        if index < have {
            return PartOutcome::Duplicate;
        }
        // A gap, or a part for an earlier message (lines are append-only): reload.
        if index > have || pos + 1 != self.messages.len() {
            return PartOutcome::NeedsReload;
        }
        self.messages[pos].parts += 1;
        match part {
            Part::Output { stream, text } => self.append_output(pos, *stream, text),
            other => {
                self.messages[pos].open_line = None;
                self.messages[pos].open_col = None;
                match other {
                    Part::Text { text } => {
                        for l in text.split('\n') {
                            self.push(LineStyle::UserText, l);
                        }
                    }
                    Part::File { path } => self.push(LineStyle::File, &format!("attached {path}")),
                    Part::Truncated { dropped_bytes } => self.push(
                        LineStyle::Marker,
                        &format!("[output truncated: {dropped_bytes} bytes dropped]"),
                    ),
                    Part::Exit { code, signal } => match (code, signal) {
                        (Some(0), _) => self.push(LineStyle::ExitOk, "exit 0"),
                        (Some(c), _) => self.push(LineStyle::ExitFailed, &format!("exit {c}")),
                        (None, Some(s)) => {
                            self.push(LineStyle::ExitFailed, &format!("killed by signal {s}"))
                        }
                        (None, None) => self.push(LineStyle::ExitFailed, "exited"),
                    },
                    Part::Rejected => self.push(LineStyle::Marker, "[rejected: nothing ran]"),
                    Part::Aborted => self.push(LineStyle::Marker, "[aborted]"),
                    Part::Interrupted => {
                        self.push(LineStyle::Marker, "[interrupted by a backend restart]")
                    }
                    // Agent turns are rendered by the agents UI work; a marker until then.
                    Part::Turn(_) => self.push(LineStyle::Marker, "[agent part]"),
                    Part::Output { .. } => unreachable!("handled above"),
                }
            }
        }
        PartOutcome::Applied
    }

    /// Command output: ANSI styles become runs, `\r` and backspace overwrite within the open
    /// line, every other escape is dropped (see `ansi.rs`).
    fn append_output(&mut self, pos: usize, stream: Stream, text: &str) {
        let (style, which) = match stream {
            Stream::Stdout => (LineStyle::Stdout, 0),
            Stream::Stderr => (LineStyle::Stderr, 1),
        };
        let mut parser = std::mem::take(&mut self.messages[pos].ansi[which]);
        parser.feed(text, |op| match op {
            Op::Text(t, ansi) => self.output_text(pos, style, t, ansi),
            Op::Newline => {
                if self.open_line_of(pos).is_none() {
                    // An empty line.
                    self.push(style, "");
                }
                let cur = &mut self.messages[pos];
                cur.open_line = None;
                cur.open_col = None;
            }
            Op::CarriageReturn => {
                if self.open_line_of(pos).is_some() {
                    self.messages[pos].open_col = Some(0);
                }
            }
            Op::Backspace => {
                if let Some(idx) = self.open_line_of(pos) {
                    let end = self.lines[idx].chars;
                    let col = self.messages[pos].open_col.unwrap_or(end);
                    self.messages[pos].open_col = Some(col.saturating_sub(1));
                }
            }
            Op::EraseLine(mode) => {
                if let Some(idx) = self.open_line_of(pos) {
                    let col = self.messages[pos].open_col.unwrap_or(self.lines[idx].chars);
                    self.edit_last(|cells| crate::ansi::erase(cells, col as usize, mode));
                    self.messages[pos].open_col = (col < self.lines[idx].chars).then_some(col);
                }
            }
        });
        self.messages[pos].ansi[which] = parser;
    }

    /// The open output line of message `pos`, if it is still the last line.
    fn open_line_of(&self, pos: usize) -> Option<usize> {
        self.messages[pos]
            .open_line
            .filter(|&idx| idx + 1 == self.lines.len())
    }

    fn output_text(&mut self, pos: usize, style: LineStyle, text: &str, ansi: Style) {
        match (self.open_line_of(pos), self.messages[pos].open_col) {
            (Some(idx), Some(col)) => {
                // Overwrite from the cursor, like a terminal after `\r`.
                let mut new_col = col as usize;
                self.edit_last(|cells| {
                    for c in text.chars() {
                        if new_col >= MAX_LINE_CHARS {
                            break;
                        }
                        if new_col < cells.len() {
                            cells[new_col] = (c, ansi);
                        } else {
                            cells.push((c, ansi));
                        }
                        new_col += 1;
                    }
                });
                let end = self.lines[idx].chars as usize;
                self.messages[pos].open_col = (new_col < end).then_some(new_col as u32);
            }
            (Some(_), None) => self.extend_last(text, ansi),
            (None, _) => self.push_styled(style, text, ansi),
        }
        // Only the last line can be open.
        self.messages[pos].open_line = Some(self.lines.len() - 1);
    }

    /// Rewrites the last line cell by cell (bounded by [`MAX_LINE_CHARS`]).
    fn edit_last(&mut self, f: impl FnOnce(&mut Vec<(char, Style)>)) {
        let Some(line) = self.lines.pop() else {
            return;
        };
        self.rows_end.pop();
        let mut cells: Vec<(char, Style)> = Vec::with_capacity(line.chars as usize);
        let mut runs = line.runs.as_deref().unwrap_or(&[]);
        let mut cur = Style::default();
        for (i, c) in line.text.char_indices() {
            while let Some(((at, s), rest)) = runs.split_first()
                && *at as usize <= i
            {
                cur = *s;
                runs = rest;
            }
            cells.push((c, cur));
        }
        f(&mut cells);
        let mut rebuilt = TextLine {
            style: line.style,
            text: String::new(),
            width: 0,
            uniform: true,
            chars: 0,
            runs: None,
        };
        for (c, s) in cells {
            let start = rebuilt.text.len();
            push_char(&mut rebuilt, c);
            note_run(&mut rebuilt, start, s);
        }
        self.commit_new(rebuilt);
    }

    fn push_styled(&mut self, style: LineStyle, raw: &str, ansi: Style) {
        let mut line = TextLine {
            style,
            text: String::new(),
            width: 0,
            uniform: true,
            chars: 0,
            runs: None,
        };
        let rest = fill(&mut line, raw);
        note_run(&mut line, 0, ansi);
        self.commit_new(line);
        if let Some(rest) = rest {
            self.push_styled(style, rest, ansi);
        }
    }

    fn push(&mut self, style: LineStyle, raw: &str) {
        self.push_styled(style, raw, Style::default());
    }

    fn extend_last(&mut self, raw: &str, ansi: Style) {
        let Some(mut line) = self.lines.pop() else {
            self.push_styled(LineStyle::Stdout, raw, ansi);
            return;
        };
        self.rows_end.pop();
        let style = line.style;
        let start = line.text.len();
        let rest = fill(&mut line, raw);
        note_run(&mut line, start, ansi);
        self.commit_new(line);
        if let Some(rest) = rest {
            self.push_styled(style, rest, ansi);
        }
    }

    fn commit_new(&mut self, line: TextLine) {
        let before = self.total_rows();
        self.rows_end.push(before + rows_of(&line, self.wrap));
        self.lines.push(line);
    }

    /// The rows to draw in a window of `height` rows, `scroll` rows above the bottom.
    /// Returns at most `height` rows, oldest first.
    pub fn visible(&self, height: usize, scroll: usize) -> Vec<(LineStyle, &str)> {
        let total = self.total_rows();
        if height == 0 || total == 0 {
            return Vec::new();
        }
        let end = total.saturating_sub(scroll.min(self.max_scroll(height)));
        let start = end.saturating_sub(height);
        let mut out = Vec::with_capacity(end - start);
        let mut idx = self.rows_end.partition_point(|&e| e <= start);
        let mut row = if idx == 0 { 0 } else { self.rows_end[idx - 1] };
        while row < end && idx < self.lines.len() {
            let line = &self.lines[idx];
            for slice in wrap_rows(&line.text, self.wrap) {
                if row >= start && row < end {
                    out.push((line.style, slice));
                }
                row += 1;
                if row >= end {
                    break;
                }
            }
            idx += 1;
        }
        out
    }

    /// Like [`Transcript::visible`], with each row cut into (text, ANSI style) pieces; the
    /// style is to be patched onto the row's [`LineStyle`].
    pub fn visible_spans(
        &self,
        height: usize,
        scroll: usize,
    ) -> Vec<(LineStyle, Vec<(&str, Style)>)> {
        let total = self.total_rows();
        if height == 0 || total == 0 {
            return Vec::new();
        }
        let end = total.saturating_sub(scroll.min(self.max_scroll(height)));
        let start = end.saturating_sub(height);
        let mut out = Vec::with_capacity(end - start);
        let mut idx = self.rows_end.partition_point(|&e| e <= start);
        let mut row = if idx == 0 { 0 } else { self.rows_end[idx - 1] };
        while row < end && idx < self.lines.len() {
            let line = &self.lines[idx];
            for slice in wrap_rows(&line.text, self.wrap) {
                if row >= start && row < end {
                    out.push((line.style, split_runs(line, slice)));
                }
                row += 1;
                if row >= end {
                    break;
                }
            }
            idx += 1;
        }
        out
    }

    /// The largest useful scroll offset for a window of `height` rows.
    pub fn max_scroll(&self, height: usize) -> usize {
        self.total_rows().saturating_sub(height)
    }
}

/// Appends sanitized text to `line`; returns what did not fit under the length cap.
fn fill<'a>(line: &mut TextLine, raw: &'a str) -> Option<&'a str> {
    let mut chars = raw.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if line.chars as usize >= MAX_LINE_CHARS {
            return Some(&raw[i..]);
        }
        match c {
            '\r' => {}
            '\t' => {
                for _ in 0..4 {
                    push_char(line, ' ');
                }
            }
            '\u{1b}' => {
                // Drop a CSI escape sequence (colors, cursor moves) from command output.
                if matches!(chars.peek(), Some((_, '['))) {
                    chars.next();
                    for (_, c) in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c if c.is_control() => push_char(line, '\u{fffd}'),
            c => push_char(line, c),
        }
    }
    None
}

/// Records that text from byte `start` on is drawn in `style`.
fn note_run(line: &mut TextLine, start: usize, style: Style) {
    if start >= line.text.len() {
        return;
    }
    let current = line
        .runs
        .as_ref()
        .and_then(|r| r.last())
        .map(|(_, s)| *s)
        .unwrap_or_default();
    if current != style {
        line.runs
            .get_or_insert_with(Default::default)
            .push((start as u32, style));
    }
}

/// Cuts one wrapped row (a slice of `line.text`) into pieces of equal ANSI style.
fn split_runs<'a>(line: &'a TextLine, row: &'a str) -> Vec<(&'a str, Style)> {
    let Some(runs) = line.runs.as_deref() else {
        return vec![(row, Style::default())];
    };
    let from = row.as_ptr() as usize - line.text.as_ptr() as usize;
    let to = from + row.len();
    let mut out = Vec::new();
    let mut style = Style::default();
    let mut at = from;
    for &(start, s) in runs {
        let start = start as usize;
        if start <= from {
            style = s;
            continue;
        }
        if start >= to {
            break;
        }
        if start > at {
            out.push((&line.text[at..start], style));
        }
        at = start;
        style = s;
    }
    if at < to || out.is_empty() {
        out.push((&line.text[at..to], style));
    }
    out
}

fn push_char(line: &mut TextLine, c: char) {
    let w = c.width().unwrap_or(0);
    if w != 1 {
        line.uniform = false;
    }
    line.width += w as u32;
    line.chars += 1;
    line.text.push(c);
}

fn rows_of(line: &TextLine, wrap: u16) -> usize {
    let wrap = wrap as usize;
    if line.uniform {
        (line.width as usize).div_ceil(wrap).max(1)
    } else {
        wrap_rows(&line.text, wrap as u16).count().max(1)
    }
}

/// Splits a line into rows of at most `wrap` cells (never splitting a wide char).
pub fn wrap_rows(text: &str, wrap: u16) -> impl Iterator<Item = &str> {
    let wrap = wrap.max(1) as usize;
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let s = rest?;
        let mut used = 0;
        for (i, c) in s.char_indices() {
            let w = c.width().unwrap_or(0);
            if used + w > wrap && i > 0 {
                rest = Some(&s[i..]);
                return Some(&s[..i]);
            }
            used += w;
        }
        rest = None;
        Some(s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ax_protocol::SessionId;

    fn sid() -> SessionId {
        "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap()
    }

    const M1: &str = "msg_0123456789abABCDEFGHIJK001";
    const M: &str = "msg_0123456789abABCDEFGHIJK000";

    fn msg(id: &str, role: Role, parts: Vec<Part>) -> Message {
        Message {
            id: id.parse().unwrap(),
            session_id: sid(),
            role,
            created: 0,
            parts,
        }
    }

    fn out(text: &str) -> Part {
        Part::Output {
            stream: Stream::Stdout,
            text: text.into(),
        }
    }

    fn rows(t: &Transcript, h: usize, scroll: usize) -> Vec<String> {
        t.visible(h, scroll)
            .into_iter()
            .map(|(_, s)| s.to_owned())
            .collect()
    }

    #[test]
    fn output_chunks_continue_open_lines() {
        let mut t = Transcript::new(40);
        t.add_message(&msg(M1, Role::Assistant, vec![]));
        assert_eq!(t.apply_part(M1, 0, &out("hel")), PartOutcome::Applied);
        assert_eq!(t.apply_part(M1, 1, &out("lo\nwor")), PartOutcome::Applied);
        assert_eq!(t.apply_part(M1, 2, &out("ld\n")), PartOutcome::Applied);
        t.apply_part(
            M1,
            3,
            &Part::Exit {
                code: Some(0),
                signal: None,
            },
        );
        assert_eq!(rows(&t, 10, 0), vec!["agent", "hello", "world", "exit 0"]);
    }

    #[test]
    fn parts_are_idempotent_and_gaps_ask_for_reload() {
        let mut t = Transcript::new(40);
        t.add_message(&msg(M1, Role::Assistant, vec![out("a\n")]));
        assert_eq!(t.apply_part(M1, 0, &out("a\n")), PartOutcome::Duplicate);
        assert_eq!(t.apply_part(M1, 2, &out("c\n")), PartOutcome::NeedsReload);
        assert_eq!(t.apply_part("zz", 0, &out("c\n")), PartOutcome::NeedsReload);
        assert_eq!(rows(&t, 10, 0), vec!["agent", "a"]);
    }

    #[test]
    fn wraps_and_windows_by_rows() {
        let mut t = Transcript::new(4);
        t.add_message(&msg(
            M1,
            Role::User,
            vec![Part::Text {
                text: "abcdefghij".into(),
            }],
        ));
        // "you", "abcd", "efgh", "ij"
        assert_eq!(t.total_rows(), 4);
        assert_eq!(rows(&t, 2, 0), vec!["efgh", "ij"]);
        assert_eq!(rows(&t, 2, 1), vec!["abcd", "efgh"]);
        assert_eq!(rows(&t, 2, 99), vec!["you", "abcd"]);
        t.set_wrap(5);
        assert_eq!(rows(&t, 3, 0), vec!["you", "abcde", "fghij"]);
    }

    #[test]
    fn wide_chars_never_split() {
        let rows: Vec<_> = wrap_rows("日本語", 3).collect();
        assert_eq!(rows, vec!["日", "本", "語"]);
        let mut t = Transcript::new(3);
        t.add_message(&msg(
            M,
            Role::User,
            vec![Part::Text {
                text: "日本語".into(),
            }],
        ));
        assert_eq!(t.total_rows(), 4);
    }

    #[test]
    fn escapes_and_controls_are_neutralised() {
        let mut t = Transcript::new(40);
        t.add_message(&msg(
            M,
            Role::Assistant,
            vec![out("\u{1b}[31mred\u{1b}[0m\u{7}\n")],
        ));
        assert_eq!(rows(&t, 5, 0), vec!["agent", "red"]);
    }

    #[test]
    fn long_lines_are_split_at_the_cap() {
        let mut t = Transcript::new(100);
        let long = "x".repeat(MAX_LINE_CHARS * 2 + 5);
        t.add_message(&msg(M, Role::Assistant, vec![out(&long)]));
        assert_eq!(t.line_count(), 1 + 3);
    }
}
