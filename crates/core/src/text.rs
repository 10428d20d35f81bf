//! Characters that must never reach a terminal, a log line or a label unescaped, and the one
//! way to show them visibly (docs/SECURITY.md, "Agents and agent-supplied text").
//!
//! Control characters (C0, DEL, C1) can drive a terminal: `ESC ] 52` writes the clipboard,
//! `ESC ] 0` sets the window title, `ESC [ 2 J` clears the screen. Bidirectional controls
//! (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) reorder what is shown, so a title
//! or command can read differently from what it is.

use std::{borrow::Cow, fmt::Write as _};

/// Whether `c` is a bidirectional formatting control: embeddings and overrides
/// (U+202A–U+202E), isolates (U+2066–U+2069), the marks U+200E, U+200F and U+061C.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Whether `c` may not be shown raw: a control character (C0, DEL, C1) or a bidi control.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// `text` with every [`is_unsafe_char`] replaced by a visible escape (`\n`, `\t`, `\r`,
/// `\x1b`, `\u{202e}`), and `\` doubled only where it could be mistaken for one. Text without
/// such characters is returned unchanged (borrowed).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if is_unsafe_char(c) && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A one-line label made from `text`: its first non-blank line, trimmed, every
/// [`is_unsafe_char`] turned into a space, cut to `max` characters with an ellipsis. `None`
/// when `text` has no visible line. Session titles come from prompts and from agents this way,
/// so neither can hide, reorder or spread over lines what a list shows.
pub fn one_line_label(text: &str, max: usize) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let clean: String = line
        .trim()
        .chars()
        .map(|c| if is_unsafe_char(c) { ' ' } else { c })
        .collect();
    let mut label: String = clean.chars().take(max).collect();
    if clean.chars().count() > max {
        label.push('…');
    }
    Some(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_one_clean_bounded_line() {
        assert_eq!(
            one_line_label("\n  \n  Fix the build\nand more", 60).as_deref(),
            Some("Fix the build")
        );
        assert_eq!(
            one_line_label("a\u{202E}b\tc", 60).as_deref(),
            Some("a b c")
        );
        assert_eq!(one_line_label("abcdef", 3).as_deref(), Some("abc…"));
        assert_eq!(one_line_label("abc", 3).as_deref(), Some("abc"));
        assert_eq!(one_line_label(" \n\t\n", 60), None);
    }

    #[test]
    fn every_control_and_bidi_character_is_escaped() {
        let bidi = [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
        ];
        for c in bidi {
            assert!(is_bidi_control(c), "{c:?}");
        }
        let all = (0u32..0x3000).filter_map(char::from_u32);
        for c in all {
            let shown = escape_controls(&c.to_string()).into_owned();
            if is_unsafe_char(c) {
                assert!(shown.starts_with('\\'), "{c:?} -> {shown:?}");
                assert!(!shown.chars().any(is_unsafe_char), "{c:?} -> {shown:?}");
            } else {
                assert_eq!(shown, c.to_string());
            }
        }
        assert_eq!(
            escape_controls("a\u{1b}]52;c;eA==\u{7}b\u{202e}c\n"),
            "a\\x1b]52;c;eA==\\x07b\\u{202e}c\\n"
        );
        assert_eq!(escape_controls("\u{9b}2J\u{7f}"), "\\x9b2J\\x7f");
        assert!(matches!(escape_controls("plain – ü"), Cow::Borrowed(_)));
    }
}
