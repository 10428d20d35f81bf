//! The UI state: a plain struct, no terminal types, driven by tests and by the owner loop.
//!
//! Everything that needs I/O leaves as an [`Effect`] (drained with [`App::take_effects`]) and
//! comes back as a result method (`on_*`), tagged with the generation it was asked under so a
//! stale answer is dropped. Key and mouse handling lives in `keys.rs`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ax_protocol::{
    AgentInfo, Event, Permission, PermissionReply, PermissionState, PromptPart, Session, SessionId,
    SessionStatus,
};

use ax_tuimcp::{Blockers, GuardInputs, Location};

use crate::command::{Command, Invocation, SharingState};
use crate::composer::Composer;
use crate::layout::{COMPOSER_MAX_ROWS, Layout};
use crate::transcript::Transcript;

/// How long a notice stays on the status line.
pub const NOTICE_TTL: Duration = Duration::from_secs(5);

/// Which screen is showing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The session list.
    Home,
    /// One session's transcript and composer.
    Session(SessionId),
}

/// A full-screen overlay that hides everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    /// Connecting and loading the sessions.
    Startup,
    /// Shutting down: revoking sharing, closing the stream.
    Exit,
}

/// The backend event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// Not connected yet.
    Connecting,
    /// Events are flowing.
    Connected,
    /// The client reconnects by itself with backoff; this is how long it has been down.
    Reconnecting {
        /// Since the stream went down.
        down_for: Duration,
    },
}

/// A modal the person opened. (The approval dialog is derived from pending permissions.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modal {
    /// The command palette.
    Palette {
        /// What the person typed to filter commands.
        query: String,
        /// The highlighted row among the matches.
        selected: usize,
    },
    /// The key and command reference.
    Help,
    /// Ctrl+C while a session is busy: quitting would leave it running unattended.
    ConfirmQuit,
    /// The MCP client configuration for this TUI's endpoint (`/tui-mcp-config`).
    McpConfig,
    /// "Delete this session?" (y/Enter deletes, n/Esc keeps it).
    ConfirmDelete {
        /// The session to delete.
        session: SessionId,
        /// Its title, shown in the question.
        title: String,
    },
    /// The agent for a new session (`/new`, Ctrl+N): the configured agents, the default first
    /// and preselected; Enter creates the session.
    AgentPicker {
        /// The agents as `GET /agent` listed them.
        agents: Vec<AgentInfo>,
        /// The backend's default agent.
        default: String,
        /// The highlighted row.
        selected: usize,
    },
    /// The open session's agent and its state (`/agent`).
    AgentInfo,
    /// The modes the open session's agent offers (`/mode`); Enter switches.
    Modes {
        /// The highlighted row.
        selected: usize,
    },
    /// The agent's session options (`/config`, `/model`): the list, or one option's choices.
    Config {
        /// The option whose choices show; `None`: the list of options.
        option: Option<String>,
        /// The highlighted row.
        selected: usize,
    },
    /// The open session's queued prompts (`/queue`): edit, cancel, send now, resume.
    Queue {
        /// The highlighted row.
        selected: usize,
    },
}

/// Who a notice is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// Something the TUI did or noticed.
    Info,
    /// Something failed.
    Error,
    /// An agent navigated this TUI through TUIMCP.
    Agent,
}

/// A line on the status bar that expires after [`NOTICE_TTL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Who it is from (it is styled by this).
    pub kind: NoticeKind,
    /// One line.
    pub text: String,
    /// When it was posted.
    pub at: Instant,
}

/// The approval dialog's three answers, in display order.
pub const APPROVAL_CHOICES: [(PermissionReply, &str); 3] = [
    (PermissionReply::Once, "Allow once"),
    (PermissionReply::Always, "Always allow"),
    (PermissionReply::Reject, "Reject"),
];

