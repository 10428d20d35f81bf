//! The prompt composer: a multi-line draft with a cursor, and attachment chips.
//!
//! The cursor is a byte offset into the draft that always sits on a char boundary. Movement by
//! character skips zero-width chars (combining marks) together with the char before them, so a
//! cursor never lands inside a UTF-8 sequence nor between a letter and its accent.

use unicode_width::UnicodeWidthChar;

/// Most bytes a draft holds; typing or pasting beyond it is dropped.
pub const MAX_DRAFT_BYTES: usize = 256 * 1024;
/// Most attachments per prompt.
pub const MAX_ATTACHMENTS: usize = 32;
/// Most images per prompt, and their total size (the backend's bounds, docs/agents.md §11).
pub const MAX_IMAGES: usize = 10;
/// The most bytes of images one prompt carries.
pub const MAX_PROMPT_IMAGE_BYTES: u64 = ax_core::image::MAX_PROMPT_IMAGE_BYTES as u64;

/// A draft being written, with the cursor where the next char goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Composer {
    draft: String,
    /// Byte offset of the cursor; always a char boundary of `draft`.
    cursor: usize,
    attachments: Vec<String>,
    images: Vec<ComposerImage>,
    /// A submission is in flight: Enter does nothing until it answers.
    pub submitting: bool,
    /// What the last kill erased, for [`Composer::yank`] (kept across drafts and sends).
    killed: String,
}

/// What a readline kill erases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// The word before the cursor (Ctrl+W).
    Word,
    /// From the start of the cursor's line to the cursor (Ctrl+U).
    ToLineStart,
    /// From the cursor to the end of its line (Ctrl+K).
    ToLineEnd,
}

/// An image read for the next prompt (`/image PATH`, docs/tui.md): checked and in base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComposerImage {
    /// The path as typed; its chip shows the file name.
    pub path: String,
    /// Its type by its magic bytes.
    pub mime: &'static str,
    /// The bytes, base64.
    pub data: String,
    /// Its size in bytes.
    pub bytes: u64,
}

fn is_word(c: char) -> bool {
    !c.is_whitespace()
}

impl Composer {
    /// The text being written.
    pub fn draft(&self) -> &str {
        &self.draft
    }

    /// Byte offset of the cursor in [`Composer::draft`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Zero-based (line, display column) of the cursor.
    pub fn cursor_line_col(&self) -> (usize, usize) {
        let before = &self.draft[..self.cursor];
        let line = before.matches('\n').count();
        let start = self.line_start();
        let col = self.draft[start..self.cursor]
            .chars()
            .map(|c| c.width().unwrap_or(0))
            .sum();
        (line, col)
    }

    /// Attached paths, as typed, in the order added.
    pub fn attachments(&self) -> &[String] {
        &self.attachments
    }

    /// Attached images, in the order added.
    pub fn images(&self) -> &[ComposerImage] {
        &self.images
    }

    /// Adds an image chip; the same path twice is not added again.
    pub fn add_image(&mut self, image: ComposerImage) -> Result<(), String> {
        if self.images.iter().any(|i| i.path == image.path) {
            return Ok(());
        }
        if self.images.len() >= MAX_IMAGES {
            return Err(format!("at most {MAX_IMAGES} images per prompt"));
        }
        let total: u64 = self.images.iter().map(|i| i.bytes).sum::<u64>() + image.bytes;
        if total > MAX_PROMPT_IMAGE_BYTES {
            return Err(format!(
                "the images of a prompt are limited to {} MiB in all",
                MAX_PROMPT_IMAGE_BYTES >> 20
            ));
        }
        self.images.push(image);
        Ok(())
    }

    /// Blocks navigation: any text at all, whitespace included.
    pub fn has_draft(&self) -> bool {
        !self.draft.is_empty()
    }

    /// Blocks navigation, like a draft.
    pub fn has_attachments(&self) -> bool {
        !self.attachments.is_empty() || !self.images.is_empty()
    }

    /// Replaces the bytes `range` of the draft (char boundaries) with `text` and puts the
    /// cursor after it: how a completion or a picked file takes the place of what was typed.
    /// A range off a char boundary, or a result over [`MAX_DRAFT_BYTES`], changes nothing.
    pub fn replace_range(&mut self, range: std::ops::Range<usize>, text: &str) {
        let ok = range.start <= range.end
            && self.draft.is_char_boundary(range.start)
            && self.draft.is_char_boundary(range.end)
            && self.draft.len() - (range.end - range.start) + text.len() <= MAX_DRAFT_BYTES;
        if ok {
            self.draft.replace_range(range.clone(), text);
            self.cursor = range.start + text.len();
        }
    }

