//! The UI state: a plain struct, no terminal types, driven by tests and by the owner loop.
//!
//! Everything that needs I/O leaves as an [`Effect`] (drained with [`App::take_effects`]) and
//! comes back as a result method (`on_*`), tagged with the generation it was asked under so a
//! stale answer is dropped. The effects are declared in `effect.rs`, what the person's
//! actions do in `actions.rs`; key and mouse handling lives in `keys.rs`, the event stream's
//! effect on the state in `sync.rs`.
//!
//! Every method of [`App`] is in this module: one file per concern (`queue.rs`, `inbox.rs`,
//! `file_picker.rs`, ...) where the app meets a part whose state and rules live outside it,
//! in a module of its own that knows nothing of the app (`crate::queue`, `crate::inbox`,
//! `crate::picker`, ...). So the parts have no import back to the app, and their tests need
//! no app.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ax_protocol::{
    AgentInfo, Event, Permission, PermissionState, Session, SessionId, SessionStatus,
};

use ax_tuimcp::{Blockers, GuardInputs, Location};

use crate::clock::Clock;
use crate::command::SharingState;
use crate::composer::Composer;
use crate::layout::{COMPOSER_MAX_ROWS, Layout};
use crate::transcript::Transcript;

mod actions;
mod approval;
mod attention;
mod completion;
mod config_options;
mod copy_mode;
mod effect;
mod file_picker;
mod find_bar;
mod inbox;
mod keys;
mod navigator;
mod notify;
mod progress;
mod queue;
mod recall;
mod sync;

pub use effect::Effect;

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
    /// Every waiting approval across the sessions (`/approvals`); Enter opens its session.
    Approvals {
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
    /// The approval dialog's answer moved to and scroll, by request (`approval.rs`).
    pub(crate) approval: crate::approval::Dialog,
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
    /// The clock drawing and timing use, moved only by [`App::tick`]: wall times are derived
    /// from ticks like every other time, so a test that drives `tick` drives them too.
    pub(crate) clock: Clock,
    pub(crate) progress: crate::progress::Progress,
    /// Sessions whose abort was asked for and that are not idle yet.
    pub(crate) aborting: HashSet<SessionId>,
    pub(crate) help_scroll: usize,
    /// The open session's prompts, their ↑/↓ walk and the Ctrl+R search (`recall.rs`).
    pub(crate) recall: crate::recall::Recall,
    /// How the terminal is rung (`notify.rs`): the mode, what it rings with, and what
    /// `auto` resolved to.
    pub(crate) notify_mode: crate::notify::NotifyMode,
    pub(crate) ring: crate::notify::Ring,
    pub(crate) ring_auto: crate::notify::Ring,
    /// The session a prompt submitted at home created, until the submission answers and
    /// opens it (its first events must not ring as if it were out of sight).
    pub(crate) opening: Option<SessionId>,
    /// Whether the TUI captures the mouse (`copy.rs`).
    pub(crate) mouse_capture: bool,
    /// Whether the terminal has the focus (true until it reports otherwise).
    pub(crate) focused: bool,
    /// Unread and failed turn ends, for the session list (`attention.rs`).
    pub(crate) board: crate::attention::Board,
    /// The find bar's search in the transcript, while it is open (`find_bar.rs`).
    pub(crate) find: Option<crate::find::Find>,
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
    /// A TUI for `workspace` (the project directory), showing the startup overlay, its clock
    /// starting at the system's time now.
    pub fn new(workspace: impl Into<String>, sharing: Option<Sharing>) -> App {
        App::with_clock(workspace, sharing, Clock::system())
    }

    /// Like [`App::new`], with a clock that starts where the caller says (tests drive it
    /// with [`App::tick`] from there).
    pub fn with_clock(workspace: impl Into<String>, sharing: Option<Sharing>, clock: Clock) -> App {
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
            approval: Default::default(),
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
            clock,
            progress: Default::default(),
            aborting: HashSet::new(),
            help_scroll: 0,
            recall: Default::default(),
            find: None,
            board: Default::default(),
            notify_mode: crate::notify::NotifyMode::Auto,
            ring: crate::notify::Ring::Bell,
            ring_auto: crate::notify::Ring::Bell,
            focused: true,
            mouse_capture: true,
            opening: None,
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
                || self.recall.searching()
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

    /// Rows the tray takes above the composer now (0: none): the `/` list while it shows,
    /// else the `@` picker's files, else the queue (`render/tray.rs` draws them).
    pub fn tray_rows(&self) -> u16 {
        let list = self.completions().len();
        let files = self.picker_files().len();
        let rows = if list > 0 {
            list.min(crate::complete::COMPLETION_ROWS)
        } else if files > 0 {
            files.min(crate::picker::PICKER_ROWS)
        } else {
            self.queue_rows().len()
        };
        u16::try_from(rows).unwrap_or(0)
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
        self.clock.advance(now);
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
            at: self.clock.now(),
        });
    }

    /// The wall-clock time at the last tick, Unix milliseconds.
    pub(crate) fn wall_ms(&self) -> i64 {
        self.clock.wall_ms()
    }
}
