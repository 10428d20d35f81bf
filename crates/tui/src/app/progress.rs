//! A running turn's progress in the app: the clock it is drawn with, elapsed times and the
//! changes shown when a turn ends (the tracking is `crate::progress`).

use crate::app::{App, NoticeKind, Route};
use ax_protocol::{SessionId, SessionStatus};
use std::time::Instant;

use crate::progress::{Change, Progress, format_duration};

impl App {
    /// The clock drawing uses (set by [`App::tick`]).
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Turn timing per session (for elapsed times and "finished" notices).
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Whether the screen changes with time alone (a spinner turns).
    pub fn animating(&self) -> bool {
        self.progress.any_running()
    }

    /// A session's status changed from `old` to `new`: keep the timing, and tell the person
    /// when a session they are not looking at finishes or asks for approval.
    pub(crate) fn status_changed(
        &mut self,
        id: &SessionId,
        old: Option<SessionStatus>,
        new: SessionStatus,
    ) {
        let change = self.progress.observe(id, old, new, self.clock.now());
        let on_screen = self.route == Route::Session(id.clone());
        // A session this TUI is creating from home opens as soon as the backend answers:
        // the person is as good as looking at it.
        let looking = on_screen || self.opening.as_ref() == Some(id);
        if new.is_active() && !old.is_some_and(SessionStatus::is_active) {
            self.board.turn_started(id);
        }
        let failed = matches!(change, Change::Finished(_)) && self.board.turn_ended(id, looking);
        if new == SessionStatus::Idle {
            self.aborting.remove(id);
        }
        let title = self
            .sessions
            .iter()
            .find(|s| &s.id == id)
            .map(|s| s.title.clone())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| id.to_string());
        let what = match change {
            Change::Finished(took) if failed => {
                Some(format!("“{title}” failed after {}", format_duration(took)))
            }
            Change::Finished(took) => {
                Some(format!("“{title}” finished in {}", format_duration(took)))
            }
            Change::AskedApproval => Some(format!("“{title}” asks for approval")),
            Change::Started | Change::None => None,
        };
        // Rung when the person is not looking: another session, or the terminal has lost
        // the focus (docs/tui.md §2c).
        if let Some(what) = &what
            && !(looking && self.focused)
        {
            self.ring(what);
        }
        if !on_screen && looking {
            return;
        }
        if on_screen {
            if let Change::Finished(took) = change {
                let now_ms = self.wall_ms();
                self.transcript
                    .push_turn_end(&crate::transcript::turn_end_text(
                        took.as_millis() as i64,
                        now_ms,
                    ));
                // A delta seen while the session loaded may have been counted twice: the
                // stored turn is the truth.
                if self.transcript.uncertain() {
                    self.load_transcript(id.clone());
                }
            }
            return;
        }
        if let Some(what) = what {
            let kind = if failed {
                NoticeKind::Error
            } else {
                NoticeKind::Info
            };
            self.notify(kind, what);
        }
    }
}
