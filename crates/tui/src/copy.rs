//! Copying a reply or a code block, and handing the mouse back to the terminal
//! (docs/tui.md §3c). The copy goes through the terminal's clipboard (OSC 52), the same way
//! as the TUIMCP configuration ([`crate::share::osc52`], written by the owner for
//! [`Effect::CopyToClipboard`]).

use ax_protocol::turn::{ToolContent, TurnPart};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

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
pub(crate) fn bounded(mut text: String) -> (String, bool) {
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
