//! The open session's prompt queue (docs/tui.md §3d; the backend's rules are docs/backend.md §3,
//! "Queue and steer"). Enter while a turn runs, or while prompts wait, queues the prompt; the
//! queue is shown above the composer, in order, each row marked queued; `/queue` (a list
//! modal) and `/queue edit|cancel|send N`, `/queue resume` act on it.
//!
//! The backend owns the queue: every change arrives as `queue.updated` with the whole queue,
//! so the TUI keeps the latest one per session and never edits its copy itself. A load
//! (`GET /session/{id}/queue`, on opening a session and after a resync) is dropped when a
//! `queue.updated` arrived after it was asked: the event is at least as new.

use std::collections::HashMap;

use ax_protocol::{
    Prompt, PromptPart, QueuedId, SessionId,
    queue::{PromptQueue, QueuedPrompt},
};

/// Queued prompts shown above the composer; more are counted on the last row.
pub const TRAY_QUEUE_ROWS: usize = 4;

/// The longest summary of a queued prompt, in chars (a row is cut to the screen anyway).
const SUMMARY_MAX: usize = 200;

/// What `/queue ARG` asks for. Positions are the person's: 1 is the next to be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueAction {
    /// `/queue`: the list, to choose from.
    Show,
    /// `/queue edit [N]`: take prompt N back into the composer; Enter saves it in its place.
    Edit(usize),
    /// `/queue cancel [N]`: drop prompt N.
    Cancel(usize),
    /// `/queue send [N]`: stop the running turn and send prompt N next.
    Send(usize),
    /// `/queue resume`: let a paused queue flow again.
    Resume,
}

/// Parses `/queue`'s argument; `N` defaults to 1 (the next prompt).
pub fn parse_action(arg: Option<&str>) -> Result<QueueAction, String> {
    let usage = "usage: /queue [edit N|cancel N|send N|resume]";
    let Some(arg) = arg.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(QueueAction::Show);
    };
    let mut words = arg.split_whitespace();
    let verb = words.next().unwrap_or_default();
    let n = match words.next() {
        None => 1,
        Some(w) => match w.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => return Err(format!("{w:?} is not a queued prompt's number (1, 2, …)")),
        },
    };
    if words.next().is_some() {
        return Err(usage.into());
    }
    match verb {
        "edit" => Ok(QueueAction::Edit(n)),
        "cancel" | "drop" => Ok(QueueAction::Cancel(n)),
        "send" => Ok(QueueAction::Send(n)),
        "resume" if arg == "resume" => Ok(QueueAction::Resume),
        _ => Err(usage.into()),
    }
}

/// A queued prompt in one line: its first text line (control characters made visible, at
/// most `SUMMARY_MAX` chars) and what it carries besides.
pub fn summary(prompt: &Prompt) -> String {
    let text = prompt
        .parts
        .iter()
        .find_map(|p| match p {
            PromptPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = crate::markdown::sanitize(first.trim())
        .chars()
        .take(SUMMARY_MAX)
        .collect();
    if lines > 1 {
        out.push_str(&format!(" (+{} lines)", lines - 1));
    }
    let files = prompt
        .parts
        .iter()
        .filter(|p| matches!(p, PromptPart::File { .. }))
        .count();
    let images = prompt
        .parts
        .iter()
        .filter(|p| matches!(p, PromptPart::Image { .. }))
        .count();
    for (n, what) in [(files, "file"), (images, "image")] {
        if n > 0 {
            out.push_str(&format!(" +{n} {what}{}", if n == 1 { "" } else { "s" }));
        }
    }
    out
}

/// One row of the queue above the composer, as plain text for the renderer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueRow {
    /// Why the queue waits for the person, and how to go on.
    Paused(String),
    /// Queued prompt `position` (from 1); `editing` while the composer holds it.
    Item {
        /// Its place, 1 first.
        position: usize,
        /// [`summary`] of it.
        text: String,
        /// The composer holds it for editing.
        editing: bool,
    },
    /// How many more wait beyond the rows shown.
    More(usize),
}

/// The queued prompt the composer holds: Enter saves it in its place (PATCH), Esc drops the
/// edit and the item stays as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editing {
    /// Its session.
    pub session: SessionId,
    /// The item.
    pub id: QueuedId,
    /// Its images, which the composer cannot show again: saved with the edit unchanged.
    pub(crate) images: Vec<PromptPart>,
}

/// Every session's latest queue, and the edit under way.
#[derive(Debug, Default)]
pub struct Queues {
    by_session: HashMap<SessionId, PromptQueue>,
    /// Counts `queue.updated` events, so a load asked before one is known to be older.
    events: u64,
    pub(crate) editing: Option<Editing>,
}

impl Queues {
    /// How many `queue.updated` events came: a load asked before the last one is older.
    pub fn events_seen(&self) -> u64 {
        self.events
    }

    /// One more `queue.updated` event came.
    pub fn count_event(&mut self) {
        self.events += 1;
    }

    /// The queue of `session` as last heard (none: nothing queued).
    pub fn get(&self, session: &SessionId) -> Option<&PromptQueue> {
        self.by_session.get(session)
    }

    /// The queued prompts of `session`, next first.
    pub fn items(&self, session: &SessionId) -> &[QueuedPrompt] {
        self.get(session).map_or(&[], |q| q.items.as_slice())
    }

    /// `queue` as it is now (an empty, flowing queue is forgotten).
    pub fn set(&mut self, queue: PromptQueue) {
        if queue.items.is_empty() && queue.paused.is_none() {
            self.by_session.remove(&queue.session_id);
        } else {
            self.by_session.insert(queue.session_id.clone(), queue);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_arguments_parse_strictly() {
        assert_eq!(parse_action(None), Ok(QueueAction::Show));
        assert_eq!(parse_action(Some("  ")), Ok(QueueAction::Show));
        assert_eq!(parse_action(Some("edit")), Ok(QueueAction::Edit(1)));
        assert_eq!(parse_action(Some("edit 3")), Ok(QueueAction::Edit(3)));
        assert_eq!(parse_action(Some("cancel 2")), Ok(QueueAction::Cancel(2)));
        assert_eq!(parse_action(Some("send 1")), Ok(QueueAction::Send(1)));
        assert_eq!(parse_action(Some("resume")), Ok(QueueAction::Resume));
        assert!(parse_action(Some("resume 2")).is_err());
        assert!(parse_action(Some("edit 0")).unwrap_err().contains("number"));
        assert!(parse_action(Some("edit x")).is_err());
        assert!(parse_action(Some("send 1 2")).is_err());
        assert!(parse_action(Some("flush")).unwrap_err().contains("usage"));
    }

    #[test]
    fn a_summary_is_one_safe_line_with_what_it_carries() {
        let prompt = Prompt {
            parts: vec![
                PromptPart::Text {
                    text: "\n fix the \u{1b}[2Jtests \nthen more\nand more".into(),
                },
                PromptPart::File {
                    path: "a.rs".into(),
                },
            ],
        };
        let s = summary(&prompt);
        assert!(!s.contains('\u{1b}'), "{s:?}");
        assert!(s.starts_with("fix the "), "{s:?}");
        assert!(s.ends_with("tests (+2 lines) +1 file"), "{s:?}");
        let long = Prompt {
            parts: vec![PromptPart::Text {
                text: "x".repeat(10_000),
            }],
        };
        assert_eq!(summary(&long).chars().count(), SUMMARY_MAX);
    }
}