/// Work for the owner loop. Results come back through the `on_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Load the session list and pending permissions.
    Resync {
        /// Results of an older resync are dropped.
        generation: u64,
    },
    /// Load a session's messages.
    LoadTranscript {
        /// The session to load.
        session: SessionId,
        /// Results for a route left since are dropped.
        generation: u64,
    },
    /// Send a prompt; `session: None` creates a session for it first.
    Submit {
        /// The target session, or `None` for a new one.
        session: Option<SessionId>,
        /// The prompt's text and attachments.
        parts: Vec<PromptPart>,
        /// Results for a route left since are dropped.
        generation: u64,
        /// Through `POST /session/{id}/queue`: a turn runs or prompts wait (docs/tui.md §3d).
        queue: bool,
    },
    /// Change one of the agent's session options (`POST /session/{id}/config`).
    SetConfig {
        /// The session.
        session: SessionId,
        /// The option's id.
        config_id: String,
        /// A select's value id or a boolean's state.
        value: ax_protocol::ConfigValue,
    },
    /// Find the project's files matching `query` for the `@` picker (`GET /find/file`).
    FindFiles {
        /// What follows the `@`.
        query: String,
        /// Answers for an older query are dropped.
        generation: u64,
    },
    /// Load a session's prompt queue.
    LoadQueue {
        /// The session.
        session: SessionId,
        /// The `queue.updated` count when asked; an answer older than an event is dropped.
        generation: u64,
    },
    /// Replace a queued prompt with what the composer holds.
    EditQueued {
        /// Its session.
        session: SessionId,
        /// The item.
        id: ax_protocol::QueuedId,
        /// The new prompt.
        parts: Vec<PromptPart>,
        /// The composer's submission generation.
        generation: u64,
    },
    /// Cancel a queued prompt.
    CancelQueued {
        /// Its session.
        session: SessionId,
        /// The item.
        id: ax_protocol::QueuedId,
    },
    /// Send a queued prompt now (the running turn is stopped first).
    SendQueuedNow {
        /// Its session.
        session: SessionId,
        /// The item.
        id: ax_protocol::QueuedId,
    },
    /// Let a paused queue flow again.
    ResumeQueue {
        /// The session.
        session: SessionId,
    },
    /// List the configured agents, for the new-session picker.
    ListAgents {
        /// Results for a route left since are dropped.
        generation: u64,
    },
    /// Create an empty session with `agent` (`None`: the backend's default) and open it.
    CreateSession {
        /// Results for a route left since are dropped.
        generation: u64,
        /// The agent the person picked.
        agent: Option<String>,
    },
    /// Switch the session's agent to another of its modes.
    SetMode {
        /// The session whose agent switches.
        session: SessionId,
        /// One of the modes the agent offers.
        mode_id: String,
    },
    /// Forget every standing "always" answer of the session.
    RevokeStanding {
        /// The session whose answers are forgotten.
        session: SessionId,
    },
    /// Answer a permission request.
    ReplyPermission {
        /// The session that asks.
        session: SessionId,
        /// The request.
        permission_id: ax_protocol::PermissionId,
        /// The person's answer.
        reply: PermissionReply,
        /// The exact option chosen, for an ACP agent (docs/agents.md §5).
        option_id: Option<String>,
    },
    /// Stop the session's running turn.
    Abort {
        /// The session to stop.
        session: SessionId,
    },
    /// Check an attachment at once: it exists, is a file, and is inside the project.
    CheckAttachment {
        /// The project directory the path must stay inside.
        workspace: String,
        /// The path as typed.
        path: String,
    },
    /// Read an image for the next prompt (`/image PATH`): a regular file, relative to the
    /// project or absolute, checked by size and magic bytes.
    LoadImage {
        /// The project directory a relative path starts from.
        workspace: String,
        /// The path as typed.
        path: String,
    },
    /// Give a session a new title.
    RenameSession {
        /// The session.
        session: SessionId,
        /// The new title.
        title: String,
    },
    /// Delete a session (the person confirmed).
    DeleteSession {
        /// The session.
        session: SessionId,
    },
    /// Close the TUIMCP endpoint for good.
    RevokeSharing,
    /// Ring the terminal: write `sequence` (BEL, or an OSC 9 / OSC 777 notification).
    Ring {
        /// The bytes, already built and sanitised by `notify.rs`.
        sequence: String,
    },
    /// Clear the terminal and draw everything again (Ctrl+L).
    Redraw,
    /// Capture the mouse, or leave it to the terminal (its own selection then works).
    SetMouseCapture {
        /// Capture (`true`) or release.
        on: bool,
    },
    /// Put `text` on the clipboard through the terminal (OSC 52).
    CopyToClipboard {
        /// What to copy.
        text: String,
    },
    /// Shut down (the exit overlay is showing).
    Quit,
}

