//! The prompt composer: a multi-line draft and attachment chips.

/// Most bytes a draft holds; typing or pasting beyond it is dropped.
pub const MAX_DRAFT_BYTES: usize = 256 * 1024;
/// Most attachments per prompt.
pub const MAX_ATTACHMENTS: usize = 32;

/// A draft being written. The cursor is always at the end: editing is append and erase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Composer {
    draft: String,
    attachments: Vec<String>,
    /// A submission is in flight: Enter does nothing until it answers.
    pub submitting: bool,
}

impl Composer {
    pub fn draft(&self) -> &str {
        &self.draft
    }

    pub fn attachments(&self) -> &[String] {
        &self.attachments
    }

    /// Blocks navigation: any text at all, whitespace included.
    pub fn has_draft(&self) -> bool {
        !self.draft.is_empty()
    }

    pub fn has_attachments(&self) -> bool {
        !self.attachments.is_empty()
    }

    pub fn insert(&mut self, c: char) {
        if self.draft.len() + c.len_utf8() <= MAX_DRAFT_BYTES {
            self.draft.push(c);
        }
    }

    /// Inserts pasted text; carriage returns become newlines, other controls are dropped.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n");
        for c in text.chars() {
            match c {
                '\r' | '\n' => self.insert('\n'),
                '\t' => self.insert(' '),
                c if c.is_control() => {}
                c => self.insert(c),
            }
        }
    }

    /// Erases the last char; on an empty draft, removes the last attachment chip.
    pub fn backspace(&mut self) {
        if self.draft.pop().is_none() {
            self.attachments.pop();
        }
    }

    /// Erases the last word (Ctrl+W).
    pub fn erase_word(&mut self) {
        let trimmed = self.draft.trim_end_matches([' ', '\n']).len();
        self.draft.truncate(trimmed);
        let cut = self.draft.rfind([' ', '\n']).map(|i| i + 1).unwrap_or(0);
        self.draft.truncate(cut);
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

    pub fn remove_attachment(&mut self, index: usize) {
        if index < self.attachments.len() {
            self.attachments.remove(index);
        }
    }

    pub fn clear_draft(&mut self) {
        self.draft.clear();
    }

    /// After a successful submission.
    pub fn clear(&mut self) {
        self.draft.clear();
        self.attachments.clear();
    }

    /// Number of text rows the draft needs (at least one).
    pub fn line_count(&self) -> usize {
        self.draft.split('\n').count()
    }
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
}
