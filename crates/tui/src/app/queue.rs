//! The prompt queue in the app: loading and applying `queue.updated`, the tray, `/queue` and
//! its keys, editing an item in place (the queue's state is `crate::queue`).

use crate::app::{App, Effect, Modal, NoticeKind, Route};
use crate::input::{Key, KeyCode};
use ax_protocol::{
    PromptPart, SessionId, SessionStatus,
    queue::{PromptQueue, QueuedPrompt},
};

use crate::queue::{Editing, QueueAction, QueueRow, TRAY_QUEUE_ROWS, parse_action, summary};

impl App {
    /// The open session's queue, when something is queued.
    pub fn open_queue(&self) -> Option<&PromptQueue> {
        match &self.route {
            Route::Session(id) => self.queues.get(id).filter(|q| !q.items.is_empty()),
            Route::Home => None,
        }
    }

    /// The queued prompt the composer holds for editing.
    pub fn editing_queued(&self) -> Option<&Editing> {
        self.queues.editing.as_ref()
    }

    /// The rows above the composer: the pause (if any), then the first
    /// [`TRAY_QUEUE_ROWS`] prompts, then how many more.
    pub fn queue_rows(&self) -> Vec<QueueRow> {
        let Some(q) = self.open_queue() else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        if let Some(why) = &q.paused {
            rows.push(QueueRow::Paused(format!(
                "queue paused: {} · /queue resume",
                crate::markdown::sanitize(why)
            )));
        }
        let editing = self.queues.editing.as_ref().map(|e| &e.id);
        let shown = if q.items.len() > TRAY_QUEUE_ROWS {
            TRAY_QUEUE_ROWS - 1
        } else {
            q.items.len()
        };
        for (i, item) in q.items.iter().take(shown).enumerate() {
            rows.push(QueueRow::Item {
                position: i + 1,
                text: summary(&item.prompt),
                editing: editing == Some(&item.id),
            });
        }
        if q.items.len() > shown {
            rows.push(QueueRow::More(q.items.len() - shown));
        }
        rows
    }

    /// Whether Enter queues the prompt instead of sending it: the open session runs a turn
    /// (or waits for an approval), or prompts already wait (a prompt never overtakes them).
    pub(crate) fn should_queue(&self) -> bool {
        self.open_session().is_some_and(|s| {
            s.status != SessionStatus::Idle || !self.queues.items(&s.id).is_empty()
        })
    }

    /// A prompt with images cannot wait in the queue (a queued prompt is at most 32 KiB of
    /// JSON, docs/backend.md §3): says so before sending, and the draft and chips stay.
    pub(crate) fn refuse_queued_images(&mut self) -> bool {
        let refuse = self.should_queue() && !self.composer.images().is_empty();
        if refuse {
            self.notify(
                NoticeKind::Error,
                "a prompt with images cannot be queued: send it when the turn has ended",
            );
        }
        refuse
    }

    /// Asks for `session`'s queue (on opening it, and after a resync: events were missed).
    pub(crate) fn load_queue(&mut self, session: SessionId) {
        self.effects.push(Effect::LoadQueue {
            session,
            generation: self.queues.events_seen(),
        });
    }

    /// The answer to [`Effect::LoadQueue`]; dropped when a `queue.updated` came since.
    pub fn on_queue_loaded(&mut self, generation: u64, result: Result<PromptQueue, String>) {
        if generation != self.queues.events_seen() {
            return;
        }
        match result {
            Ok(queue) => self.queues.set(queue),
            Err(e) => self.notify(NoticeKind::Error, format!("could not load the queue: {e}")),
        }
    }

    /// A `queue.updated` event: the whole queue as it is now.
    pub(crate) fn queue_event(&mut self, queue: PromptQueue) {
        self.queues.count_event();
        if let Some(e) = &self.queues.editing
            && e.session == queue.session_id
            && !queue.items.iter().any(|i| i.id == e.id)
        {
            self.queues.editing = None;
            self.notify(
                NoticeKind::Info,
                "the prompt you are editing left the queue (sent or cancelled); \
                 Enter sends your text as a new prompt",
            );
        }
        self.queues.set(queue);
    }

    /// The answer to a cancel, a send now or a resume: only a failure needs saying, the
    /// queue itself comes as `queue.updated`.
    pub fn on_queue_changed(&mut self, result: Result<(), String>) {
        if let Err(e) = result {
            self.notify(NoticeKind::Error, e);
        }
    }

    /// `/queue [ARG]`.
    pub(crate) fn queue_command(&mut self, arg: Option<String>) {
        match parse_action(arg.as_deref()) {
            Ok(action) => self.queue_act(action),
            Err(e) => self.notify(NoticeKind::Error, e),
        }
    }