/// The TUIMCP bar's content while sharing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sharing {
    /// Absolute path of `endpoint.json`.
    pub endpoint_path: String,
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    pub(crate) route: Route,
    pub(crate) overlay: Option<Overlay>,
    pub(crate) connection: Connection,
    pub(crate) synced: bool,
    pub(crate) sessions: Vec<Session>,
    pub(crate) selected: Option<SessionId>,
    pub(crate) list_offset: usize,
    pub(crate) permissions: Vec<Permission>,
    pub(crate) replying: HashSet<ax_protocol::PermissionId>,
    /// The answer the person moved to; `None` until they do (then the default shows:
    /// allow once, never an "always").
    /// Keyed by the request it was made on: a move never carries over to another request.
    pub(crate) approval_choice: Option<(ax_protocol::PermissionId, usize)>,
    /// Approvals the person left for later (Esc): the dialog stays closed for them until the
    /// session is opened again or Enter on an empty prompt asks for it.
    pub(crate) deferred: HashSet<ax_protocol::PermissionId>,
    /// The session whose next prompt is the feedback an agent's option asked for.
    pub(crate) feedback_for: Option<SessionId>,
    /// Sessions whose deletion was asked for and has not completed (shown as "deleting…").
    pub(crate) deleting: HashSet<SessionId>,
    pub(crate) transcript: Transcript,
    pub(crate) transcript_loaded: bool,
    pub(crate) scroll: usize,
    pub(crate) composer: Composer,
    pub(crate) modal: Option<Modal>,
    pub(crate) sharing: Option<Sharing>,
    /// Sharing was on and has ended (revoked here, or the endpoint failed).
    pub(crate) sharing_revoked: bool,
    pub(crate) notice: Option<Notice>,
    pub(crate) workspace: String,
    pub(crate) size: (u16, u16),
    pub(crate) generation: u64,
    pub(crate) sync_gen: u64,
    pub(crate) transcript_gen: u64,
    pub(crate) submit_gen: u64,
    pub(crate) agents_gen: u64,
    /// Session events held back while a resync is in flight, replayed on top of its answer.
    pub(crate) sync_buffer: Option<Vec<Event>>,
    /// Message events of the open session held back while its transcript loads.
    pub(crate) transcript_buffer: Option<Vec<Event>>,
    pub(crate) effects: Vec<Effect>,
    /// The clock drawing and timing use; set by [`App::tick`].
    pub(crate) now: Instant,
    /// The wall-clock time (Unix ms) at one `now`, read once: wall times are derived from
    /// ticks like every other time, so a test that drives `tick` drives them too.
    wall_anchor: (Instant, i64),
    pub(crate) progress: crate::progress::Progress,
    /// Sessions whose abort was asked for and that are not idle yet.
    pub(crate) aborting: HashSet<SessionId>,
    /// (permission id, rows scrolled) of the approval dialog.
    pub(crate) approval_scroll: (String, usize),
    pub(crate) help_scroll: usize,
    /// The open session's prompts, for ↑/↓ and Ctrl+R (`recall.rs`).
    pub(crate) history: crate::history::History,
    /// The Ctrl+R search, while one is under way.
    pub(crate) history_search: Option<crate::history::Search>,
    /// How the terminal is rung (`notify.rs`): the mode, what it rings with, and what
    /// `auto` resolved to.
    pub(crate) notify_mode: crate::notify::NotifyMode,
    pub(crate) ring: crate::notify::Ring,
    pub(crate) ring_auto: crate::notify::Ring,
    /// The session a prompt submitted at home created, until the submission answers and
    /// opens it (its first events must not ring as if it were out of sight).
    pub(crate) opening: Option<SessionId>,
    /// What the last ^W, ^U or ^K erased, for ^Y.
    pub(crate) killed: String,
    /// Whether the TUI captures the mouse (`copy.rs`).
    pub(crate) mouse_capture: bool,
    /// Whether the terminal has the focus (true until it reports otherwise).
    pub(crate) focused: bool,
    /// Unread and failed turn ends, for the session list (`attention.rs`).
    pub(crate) board: crate::attention::Board,
    /// The find bar's search in the transcript, while it is open (`find_bar.rs`).
    pub(crate) find: Option<crate::find::Find>,
    /// The text the last ↑/↓ put in the composer; a draft that differs was edited since.
    pub(crate) recalled: Option<String>,
    /// Changes whenever a session appears in or leaves the list; part of the guard inputs,
    /// so a TUIMCP revision read before a deletion is stale.
    pub(crate) sessions_epoch: u64,
    /// The backend's URL and, while it does not answer, why (shown while connecting).
    pub(crate) backend_url: String,
    pub(crate) down_cause: Option<String>,
    /// Every session's prompt queue and the edit of one under way (`queue.rs`).
    pub(crate) queues: crate::queue::Queues,
    /// The `/` list's selection, and the draft it was dismissed for (`complete.rs`).
    pub(crate) slash: crate::complete::SlashState,
    /// The `@` file picker (`picker.rs`).
    pub(crate) picker: crate::picker::FilePicker,
}

impl App {
    /// A TUI for `workspace` (the project directory), showing the startup overlay.
    pub fn new(workspace: impl Into<String>, sharing: Option<Sharing>) -> App {
        let started = Instant::now();
        App {
            route: Route::Home,
            overlay: Some(Overlay::Startup),
            connection: Connection::Connecting,
            synced: false,
            sessions: Vec::new(),
            selected: None,
            list_offset: 0,
            permissions: Vec::new(),
            replying: HashSet::new(),
            approval_choice: None,
            deferred: HashSet::new(),
            feedback_for: None,
            deleting: HashSet::new(),
            transcript: Transcript::new(78),
            transcript_loaded: false,
            scroll: 0,
            composer: Composer::default(),
            modal: None,
            sharing,
            sharing_revoked: false,
            notice: None,
            workspace: workspace.into(),
            size: (80, 24),
            generation: 0,
            sync_gen: 0,
            transcript_gen: 0,
            submit_gen: 0,
            agents_gen: 0,
            sync_buffer: None,
            transcript_buffer: None,
            effects: Vec::new(),
            now: started,
            wall_anchor: (started, ax_protocol::time::now_ms()),
            progress: Default::default(),
            aborting: HashSet::new(),
            approval_scroll: (String::new(), 0),
            help_scroll: 0,
            history: Default::default(),
            history_search: None,
            find: None,
            board: Default::default(),
            notify_mode: crate::notify::NotifyMode::Auto,
            ring: crate::notify::Ring::Bell,
            ring_auto: crate::notify::Ring::Bell,
            focused: true,
            mouse_capture: true,
            killed: String::new(),
            opening: None,
            recalled: None,
            sessions_epoch: 0,
            backend_url: String::new(),
            down_cause: None,
            queues: Default::default(),
            slash: Default::default(),
            picker: Default::default(),
        }
    }