    /// Inserts one char at the cursor.
    pub fn insert(&mut self, c: char) {
        if self.draft.len() + c.len_utf8() <= MAX_DRAFT_BYTES {
            self.draft.insert(self.cursor, c);
            self.cursor += c.len_utf8();
        }
    }

    /// Inserts pasted text at the cursor; carriage returns become newlines, tabs spaces, other
    /// controls are dropped.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n");
        let room = MAX_DRAFT_BYTES.saturating_sub(self.draft.len());
        let mut clean = String::new();
        for c in text.chars() {
            let c = match c {
                '\r' | '\n' => '\n',
                '\t' => ' ',
                c if c.is_control() => continue,
                c => c,
            };
            if clean.len() + c.len_utf8() > room {
                break;
            }
            clean.push(c);
        }
        self.draft.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    /// Byte offset of the previous cursor stop (a char plus any zero-width chars after it).
    fn prev_stop(&self, from: usize) -> usize {
        let mut at = from;
        for (i, c) in self.draft[..from].char_indices().rev() {
            at = i;
            if c == '\n' || c.width().unwrap_or(0) > 0 {
                break;
            }
        }
        at
    }

    /// Byte offset of the next cursor stop.
    fn next_stop(&self, from: usize) -> usize {
        let mut chars = self.draft[from..].char_indices();
        let Some((_, first)) = chars.next() else {
            return from;
        };
        let mut at = from + first.len_utf8();
        if first == '\n' {
            return at;
        }
        for (i, c) in chars {
            if c == '\n' || c.width().unwrap_or(0) > 0 {
                break;
            }
            at = from + i + c.len_utf8();
        }
        at
    }

