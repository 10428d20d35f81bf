//! Copying from the transcript: mouse capture on or off, `/copy` of a turn or a code block
//! (the text extraction is `crate::copy`).

use crate::app::{App, Effect, NoticeKind, Route};

use crate::copy::{bounded, code_blocks, part_text};

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