    // ---- reading -------------------------------------------------------------------------

    /// The screen showing.
    pub fn route(&self) -> &Route {
        &self.route
    }
    /// The full-screen overlay, if one hides everything.
    pub fn overlay(&self) -> Option<Overlay> {
        self.overlay
    }
    /// How the backend event stream stands.
    pub fn connection(&self) -> Connection {
        self.connection
    }
    /// The sessions of the project, in list order.
    pub fn sessions(&self) -> &[Session] {
        &self.sessions
    }
    /// The prompt being written.
    pub fn composer(&self) -> &Composer {
        &self.composer
    }
    /// The modal the person opened, if any.
    pub fn modal(&self) -> Option<&Modal> {
        self.modal.as_ref()
    }
    /// TUIMCP sharing, while it is on.
    pub fn sharing(&self) -> Option<&Sharing> {
        self.sharing.as_ref()
    }
    /// Whether this TUI is shared, was shared, or never was.
    pub fn sharing_state(&self) -> SharingState {
        match (&self.sharing, self.sharing_revoked) {
            (Some(_), _) => SharingState::On,
            (None, true) => SharingState::Revoked,
            (None, false) => SharingState::Off,
        }
    }
    /// The status-bar notice, until it expires.
    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }
    /// The open session's display lines.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }
    /// Transcript rows scrolled up from the bottom (0 follows new output).
    pub fn scroll(&self) -> usize {
        self.scroll
    }
    /// The project directory.
    pub fn workspace(&self) -> &str {
        &self.workspace
    }
    /// The backend's URL, for the header.
    pub fn backend_url(&self) -> &str {
        &self.backend_url
    }
    /// Why the backend does not answer, while it does not.
    pub fn down_cause(&self) -> Option<&str> {
        self.down_cause.as_deref()
    }
    /// The terminal size the state lays out for.
    pub fn size(&self) -> (u16, u16) {
        self.size
    }
    /// Whether shutdown began (the exit overlay shows).
    pub fn is_exiting(&self) -> bool {
        self.overlay == Some(Overlay::Exit)
    }

    /// The open session, if the session route shows one.
    pub fn open_session(&self) -> Option<&Session> {
        match &self.route {
            Route::Session(id) => self.sessions.iter().find(|s| &s.id == id),
            Route::Home => None,
        }
    }

    /// The selected row of the session list, if the selection is still in it.
    pub fn selected_index(&self) -> Option<usize> {
        let id = self.selected.as_ref()?;
        self.sessions.iter().position(|s| &s.id == id)
    }

    /// The permission the approval dialog asks about: the oldest pending one of the open
    /// session. The dialog is a modal whenever this is `Some`.
    pub fn pending_approval(&self) -> Option<&Permission> {
        let Route::Session(id) = &self.route else {
            return None;
        };
        self.permissions
            .iter()
            .filter(|p| {
                &p.session_id == id
                    && p.state == PermissionState::Pending
                    && !self.replying.contains(&p.id)
                    && !self.deferred.contains(&p.id)
            })
            .min_by_key(|p| p.created)
    }

    /// A pending approval of the open session the person left for later (Esc).
    pub fn deferred_approval(&self) -> Option<&Permission> {
        let Route::Session(id) = &self.route else {
            return None;
        };
        self.permissions.iter().find(|p| {
            &p.session_id == id
                && p.state == PermissionState::Pending
                && self.deferred.contains(&p.id)
        })
    }

    /// Whether the deletion of `id` was asked for and has not completed yet.
    pub fn is_deleting(&self, id: &SessionId) -> bool {
        self.deleting.contains(id)
    }

    /// A deletion failed: the session is shown as before, and why it failed.
    pub fn on_delete_failed(&mut self, session: &SessionId, error: String) {
        self.deleting.remove(session);
        self.notify(NoticeKind::Error, error);
    }

    /// Whether the composer waits for the feedback an agent's option asked for (docs/tui.md §3).
    pub fn awaiting_feedback(&self) -> bool {
        matches!(&self.route, Route::Session(id) if self.feedback_for.as_ref() == Some(id))
    }

    /// Rows the help modal is scrolled by.
    pub fn help_scroll(&self) -> usize {
        self.help_scroll
    }

    /// The highlighted answer of the approval dialog (an index into
    /// [`App::approval_choices`]): the one the person moved to, else allow once; `None` when
    /// the agent offers no allow-once and the person has not chosen (Enter does nothing).
    pub fn approval_choice(&self) -> Option<usize> {
        let pending = self.pending_approval()?;
        match &self.approval_choice {
            Some((id, i)) if *id == pending.id => Some(*i),
            _ => crate::approval::default_choice(&self.approval_choices()),
        }
    }

    /// Event stream up, initial sync done, and on the session route the session loaded.
    pub fn ready(&self) -> bool {
        self.connection == Connection::Connected
            && self.synced
            && match self.route {
                Route::Home => true,
                Route::Session(_) => self.transcript_loaded,
            }
    }

    /// The blocked predicate's inputs (docs/tuimcp.md §7), each as a boolean.
    pub fn blocked_inputs(&self) -> Blockers {
        Blockers {
            startup_overlay: self.overlay == Some(Overlay::Startup),
            exit_overlay: self.overlay == Some(Overlay::Exit),
            // The composer is mounted on both routes; only an overlay unmounts it.
            composer_missing: self.overlay.is_some(),
            draft: self.composer.has_draft(),
            attachment: self.composer.has_attachments(),
            // The approval dialog (scrolled or not), the quit confirmation, the agent picker
            // and a turn part the person opened (an expanded card or thought) take their
            // attention like a modal.
            // So do the Ctrl+R history search and the find bar (docs/tui.md §3a, §3b).
            modal: self.modal.is_some()
                || self.pending_approval().is_some()
                || self.history_search.is_some()
                || self.find.is_some()
                || (matches!(self.route, Route::Session(_)) && self.transcript.any_expanded()),
            session_busy: self
                .sessions
                .iter()
                .any(|s| s.status == SessionStatus::Busy),
            pending_approval: self
                .permissions
                .iter()
                .any(|p| p.state == PermissionState::Pending)
                || self
                    .sessions
                    .iter()
                    .any(|s| s.status == SessionStatus::Pending),
        }
    }

    /// Everything the TUIMCP guard reads, and nothing else (no content). The owner passes it
    /// to the controller after every mutation.
    pub fn guard_inputs(&self) -> GuardInputs {
        GuardInputs {
            location: match &self.route {
                Route::Home => Location::Home,
                Route::Session(id) => Location::Session(id.clone()),
            },
            stream_connected: self.connection == Connection::Connected,
            synced: self.synced,
            route_loaded: self.transcript_loaded,
            blockers: self.blocked_inputs(),
            workspace: self.workspace.clone(),
            sessions: self.sessions_epoch,
        }
    }

    /// The screen geometry for the current state.
    pub fn layout(&self) -> Layout {
        Layout::compute(
            self.size.0,
            self.size.1,
            self.sharing.as_ref().map(|s| s.endpoint_path.as_str()),
            self.composer.has_attachments(),
            self.composer
                .visual_row_count(self.size.0.saturating_sub(2) as usize, COMPOSER_MAX_ROWS),
            self.tray_rows(),
        )
    }

    /// Work queued by the last calls, for the owner to start.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    // ---- changes from the owner ----------------------------------------------------------

    /// The terminal was resized: re-wrap the transcript.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        self.transcript.set_wrap(width.saturating_sub(2));
        self.keep_selection_visible();
    }

    /// Sets the project directory (attachments resolve inside it).
    pub fn set_workspace(&mut self, workspace: impl Into<String>) {
        self.workspace = workspace.into();
    }

    /// Sets the backend's URL, for the header.
    pub fn set_backend_url(&mut self, url: impl Into<String>) {
        self.backend_url = url.into();
    }

    /// Why the backend does not answer (`None` once it does).
    pub fn set_down_cause(&mut self, cause: Option<String>) {
        self.down_cause = cause;
    }

    /// Advances the clock (spinners, elapsed times) and expires notices.
    pub fn tick(&mut self, now: Instant) {
        self.now = now;
        if self
            .notice
            .as_ref()
            .is_some_and(|n| now.duration_since(n.at) >= NOTICE_TTL)
        {
            self.notice = None;
        }
    }

    /// Posts a status-bar notice, replacing the current one; it expires [`NOTICE_TTL`] of
    /// ticks later.
    pub fn notify(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.notice = Some(Notice {
            kind,
            text: text.into(),
            at: self.now,
        });
    }

    /// The wall-clock time at the last tick, Unix milliseconds.
    pub(crate) fn wall_ms(&self) -> i64 {
        let (at, ms) = self.wall_anchor;
        ms + self.now.saturating_duration_since(at).as_millis() as i64
    }

    // ---- navigation ----------------------------------------------------------------------

    /// Opens a session: the route changes now, the transcript loads in the background.
    pub(crate) fn open(&mut self, id: SessionId) {
        self.selected = Some(id.clone());
        self.route = Route::Session(id.clone());
        self.transcript =
            Transcript::keeping_turn_ends(self.size.0.saturating_sub(2), &self.transcript);
        self.scroll = 0;
        self.approval_choice = None;
        // Opened again: what was left for later asks again.
        self.deferred.clear();
        self.board.seen(&id);
        self.sort_sessions();
        self.forget_history();
        self.close_find();
        if self.feedback_for.as_ref() != Some(&id) {
            self.feedback_for = None;
        }
        self.load_transcript(id.clone());
        self.load_queue(id);
        self.keep_selection_visible();
    }

    pub(crate) fn go_home(&mut self) {
        self.route = Route::Home;
        self.transcript =
            Transcript::keeping_turn_ends(self.size.0.saturating_sub(2), &self.transcript);
        self.transcript_loaded = false;
        self.transcript_buffer = None;
        self.scroll = 0;
        self.forget_history();
        self.close_find();
    }

    /// Navigation applied by an agent through TUIMCP (the controller already checked the
    /// guard). Shows the notice so the person never mistakes it for their own action. The
    /// session already open is left alone: no reload, no notice, the scroll kept.
    pub fn navigate_by_agent(&mut self, id: SessionId) {
        if self.route == Route::Session(id.clone()) {
            return;
        }
        self.modal = None;
        self.open(id);
        self.notify(NoticeKind::Agent, "Navigated by agent via TUIMCP");
    }

    /// Sharing ended (revoked here or the endpoint failed): the bar goes away.
    pub fn sharing_closed(&mut self) {
        if self.sharing.take().is_some() {
            self.sharing_revoked = true;
            if self.modal == Some(Modal::McpConfig) {
                self.modal = None;
            }
        }
    }

    pub(crate) fn revoke_sharing(&mut self) {
        if self.sharing.is_some() {
            self.sharing_closed();
            self.effects.push(Effect::RevokeSharing);
            self.notify(NoticeKind::Info, "TUIMCP sharing revoked");
        }
    }

    /// The MCP client configuration for this TUI, while it is shared.
    pub fn mcp_config(&self) -> Option<String> {
        let sharing = self.sharing.as_ref()?;
        Some(crate::share::mcp_client_config(&sharing.endpoint_path))
    }

    /// Copies the MCP client configuration through the terminal (OSC 52).
    pub(crate) fn copy_mcp_config(&mut self) {
        if let Some(text) = self.mcp_config() {
            self.effects.push(Effect::CopyToClipboard { text });
            self.notify(
                NoticeKind::Info,
                "MCP client config sent to the clipboard (OSC 52); /tui-mcp-config shows it",
            );
        }
    }

    /// Starts shutting down: the exit overlay shows until the owner finishes.
    pub fn begin_exit(&mut self) {
        if self.overlay != Some(Overlay::Exit) {
            self.overlay = Some(Overlay::Exit);
            self.modal = None;
            self.effects.push(Effect::Quit);
        }
    }

    pub(crate) fn submit(&mut self) {
        if self.composer.submitting {
            return;
        }
        let draft = self.composer.draft().to_owned();
        // `/name` that is not ax-code's goes to an ACP agent as a prompt (its command).
        if draft.trim_start().starts_with('/') && !self.goes_to_agent(draft.trim_start()) {
            match crate::command::parse(&draft, self.sharing_state()) {
                Ok(invocation) => {
                    self.composer.clear_draft();
                    self.run_command(invocation);
                }
                Err(e) => self.notify(NoticeKind::Error, e),
            }
            return;
        }
        if draft.trim().is_empty() {
            if self.composer.has_attachments() {
                self.notify(
                    NoticeKind::Error,
                    "write a prompt to send the attachments with",
                );
            }
            return;
        }
        if self.refuse_queued_images() {
            return;
        }
        self.remember_prompt(&draft);
        let mut parts = vec![PromptPart::Text { text: draft }];
        parts.extend(
            self.composer
                .attachments()
                .iter()
                .map(|p| PromptPart::File { path: p.clone() }),
        );
        parts.extend(self.composer.images().iter().map(|i| PromptPart::Image {
            mime_type: i.mime.to_owned(),
            data: i.data.clone(),
            name: crate::attach::file_name(&i.path),
        }));
        if self.save_queued_edit(parts.clone()) {
            return;
        }
        let session = match &self.route {
            Route::Session(id) => Some(id.clone()),
            Route::Home => None,
        };
        let queue = self.should_queue();
        self.submit_gen = self.next_gen();
        self.composer.submitting = true;
        self.feedback_for = None;
        self.effects.push(Effect::Submit {
            session,
            parts,
            generation: self.submit_gen,
            queue,
        });
    }

    /// `/new` and Ctrl+N: asks for the configured agents; the picker opens with the answer.
    pub(crate) fn new_session(&mut self) {
        if self.composer.submitting {
            return;
        }
        self.agents_gen = self.next_gen();
        self.effects.push(Effect::ListAgents {
            generation: self.agents_gen,
        });
    }

    /// The answer to [`Effect::ListAgents`]: the picker, the default agent preselected. When
    /// the list cannot be had, the session is created with the backend's default agent.
    pub fn on_agents(&mut self, generation: u64, result: Result<ax_protocol::AgentList, String>) {
        if generation != self.agents_gen || self.overlay.is_some() {
            return;
        }
        match result {
            Ok(list) if !list.agents.is_empty() => {
                let selected = list
                    .agents
                    .iter()
                    .position(|a| a.name == list.default)
                    .unwrap_or(0);
                self.modal = Some(Modal::AgentPicker {
                    agents: list.agents,
                    default: list.default,
                    selected,
                });
            }
            other => {
                if let Err(e) = other {
                    self.notify(
                        NoticeKind::Error,
                        format!("could not list the agents ({e}); using the default agent"),
                    );
                }
                self.create_session(None);
            }
        }
    }

    pub(crate) fn create_session(&mut self, agent: Option<String>) {
        if self.composer.submitting {
            return;
        }
        self.submit_gen = self.next_gen();
        self.composer.submitting = true;
        self.feedback_for = None;
        self.effects.push(Effect::CreateSession {
            generation: self.submit_gen,
            agent,
        });
    }

    /// `/mode [ID]`: switches to mode ID, or lists the modes to choose from.
    pub(crate) fn mode_command(&mut self, arg: Option<String>) {
        let Some(s) = self.open_session() else {
            self.notify(NoticeKind::Error, "/mode works in a session");
            return;
        };
        let Some(modes) = s.agent_state.as_ref().and_then(|a| a.modes.as_ref()) else {
            let why = if s.agent == "shell" {
                "the shell agent has no modes".to_owned()
            } else {
                format!(
                    "{} offers no modes (or has not started yet: send a prompt first)",
                    s.agent
                )
            };
            self.notify(NoticeKind::Error, why);
            return;
        };
        let session = s.id.clone();
        match arg {
            Some(id) => {
                if modes.available.iter().any(|m| m.id == id) {
                    self.effects.push(Effect::SetMode {
                        session,
                        mode_id: id,
                    });
                } else {
                    let known: Vec<&str> = modes.available.iter().map(|m| m.id.as_str()).collect();
                    self.notify(
                        NoticeKind::Error,
                        format!("no mode {id:?}; the agent offers {}", known.join(", ")),
                    );
                }
            }
            None => {
                let selected = modes
                    .available
                    .iter()
                    .position(|m| m.id == modes.current)
                    .unwrap_or(0);
                self.modal = Some(Modal::Modes { selected });
            }
        }
    }

    /// `/revoke` (or a click on the header's `[Revoke]`): forgets the open session's standing
    /// "always" answers.
    pub(crate) fn revoke_standing(&mut self) {
        match self.open_session() {
            Some(s) if !s.standing.is_empty() => {
                let session = s.id.clone();
                self.effects.push(Effect::RevokeStanding { session });
                self.notify(NoticeKind::Info, "revoking the standing “always” answers…");
            }
            Some(_) => self.notify(NoticeKind::Error, "this session has no standing “always”"),
            None => self.notify(NoticeKind::Error, "/revoke works in a session"),
        }
    }

    /// Whether the open session shows its standing "always" row above the transcript.
    pub fn standing_row(&self) -> bool {
        matches!(self.route, Route::Session(_))
            && self.open_session().is_some_and(|s| !s.standing.is_empty())
    }

    /// Where the transcript is drawn: inside the main box, below the standing row if any.
    pub fn transcript_area(&self) -> crate::layout::Rect {
        let mut r = self.layout().main.inner();
        if self.standing_row() && r.height > 1 {
            r.y += 1;
            r.height -= 1;
        }
        r
    }

    pub(crate) fn run_command(&mut self, invocation: Invocation) {
        match invocation.command {
            Command::New => self.new_session(),
            Command::Agent => {
                if self.open_session().is_some() {
                    self.modal = Some(Modal::AgentInfo);
                } else {
                    self.notify(NoticeKind::Error, "/agent works in a session");
                }
            }
            Command::Mode => self.mode_command(invocation.arg),
            Command::Revoke => self.revoke_standing(),
            Command::Queue => self.queue_command(invocation.arg),
            Command::Config => self.config_command(invocation.arg),
            Command::Model => self.model_command(invocation.arg),
            Command::Sessions => self.go_home(),
            Command::Attach => self.attach(invocation.arg.unwrap_or_default()),
            Command::Image => self.effects.push(Effect::LoadImage {
                workspace: self.workspace.clone(),
                path: invocation.arg.unwrap_or_default(),
            }),
            Command::Abort => self.abort_open(),
            Command::Rename => {
                let title = invocation.arg.unwrap_or_default();
                if let Some(session) = self.command_target("rename") {
                    self.effects.push(Effect::RenameSession { session, title });
                }
            }
            Command::Delete => {
                if let Some(session) = self.command_target("delete") {
                    let title = self
                        .sessions
                        .iter()
                        .find(|s| s.id == session)
                        .map(|s| s.title.clone())
                        .unwrap_or_default();
                    self.modal = Some(Modal::ConfirmDelete { session, title });
                }
            }
            Command::Find => self.open_find(invocation.arg),
            Command::Notify => self.notify_command(invocation.arg),
            Command::Copy => self.copy_command(invocation.arg),
            Command::Mouse => self.mouse_command(invocation.arg),
            Command::Help => {
                self.help_scroll = 0;
                self.modal = Some(Modal::Help)
            }
            Command::Quit => self.begin_exit(),
            Command::TuiMcpConfig if self.sharing.is_some() => self.modal = Some(Modal::McpConfig),
            Command::TuiMcpRevoke => self.revoke_sharing(),
            Command::TuiMcpConfig => {}
        }
    }

    /// Adds the chip now and checks the file at once; a failed check removes it again with
    /// the reason (`on_attachment_checked`).
    pub(crate) fn attach(&mut self, path: String) {
        match self.composer.attach(&path) {
            Ok(()) => self.effects.push(Effect::CheckAttachment {
                workspace: self.workspace.clone(),
                path,
            }),
            Err(e) => self.notify(NoticeKind::Error, e),
        }
    }

    /// The answer to [`Effect::LoadImage`]: a chip, or the reason it is not one.
    pub fn on_image_loaded(
        &mut self,
        path: &str,
        result: Result<crate::composer::ComposerImage, String>,
    ) {
        if let Err(e) = result.and_then(|image| self.composer.add_image(image)) {
            self.notify(NoticeKind::Error, format!("cannot attach {path}: {e}"));
        }
    }

    /// The answer to [`Effect::CheckAttachment`].
    pub fn on_attachment_checked(&mut self, path: &str, result: Result<(), String>) {
        if let Err(e) = result
            && let Some(i) = self.composer.attachments().iter().position(|p| p == path)
        {
            self.composer.remove_attachment(i);
            self.notify(NoticeKind::Error, format!("cannot attach {path}: {e}"));
        }
    }

    /// Whether the open session is running a turn (busy, not waiting for approval).
    pub fn open_session_busy(&self) -> bool {
        self.open_session()
            .is_some_and(|s| s.status == SessionStatus::Busy)
    }

    /// Aborts the open session's turn (Esc, Ctrl+C, `/abort`).
    pub(crate) fn abort_open(&mut self) {
        let Some(s) = self.open_session() else {
            self.notify(NoticeKind::Error, "/abort works in a session");
            return;
        };
        if s.status == SessionStatus::Idle {
            self.notify(NoticeKind::Error, "nothing is running in this session");
            return;
        }
        let id = s.id.clone();
        self.aborting.insert(id.clone());
        self.effects.push(Effect::Abort { session: id });
        self.notify(NoticeKind::Info, "aborting the turn…");
    }

    /// The answer to [`Effect::Abort`].
    pub fn on_aborted(&mut self, session: &SessionId, result: Result<bool, String>) {
        match result {
            Ok(true) => {}
            Ok(false) => {
                self.aborting.remove(session);
                self.notify(NoticeKind::Info, "nothing was running");
            }
            Err(e) => {
                self.aborting.remove(session);
                self.notify(NoticeKind::Error, format!("abort failed: {e}"));
            }
        }
    }

    /// Whether any session is in a turn (busy or waiting for approval).
    pub fn any_session_working(&self) -> bool {
        self.sessions
            .iter()
            .any(|s| s.status != SessionStatus::Idle)
    }

    /// The session a command acts on: the open one, else the one selected at home.
    fn command_target(&mut self, what: &str) -> Option<SessionId> {
        let target = match &self.route {
            Route::Session(id) => Some(id.clone()),
            Route::Home => self.selected_index().and_then(|_| self.selected.clone()),
        };
        if target.is_none() {
            self.notify(
                NoticeKind::Error,
                format!("no session to {what}: open or select one"),
            );
        }
        target
    }

    pub(crate) fn reply(&mut self, reply: PermissionReply, option_id: Option<String>) {
        let Some(p) = self.pending_approval() else {
            return;
        };
        if self.replying.contains(&p.id) {
            return;
        }
        let (session, permission_id) = (p.session_id.clone(), p.id.clone());
        // Hidden from the dialog now; the replied event removes it, a failure brings it back.
        self.replying.insert(permission_id.clone());
        self.effects.push(Effect::ReplyPermission {
            session,
            permission_id,
            reply,
            option_id,
        });
        self.approval_choice = None;
    }

    /// Rows the session list shows.
    pub(crate) fn list_height(&self) -> usize {
        self.layout().main.inner().height as usize
    }

    pub(crate) fn keep_selection_visible(&mut self) {
        let h = self.list_height().max(1);
        let Some(i) = self.selected_index() else {
            self.list_offset = 0;
            return;
        };
        if i < self.list_offset {
            self.list_offset = i;
        } else if i >= self.list_offset + h {
            self.list_offset = i + 1 - h;
        }
        self.list_offset = self.list_offset.min(self.sessions.len().saturating_sub(1));
    }

    pub(crate) fn transcript_height(&self) -> usize {
        self.transcript_area().height as usize
    }
}
