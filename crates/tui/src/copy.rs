//! Copying a reply or a code block, and handing the mouse back to the terminal
//! (docs/tui.md §3c). The copy goes through the terminal's clipboard (OSC 52), the same way
//! as the TUIMCP configuration ([`crate::share::osc52`], written by the owner for
//! [`Effect::CopyToClipboard`]).

use ax_protocol::turn::{ToolContent, TurnPart};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::app::{App, Effect, NoticeKind, Route};

/// Largest text put on the clipboard; terminals limit OSC 52 too (xterm: about 100 KB).
pub const MAX_COPY_BYTES: usize = 64 * 1024;

/// The code blocks of a Markdown text, in order, without their fences.
pub fn code_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => current = Some(String::new()),
            Event::Text(t) => {
                if let Some(c) = &mut current {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(c) = current.take() {
                    blocks.push(c.trim_end_matches('\n').to_owned());
                }
            }
            _ => {}
        }
    }
    blocks
}

/// Terminal output as plain text: colours and every other escape dropped (`ansi.rs`).
fn plain(output: &str) -> String {
    let mut out = String::new();
    crate::ansi::AnsiParser::default().feed(output, |op| match op {
        crate::ansi::Op::Text(t, _) => out.push_str(t),
        crate::ansi::Op::Newline => out.push('\n'),
        _ => {}
    });
    out
}

/// What copying a turn part gives: a thought's or a text's text, a plan's entries, a
/// notice's line, a tool call's content (text, an edit's new text, a terminal's output) or,
/// without content, its raw output. A permission has nothing of its own to copy.
pub fn part_text(part: &TurnPart) -> Option<String> {
    let text = match part {
        TurnPart::Text { text } | TurnPart::Thought { text } => text.clone(),
        TurnPart::Plan { entries } => entries
            .iter()
            .map(|e| e.content.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        TurnPart::Notice(n) => n.message.clone(),
        TurnPart::ToolCall(call) => {
            let content: Vec<String> = call
                .content
                .iter()
                .map(|c| match c {
                    ToolContent::Text { text } => text.clone(),
                    ToolContent::Diff { new_text, .. } => new_text.clone(),
                    ToolContent::Terminal { output, .. } => plain(output),
                })
                .collect();
            if content.iter().any(|c| !c.is_empty()) {
                content.join("\n")
            } else {
                match &call.raw_output {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
                    None => String::new(),
                }
            }
        }
        TurnPart::Permission(_) => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// `text` cut to [`MAX_COPY_BYTES`] at a char boundary; whether it was cut.
fn bounded(mut text: String) -> (String, bool) {
    if text.len() <= MAX_COPY_BYTES {
        return (text, false);
    }
    let mut end = MAX_COPY_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

impl App {
    /// Whether the TUI captures the mouse (off: the terminal selects text itself).
    pub fn mouse_capture(&self) -> bool {
        self.mouse_capture
    }

    /// `/copy [reply|code|prompt|N]` (Claude Code's own command): the part focused with Tab,
    /// else the newest reply of the open session; the N-th newest reply, the newest code
    /// block, or the last prompt; to the clipboard.
    pub(crate) fn copy_command(&mut self, arg: Option<String>) {
        if !matches!(self.route, Route::Session(_)) {
            self.notify(NoticeKind::Error, "/copy works in a session");
            return;
        }
        let focused = self.transcript.focused_part().and_then(part_text);
        let (what, text) = match arg.as_deref().map(str::trim) {
            // The part focused with Tab, when there is one (docs/tui.md §3c).
            None | Some("") if focused.is_some() => ("the focused part", focused),
            None | Some("") | Some("reply") => (
                "the last reply",
                self.transcript.replies().into_iter().next(),
            ),
            Some("code") => (
                "the last code block",
                self.transcript
                    .replies()
                    .iter()
                    .find_map(|r| code_blocks(r).pop()),
            ),
            Some("prompt") => (
                "the last prompt",
                self.recall.history().entries().last().cloned(),
            ),
            Some(n) if n.parse::<usize>().is_ok_and(|n| n >= 1) => {
                let n: usize = n.parse().unwrap_or(1);
                (
                    "that reply",
                    self.transcript.replies().into_iter().nth(n - 1),
                )
            }
            Some(other) => {
                self.notify(
                    NoticeKind::Error,
                    format!("/copy {other}: use /copy, /copy reply, /copy N (N-th newest reply), /copy code or /copy prompt"),
                );
                return;
            }
        };
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            self.notify(
                NoticeKind::Error,
                format!("nothing to copy: no {}", &what[4..]),
            );
            return;
        };
        let (text, cut) = bounded(text);
        let lines = text.lines().count().max(1);
        let cut = if cut { " (cut at 64 KiB)" } else { "" };
        self.effects.push(Effect::CopyToClipboard { text });
        self.notify(
            NoticeKind::Info,
            format!("copied {what}, {lines} lines, to the clipboard (OSC 52){cut}"),
        );
    }

    /// F2 or `/mouse [on|off]`: capture the mouse (clicks, wheel) or leave it to the
    /// terminal, whose own selection then works.
    pub(crate) fn mouse_command(&mut self, arg: Option<String>) {
        let on = match arg.as_deref().map(str::trim) {
            None | Some("") => !self.mouse_capture,
            Some("on") => true,
            Some("off") => false,
            Some(other) => {
                self.notify(NoticeKind::Error, format!("/mouse {other}: use on or off"));
                return;
            }
        };
        self.mouse_capture = on;
        self.effects.push(Effect::SetMouseCapture { on });
        let text = if on {
            "mouse captured: click and scroll in the TUI (F2 or /mouse off to select text)"
        } else {
            "mouse released: select text with the terminal (F2 or /mouse on to click again)"
        };
        self.notify(NoticeKind::Info, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_blocks_come_without_fences_in_order() {
        let md = "Run this:\n\n```sh\ncargo test\ncargo clippy\n```\n\nthen\n\n    indented\n\n~~~\nlast\n~~~\n";
        assert_eq!(
            code_blocks(md),
            ["cargo test\ncargo clippy", "indented", "last"]
        );
        assert!(code_blocks("no code, only `inline`").is_empty());
    }

    #[test]
    fn copies_are_bounded_at_a_char_boundary() {
        let (t, cut) = bounded("é".repeat(MAX_COPY_BYTES));
        assert!(cut);
        assert!(t.len() <= MAX_COPY_BYTES && t.len() > MAX_COPY_BYTES - 2);
        assert_eq!(bounded("ok".into()), ("ok".into(), false));
    }
}
