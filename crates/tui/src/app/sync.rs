//! The backend side of the state: the event stream's connection, full resyncs, streamed
//! events and the answers to background jobs. Stale answers are dropped by generation.

use std::collections::HashSet;
use std::time::Duration;

use ax_protocol::{Event, Message, Permission, PermissionState, Session, SessionId};

use crate::app::{App, Connection, Effect, NoticeKind, Overlay, Route};
use crate::transcript::{PartOutcome, Transcript};

/// Events buffered while a load is in flight; beyond this the load is simply repeated.
const MAX_BUFFERED_EVENTS: usize = 10_000;

impl App {
    /// The event stream is (re)connected: everything is reloaded, since events were missed.
    pub fn on_stream_connected(&mut self) {
        self.connection = Connection::Connected;
        self.resync();
    }

    /// The event stream is down (for `down_for` so far); the client reconnects with backoff.
    /// Called again as time passes, to update the display.
    pub fn on_stream_down(&mut self, down_for: Duration) {
        self.connection = match self.connection {
            Connection::Connecting => Connection::Connecting,
            _ => Connection::Reconnecting { down_for },
        };
        self.synced = false;
        self.transcript_loaded = false;
        self.sync_buffer = None;
        self.transcript_buffer = None;
    }

    pub(crate) fn next_gen(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// Reloads the session list and, on the session route, the transcript.
    pub(crate) fn resync(&mut self) {
        self.sync_gen = self.next_gen();
        self.sync_buffer = Some(Vec::new());
        self.effects.push(Effect::Resync {
            generation: self.sync_gen,
        });
        if let Route::Session(id) = self.route.clone() {
            self.load_transcript(id.clone());
            self.load_queue(id);
        }
    }

    pub(crate) fn load_transcript(&mut self, session: SessionId) {
        self.transcript_gen = self.next_gen();
        self.transcript_loaded = false;
        self.transcript_buffer = Some(Vec::new());
        self.effects.push(Effect::LoadTranscript {
            session,
            generation: self.transcript_gen,
        });
    }

    /// The answer to [`Effect::Resync`].
    pub fn on_synced(
        &mut self,
        generation: u64,
        result: Result<(Vec<Session>, Vec<Permission>), String>,
    ) {
        if generation != self.sync_gen || self.connection != Connection::Connected {
            return;
        }
        match result {
            Ok((sessions, permissions)) => {
                let before: HashSet<&SessionId> = self.sessions.iter().map(|s| &s.id).collect();
                if sessions.len() != before.len()
                    || sessions.iter().any(|s| !before.contains(&s.id))
                {
                    self.sessions_epoch += 1;
                }
                // Timing only: what changed while the stream was down is not announced.
                for s in &sessions {
                    let old = self
                        .sessions
                        .iter()
                        .find(|o| o.id == s.id)
                        .map(|o| o.status);
                    self.progress.observe(&s.id, old, s.status, self.now());
                    if s.status == ax_protocol::SessionStatus::Idle {
                        self.aborting.remove(&s.id);
                    }
                }
                self.progress
                    .retain(|id| sessions.iter().any(|s| &s.id == id));
                self.sessions = sessions;
                self.permissions = permissions
                    .into_iter()
                    .filter(|p| p.state == PermissionState::Pending)
                    .collect();
                self.sort_sessions();
                self.sync_terminals();
                self.synced = true;
                if self.overlay == Some(Overlay::Startup) {
                    self.overlay = None;
                }
                for event in self.sync_buffer.take().unwrap_or_default() {
                    self.apply_session_event(event);
                }
                if self.selected_index().is_none() {
                    self.selected = self.sessions.first().map(|s| s.id.clone());
                }
                if let Route::Session(id) = &self.route
                    && !self.sessions.iter().any(|s| &s.id == id)
                {
                    self.go_home();
                    self.notify(NoticeKind::Info, "that session no longer exists");
                }
                self.keep_selection_visible();
            }
            Err(e) => {
                self.sync_buffer = None;
                self.notify(NoticeKind::Error, format!("could not load sessions: {e}"));
            }
        }
    }

    /// The answer to [`Effect::LoadTranscript`].
    pub fn on_transcript(&mut self, generation: u64, result: Result<Vec<Message>, String>) {
        if generation != self.transcript_gen {
            return;
        }
        match result {
            Ok(messages) => {
                self.sync_terminals();
                // A reload of the same session keeps what the person opened and focused.
                self.transcript = Transcript::reloaded(
                    &messages,
                    self.size.0.saturating_sub(2),
                    &self.transcript,
                );
                self.transcript_loaded = true;
                // A walk or search under way keeps its entries (a reload mid-walk would
                // pull the text from under the person).
                if !self.recall.history().walking() && !self.recall.searching() {
                    self.recall.load(&messages);
                }
                let buffered = self.transcript_buffer.take().unwrap_or_default();
                for event in buffered {
                    self.apply_message_event(event);
                }
                self.refresh_find();
            }
            Err(e) => {
                self.transcript_buffer = None;
                self.notify(
                    NoticeKind::Error,
                    format!("could not load the session: {e}"),
                );
            }
        }
    }

    /// The answer to [`Effect::Submit`]: the session the prompt went to, or why it failed.
    pub fn on_submitted(&mut self, generation: u64, result: Result<SessionId, String>) {
        self.on_sent(generation, result.map(|id| (id, None)));
    }

    /// [`App::on_submitted`] that also says where a queued prompt waits (`Some(position)`,
    /// from 0) rather than having started a turn.
    pub fn on_sent(&mut self, generation: u64, result: Result<(SessionId, Option<usize>), String>) {
        if generation != self.submit_gen {
            return;
        }
        self.composer.submitting = false;
        self.opening = None;
        match result {
            Ok((id, queued)) => {
                self.composer.clear();
                if let Some(position) = queued {
                    self.notify(
                        NoticeKind::Info,
                        format!(
                            "queued as prompt {}: it is sent when the turn ends (/queue)",
                            position + 1
                        ),
                    );
                }
                if self.route == Route::Home {
                    self.open(id);
                }
            }
            // The draft and attachments stay, so nothing the person wrote is lost.
            Err(e) => self.notify(NoticeKind::Error, format!("not sent: {e}")),
        }
    }

    /// The answer to [`Effect::CreateSession`].
    pub fn on_created(&mut self, generation: u64, result: Result<Session, String>) {
        if generation != self.submit_gen {
            return;
        }
        self.composer.submitting = false;
        self.opening = None;
        match result {
            Ok(session) => {
                let id = session.id.clone();
                self.upsert(session);
                self.open(id);
            }
            Err(e) => self.notify(
                NoticeKind::Error,
                format!("could not create a session: {e}"),
            ),
        }
    }

    /// The answer to [`Effect::SetMode`] and [`Effect::RevokeStanding`]: the session as it is
    /// now (the event stream brings the same), or why not.
    pub fn on_session_changed(&mut self, result: Result<Session, String>) {
        match result {
            Ok(session) => self.upsert(session),
            Err(e) => self.notify(NoticeKind::Error, e),
        }
    }

    /// A permission reply failed; the dialog comes back.
    pub fn on_reply_failed(&mut self, permission_id: &ax_protocol::PermissionId, error: String) {
        self.replying.remove(permission_id);
        self.notify(NoticeKind::Error, format!("reply failed: {error}"));
    }

    /// One event from the backend stream.
    pub fn on_event(&mut self, event: Event) {
        // Every session's message events, not only the open one's: a failure marks the list.
        let sessions = &self.sessions;
        self.board.observe(&event, |id| {
            sessions.iter().any(|s| &s.id == id && s.agent == "shell")
        });
        match event {
            Event::Reset => self.resync(),
            Event::MessageCreated { .. }
            | Event::MessagePart { .. }
            | Event::MessageDelta { .. }
            | Event::MessageEnded { .. } => self.apply_message_event(event),
            other => {
                if let Some(buf) = &mut self.sync_buffer {
                    if buf.len() >= MAX_BUFFERED_EVENTS {
                        self.resync();
                    } else {
                        buf.push(other);
                    }
                } else {
                    self.apply_session_event(other);
                }
            }
        }
    }

    pub(crate) fn apply_session_event(&mut self, event: Event) {
        match event {
            Event::SessionCreated { session } | Event::SessionUpdated { session } => {
                self.upsert(session);
            }
            Event::SessionDeleted { session_id } => {
                self.deleting.remove(&session_id);
                self.board.forget(&session_id);
                let before = self.sessions.len();
                self.sessions.retain(|s| s.id != session_id);
                if self.sessions.len() != before {
                    self.sessions_epoch += 1;
                }
                self.permissions.retain(|p| p.session_id != session_id);
                if self.route == Route::Session(session_id.clone()) {
                    self.go_home();
                    self.notify(NoticeKind::Info, "the open session was deleted");
                }
                if self.selected.as_ref() == Some(&session_id) {
                    self.selected = self.sessions.first().map(|s| s.id.clone());
                }
            }
            Event::SessionStatus { session_id, status } => {
                if let Some(s) = self.sessions.iter_mut().find(|s| s.id == session_id) {
                    let old = s.status;
                    s.status = status;
                    if old != status {
                        self.status_changed(&session_id, Some(old), status);
                    }
                }
            }
            Event::PermissionAsked { permission } => {
                if permission.state == PermissionState::Pending
                    && !self.permissions.iter().any(|p| p.id == permission.id)
                {
                    self.permissions.push(permission);
                }
            }
            Event::PermissionReplied { permission_id, .. } => {
                self.permissions.retain(|p| p.id != permission_id);
                self.replying.remove(&permission_id);
            }
            Event::QueueUpdated { queue } => self.queue_event(queue),
            Event::Reset
            | Event::MessageCreated { .. }
            | Event::MessagePart { .. }
            | Event::MessageDelta { .. }
            | Event::MessageEnded { .. } => {}
        }
        self.sort_sessions();
        self.keep_selection_visible();
        self.sync_terminals();
    }

    pub(crate) fn apply_message_event(&mut self, event: Event) {
        let Route::Session(open) = &self.route else {
            return;
        };
        let session = match &event {
            Event::MessageCreated { message } => &message.session_id,
            Event::MessagePart { session_id, .. }
            | Event::MessageDelta { session_id, .. }
            | Event::MessageEnded { session_id, .. } => session_id,
            _ => return,
        };
        if session != open {
            return;
        }
        if let Some(buf) = &mut self.transcript_buffer {
            if buf.len() < MAX_BUFFERED_EVENTS {
                buf.push(event);
            } else {
                let id = open.clone();
                self.load_transcript(id);
            }
            return;
        }
        let before = self.transcript.total_rows();
        let outcome = match &event {
            Event::MessageCreated { message } => self.transcript.add_message(message),
            Event::MessagePart {
                message_id,
                index,
                part,
                ..
            } => self
                .transcript
                .apply_part(message_id.as_str(), *index, part),
            Event::MessageDelta {
                message_id,
                seq,
                delta,
                ..
            } => self
                .transcript
                .apply_delta(message_id.as_str(), *seq, delta.clone()),
            Event::MessageEnded {
                message_id, ended, ..
            } => {
                self.transcript.end_turn(message_id.as_str(), *ended);
                PartOutcome::Applied
            }
            _ => PartOutcome::Duplicate,
        };
        if outcome == PartOutcome::NeedsReload {
            let id = open.clone();
            self.load_transcript(id);
        } else if self.scroll > 0 {
            // Keep the person's place while output streams in below it.
            self.scroll += self.transcript.total_rows().saturating_sub(before);
        }
        self.refresh_find();
    }

    pub(crate) fn upsert(&mut self, session: Session) {
        let old = self
            .sessions
            .iter()
            .find(|s| s.id == session.id)
            .map(|s| s.status);
        if old.is_none() && self.composer.submitting && self.route == Route::Home {
            self.opening = Some(session.id.clone());
        }
        if old.unwrap_or(ax_protocol::SessionStatus::Idle) != session.status {
            self.status_changed(&session.id, old, session.status);
        }
        match self.sessions.iter_mut().find(|s| s.id == session.id) {
            Some(s) => *s = session,
            None => {
                self.sessions.push(session);
                self.sessions_epoch += 1;
            }
        }
        self.sort_sessions();
        if self.selected.is_none() {
            self.selected = self.sessions.first().map(|s| s.id.clone());
        }
    }
}