    /// Start of the word before `from`: skips whitespace, then word chars.
    fn word_start_before(&self, from: usize) -> usize {
        let before = &self.draft[..from];
        let trimmed = before.trim_end_matches(|c: char| !is_word(c));
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| !is_word(*c))
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(0)
    }

    /// End of the word after `from`: skips whitespace, then word chars.
    fn word_end_after(&self, from: usize) -> usize {
        let after = &self.draft[from..];
        let skip = after.len() - after.trim_start_matches(|c: char| !is_word(c)).len();
        let rest = &after[skip..];
        let word = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
        from + skip + word
    }

    fn line_start(&self) -> usize {
        self.draft[..self.cursor]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0)
    }

    fn line_end(&self) -> usize {
        self.draft[self.cursor..]
            .find('\n')
            .map(|i| self.cursor + i)
            .unwrap_or(self.draft.len())
    }

    /// Left: one char back (never inside a UTF-8 sequence).
    pub fn move_left(&mut self) {
        self.cursor = self.prev_stop(self.cursor);
    }

    /// Right: one char forward.
    pub fn move_right(&mut self) {
        self.cursor = self.next_stop(self.cursor);
    }

    /// Ctrl+Left, Alt+B: to the start of the word before the cursor.
    pub fn move_word_left(&mut self) {
        self.cursor = self.word_start_before(self.cursor);
    }

    /// Ctrl+Right, Alt+F: to the end of the word after the cursor.
    pub fn move_word_right(&mut self) {
        self.cursor = self.word_end_after(self.cursor);
    }

    /// Home, Ctrl+A: to the start of the cursor's line.
    pub fn move_home(&mut self) {
        self.cursor = self.line_start();
    }

    /// End, Ctrl+E: to the end of the cursor's line.
    pub fn move_end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Places the cursor on `line` at the display column nearest `col` (not past it).
    fn go_to(&mut self, line: usize, col: usize) {
        let start = self
            .draft
            .split('\n')
            .take(line)
            .map(|l| l.len() + 1)
            .sum::<usize>();
        let text = self.draft[start..].split('\n').next().unwrap_or("");
        let mut w = 0;
        let mut at = start;
        for (i, c) in text.char_indices() {
            let cw = c.width().unwrap_or(0);
            if cw > 0 && w + cw > col {
                break;
            }
            w += cw;
            at = start + i + c.len_utf8();
        }
        self.cursor = at;
    }

    /// Up: to the line above at the same column; on the first line, to its start.
    pub fn move_up(&mut self) {
        let (line, col) = self.cursor_line_col();
        if line == 0 {
            self.cursor = 0;
        } else {
            self.go_to(line - 1, col);
        }
    }

    /// Down: to the line below at the same column; on the last line, to its end.
    pub fn move_down(&mut self) {
        let (line, col) = self.cursor_line_col();
        if line + 1 >= self.line_count() {
            self.cursor = self.draft.len();
        } else {
            self.go_to(line + 1, col);
        }
    }

    /// Erases the char before the cursor; on an empty draft, removes the last attachment chip.
    pub fn backspace(&mut self) {
        if self.draft.is_empty() {
            self.attachments.pop();
            return;
        }
        let from = self.prev_stop(self.cursor);
        self.draft.replace_range(from..self.cursor, "");
        self.cursor = from;
    }

    /// Erases the char under the cursor (Delete).
    pub fn delete(&mut self) {
        let to = self.next_stop(self.cursor);
        self.draft.replace_range(self.cursor..to, "");
    }

    /// Erases the word before the cursor (Ctrl+W); returns what it erased.
    pub fn erase_word(&mut self) -> String {
        let from = self.word_start_before(self.cursor);
        let gone = self.draft[from..self.cursor].to_owned();
        self.draft.replace_range(from..self.cursor, "");
        self.cursor = from;
        gone
    }

    /// Erases from the start of the cursor's line to the cursor (Ctrl+U); returns what it
    /// erased.
    pub fn erase_to_line_start(&mut self) -> String {
        let from = self.line_start();
        let gone = self.draft[from..self.cursor].to_owned();
        self.draft.replace_range(from..self.cursor, "");
        self.cursor = from;
        gone
    }

    /// Erases from the cursor to the end of its line (Ctrl+K); returns what it erased.
    pub fn erase_to_line_end(&mut self) -> String {
        let to = self.line_end();
        let gone = self.draft[self.cursor..to].to_owned();
        self.draft.replace_range(self.cursor..to, "");
        gone
    }

    /// Readline's kill (Ctrl+W, Ctrl+U, Ctrl+K): erases and keeps what it erased, when
    /// anything, for [`Composer::yank`].
    pub fn kill(&mut self, what: Kill) {
        let gone = match what {
            Kill::Word => self.erase_word(),
            Kill::ToLineStart => self.erase_to_line_start(),
            Kill::ToLineEnd => self.erase_to_line_end(),
        };
        if !gone.is_empty() {
            self.killed = gone;
        }
    }

    /// Readline's yank (Ctrl+Y): puts back what the last kill erased.
    pub fn yank(&mut self) {
        let killed = self.killed.clone();
        self.paste(&killed);
    }

    /// Adds an attachment chip; a path already attached is not added twice.
    pub fn attach(&mut self, path: &str) -> Result<(), String> {
        if self.attachments.iter().any(|p| p == path) {
            return Ok(());
        }
        if self.attachments.len() >= MAX_ATTACHMENTS {
            return Err(format!("at most {MAX_ATTACHMENTS} attachments"));
        }
        self.attachments.push(path.to_owned());
        Ok(())
    }

    /// Removes attachment `index`; an index past the end does nothing.
    pub fn remove_attachment(&mut self, index: usize) {
        if index < self.attachments.len() {
            self.attachments.remove(index);
        }
    }

    /// Empties the draft (attachments stay).
    pub fn clear_draft(&mut self) {
        self.draft.clear();
        self.cursor = 0;
    }

    /// After a successful submission.
    pub fn clear(&mut self) {
        self.clear_draft();
        self.attachments.clear();
        self.images.clear();
    }

    /// Number of text rows the draft needs (at least one).
    pub fn line_count(&self) -> usize {
        self.draft.split('\n').count()
    }

    /// The draft wrapped to `width` cells: byte ranges of the rows. A line that exactly fills
    /// its last row gets an empty row after it, where the cursor goes at its end. A wide char
    /// is never split and zero-width chars stay with the char before them.
    pub fn visual_rows(&self, width: usize) -> Vec<(usize, usize)> {
        visual_rows(&self.draft, width, usize::MAX)
    }

    /// Rows the wrapped draft needs, counted up to `max` (the composer's height bound).
    pub fn visual_row_count(&self, width: usize, max: usize) -> usize {
        visual_rows(&self.draft, width, max)
            .len()
            .clamp(1, max.max(1))
    }

    /// (row, column) of the cursor in [`Composer::visual_rows`].
    pub fn cursor_visual(&self, width: usize) -> (usize, usize) {
        let rows = self.visual_rows(width);
        let at = self.cursor;
        for (i, &(start, end)) in rows.iter().enumerate() {
            let last_of_line = rows.get(i + 1).is_none_or(|next| next.0 != end);
            if start <= at && (at < end || (at == end && last_of_line)) {
                let col = self.draft[start..at]
                    .chars()
                    .map(|c| c.width().unwrap_or(0))
                    .sum();
                return (i, col);
            }
        }
        (rows.len().saturating_sub(1), 0)
    }
}