    pub(crate) fn queue_act(&mut self, action: QueueAction) {
        let Some(s) = self.open_session() else {
            self.notify(NoticeKind::Error, "/queue works in a session");
            return;
        };
        let session = s.id.clone();
        let items = self.queues.items(&session).to_vec();
        if items.is_empty() {
            self.notify(
                NoticeKind::Info,
                "nothing is queued (Enter while a turn runs queues the prompt)",
            );
            return;
        }
        let pick = |n: usize| items.get(n.wrapping_sub(1)).cloned();
        let count = items.len();
        let missing = |n: usize| format!("there is no queued prompt {n} ({count} queued)");
        match action {
            QueueAction::Show => self.modal = Some(Modal::Queue { selected: 0 }),
            QueueAction::Resume => {
                if self
                    .queues
                    .get(&session)
                    .is_some_and(|q| q.paused.is_some())
                {
                    self.effects.push(Effect::ResumeQueue { session });
                } else {
                    self.notify(NoticeKind::Info, "the queue is not paused");
                }
            }
            QueueAction::Cancel(n) => match pick(n) {
                Some(item) => {
                    if self
                        .queues
                        .editing
                        .as_ref()
                        .is_some_and(|e| e.id == item.id)
                    {
                        self.queues.editing = None;
                        self.composer.clear();
                    }
                    self.effects.push(Effect::CancelQueued {
                        session,
                        id: item.id,
                    });
                    self.notify(NoticeKind::Info, format!("cancelling queued prompt {n}…"));
                }
                None => self.notify(NoticeKind::Error, missing(n)),
            },
            QueueAction::Send(n) => match pick(n) {
                Some(item) => {
                    let busy = self.open_session_busy();
                    self.effects.push(Effect::SendQueuedNow {
                        session,
                        id: item.id,
                    });
                    let what = if busy {
                        format!("stopping the turn to send queued prompt {n} now…")
                    } else {
                        format!("sending queued prompt {n} now…")
                    };
                    self.notify(NoticeKind::Info, what);
                }
                None => self.notify(NoticeKind::Error, missing(n)),
            },
            QueueAction::Edit(n) => match pick(n) {
                Some(item) => self.edit_queued(session, item),
                None => self.notify(NoticeKind::Error, missing(n)),
            },
        }
    }

    /// Takes a queued prompt back into the composer (text and file chips); its images stay
    /// with it. Refused over a draft, so nothing typed is lost.
    fn edit_queued(&mut self, session: SessionId, item: QueuedPrompt) {
        if self.composer.has_draft() || self.composer.has_attachments() {
            self.notify(
                NoticeKind::Error,
                "the composer holds a draft: send or clear it (^C) before editing a queued prompt",
            );
            return;
        }
        let mut images = Vec::new();
        let mut text = String::new();
        for part in item.prompt.parts {
            match part {
                PromptPart::Text { text: t } => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t);
                }
                PromptPart::File { path } => {
                    // Checked when it was queued; the backend checks it again on save.
                    let _ = self.composer.attach(&path);
                }
                image @ PromptPart::Image { .. } => images.push(image),
            }
        }
        self.composer.paste(&text);
        self.queues.editing = Some(Editing {
            session,
            id: item.id,
            images,
        });
        self.notify(
            NoticeKind::Info,
            "editing a queued prompt: Enter saves it in its place, Esc leaves it as it was",
        );
    }

    /// Enter while editing a queued prompt: saves `parts` in its place. Returns whether the
    /// submission was taken here (an edit of another session's item is dropped first).
    pub(crate) fn save_queued_edit(&mut self, mut parts: Vec<PromptPart>) -> bool {
        let Some(editing) = self.queues.editing.clone() else {
            return false;
        };
        if self.route != Route::Session(editing.session.clone()) {
            self.queues.editing = None;
            return false;
        }
        parts.extend(editing.images);
        self.composer.submitting = true;
        self.submit_gen = self.next_gen();
        self.effects.push(Effect::EditQueued {
            session: editing.session,
            id: editing.id,
            parts,
            generation: self.submit_gen,
        });
        true
    }

    /// Esc while editing: the edit is dropped, the queued prompt stays as it was.
    pub(crate) fn drop_queued_edit(&mut self) {
        if self.queues.editing.take().is_some() {
            self.composer.clear();
            self.notify(
                NoticeKind::Info,
                "edit dropped; the queued prompt is unchanged",
            );
        }
    }

    /// The answer to [`Effect::EditQueued`]. When the item has left the queue meanwhile the
    /// text stays in the composer, to send as a new prompt.
    pub fn on_queue_edited(&mut self, generation: u64, result: Result<(), (bool, String)>) {
        if generation != self.submit_gen {
            return;
        }
        self.composer.submitting = false;
        match result {
            Ok(()) => {
                self.queues.editing = None;
                self.composer.clear();
                self.notify(NoticeKind::Info, "queued prompt saved");
            }
            Err((gone, e)) => {
                if gone {
                    self.queues.editing = None;
                    self.notify(
                        NoticeKind::Error,
                        "that prompt left the queue (sent or cancelled); your text stays: \
                         Enter sends it as a new prompt",
                    );
                } else {
                    self.notify(NoticeKind::Error, format!("not saved: {e}"));
                }
            }
        }
    }

    /// Keys of the `/queue` list: ↑↓ choose, Enter or e edit, s send now, x or Delete
    /// cancel, r resume, Esc close.
    pub(crate) fn queue_modal_key(&mut self, mut selected: usize, key: Key) -> Option<Modal> {
        let count = self.open_queue().map_or(0, |q| q.items.len());
        if count == 0 {
            return None;
        }
        selected = selected.min(count - 1);
        let n = selected + 1;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return None,
            KeyCode::Up => selected = selected.saturating_sub(1),
            KeyCode::Down => selected = (selected + 1).min(count - 1),
            KeyCode::Enter | KeyCode::Char('e') => {
                self.queue_act(QueueAction::Edit(n));
                return None;
            }
            KeyCode::Char('s') => {
                self.queue_act(QueueAction::Send(n));
                return None;
            }
            KeyCode::Char('x') | KeyCode::Char('c') | KeyCode::Delete => {
                self.queue_act(QueueAction::Cancel(n));
                return (count > 1).then_some(Modal::Queue {
                    selected: selected.min(count - 2),
                });
            }
            KeyCode::Char('r') => self.queue_act(QueueAction::Resume),
            _ => {}
        }
        Some(Modal::Queue { selected })
    }
}