/// See [`Composer::visual_rows`]; stops after `max` rows.
fn visual_rows(text: &str, width: usize, max: usize) -> Vec<(usize, usize)> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        let mut start = line_start;
        let mut used = 0;
        for (i, c) in line.char_indices() {
            let w = c.width().unwrap_or(0);
            if w > 0 && used + w > width && used > 0 {
                rows.push((start, line_start + i));
                if rows.len() >= max {
                    return rows;
                }
                start = line_start + i;
                used = 0;
            }
            used += w;
        }
        let end = line_start + line.len();
        rows.push((start, end));
        if used >= width {
            rows.push((end, end));
        }
        if rows.len() >= max {
            rows.truncate(max);
            return rows;
        }
        line_start = end + 1;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backspace_removes_chips_when_the_draft_is_empty() {
        let mut c = Composer::default();
        c.attach("a.txt").unwrap();
        c.attach("b.txt").unwrap();
        c.insert('x');
        c.backspace();
        assert_eq!(c.attachments().len(), 2);
        c.backspace();
        assert_eq!(c.attachments(), ["a.txt"]);
    }

    #[test]
    fn paste_normalises_newlines_and_bounds_size() {
        let mut c = Composer::default();
        c.paste("a\r\nb\rc\u{7}");
        assert_eq!(c.draft(), "a\nb\nc");
        assert_eq!(c.line_count(), 3);
        c.paste(&"y".repeat(MAX_DRAFT_BYTES));
        assert_eq!(c.draft().len(), MAX_DRAFT_BYTES);
    }

    #[test]
    fn whitespace_counts_as_a_draft() {
        let mut c = Composer::default();
        c.insert(' ');
        assert!(c.has_draft());
    }

    #[test]
    fn erase_word() {
        let mut c = Composer::default();
        c.paste("echo hello world  ");
        c.erase_word();
        assert_eq!(c.draft(), "echo hello ");
    }

    fn typed(text: &str) -> Composer {
        let mut c = Composer::default();
        c.paste(text);
        c
    }

    #[test]
    fn insert_and_paste_go_to_the_cursor() {
        let mut c = typed("echo world");
        for _ in 0..5 {
            c.move_left();
        }
        c.paste("hello ");
        assert_eq!(c.draft(), "echo hello world");
        c.insert('!');
        assert_eq!(c.draft(), "echo hello !world");
        assert_eq!(&c.draft()[c.cursor()..], "world");
    }

    #[test]
    fn left_right_never_split_a_multibyte_char() {
        let mut c = typed("aé€😀");
        c.move_left();
        assert_eq!(&c.draft()[c.cursor()..], "😀");
        c.move_left();
        c.move_left();
        assert_eq!(&c.draft()[c.cursor()..], "é€😀");
        c.move_right();
        assert_eq!(&c.draft()[c.cursor()..], "€😀");
        c.move_left();
        c.move_left();
        c.move_left();
        assert_eq!(c.cursor(), 0, "stops at the start");
        for _ in 0..10 {
            c.move_right();
        }
        assert_eq!(c.cursor(), c.draft().len(), "stops at the end");
    }

    #[test]
    fn a_combining_mark_moves_with_its_letter() {
        let mut c = typed("ae\u{301}b");
        c.move_left();
        c.move_left();
        assert_eq!(&c.draft()[c.cursor()..], "e\u{301}b");
        c.move_right();
        assert_eq!(&c.draft()[c.cursor()..], "b");
        c.backspace();
        assert_eq!(c.draft(), "ab");
    }

    #[test]
    fn word_movement() {
        let mut c = typed("git  commit -m msg");
        c.move_word_left();
        assert_eq!(&c.draft()[c.cursor()..], "msg");
        c.move_word_left();
        c.move_word_left();
        assert_eq!(&c.draft()[c.cursor()..], "commit -m msg");
        c.move_word_left();
        assert_eq!(c.cursor(), 0);
        c.move_word_right();
        assert_eq!(&c.draft()[c.cursor()..], "  commit -m msg");
        c.move_word_right();
        assert_eq!(&c.draft()[c.cursor()..], " -m msg");
    }

    #[test]
    fn home_and_end_stay_on_the_line() {
        let mut c = typed("first\nsecond line");
        c.move_word_left();
        c.move_home();
        assert_eq!(&c.draft()[c.cursor()..], "second line");
        c.move_end();
        assert_eq!(c.cursor(), c.draft().len());
        c.move_up();
        c.move_home();
        assert_eq!(c.cursor(), 0);
        c.move_end();
        assert_eq!(&c.draft()[c.cursor()..], "\nsecond line");
    }

    #[test]
    fn up_and_down_keep_the_column() {
        let mut c = typed("abcdef\nxy\n€€€€€");
        assert_eq!(c.cursor_line_col(), (2, 5));
        c.move_up();
        assert_eq!(c.cursor_line_col(), (1, 2), "clamped to a short line");
        c.move_up();
        assert_eq!(c.cursor_line_col(), (0, 2));
        c.move_right();
        c.move_down();
        c.move_down();
        assert_eq!(c.cursor_line_col(), (2, 2));
        assert_eq!(&c.draft()[c.cursor()..], "€€€");
        c.move_down();
        assert_eq!(
            c.cursor(),
            c.draft().len(),
            "Down on the last line goes to its end"
        );
        c.move_up();
        c.move_up();
        c.move_up();
        assert_eq!(c.cursor(), 0, "Up on the first line goes to its start");
    }

    #[test]
    fn wide_chars_count_two_columns() {
        let mut c = typed("日本\nabcd");
        assert_eq!(c.cursor_line_col(), (1, 4));
        c.move_up();
        assert_eq!(c.cursor_line_col(), (0, 4));
        c.move_down();
        c.move_left();
        c.move_up();
        assert_eq!(c.cursor_line_col(), (0, 2), "never half a wide char");
    }

    #[test]
    fn backspace_and_delete_at_the_cursor() {
        let mut c = typed("ab€d");
        c.move_left();
        c.backspace();
        assert_eq!(c.draft(), "abd");
        c.delete();
        assert_eq!(c.draft(), "ab");
        c.delete();
        assert_eq!(c.draft(), "ab", "Delete at the end does nothing");
        c.move_home();
        c.backspace();
        assert_eq!(c.draft(), "ab", "Backspace at the start does nothing");
        c.delete();
        assert_eq!(c.draft(), "b");
    }

    #[test]
    fn backspace_joins_lines() {
        let mut c = typed("a\nb");
        c.move_left();
        c.backspace();
        assert_eq!(c.draft(), "ab");
        assert_eq!(c.cursor(), 1);
    }

    #[test]
    fn erase_word_and_line_start_at_the_cursor() {
        let mut c = typed("one two\nthree four five");
        c.move_word_left();
        c.erase_word();
        assert_eq!(c.draft(), "one two\nthree five");
        c.erase_to_line_start();
        assert_eq!(c.draft(), "one two\nfive");
        assert_eq!(c.cursor(), 8);
        c.erase_to_line_start();
        assert_eq!(
            c.draft(),
            "one two\nfive",
            "nothing before the cursor on this line"
        );
        c.erase_word();
        assert_eq!(
            c.draft(),
            "one five",
            "Ctrl+W eats the newline and the word before"
        );
    }

    #[test]
    fn the_draft_wraps_and_the_cursor_follows() {
        let mut c = typed("abcdefgh\nxy");
        assert_eq!(c.visual_rows(3), [(0, 3), (3, 6), (6, 8), (9, 11)]);
        assert_eq!(c.cursor_visual(3), (3, 2));
        c.move_up();
        c.move_end();
        assert_eq!(c.cursor_visual(3), (2, 2));
        // A row filled exactly: the cursor at its end goes to a fresh row.
        let c = typed("abcdef");
        assert_eq!(c.visual_rows(3), [(0, 3), (3, 6), (6, 6)]);
        assert_eq!(c.cursor_visual(3), (2, 0));
        assert_eq!(c.visual_row_count(3, 2), 2);
        // Wide chars are never split.
        let c = typed("日本語");
        assert_eq!(c.visual_rows(5), [(0, 6), (6, 9)]);
        assert_eq!(Composer::default().visual_rows(4), [(0, 0)]);
    }

    #[test]
    fn clear_resets_the_cursor() {
        let mut c = typed("abc");
        c.clear_draft();
        assert_eq!(c.cursor(), 0);
        c.insert('x');
        assert_eq!(c.draft(), "x");
    }

    #[test]
    fn a_kill_is_yanked_back_and_an_empty_kill_keeps_the_last() {
        let mut c = Composer::default();
        c.paste("git commit -m wip");
        c.kill(Kill::Word);
        assert_eq!(c.draft(), "git commit -m ");
        c.kill(Kill::ToLineEnd);
        c.clear();
        c.yank();
        assert_eq!(c.draft(), "wip");
        c.kill(Kill::ToLineStart);
        assert_eq!(c.draft(), "");
        c.yank();
        c.yank();
        assert_eq!(c.draft(), "wipwip");
    }
}
