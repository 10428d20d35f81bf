//! One agent process, one ACP connection, one agent session.
//!
//! The connection runs in a task of its own. Its message handler never awaits the person or
//! a request of its own (the SDK handles incoming messages one at a time, so that would
//! deadlock): a permission request is handed to the caller as a [`PermissionResponder`]
//! (answered once, `cancelled` when dropped) while the runtime keeps a share of it, so an
//! abort or a stop can answer it `cancelled` too, and file and terminal work runs in spawned
//! tasks. The turn's
//! `session/prompt` request is awaited by a task that never drops it (dropping sends
//! `$/cancel_request`, which is not a cancel).
//!
//! Transport: the SDK's `Lines` over our own bounded stdout line reader and a stdin writer
//! task, rather than `ByteStreams`: a line has a length bound, a garbage or non-UTF-8 line is
//! dropped without ending the connection, and stopping closes the agent's stdin once the
//! answers it gave are written (`AgentHandle::stop`). The
//! stdout reader is a task of its own: the `session/update` notifications of the open session
//! are parsed and handled there (the bulk of an agent's traffic), the rest goes to the SDK in
//! order, and an update waits for the SDK whenever a request or notification handed to it
//! before has not been dispatched yet (see `Direct`).
//!
//! Events go to an unbounded channel in order; the caller is expected to drain it (the
//! backend stores and fans out every event). Updates that arrive before the agent's session
//! id is known (during `session/new`) are skipped, but for a command list, kept until the
//! answer names that session: agents send only command lists and modes there, and the
//! `session/new` answer carries the modes.

use std::{
    collections::{HashMap, HashSet},
    io,
    os::unix::process::ExitStatusExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use agent_client_protocol::v1::{self, schema};
use agent_client_protocol::{
    self as acp, Agent, Client, ErrorCode, Handled, Lines, schema::ProtocolVersion,
    v1::ConnectionTo,
};
use ax_agents::process::signal_group;
use ax_protocol::turn::{
    self, AuthMethod, Notice, NoticeKind, PermissionChoice, PermissionKind, PermissionOutcome,
    PermissionPart, ToolCallFields, ToolCallPart, ToolContent, ToolStatus, TurnDelta, TurnEnd,
    TurnPart,
};
use ax_protocol::{
    AgentCommand, AgentConfigOption, AgentCost, AgentUsage, ConfigValue, PermissionId,
};
use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::{
    io::AsyncWriteExt,
    sync::{mpsc, oneshot, watch},
};
use tokio_util::sync::CancellationToken;

use crate::{
    agent_terminal::{LocalTerminals, TerminalSpec, Terminals},
    config::AgentSpec,
    fs, guard, map,
    process::{self, STDERR_TAIL_BYTES, Tail},
};

/// The protocol version we speak.
pub const PROTOCOL_VERSION: u16 = 1;

/// Timing and parts that tests (and the backend) may change.
#[derive(Clone)]
pub struct StartOptions {
    /// The project directory: the agent's cwd and the bound of its file and terminal access.
    pub project_dir: PathBuf,
    /// After an abort, how long the agent has to answer before its process group is killed.
    pub watchdog: Duration,
    /// Stopping: after stdin closes, how long before SIGTERM.
    pub stop_term_after: Duration,
    /// Stopping: after SIGTERM, how long before SIGKILL.
    pub stop_kill_after: Duration,
    /// Bound on `initialize`, `session/new|load|resume` and `session/set_mode`.
    pub request_timeout: Duration,
    /// The terminal implementation (default: [`LocalTerminals`]).
    pub terminals: Option<Arc<dyn Terminals>>,
    /// A value unique to this agent process, set as `AX_CODE_AGENT_TAG` in its environment:
    /// when the agent ends, every process still carrying it is killed, also those that left
    /// its process group (docs/agents.md §2). `None`: only the process group is stopped.
    pub tag: Option<String>,
    /// `_meta` sent with `session/new`, `session/load` and `session/resume`: what the
    /// backend tells an agent it knows about (e.g. the built-in `shell` agent's standing
    /// "always", [`crate::shell::session_meta`]). `None`: no `_meta`.
    pub session_meta: Option<schema::Meta>,
}

impl StartOptions {
    /// The defaults the backend uses, for `project_dir`.
    pub fn new(project_dir: impl Into<PathBuf>) -> Self {
        StartOptions {
            project_dir: project_dir.into(),
            watchdog: Duration::from_secs(15),
            stop_term_after: Duration::from_secs(1),
            stop_kill_after: Duration::from_secs(3),
            request_timeout: Duration::from_secs(120),
            terminals: None,
            tag: None,
            session_meta: None,
        }
    }
}

/// What the agent told us in `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// The agent's name for itself (`agentInfo.name`; the configured name if it sent none).
    pub name: String,
    /// A display title, if the agent sent one.
    pub title: Option<String>,
    /// The agent's version, for bug reports.
    pub version: String,
    /// The ACP version it agreed to (the one we speak; any other fails the start).
    pub protocol_version: u16,
    /// Whether it can replay a session (`session/load`), so a reopen shows history.
    pub load_session: bool,
    /// Whether it can continue a session without replay (`session/resume`).
    pub resume_session: bool,
    /// `agentCapabilities` as the agent sent them.
    pub capabilities: serde_json::Value,
    /// How to authenticate, if the agent needs it.
    pub auth_methods: Vec<AuthMethod>,
}

/// One mode an agent offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mode {
    /// The agent's id for the mode.
    pub id: String,
    /// The label shown to the person.
    pub name: String,
    /// The agent's one-line explanation, if any.
    pub description: Option<String>,
}

/// The agent's modes and the current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Modes {
    /// The id of the mode the agent is in.
    pub current: String,
    /// Every mode the person may switch to.
    pub available: Vec<Mode>,
}

/// How a session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restored {
    /// A new agent session, nothing to restore.
    New,
    /// `session/load`: the agent replayed its history (as [`AcpEvent::Replay`]).
    Loaded,
    /// `session/resume`: the agent continues without replay.
    Resumed,
    /// A reopen asked for, but the agent could not restore; a new session was started.
    NotRestored,
}

/// The open agent session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The agent's session id (store it to reopen later).
    pub session_id: String,
    /// The agent's modes, if it offers any.
    pub modes: Option<Modes>,
    /// The agent's `configOptions` as it sent them, if any.
    pub config_options: Option<serde_json::Value>,
    /// Whether earlier history came back, and how.
    pub restored: Restored,
}

/// An item the agent replayed during `session/load`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayItem {
    /// Text of one of the person's earlier messages.
    User(String),
    /// A piece of one of the agent's earlier messages (boxed: replay is rare, live deltas
    /// are not).
    Agent(Box<TurnDelta>),
}

/// What the backend already stored of the conversation. Given before a reopen
/// ([`AgentHandle::expect_history`]), it lets the runtime recognize a `session/load` replay —
/// also the part an agent sends after answering the load, as Gemini does — so it is never
/// shown as new work (docs/agents.md §7).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredHistory {
    /// Every tool call id in the stored transcript: a `tool_call` with one of them is never a
    /// new card.
    pub tool_call_ids: HashSet<String>,
    /// The agent's stored texts and thoughts, in order (`true`: a thought).
    pub texts: Vec<(bool, String)>,
}

/// Where a replay has got to in the stored texts.
#[derive(Debug)]
struct ReplayTail {
    texts: Vec<(bool, String)>,
    /// The stored text the replay is in, and the byte offset it reached there.
    at: (usize, usize),
}

impl ReplayTail {
    /// Whether `chunk` (of kind `thought`) continues the replay; if so, it is consumed. A
    /// chunk may start at any later stored text and run on over the next ones of its kind
    /// (an agent may replay in one chunk what we stored as texts around tool calls).
    /// Whitespace is ignored: agents store and replay texts with different spacing.
    fn consume(&mut self, thought: bool, chunk: &str) -> bool {
        let want: Vec<char> = chunk.chars().filter(|c| !c.is_whitespace()).collect();
        if want.is_empty() {
            return true;
        }
        for j in self.at.0..self.texts.len() {
            if self.texts[j].0 != thought {
                continue;
            }
            let from = if j == self.at.0 { self.at.1 } else { 0 };
            if let Some(at) = self.run_from(thought, (j, from), &want) {
                self.at = at;
                return true;
            }
        }
        false
    }

    /// Where the stored texts of kind `thought`, read from `start` on, have given all of
    /// `want`; `None` if they differ first or end first.
    fn run_from(
        &self,
        thought: bool,
        start: (usize, usize),
        want: &[char],
    ) -> Option<(usize, usize)> {
        let (mut j, mut from) = start;
        let mut k = 0;
        loop {
            let text = &self.texts[j].1;
            for (i, c) in text[from..].char_indices() {
                if c.is_whitespace() {
                    continue;
                }
                if c != want[k] {
                    return None;
                }
                k += 1;
                if k == want.len() {
                    return Some((j, from + i + c.len_utf8()));
                }
            }
            j = (j + 1..self.texts.len()).find(|&n| self.texts[n].0 == thought)?;
            from = 0;
        }
    }

    /// Whether every stored text was replayed.
    fn exhausted(&self) -> bool {
        self.texts
            .iter()
            .enumerate()
            .skip(self.at.0)
            .all(|(j, (_, t))| {
                let from = if j == self.at.0 { self.at.1 } else { 0 };
                t[from..].trim().is_empty()
            })
    }
}

/// Whether `parts` hold a tool call card with this id.
fn has_card(parts: &[TurnPart], id: &str) -> bool {
    parts
        .iter()
        .any(|p| matches!(p, TurnPart::ToolCall(t) if t.tool_call_id == id))
}

/// What the runtime reports, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum AcpEvent {
    /// A change to the running turn.
    Delta(TurnDelta),
    /// A permission request (the agent's, or ax-code's own about a guarded write): the
    /// `PermissionAsked` delta, folded into the running turn like a [`AcpEvent::Delta`] (and
    /// never reported as replay: a request is live work), and the handle that answers it.
    /// Its answer, whoever gives it, comes as a `PermissionAnswered` delta.
    Asked {
        /// The request as shown (outcome pending).
        permission: PermissionPart,
        /// Answers it once; dropped unanswered, it answers `cancelled`.
        responder: PermissionResponder,
    },
    /// History replayed by `session/load`: match it against stored history, don't show twice.
    Replay(ReplayItem),
    /// A change that arrived outside any turn (e.g. a mode change, the not-restored notice).
    Idle(TurnDelta),
    /// The agent's latest context usage (`usage_update`): a meter for the session, not a
    /// part of the transcript (docs/agents.md §4).
    Usage(AgentUsage),
    /// The turn ended; `parts` is the fold of every delta it streamed.
    TurnEnded {
        /// How it ended.
        end: TurnEnd,
        /// The fold of every delta the turn streamed.
        parts: Vec<TurnPart>,
    },
    /// The agent process ended (intentionally or not).
    Exited {
        /// The exit status as text (code or signal).
        status: String,
        /// The end of the agent's error output, for diagnosis.
        stderr_tail: String,
    },
}

/// The agent could not be started or initialized.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The project directory cannot be the agent's working directory.
    #[error("the project directory {path} is not usable: {source}")]
    Project {
        /// The directory.
        path: PathBuf,
        /// Why it is not usable.
        source: io::Error,
    },
    /// The agent's command could not be started.
    #[error("cannot start agent `{name}` ({command}): {source}")]
    Spawn {
        /// The agent's configured name.
        name: String,
        /// The command that was run.
        command: String,
        /// Why it could not start.
        source: io::Error,
    },
    /// The agent speaks another ACP version.
    #[error(
        "agent `{name}` does not speak ACP protocol version {PROTOCOL_VERSION}, the one \
         ax-code speaks ({detail}); update the agent or ax-code"
    )]
    ProtocolVersion {
        /// The agent's configured name.
        name: String,
        /// What the agent answered.
        detail: String,
        /// The end of the agent's error output.
        stderr_tail: String,
    },
    /// `initialize` failed, timed out, or the agent exited first.
    #[error("agent `{name}` failed to initialize: {message}")]
    Handshake {
        /// The agent's configured name.
        name: String,
        /// What went wrong.
        message: String,
        /// The end of the agent's error output.
        stderr_tail: String,
    },
}

/// Opening the agent session failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The agent wants the person to authenticate first.
    #[error("the agent needs authentication ({})", describe_auth(.auth_methods))]
    NeedsAuth {
        /// The ways it offers.
        auth_methods: Vec<AuthMethod>,
    },
    /// The agent answered with an error.
    #[error("the agent refused: {message}")]
    Agent {
        /// The agent's error message.
        message: String,
        /// The end of the agent's error output.
        stderr_tail: String,
    },
    /// An operation that needs an open session came first.
    #[error("no agent session is open")]
    NoSession,
}

fn describe_auth(methods: &[AuthMethod]) -> String {
    if methods.is_empty() {
        return "it offers no method; see its documentation for the key to set in its env".into();
    }
    methods
        .iter()
        .map(|m| match &m.description {
            Some(d) => format!("{}: {d}", m.name),
            None => m.name.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A prompt that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// A turn is already running (one at a time per session).
    #[error("the agent is busy with a turn; wait or abort first")]
    Busy,
    /// No session was opened yet.
    #[error("no agent session is open")]
    NoSession,
    /// The agent is gone; the session must be reopened.
    #[error("the agent process has exited")]
    Exited,
}

/// A permission answer that cannot be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No pending request has this permission id (answered, cancelled, or never asked).
    #[error("no pending permission {0}")]
    Unknown(String),
    /// The request has no option of the kind the person chose.
    #[error("the agent offers no {} option here (offered: {})", .kind.as_str(), .offered.join(", "))]
    NoSuchOption {
        /// The kind the person chose.
        kind: PermissionKind,
        /// The kinds the agent offered, by wire name.
        offered: Vec<String>,
    },
    /// The request has no option of the id the person chose.
    #[error("the agent offers no option {option_id:?} here (offered: {})", .offered.join(", "))]
    NoSuchOptionId {
        /// The id the person chose.
        option_id: String,
        /// The option ids the agent offered.
        offered: Vec<String>,
    },
}

/// One open permission request: the slot its answer is taken from (whoever takes it first
/// answers; a later attempt finds it empty) and what the person is shown. The runtime keeps
/// it until it is answered, so `cancel` and `stop` can answer it `cancelled`; its owner
/// holds it through a [`PermissionResponder`].
struct Open {
    id: PermissionId,
    /// The order it was asked in (the runtime's requests are answered and listed oldest first).
    seq: u64,
    asker: Mutex<Option<Asker>>,
    options: Vec<PermissionChoice>,
    /// The tool call the request concerns, as shown with it.
    tool_call: ToolCallPart,
}

impl Open {
    fn is_open(&self) -> bool {
        self.asker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}

/// The answer to one permission request, owned by whoever answers it (the backend's turn):
/// it arrives with the request ([`AcpEvent::Asked`]), answers it once ([`Self::answer`]),
/// and answers it `cancelled` when dropped unanswered. The runtime keeps a share of the same
/// request, so an abort or a stop can still answer every open request `cancelled` right
/// after `session/cancel`: whoever answers first is the one the agent hears, and the other
/// side's attempt is refused ([`AnswerError::Unknown`]) and sends nothing.
pub struct PermissionResponder {
    open: Arc<Open>,
    shared: std::sync::Weak<Shared>,
}

impl PermissionResponder {
    /// The request's permission id (the backend's own, minted by the runtime).
    pub fn permission_id(&self) -> &PermissionId {
        &self.open.id
    }

    /// The options the request offers.
    pub fn options(&self) -> &[PermissionChoice] {
        &self.open.options
    }

    /// Whether nobody has answered the request yet (neither this handle, nor an abort, a
    /// stop or the turn's end).
    pub fn is_open(&self) -> bool {
        self.open.is_open()
    }

    /// Answers with the agent's option `option_id` when given, else its option of `kind`
    /// (or the narrower one of the same direction); returns the option sent. Refused,
    /// sending nothing, when the request was answered already ([`AnswerError::Unknown`]) or
    /// offers no such option. Whatever answers is reported as a `PermissionAnswered` delta,
    /// as every answer is.
    pub fn answer(
        &self,
        kind: PermissionKind,
        option_id: Option<&str>,
    ) -> Result<PermissionChoice, AnswerError> {
        if !self.is_open() {
            return Err(AnswerError::Unknown(self.open.id.to_string()));
        }
        let choice = choose(&self.open.options, kind, option_id)?;
        let answered = match self.shared.upgrade() {
            Some(shared) => {
                let mut st = shared.lock();
                shared.settle(&mut st, &self.open, Some(&choice))
            }
            None => take_asker(&self.open)
                .map(|a| a.answer(Some(&choice)))
                .is_some(),
        };
        if answered {
            Ok(choice)
        } else {
            Err(AnswerError::Unknown(self.open.id.to_string()))
        }
    }

    /// Answers `cancelled`, as dropping does; returns whether this was the answer (false:
    /// it had been answered already).
    pub fn cancel(self) -> bool {
        self.cancel_open()
    }

    fn cancel_open(&self) -> bool {
        // Checked without the runtime's lock first: a handle dropped where that lock is held
        // (a request nobody could be told of) has been answered already.
        if !self.is_open() {
            return false;
        }
        match self.shared.upgrade() {
            Some(shared) => {
                let mut st = shared.lock();
                shared.settle(&mut st, &self.open, None)
            }
            None => take_asker(&self.open).map(|a| a.answer(None)).is_some(),
        }
    }
}

impl Drop for PermissionResponder {
    fn drop(&mut self) {
        self.cancel_open();
    }
}

impl std::fmt::Debug for PermissionResponder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionResponder")
            .field("permission_id", &self.open.id)
            .field("open", &self.is_open())
            .finish()
    }
}

/// Two handles are equal when they answer the same request.
impl PartialEq for PermissionResponder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.open, &other.open)
    }
}

impl Eq for PermissionResponder {}

/// Takes the request's answer slot: `Some` for exactly one caller.
fn take_asker(open: &Open) -> Option<Asker> {
    open.asker.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// The option an answer names: `option_id` when given, else the option of `kind` (or the
/// narrower one of the same direction).
fn choose(
    options: &[PermissionChoice],
    kind: PermissionKind,
    option_id: Option<&str>,
) -> Result<PermissionChoice, AnswerError> {
    match option_id {
        Some(wanted) => options
            .iter()
            .find(|o| o.option_id == wanted)
            .cloned()
            .ok_or_else(|| AnswerError::NoSuchOptionId {
                option_id: wanted.to_string(),
                offered: options.iter().map(|o| o.option_id.clone()).collect(),
            }),
        None => map::pick(options, kind)
            .cloned()
            .ok_or_else(|| AnswerError::NoSuchOption {
                kind,
                offered: options
                    .iter()
                    .map(|o| o.kind.as_str().to_string())
                    .collect(),
            }),
    }
}

/// Who waits for a permission's answer: the agent's own request, or ax-code itself
/// (a write it asks the person about before serving it, `guard`).
enum Asker {
    Agent(Box<v1::Responder<serde_json::Value>>),
    Backend(oneshot::Sender<Option<PermissionKind>>),
}

impl Asker {
    /// Sends the chosen option (`None`: cancelled).
    fn answer(self, choice: Option<&PermissionChoice>) {
        match self {
            Asker::Agent(responder) => {
                let outcome = match choice {
                    Some(c) => schema::RequestPermissionOutcome::Selected(
                        schema::SelectedPermissionOutcome::new(c.option_id.clone()),
                    ),
                    None => schema::RequestPermissionOutcome::Cancelled,
                };
                let response = schema::RequestPermissionResponse::new(outcome);
                let _ = (*responder).respond(serde_json::to_value(response).unwrap_or_default());
            }
            Asker::Backend(tx) => {
                let _ = tx.send(choice.map(|c| c.kind));
            }
        }
    }
}

struct TurnState {
    seq: u64,
    parts: Vec<TurnPart>,
    cancel_requested: bool,
    /// What the person rejected this turn (the tool calls' titles), for the notice when the
    /// agent ends its turn after it (docs/agents.md §5).
    rejected: Vec<String>,
}

#[derive(Default)]
struct State {
    session_id: Option<String>,
    turn: Option<TurnState>,
    turn_seq: u64,
    replaying: bool,
    stopping: bool,
    /// The open permission requests, by id.
    open: HashMap<PermissionId, Arc<Open>>,
    next_permission: u64,
    modes: Option<Modes>,
    auth_methods: Vec<AuthMethod>,
    /// The stored history the next `session/load` replays (see [`StoredHistory`]).
    history: Option<StoredHistory>,
    /// After a load: the stored tool call ids (never new cards) ...
    known_tools: HashSet<String>,
    /// ... and the stored texts a replay may still send, until live work shows.
    tail: Option<ReplayTail>,
    /// A command list that came while `session/new` was being answered, with the agent
    /// session id it named: offered once that id is ours.
    early_commands: Option<(String, Vec<AgentCommand>)>,
}

/// What the agent offers for its session as a whole: kept apart from turns, because it may
/// change in a turn or between turns (Codex sends its commands when it pleases, which can be
/// after the first turn ended) (docs/agents.md §4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentOffers {
    /// The latest command list (`available_commands_update`, bounded by [`map::commands`]);
    /// `None` until the agent sent one to this process.
    pub commands: Option<Vec<AgentCommand>>,
    /// The latest config options (bounded by [`map::config_options`]; empty if none).
    pub config_options: Vec<AgentConfigOption>,
    /// The session title the agent last gave (`session_info_update`), one clean line (see
    /// [`map::session_title`]); `None` until it gave one. A title the agent clears stays as
    /// it was: the session keeps a name.
    pub title: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    events: mpsc::UnboundedSender<AcpEvent>,
    /// The agent's offers; receivers wake only on a real change.
    offers: watch::Sender<AgentOffers>,
    project: PathBuf,
    terminals: Arc<dyn Terminals>,
    stderr: Arc<Mutex<Tail>>,
    /// Set as soon as the agent is known to be finished: its output closed, the watchdog
    /// killed it, or it was reaped. The exit status comes later (after the cleanup of what it
    /// left), and a turn that starts in between must not be given to a dead agent.
    gone: std::sync::atomic::AtomicBool,
    /// Each terminal the agent starts leaves a notice in the turn (docs/agents.md §6); not
    /// for an agent served inside the backend, whose terminals are ax-code's own doing (the
    /// `shell` agent's command is the tool call the person approved).
    trace_terminals: bool,
}

impl Shared {
    fn new(
        project: PathBuf,
        terminals: Arc<dyn Terminals>,
        stderr: Arc<Mutex<Tail>>,
        trace_terminals: bool,
    ) -> (Arc<Shared>, mpsc::UnboundedReceiver<AcpEvent>) {
        let (events, events_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            events,
            offers: watch::Sender::new(AgentOffers::default()),
            project,
            terminals,
            stderr,
            gone: std::sync::atomic::AtomicBool::new(false),
            trace_terminals,
        });
        (shared, events_rx)
    }

    /// The agent has ended: every process that carries its `tag` is stopped (what it started
    /// elsewhere, with `setsid`, must not outlive it either).
    async fn kill_tagged(tag: Option<String>) {
        if let Some(tag) = tag {
            let killed =
                tokio::task::spawn_blocking(move || ax_agents::process::kill_tagged(|v| v == tag))
                    .await
                    .unwrap_or(0);
            if killed > 0 {
                tracing::info!(killed, "stopped processes the agent had started");
            }
        }
    }

    /// The agent has ended with `status` (and what it left is stopped): its terminals are
    /// released and the exit is reported.
    fn ended(&self, status: String, exit_tx: watch::Sender<Option<String>>) {
        self.terminals.release_all();
        let _ = exit_tx.send(Some(status.clone()));
        let _ = self.events.send(AcpEvent::Exited {
            status,
            stderr_tail: self.stderr_tail(),
        });
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the offers; receivers are told only when they differ afterwards.
    fn offer(&self, change: impl FnOnce(&mut AgentOffers)) {
        self.offers.send_if_modified(|offers| {
            let before = offers.clone();
            change(offers);
            *offers != before
        });
    }

    fn mark_gone(&self) {
        self.gone.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn is_gone(&self) -> bool {
        self.gone.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn stderr_tail(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).text()
    }

    /// Reports `delta`: folded into the running turn, or replayed, or outside a turn.
    fn emit(&self, st: &mut State, delta: TurnDelta) {
        let event = if st.replaying {
            AcpEvent::Replay(ReplayItem::Agent(Box::new(delta)))
        } else if let Some(turn) = st.turn.as_mut() {
            turn::apply(&mut turn.parts, delta.clone());
            AcpEvent::Delta(delta)
        } else {
            AcpEvent::Idle(delta)
        };
        let _ = self.events.send(event);
    }

    /// Reports `delta` as replayed history, never as new work.
    fn replayed(&self, delta: TurnDelta) {
        let _ = self
            .events
            .send(AcpEvent::Replay(ReplayItem::Agent(Box::new(delta))));
    }

    /// Reports a permission request with the handle that answers it. The `PermissionAsked`
    /// delta is folded into the running turn as [`Self::emit`] folds it; a request is live
    /// work, so it is never reported as replay. Nobody listening, it is answered `cancelled`
    /// at once.
    fn ask(self: &Arc<Self>, st: &mut State, permission: PermissionPart, open: Arc<Open>) {
        if !st.replaying
            && let Some(turn) = st.turn.as_mut()
        {
            turn::apply(
                &mut turn.parts,
                TurnDelta::PermissionAsked {
                    permission: permission.clone(),
                },
            );
        }
        st.open.insert(open.id.clone(), open.clone());
        let responder = PermissionResponder {
            open: open.clone(),
            shared: Arc::downgrade(self),
        };
        if let Err(unsent) = self.events.send(AcpEvent::Asked {
            permission,
            responder,
        }) {
            // Answered before the handle drops, which then finds nothing to do (and never
            // waits for this lock).
            self.settle(st, &open, None);
            drop(unsent);
        }
    }

    /// Answers `open` with `choice` (`None`: cancelled) unless it was answered already
    /// (then false, and nothing is sent): the agent (or ax-code's own ask) hears it, it
    /// leaves the open requests and a `PermissionAnswered` delta reports it. An answer
    /// gives the command a card of its own (see the comment below).
    fn settle(&self, st: &mut State, open: &Open, choice: Option<&PermissionChoice>) -> bool {
        let Some(asker) = take_asker(open) else {
            return false;
        };
        st.open.remove(&open.id);
        // ax-code's own asks (a guarded write) are no command of the agent's: no card runs.
        let agents_ask = matches!(asker, Asker::Agent(_));
        asker.answer(choice);
        let outcome = match choice {
            Some(c) => PermissionOutcome::Selected {
                option_id: c.option_id.clone(),
                kind: c.kind,
            },
            None => PermissionOutcome::Cancelled,
        };
        self.emit(
            st,
            TurnDelta::PermissionAnswered {
                permission_id: open.id.clone(),
                outcome,
            },
        );
        let Some(choice) = choice else {
            return true;
        };
        // The command keeps a card of its own even when the agent sent no tool call for it
        // (Gemini, Codex) or ends its turn at once (docs/agents.md §5): allowed, it runs
        // (so an abort or a stop marks it cancelled, never leaves it pending); rejected, it
        // failed. A tool call the agent sends later under the same id replaces this card.
        let rejected = matches!(
            choice.kind,
            PermissionKind::RejectOnce | PermissionKind::RejectAlways
        );
        let mut card = open.tool_call.clone();
        if rejected {
            let title = if card.title.is_empty() {
                card.tool_call_id.clone()
            } else {
                card.title.clone()
            };
            if let Some(t) = st.turn.as_mut() {
                t.rejected.push(title);
            }
        }
        let shown = st
            .turn
            .as_ref()
            .is_some_and(|t| has_card(&t.parts, &card.tool_call_id));
        if !shown && st.turn.is_some() && (rejected || agents_ask) {
            card.status = if rejected {
                ToolStatus::Failed
            } else {
                ToolStatus::InProgress
            };
            self.emit(st, TurnDelta::ToolCallCreated { tool_call: card });
        }
        true
    }

    /// Answers every open permission request `cancelled`, oldest first (each exactly once:
    /// one that its owner answered meanwhile is left as it was answered).
    fn cancel_all(&self, st: &mut State) {
        let mut open: Vec<Arc<Open>> = std::mem::take(&mut st.open).into_values().collect();
        open.sort_by_key(|o| o.seq);
        for o in open {
            self.settle(st, &o, None);
        }
    }

    /// Marks the running turn's open tool calls `status`.
    fn close_tool_calls(&self, st: &mut State, status: ToolStatus) {
        let open: Vec<String> = st
            .turn
            .as_ref()
            .map(|t| {
                t.parts
                    .iter()
                    .filter_map(|p| match p {
                        TurnPart::ToolCall(tc) if tc.status.is_open() => {
                            Some(tc.tool_call_id.clone())
                        }
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        for id in open {
            self.emit(
                st,
                TurnDelta::ToolCallUpdated {
                    tool_call_id: id,
                    fields: ToolCallFields {
                        status: Some(status),
                        ..ToolCallFields::default()
                    },
                },
            );
        }
    }
}

/// A running agent process with its ACP connection.
pub struct AgentHandle {
    name: String,
    cx: ConnectionTo<Agent>,
    shared: Arc<Shared>,
    info: AgentInfo,
    session: Option<SessionInfo>,
    body: Body,
    exit: watch::Receiver<Option<String>>,
    /// Ends the connection in order: the SDK hands the writer what it has queued (a stop's
    /// `cancelled` answers among it) and closes the writer's channel, and the writer closes
    /// stdin once it has written all of it.
    close_connection: CancellationToken,
    /// Closes stdin at once, whatever is still queued (a stop's bound on an agent that does
    /// not read its stdin, the handle's drop).
    close_stdin: CancellationToken,
    options: StartOptions,
}

/// The bytes an in-memory transport buffers in each direction before a writer waits.
const IN_MEMORY_BUFFER: usize = 256 * 1024;

/// What runs an agent: a child process, signalled as a group, or a task of this process
/// ([`AgentHandle::start_in_memory`]), aborted whatever the signal.
#[derive(Clone)]
enum Body {
    Process { pgid: u32 },
    Task(tokio::task::AbortHandle),
}

impl Body {
    /// Sends `signal` to the process group; a task is aborted (it cannot catch one).
    fn signal(&self, signal: rustix::process::Signal) {
        match self {
            Body::Process { pgid } => {
                signal_group(*pgid, signal);
            }
            Body::Task(task) => task.abort(),
        }
    }

    /// The process group (0 for a task).
    fn pgid(&self) -> u32 {
        match self {
            Body::Process { pgid } => *pgid,
            Body::Task(_) => 0,
        }
    }
}

/// The project directory of `options`, canonical: the agent's cwd and the bound of its files.
fn canonical_project(options: &StartOptions) -> Result<PathBuf, StartError> {
    options
        .project_dir
        .canonicalize()
        .map_err(|source| StartError::Project {
            path: options.project_dir.clone(),
            source,
        })
}

fn json_error(e: impl std::fmt::Display) -> acp::Error {
    acp::Error::new(ErrorCode::INVALID_PARAMS, e.to_string())
}

fn respond<T: Serialize>(
    responder: v1::Responder<serde_json::Value>,
    result: Result<T, acp::Error>,
) {
    let result =
        result.and_then(|v| serde_json::to_value(v).map_err(acp::Error::into_internal_error));
    let _ = match result {
        Ok(v) => responder.respond(v),
        Err(e) => responder.respond_with_error(e),
    };
}

fn fs_error(e: fs::FsError) -> acp::Error {
    if e.is_invalid_params() {
        acp::Error::new(ErrorCode::INVALID_PARAMS, e.to_string())
    } else if matches!(e, fs::FsError::NotFound(_)) {
        acp::Error::new(ErrorCode::RESOURCE_NOT_FOUND, e.to_string())
    } else {
        acp::Error::new(ErrorCode::INTERNAL_ERROR, e.to_string())
    }
}

fn parse<T: for<'de> Deserialize<'de>>(params: &serde_json::Value) -> Result<T, acp::Error> {
    T::deserialize(params).map_err(json_error)
}

/// Answers a request served at once: its params as `Req`, then `serve`.
fn answer<Req: for<'de> Deserialize<'de>, Resp: Serialize>(
    params: &serde_json::Value,
    responder: v1::Responder<serde_json::Value>,
    serve: impl FnOnce(Req) -> Result<Resp, acp::Error>,
) {
    respond(responder, parse(params).and_then(serve));
}

/// The agent's own description of a status.
fn describe_status(status: io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "ended".into(),
        },
        Err(e) => format!("unknown status ({e})"),
    }
}

fn handle_update(shared: &Shared, params: &serde_json::Value) {
    let note: schema::SessionNotification = match schema::SessionNotification::deserialize(params) {
        Ok(n) => n,
        Err(e) => {
            let kind = params
                .get("update")
                .and_then(|u| u.get("sessionUpdate"))
                .and_then(|k| k.as_str())
                .unwrap_or("?");
            tracing::warn!(kind, error = %e, "skipped an agent update we do not understand");
            return;
        }
    };
    handle_notification(shared, note);
}

/// The agent's stdout lines on their way to the SDK, with the `session/update`
/// notifications of the open session taken out and handled here (see [`Direct::take`]).
struct Direct {
    shared: Arc<Shared>,
    /// Requests and notifications handed to the SDK that its dispatch has not reached yet.
    queued: Arc<std::sync::atomic::AtomicUsize>,
}

/// The envelope of one JSON-RPC line, looked at before the SDK parses it.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    id: Option<serde::de::IgnoredAny>,
    #[serde(borrow)]
    params: Option<&'a serde_json::value::RawValue>,
}

impl Direct {
    /// Handles `line` here when it is a `session/update` of the open session and nothing
    /// handed to the SDK before it waits for its dispatch (so updates, requests and
    /// notifications keep their order); returns the line for the SDK otherwise.
    ///
    /// At a few thousand updates a second the SDK's generic path (a `Value` tree of the
    /// line, the typed message, the dispatch) was most of the CPU an update costs; here an
    /// update is parsed once, straight into its type. Anything this does not recognise (or
    /// cannot parse) goes to the SDK as before, which reports it as it did.
    fn take(&self, line: String) -> Option<String> {
        use std::sync::atomic::Ordering;
        // Most lines are plain text chunks: those are parsed in one pass. Anything else, and
        // a chunk that has to wait or is for another session, takes the general way below,
        // which decides it as it would have anyway.
        if self.queued.load(Ordering::SeqCst) == 0
            && let Some(note) = text_chunk(&line)
            && self.shared.lock().session_id.as_deref() == Some(&*note.session_id.0)
        {
            handle_notification(&self.shared, note);
            return None;
        }
        let Ok(envelope) = serde_json::from_str::<Envelope>(&line) else {
            return Some(line);
        };
        if envelope.method.is_none() {
            return Some(line); // a response: answered in order by the SDK
        }
        let direct = envelope.id.is_none()
            && envelope.jsonrpc.as_deref() == Some("2.0")
            && envelope.method.as_deref() == Some("session/update")
            && self.queued.load(Ordering::SeqCst) == 0;
        if direct
            && let Some(params) = envelope.params
            && let Ok(note) = serde_json::from_str::<schema::SessionNotification>(params.get())
            && self.shared.lock().session_id.as_deref() == Some(&*note.session_id.0)
        {
            handle_notification(&self.shared, note);
            return None;
        }
        self.queued.fetch_add(1, Ordering::SeqCst);
        Some(line)
    }

    /// The SDK's dispatch reached one request or notification.
    fn dispatched(queued: &std::sync::atomic::AtomicUsize) {
        use std::sync::atomic::Ordering;
        let _ = queued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// A line that is a `session/update` notification of a plain text chunk
/// (`agent_message_chunk`, `agent_thought_chunk` or `user_message_chunk` with a `text` block
/// and nothing else), the bulk of what an agent streams. Unknown fields are refused, so
/// whatever else a line may carry (an `id`, `_meta`, `messageId`, annotations) goes the
/// general way.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextChunkLine<'a> {
    #[serde(borrow)]
    jsonrpc: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    params: TextChunkParams<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextChunkParams<'a> {
    #[serde(rename = "sessionId")]
    session_id: String,
    #[serde(borrow)]
    update: TextChunkUpdate<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextChunkUpdate<'a> {
    #[serde(rename = "sessionUpdate", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    content: TextChunkBlock<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextChunkBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    text: String,
}

/// `line` parsed as a plain text chunk's notification ([`TextChunkLine`]) straight into the
/// notification the general parse gives for its params (no `_meta`, message id or
/// annotations); `None` for anything else, which the caller parses the general way. The
/// general way parses the line twice (its envelope, then the params) and the params through
/// serde's buffered tagged enums (every key and string of the update copied, then read
/// again); at a few thousand chunks a second that was a good part of an update's CPU.
fn text_chunk(line: &str) -> Option<schema::SessionNotification> {
    let line: TextChunkLine = serde_json::from_str(line).ok()?;
    if line.jsonrpc != "2.0" || line.method != "session/update" {
        return None;
    }
    let chunk = line.params;
    if chunk.update.content.kind != "text" {
        return None;
    }
    let content = schema::ContentChunk::new(schema::ContentBlock::Text(schema::TextContent::new(
        chunk.update.content.text,
    )));
    let update = match &*chunk.update.kind {
        "agent_message_chunk" => schema::SessionUpdate::AgentMessageChunk(content),
        "agent_thought_chunk" => schema::SessionUpdate::AgentThoughtChunk(content),
        "user_message_chunk" => schema::SessionUpdate::UserMessageChunk(content),
        _ => return None,
    };
    Some(schema::SessionNotification::new(chunk.session_id, update))
}

fn handle_notification(shared: &Shared, note: schema::SessionNotification) {
    // Mapped before the lock: numbering a diff reads its file.
    let mut tool_delta = match &note.update {
        schema::SessionUpdate::ToolCall(tc) => Some(TurnDelta::ToolCallCreated {
            tool_call: map::tool_call(tc),
        }),
        schema::SessionUpdate::ToolCallUpdate(u) => Some(TurnDelta::ToolCallUpdated {
            tool_call_id: u.tool_call_id.0.to_string(),
            fields: map::fields(&u.fields),
        }),
        _ => None,
    };
    match tool_delta.as_mut() {
        Some(TurnDelta::ToolCallCreated { tool_call }) => {
            number_diffs(&shared.project, &mut tool_call.content);
        }
        Some(TurnDelta::ToolCallUpdated { fields, .. }) => {
            if let Some(content) = fields.content.as_mut() {
                number_diffs(&shared.project, content);
            }
        }
        _ => {}
    }
    let mut st = shared.lock();
    if let schema::SessionUpdate::AvailableCommandsUpdate(u) = &note.update {
        let list = map::commands(&u.available_commands);
        match st.session_id.as_deref() {
            // Claude's adapter may send its list as soon as it answered `session/new`, which
            // can be before that answer is read here.
            None => st.early_commands = Some((note.session_id.0.to_string(), list)),
            Some(id) if id == &*note.session_id.0 => {
                shared.offer(|o| o.commands = Some(list));
            }
            Some(_) => tracing::warn!("skipped commands for another agent session"),
        }
        return;
    }
    if st.session_id.as_deref() != Some(&*note.session_id.0) {
        tracing::warn!("skipped an update for another agent session");
        return;
    }
    let replay = is_replay(&mut st, &note.update);
    let delta = match note.update {
        schema::SessionUpdate::AgentMessageChunk(c) => TurnDelta::TextAppended {
            text: map::block_text(&c.content),
        },
        schema::SessionUpdate::AgentThoughtChunk(c) => TurnDelta::ThoughtAppended {
            text: map::block_text(&c.content),
        },
        schema::SessionUpdate::UserMessageChunk(c) => {
            if st.replaying {
                let _ = shared
                    .events
                    .send(AcpEvent::Replay(ReplayItem::User(map::block_text(
                        &c.content,
                    ))));
            }
            return;
        }
        schema::SessionUpdate::ToolCall(_) | schema::SessionUpdate::ToolCallUpdate(_) => {
            let Some(delta) = tool_delta else { return };
            delta
        }
        schema::SessionUpdate::Plan(p) => TurnDelta::PlanReplaced {
            entries: map::plan(&p),
        },
        schema::SessionUpdate::UsageUpdate(u) => {
            let cost = u.cost.filter(|c| c.amount.is_finite()).map(|c| AgentCost {
                amount: c.amount,
                currency: c.currency,
            });
            let _ = shared.events.send(AcpEvent::Usage(AgentUsage {
                used: u.used,
                size: u.size,
                cost,
            }));
            return;
        }
        schema::SessionUpdate::ConfigOptionUpdate(u) => {
            let list = map::config_options(&u.config_options);
            shared.offer(|o| o.config_options = list);
            return;
        }
        schema::SessionUpdate::SessionInfoUpdate(u) => {
            if let Some(title) = map::session_title(&u) {
                shared.offer(|o| o.title = Some(title));
            }
            return;
        }
        schema::SessionUpdate::CurrentModeUpdate(m) => {
            let id = m.current_mode_id.0.to_string();
            if let Some(modes) = st.modes.as_mut() {
                modes.current = id.clone();
            }
            TurnDelta::Notice {
                notice: Notice {
                    kind: NoticeKind::Mode,
                    message: format!("mode: {id}"),
                },
            }
        }
        schema::SessionUpdate::Notice(n) => TurnDelta::Notice {
            notice: Notice {
                kind: match n.severity {
                    schema::NoticeSeverity::Error => NoticeKind::Error,
                    _ => NoticeKind::Info,
                },
                message: match n.description {
                    Some(d) => format!("{}: {d}", n.title),
                    None => n.title,
                },
            },
        },
        other => {
            tracing::debug!(update = ?std::mem::discriminant(&other), "agent update not shown");
            return;
        }
    };
    if replay && !st.replaying {
        shared.replayed(delta);
    } else {
        shared.emit(&mut st, delta);
    }
}

/// Whether `update` is history an agent replays (docs/agents.md §7): everything during
/// `session/load`; after it, a tool call with a stored id (never a new card), and texts that
/// continue the stored ones in order until live work shows (a text that does not, a new tool
/// call, a permission request) or every stored text came back.
fn is_replay(st: &mut State, update: &schema::SessionUpdate) -> bool {
    let in_turn = |st: &State, id: &str| st.turn.as_ref().is_some_and(|t| has_card(&t.parts, id));
    let replay = match update {
        schema::SessionUpdate::ToolCall(tc) => {
            let id = &*tc.tool_call_id.0;
            let old = st.known_tools.contains(id) && !in_turn(st, id);
            if !old && !st.replaying {
                st.tail = None;
            }
            old
        }
        schema::SessionUpdate::ToolCallUpdate(u) => {
            let id = &*u.tool_call_id.0;
            st.known_tools.contains(id) && !in_turn(st, id)
        }
        schema::SessionUpdate::AgentMessageChunk(c)
        | schema::SessionUpdate::AgentThoughtChunk(c) => {
            let thought = matches!(update, schema::SessionUpdate::AgentThoughtChunk(_));
            let text = map::block_text(&c.content);
            let replaying = st.replaying;
            match st.tail.as_mut() {
                Some(tail) => {
                    let matched = tail.consume(thought, &text);
                    if (!matched && !replaying) || tail.exhausted() {
                        st.tail = None;
                    }
                    matched
                }
                None => false,
            }
        }
        _ => false,
    };
    replay || st.replaying
}

/// Numbers each diff by where it is in its file (docs/agents.md §4).
fn number_diffs(project: &Path, content: &mut [ToolContent]) {
    for c in content {
        if let ToolContent::Diff {
            path,
            old_text,
            new_text,
            line,
        } = c
        {
            *line = fs::diff_line(project, Path::new(path), old_text.as_deref(), new_text);
        }
    }
}

fn handle_permission(
    shared: &Arc<Shared>,
    params: &serde_json::Value,
    responder: v1::Responder<serde_json::Value>,
) {
    let req: schema::RequestPermissionRequest = match parse(params) {
        Ok(r) => r,
        Err(e) => return respond::<()>(responder, Err(e)),
    };
    // Minted before anything else: without randomness the request cannot be shown, and the
    // agent hears so (never a guessed id).
    let permission_id = match PermissionId::mint() {
        Ok(id) => id,
        Err(e) => {
            return respond::<()>(
                responder,
                Err(acp::Error::internal_error().data(format!("cannot mint a permission id: {e}"))),
            );
        }
    };
    let mut fields = map::fields(&req.tool_call.fields);
    if let Some(content) = fields.content.as_mut() {
        number_diffs(&shared.project, content);
    }
    let mut st = shared.lock();
    // A permission request is live work: the replay is over.
    st.tail = None;
    let id_str = req.tool_call.tool_call_id.0.to_string();
    let mut tool_call = st
        .turn
        .as_ref()
        .and_then(|t| {
            t.parts.iter().rev().find_map(|p| match p {
                TurnPart::ToolCall(tc) if tc.tool_call_id == id_str => Some(tc.clone()),
                _ => None,
            })
        })
        .unwrap_or_else(|| ToolCallPart {
            tool_call_id: id_str.clone(),
            ..ToolCallPart::default()
        });
    fields.merge_into(&mut tool_call);
    let options: Vec<PermissionChoice> = req.options.iter().filter_map(map::option).collect();
    st.next_permission += 1;
    let open = Arc::new(Open {
        id: permission_id.clone(),
        seq: st.next_permission,
        asker: Mutex::new(Some(Asker::Agent(Box::new(responder)))),
        options: options.clone(),
        tool_call: tool_call.clone(),
    });
    let part = PermissionPart {
        permission_id,
        tool_call,
        options,
        outcome: PermissionOutcome::Pending,
    };
    shared.ask(&mut st, part, open);
}

/// A terminal cwd: absent means the project; present must be a directory inside it, decided
/// like a file path (`fs::resolve_dir`: one error for every outside path, nothing opened).
fn terminal_cwd(project: &Path, cwd: Option<&Path>) -> Result<PathBuf, acp::Error> {
    let Some(cwd) = cwd else {
        return Ok(project.to_owned());
    };
    fs::resolve_dir(project, cwd).map_err(|e| json_error(format!("terminal cwd: {e}")))
}

/// Where a terminal's live output goes: into the running turn, as deltas on the tool call
/// that shows the terminal. Refused (offered again later) while no tool call shows it; not
/// sent outside a turn or during a replay.
fn terminal_sink(shared: &Arc<Shared>) -> crate::agent_terminal::TerminalSink {
    let shared = Arc::downgrade(shared);
    Arc::new(move |event| {
        let Some(shared) = shared.upgrade() else {
            return false;
        };
        let mut st = shared.lock();
        let (id, delta) = match event {
            crate::agent_terminal::TerminalEvent::Output {
                terminal_id,
                text,
                dropped_bytes,
            } => (
                terminal_id.clone(),
                TurnDelta::TerminalOutput {
                    terminal_id,
                    text,
                    dropped_bytes,
                },
            ),
            crate::agent_terminal::TerminalEvent::Exited { terminal_id, exit } => (
                terminal_id.clone(),
                TurnDelta::TerminalExited { terminal_id, exit },
            ),
        };
        let shown = !st.replaying
            && st
                .turn
                .as_ref()
                .is_some_and(|t| turn::shows_terminal(&t.parts, &id));
        if shown {
            shared.emit(&mut st, delta);
        }
        shown
    })
}

/// Whether a turn runs (and no replay): only then are writes and terminals served.
fn in_turn(shared: &Shared) -> bool {
    let st = shared.lock();
    st.turn.is_some() && !st.replaying
}

/// Leaves a notice in the running turn (`guard`): stored and shown like every delta.
fn trace(shared: &Shared, kind: NoticeKind, message: String) {
    let mut st = shared.lock();
    shared.emit(
        &mut st,
        TurnDelta::Notice {
            notice: Notice { kind, message },
        },
    );
}

/// Asks the person, through the turn's permission flow, whether ax-code may serve a write
/// it would not serve unasked; resolves to whether they allowed it.
async fn ask_before_writing(shared: &Arc<Shared>, shown: &str, relative: &Path, why: &str) -> bool {
    let Ok(permission_id) = PermissionId::mint() else {
        return false;
    };
    let (tx, rx) = oneshot::channel();
    {
        let mut st = shared.lock();
        if st.turn.is_none() {
            return false;
        }
        let options = vec![
            PermissionChoice {
                option_id: "ax-allow-once".into(),
                name: "Allow this write".into(),
                kind: PermissionKind::AllowOnce,
            },
            PermissionChoice {
                option_id: "ax-reject-once".into(),
                name: "Refuse".into(),
                kind: PermissionKind::RejectOnce,
            },
        ];
        st.next_permission += 1;
        let n = st.next_permission;
        let path = relative.to_string_lossy().into_owned();
        // Composed by ax-code, so shown escaped: a name cannot reorder or hide the title.
        let shown_path = ax_core::text::escape_controls(&path);
        let part = PermissionPart {
            permission_id,
            tool_call: ToolCallPart {
                tool_call_id: format!("ax-write-{n}"),
                title: format!("The agent asks ax-code to write {shown_path} ({why})"),
                kind: turn::ToolKind::Edit,
                status: ToolStatus::Pending,
                locations: vec![turn::ToolLocation {
                    path: shown.to_owned(),
                    line: None,
                }],
                raw_input: Some(serde_json::json!({ "path": path })),
                ..ToolCallPart::default()
            },
            options: options.clone(),
            outcome: PermissionOutcome::Pending,
        };
        let open = Arc::new(Open {
            id: part.permission_id.clone(),
            seq: n,
            asker: Mutex::new(Some(Asker::Backend(tx))),
            options,
            tool_call: part.tool_call.clone(),
        });
        shared.ask(&mut st, part, open);
    }
    matches!(
        rx.await,
        Ok(Some(
            PermissionKind::AllowOnce | PermissionKind::AllowAlways
        ))
    )
}

/// `fs/write_text_file` during a turn: where it would land is decided first (nothing
/// written or created); a write there that needs approval asks the person; the write then
/// leaves a notice in the turn, done or not.
async fn serve_write(
    shared: Arc<Shared>,
    req: schema::WriteTextFileRequest,
    responder: v1::Responder<serde_json::Value>,
) {
    let project = shared.project.clone();
    let shown = req.path.to_string_lossy().into_owned();
    let blocking = |f: Box<dyn FnOnce() -> Result<PathBuf, fs::FsError> + Send>| async move {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(acp::Error::into_internal_error)
            .and_then(|r| r.map_err(fs_error))
    };
    let destination = {
        let (project, path) = (project.clone(), req.path.clone());
        blocking(Box::new(move || fs::write_destination(&project, &path))).await
    };
    let relative = match destination {
        Ok(real) => ax_core::project::relative(&project, &real)
            .map(Path::to_owned)
            .unwrap_or(real),
        Err(e) => return respond::<()>(responder, Err(e)),
    };
    if let Some(why) = guard::needs_approval(&relative)
        && !ask_before_writing(&shared, &shown, &relative, why).await
    {
        let refused = "the person did not allow it";
        trace(
            &shared,
            NoticeKind::Info,
            guard::not_written(&shown, refused),
        );
        return respond::<()>(
            responder,
            Err(acp::Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("{shown}: {refused} ({why})"),
            )),
        );
    }
    let bytes = req.content.len();
    let written = {
        let (project, path) = (project.clone(), req.path.clone());
        blocking(Box::new(move || {
            fs::write_text_file(&project, &path, &req.content).map(|()| PathBuf::new())
        }))
        .await
    };
    match &written {
        Ok(_) => trace(&shared, NoticeKind::Info, guard::wrote(&relative, bytes)),
        Err(e) => trace(
            &shared,
            NoticeKind::Info,
            guard::not_written(&shown, &e.message),
        ),
    }
    respond(
        responder,
        written.map(|_| schema::WriteTextFileResponse::new()),
    );
}

fn handle_request(
    shared: &Arc<Shared>,
    method: &str,
    params: &serde_json::Value,
    responder: v1::Responder<serde_json::Value>,
) {
    // Every client method names the session; it must be ours.
    let ours = shared.lock().session_id.clone();
    if let Some(sid) = params.get("sessionId").and_then(|s| s.as_str())
        && ours.as_deref() != Some(sid)
    {
        return respond::<()>(responder, Err(json_error("unknown sessionId")));
    }
    let project = shared.project.clone();
    let terminals = shared.terminals.clone();
    match method {
        "session/request_permission" => handle_permission(shared, params, responder),
        "fs/read_text_file" => {
            let req: schema::ReadTextFileRequest = match parse(params) {
                Ok(r) => r,
                Err(e) => return respond::<()>(responder, Err(e)),
            };
            tokio::spawn(async move {
                let read = tokio::task::spawn_blocking(move || {
                    fs::read_text_file(&project, &req.path, req.line, req.limit)
                })
                .await;
                let result = match read {
                    Ok(r) => r.map(schema::ReadTextFileResponse::new).map_err(fs_error),
                    Err(e) => Err(acp::Error::into_internal_error(e)),
                };
                respond(responder, result);
            });
        }
        "fs/write_text_file" => {
            let req: schema::WriteTextFileRequest = match parse(params) {
                Ok(r) => r,
                Err(e) => return respond::<()>(responder, Err(e)),
            };
            if !in_turn(shared) {
                return respond::<()>(responder, Err(json_error(guard::OUTSIDE_A_TURN)));
            }
            tokio::spawn(serve_write(shared.clone(), req, responder));
        }
        "terminal/create" => answer(params, responder, |req: schema::CreateTerminalRequest| {
            if !in_turn(shared) {
                return Err(json_error(guard::OUTSIDE_A_TURN));
            }
            let cwd = terminal_cwd(&project, req.cwd.as_deref())?;
            let notice = |id: &str| {
                let shown_cwd = ax_core::project::relative(&project, &cwd).unwrap_or(&cwd);
                let shown_cwd = if shown_cwd.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    shown_cwd
                };
                guard::started(id, &req.command, &req.args, shown_cwd)
            };
            let spec = TerminalSpec {
                command: req.command.clone(),
                args: req.args.clone(),
                env: req
                    .env
                    .iter()
                    .map(|e| (e.name.clone(), e.value.clone()))
                    .collect(),
                cwd: cwd.clone(),
                output_byte_limit: req.output_byte_limit,
            };
            let id = terminals
                .create(spec, Some(terminal_sink(shared)))
                .map_err(json_error)?;
            if shared.trace_terminals {
                trace(shared, NoticeKind::Info, notice(&id));
            }
            Ok(schema::CreateTerminalResponse::new(id))
        }),
        "terminal/output" => answer(params, responder, |req: schema::TerminalOutputRequest| {
            let out = terminals.output(&req.terminal_id.0).map_err(json_error)?;
            Ok(
                schema::TerminalOutputResponse::new(out.output, out.truncated)
                    .exit_status(out.exit.map(exit_status)),
            )
        }),
        "terminal/wait_for_exit" => {
            let req: schema::WaitForTerminalExitRequest = match parse(params) {
                Ok(r) => r,
                Err(e) => return respond::<()>(responder, Err(e)),
            };
            let wait = terminals.wait_for_exit(&req.terminal_id.0);
            tokio::spawn(async move {
                let result = wait
                    .await
                    .map(|e| schema::WaitForTerminalExitResponse::new(exit_status(e)))
                    .map_err(json_error);
                respond(responder, result);
            });
        }
        "terminal/kill" => answer(params, responder, |req: schema::KillTerminalRequest| {
            terminals.kill(&req.terminal_id.0).map_err(json_error)?;
            Ok(schema::KillTerminalResponse::new())
        }),
        "terminal/release" => answer(params, responder, |req: schema::ReleaseTerminalRequest| {
            terminals.release(&req.terminal_id.0).map_err(json_error)?;
            Ok(schema::ReleaseTerminalResponse::new())
        }),
        other => {
            tracing::debug!(method = other, "agent asked for a method we do not offer");
            let _ = responder.respond_with_error(acp::Error::method_not_found());
        }
    }
}

fn exit_status(e: crate::agent_terminal::ExitInfo) -> schema::TerminalExitStatus {
    schema::TerminalExitStatus::new()
        .exit_code(e.exit_code)
        .signal(e.signal)
}

/// Writes the connection's lines to the agent's stdin, in order, until the connection closes
/// its channel (then everything it queued has been written) or `close` is cancelled (then
/// what is left is dropped); then closes stdin.
async fn write_stdin<W: tokio::io::AsyncWrite + Unpin>(
    mut stdin: W,
    mut lines: futures::channel::mpsc::UnboundedReceiver<String>,
    close: CancellationToken,
) {
    async fn write_line<W: tokio::io::AsyncWrite + Unpin>(
        stdin: &mut W,
        line: &str,
    ) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await
    }
    loop {
        tokio::select! {
            biased;
            line = lines.next() => match line {
                Some(line) => {
                    let ok = tokio::select! {
                        r = write_line(&mut stdin, &line) => r.is_ok(),
                        () = close.cancelled() => false,
                    };
                    if !ok {
                        break;
                    }
                }
                None => break,
            },
            () = close.cancelled() => break,
        }
    }
    // Closing stdin is how an agent learns we are done (an in-memory transport's half is
    // closed by its shutdown, a pipe by dropping it).
    let _ = stdin.shutdown().await;
    drop(stdin);
}

impl AgentHandle {
    /// Starts the agent in the project directory and runs `initialize`.
    pub async fn start(
        spec: &AgentSpec,
        options: StartOptions,
    ) -> Result<(AgentHandle, mpsc::UnboundedReceiver<AcpEvent>), StartError> {
        let project = canonical_project(&options)?;
        let mut child = process::agent_command(spec, &project, options.tag.as_deref())
            .spawn()
            .map_err(|source| StartError::Spawn {
                name: spec.name.clone(),
                command: spec.command.clone(),
                source,
            })?;
        let pgid = child.id().unwrap_or(0);
        let body = Body::Process { pgid };
        let stderr = Arc::new(Mutex::new(Tail::new(STDERR_TAIL_BYTES)));
        let stderr_pump = child
            .stderr
            .take()
            .map(|e| tokio::spawn(process::collect_tail(e, stderr.clone())));
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            body.signal(rustix::process::Signal::KILL);
            return Err(StartError::Handshake {
                name: spec.name.clone(),
                message: "the agent's standard streams are missing".into(),
                stderr_tail: String::new(),
            });
        };
        // The agent's commands carry its tag too: they run in process groups of their own, so
        // a backend killed with SIGKILL leaves them, and the next one finds them by the tag.
        let terminals = options
            .terminals
            .clone()
            .unwrap_or_else(|| Arc::new(LocalTerminals::tagged(options.tag.clone())));
        let (shared, events_rx) = Shared::new(project, terminals, stderr, true);

        // The process: reaped by its own task, which reports the exit.
        let (exit_tx, exit_rx) = watch::channel(None);
        {
            let shared = shared.clone();
            let tag = options.tag.clone();
            tokio::spawn(async move {
                let status = describe_status(child.wait().await);
                shared.mark_gone();
                // Whatever the agent left in its group would keep our pipes open; what it
                // started elsewhere (setsid) must not outlive it either.
                signal_group(pgid, rustix::process::Signal::KILL);
                Shared::kill_tagged(tag).await;
                if let Some(pump) = stderr_pump {
                    let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
                }
                shared.ended(status, exit_tx);
            });
        }
        Self::connect(
            spec.name.clone(),
            options,
            shared,
            (stdin, stdout),
            body,
            exit_rx,
            events_rx,
        )
        .await
    }

    /// Starts an agent served inside this process over an in-memory transport (a
    /// `tokio::io::duplex` pair instead of a child's pipes) and runs `initialize`. `serve`
    /// gets the agent's end and runs as a task of its own; it speaks ACP exactly as a child
    /// would on its stdin and stdout. There is no process group: closing the transport is how
    /// the agent learns it is stopped, and [`Self::stop`] and the watchdog abort its task
    /// when it does not end by itself; [`Self::process_group`] is 0. The agent's terminals
    /// carry `options.tag` (when given), so what they started is stopped with the agent and
    /// by the cleanup after a crash. They leave no notice in the turn: such an agent is
    /// ax-code's own, and what it runs is shown where it asked (the `shell` agent's call).
    pub async fn start_in_memory<F, Fut>(
        name: &str,
        options: StartOptions,
        serve: F,
    ) -> Result<(AgentHandle, mpsc::UnboundedReceiver<AcpEvent>), StartError>
    where
        F: FnOnce(tokio::io::DuplexStream) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let project = canonical_project(&options)?;
        let (ours, theirs) = tokio::io::duplex(IN_MEMORY_BUFFER);
        let terminals = options
            .terminals
            .clone()
            .unwrap_or_else(|| Arc::new(LocalTerminals::tagged(options.tag.clone())));
        let stderr = Arc::new(Mutex::new(Tail::new(STDERR_TAIL_BYTES)));
        let (shared, events_rx) = Shared::new(project, terminals, stderr, false);
        let task = tokio::spawn(serve(theirs));
        let body = Body::Task(task.abort_handle());
        let (exit_tx, exit_rx) = watch::channel(None);
        {
            let shared = shared.clone();
            let tag = options.tag.clone();
            tokio::spawn(async move {
                let status = match task.await {
                    Ok(()) => "ended".to_string(),
                    Err(e) if e.is_cancelled() => "stopped".to_string(),
                    Err(e) => format!("failed ({e})"),
                };
                shared.mark_gone();
                Shared::kill_tagged(tag).await;
                shared.ended(status, exit_tx);
            });
        }
        let (read, write) = tokio::io::split(ours);
        Self::connect(
            name.to_string(),
            options,
            shared,
            (write, read),
            body,
            exit_rx,
            events_rx,
        )
        .await
    }

    /// Speaks ACP over `(stdin, stdout)` (the agent's input and output, whatever carries
    /// them) and runs `initialize`.
    async fn connect<W, R>(
        name: String,
        options: StartOptions,
        shared: Arc<Shared>,
        (stdin, stdout): (W, R),
        body: Body,
        exit_rx: watch::Receiver<Option<String>>,
        events_rx: mpsc::UnboundedReceiver<AcpEvent>,
    ) -> Result<(AgentHandle, mpsc::UnboundedReceiver<AcpEvent>), StartError>
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
    {
        // stdin: our writer task; stdout: bounded lines.
        let close_connection = CancellationToken::new();
        let close_stdin = CancellationToken::new();
        let (out_tx, out_rx) = futures::channel::mpsc::unbounded::<String>();
        tokio::spawn(write_stdin(stdin, out_rx, close_stdin.clone()));
        let sink = out_tx
            .sink_map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "agent stdin closed"));
        // stdout is read by a task of its own that handles the session's updates itself
        // ([`Direct::take`]) and hands the SDK only the rest: a line that wakes this small
        // task does not also poll the SDK's whole connection future.
        let direct = Direct {
            shared: shared.clone(),
            queued: Arc::default(),
        };
        let queued = direct.queued.clone();
        let (sdk_tx, mut sdk_rx) = mpsc::unbounded_channel::<io::Result<String>>();
        tokio::spawn(async move {
            let mut lines = std::pin::pin!(process::bounded_lines(stdout, process::MAX_LINE_BYTES));
            loop {
                let line = tokio::select! {
                    line = lines.next() => line,
                    // The connection is over: nobody reads the rest.
                    () = sdk_tx.closed() => return,
                };
                let Some(line) = line else { return };
                let forward = match line {
                    Ok(line) => direct.take(line).map(Ok),
                    Err(e) => Some(Err(e)),
                };
                if let Some(forward) = forward
                    && sdk_tx.send(forward).is_err()
                {
                    return;
                }
            }
        });
        let lines = futures::stream::poll_fn(move |cx| sdk_rx.poll_recv(cx));
        let transport = Lines::new(sink, lines);

        let (cx_tx, cx_rx) = oneshot::channel();
        let shutdown = close_connection.clone();
        let handler_shared = shared.clone();
        let closed_shared = shared.clone();
        tokio::spawn(async move {
            let result = Client
                .v1()
                .name("ax-code")
                .on_receive_dispatch(
                    async move |message: v1::Dispatch, _cx: ConnectionTo<Agent>| match message {
                        acp::Dispatch::Notification(n) => {
                            Direct::dispatched(&queued);
                            if n.method() == "session/update" {
                                handle_update(&handler_shared, n.params());
                            } else {
                                tracing::debug!(method = n.method(), "agent notification ignored");
                            }
                            Ok(Handled::Yes)
                        }
                        acp::Dispatch::Request(req, responder) => {
                            Direct::dispatched(&queued);
                            handle_request(&handler_shared, req.method(), req.params(), responder);
                            Ok(Handled::Yes)
                        }
                        message => Ok(Handled::No {
                            message,
                            retry: false,
                        }),
                    },
                    acp::on_receive_dispatch!(),
                )
                // Returning ends the connection in order: the SDK writes out what it has
                // queued (through the sink, which it then closes) before it ends.
                .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                    let _ = cx_tx.send(cx.clone());
                    tokio::select! {
                        () = shutdown.cancelled() => {}
                        () = cx.incoming_closed() => {}
                    }
                    Ok(())
                })
                .await;
            // Its output is closed: whatever the process does now, it speaks no more ACP.
            closed_shared.mark_gone();
            if let Err(e) = result {
                tracing::debug!(error = %e, "agent connection ended with an error");
            }
        });
        let fail = |message: String, shared: &Shared| StartError::Handshake {
            name: name.clone(),
            message,
            stderr_tail: shared.stderr_tail(),
        };
        let Ok(cx) = cx_rx.await else {
            body.signal(rustix::process::Signal::KILL);
            return Err(fail("the connection did not start".into(), &shared));
        };
        let mut handle = AgentHandle {
            name: name.clone(),
            cx,
            shared,
            info: AgentInfo {
                name: name.clone(),
                title: None,
                version: String::new(),
                protocol_version: 0,
                load_session: false,
                resume_session: false,
                capabilities: serde_json::Value::Null,
                auth_methods: Vec::new(),
            },
            session: None,
            body,
            exit: exit_rx,
            close_connection,
            close_stdin,
            options,
        };
        let init = schema::InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(
                schema::ClientCapabilities::new()
                    .fs(schema::FileSystemCapabilities::new()
                        .read_text_file(true)
                        .write_text_file(true))
                    .terminal(true),
            )
            .client_info(schema::Implementation::new(
                "ax-code",
                env!("CARGO_PKG_VERSION"),
            ));
        let answer = handle.request(init).await;
        let response = match answer {
            Ok(r) => r,
            Err(message) => {
                let err = handle.fail_start(message).await;
                return Err(err);
            }
        };
        let version = serde_json::to_value(response.protocol_version)
            .ok()
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        if version != u64::from(PROTOCOL_VERSION) {
            handle.stop().await;
            return Err(StartError::ProtocolVersion {
                name: name.clone(),
                detail: format!("it answered version {version}"),
                stderr_tail: handle.shared.stderr_tail(),
            });
        }
        let caps = &response.agent_capabilities;
        let auth_methods = map::auth_methods(&response.auth_methods);
        handle.shared.lock().auth_methods = auth_methods.clone();
        handle.info = AgentInfo {
            name: response
                .agent_info
                .as_ref()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| name.clone()),
            title: response.agent_info.as_ref().and_then(|i| i.title.clone()),
            version: response
                .agent_info
                .as_ref()
                .map(|i| i.version.clone())
                .unwrap_or_default(),
            protocol_version: PROTOCOL_VERSION,
            load_session: caps.load_session,
            resume_session: caps.session_capabilities.resume.is_some(),
            capabilities: serde_json::to_value(caps).unwrap_or_default(),
            auth_methods,
        };
        Ok((handle, events_rx))
    }

    async fn fail_start(&mut self, message: String) -> StartError {
        // The stderr tail explains most failures; give the process a moment to write it.
        self.stop().await;
        let tail = self.shared.stderr_tail();
        if message.contains("protocol") && message.contains("version") {
            return StartError::ProtocolVersion {
                name: self.name.clone(),
                detail: message,
                stderr_tail: tail,
            };
        }
        StartError::Handshake {
            name: self.name.clone(),
            message,
            stderr_tail: tail,
        }
    }

    /// Sends a setup request and waits (bounded) for its answer; errors as text.
    async fn request<R: acp::JsonRpcRequest>(&self, req: R) -> Result<R::Response, String> {
        self.request_raw(req).await.map_err(|e| match e {
            Some(e) => match e.data.as_ref().and_then(|d| d.as_str()) {
                Some(data) => format!("{}: {data} (code {})", e.message, e.code.value()),
                None => format!("{} (code {})", e.message, e.code.value()),
            },
            None => format!(
                "no answer within {} s",
                self.options.request_timeout.as_secs()
            ),
        })
    }

    async fn request_raw<R: acp::JsonRpcRequest>(
        &self,
        req: R,
    ) -> Result<R::Response, Option<acp::Error>> {
        match tokio::time::timeout(
            self.options.request_timeout,
            self.cx.send_request(req).block_task(),
        )
        .await
        {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Some(e)),
            Err(_) => Err(None),
        }
    }

    /// What the agent said about itself.
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// The open session, if any.
    pub fn session(&self) -> Option<&SessionInfo> {
        self.session.as_ref()
    }

    /// The process group of the agent (for crash cleanup records).
    pub fn process_group(&self) -> u32 {
        self.body.pgid()
    }

    /// The last 64 KiB of the agent's stderr.
    pub fn stderr_tail(&self) -> String {
        self.shared.stderr_tail()
    }

    /// Whether the agent can still take a turn: not reaped, its output not closed, and not
    /// killed by the watchdog (each is known before the exit status, which waits for the
    /// cleanup of what the agent left).
    pub fn is_alive(&self) -> bool {
        !self.shared.is_gone() && self.exit.borrow().is_none()
    }

    /// Whether a turn is running.
    pub fn is_busy(&self) -> bool {
        self.shared.lock().turn.is_some()
    }

    /// Current modes.
    pub fn modes(&self) -> Option<Modes> {
        self.shared.lock().modes.clone()
    }

    /// The agent's latest command list (empty until it sent one).
    pub fn commands(&self) -> Vec<AgentCommand> {
        self.shared
            .offers
            .borrow()
            .commands
            .clone()
            .unwrap_or_default()
    }

    /// The agent's offers as they change, in and between turns; the value seen now is marked
    /// seen, so `changed()` wakes for what comes after.
    pub fn offers(&self) -> watch::Receiver<AgentOffers> {
        self.shared.offers.subscribe()
    }

    /// Pending permissions, oldest first.
    pub fn pending_permissions(&self) -> Vec<(PermissionId, Vec<PermissionChoice>)> {
        let mut open: Vec<Arc<Open>> = self.shared.lock().open.values().cloned().collect();
        open.sort_by_key(|o| o.seq);
        open.iter()
            .map(|o| (o.id.clone(), o.options.clone()))
            .collect()
    }

    fn map_session_error(&self, e: Option<acp::Error>) -> SessionError {
        match e {
            Some(e) if e.code == ErrorCode::AUTH_REQUIRED => SessionError::NeedsAuth {
                auth_methods: self.info.auth_methods.clone(),
            },
            Some(e) => SessionError::Agent {
                message: format!("{} (code {})", e.message, e.code.value()),
                stderr_tail: self.stderr_tail(),
            },
            None => SessionError::Agent {
                message: format!(
                    "no answer within {} s",
                    self.options.request_timeout.as_secs()
                ),
                stderr_tail: self.stderr_tail(),
            },
        }
    }

    /// Opens the agent session: `reopen` names the agent's session id from before. Restores
    /// through `session/load` if advertised (replay as [`AcpEvent::Replay`]), else
    /// `session/resume`, else a new session with a notice that the agent's own context was
    /// not restored. A new session never starts in a mode that skips permission.
    pub async fn open_session(
        &mut self,
        mcp_servers: Vec<schema::McpServer>,
        reopen: Option<&str>,
    ) -> Result<SessionInfo, SessionError> {
        let project = self.shared.project.clone();
        let mut restored = Restored::New;
        let mut response_modes = None;
        let mut config_options = None;
        let mut session_id = None;
        let mut not_restored_reason = None;
        if let Some(old) = reopen {
            // Load (with the replay flagged) or resume; both answer modes and options.
            let options = |c: Option<Vec<schema::SessionConfigOption>>| {
                c.map(|c| serde_json::to_value(c).unwrap_or_default())
            };
            let attempt = if self.info.load_session {
                {
                    let mut st = self.shared.lock();
                    st.session_id = Some(old.to_string());
                    st.replaying = true;
                    let history = st.history.take().unwrap_or_default();
                    st.known_tools = history.tool_call_ids;
                    st.tail = Some(ReplayTail {
                        texts: history.texts,
                        at: (0, 0),
                    });
                }
                let req = schema::LoadSessionRequest::new(old.to_string(), project.clone())
                    .mcp_servers(mcp_servers.clone())
                    .meta(self.options.session_meta.clone());
                let loaded = self.request_raw(req).await;
                {
                    let mut st = self.shared.lock();
                    st.replaying = false;
                    if loaded.is_err() {
                        st.known_tools.clear();
                        st.tail = None;
                    } else if st.tail.as_ref().is_some_and(ReplayTail::exhausted) {
                        st.tail = None;
                    }
                }
                let loaded = loaded.map(|r| (r.modes, options(r.config_options)));
                Some(("session/load", Restored::Loaded, loaded))
            } else if self.info.resume_session {
                self.shared.lock().session_id = Some(old.to_string());
                let req = schema::ResumeSessionRequest::new(old.to_string(), project.clone())
                    .mcp_servers(mcp_servers.clone())
                    .meta(self.options.session_meta.clone());
                let resumed = self.request_raw(req).await;
                let resumed = resumed.map(|r| (r.modes, options(r.config_options)));
                Some(("session/resume", Restored::Resumed, resumed))
            } else {
                not_restored_reason =
                    Some("the agent offers neither session/load nor session/resume".into());
                None
            };
            if let Some((method, how, answer)) = attempt {
                match answer {
                    Ok((modes, options)) => {
                        restored = how;
                        response_modes = modes;
                        config_options = options;
                        session_id = Some(old.to_string());
                    }
                    Err(Some(e)) if e.code == ErrorCode::AUTH_REQUIRED => {
                        self.shared.lock().session_id = None;
                        return Err(self.map_session_error(Some(e)));
                    }
                    Err(e) => {
                        self.shared.lock().session_id = None;
                        not_restored_reason = Some(format!(
                            "{method} failed: {}",
                            e.map(|e| e.message).unwrap_or_else(|| "no answer".into())
                        ));
                    }
                }
            }
        }
        let session_id = match session_id {
            Some(id) => id,
            None => {
                let req = schema::NewSessionRequest::new(project)
                    .mcp_servers(mcp_servers)
                    .meta(self.options.session_meta.clone());
                let r = self
                    .request_raw(req)
                    .await
                    .map_err(|e| self.map_session_error(e))?;
                response_modes = r.modes;
                config_options = r
                    .config_options
                    .map(|c| serde_json::to_value(c).unwrap_or_default());
                if reopen.is_some() {
                    restored = Restored::NotRestored;
                }
                r.session_id.0.to_string()
            }
        };
        let modes = response_modes.map(|m| Modes {
            current: m.current_mode_id.0.to_string(),
            available: m
                .available_modes
                .iter()
                .map(|a| Mode {
                    id: a.id.0.to_string(),
                    name: a.name.clone(),
                    description: a.description.clone(),
                })
                .collect(),
        });
        {
            let mut st = self.shared.lock();
            st.session_id = Some(session_id.clone());
            st.modes = modes.clone();
            let options = config_options
                .as_ref()
                .and_then(|v| Vec::<schema::SessionConfigOption>::deserialize(v).ok())
                .map(|list| map::config_options(&list))
                .unwrap_or_default();
            let early = st
                .early_commands
                .take()
                .filter(|(id, _)| *id == session_id)
                .map(|(_, list)| list);
            self.shared.offer(|o| {
                o.config_options = options;
                if early.is_some() {
                    o.commands = early;
                }
            });
            if restored == Restored::NotRestored {
                let why = not_restored_reason.unwrap_or_default();
                self.shared.emit(
                    &mut st,
                    TurnDelta::Notice {
                        notice: Notice {
                            kind: NoticeKind::Info,
                            message: format!(
                                "a new agent session was started: the agent's own context of \
                                 this conversation was not restored ({why})"
                            ),
                        },
                    },
                );
            }
        }
        let mut info = SessionInfo {
            session_id,
            modes,
            config_options,
            restored,
        };
        // Never start in a mode that acts without asking.
        if let Some(modes) = &info.modes {
            let current = modes.available.iter().find(|m| m.id == modes.current);
            let bypass = current.map_or_else(
                || map::is_bypass_mode(&modes.current, ""),
                |m| map::is_bypass_mode(&m.id, &m.name),
            );
            if bypass {
                let asking = modes
                    .available
                    .iter()
                    .find(|m| m.id == "default")
                    .or_else(|| {
                        modes
                            .available
                            .iter()
                            .find(|m| !map::is_bypass_mode(&m.id, &m.name))
                    })
                    .map(|m| m.id.clone());
                if let Some(mode) = asking {
                    self.set_mode(&mode).await?;
                    if let Some(m) = info.modes.as_mut() {
                        m.current = mode;
                    }
                }
            }
        }
        self.session = Some(info.clone());
        Ok(info)
    }

    /// What the backend stored of this conversation, for the next reopen through
    /// `session/load`: its replay is matched against it, also what arrives after the load's
    /// answer (see [`StoredHistory`]).
    pub fn expect_history(&self, history: StoredHistory) {
        self.shared.lock().history = Some(history);
    }

    /// The ID of the session this connection has open.
    fn session_id(&self) -> Result<String, SessionError> {
        let st = self.shared.lock();
        st.session_id.clone().ok_or(SessionError::NoSession)
    }

    /// Switches the agent's mode (`session/set_mode`).
    pub async fn set_mode(&self, mode_id: &str) -> Result<(), SessionError> {
        let sid = self.session_id()?;
        self.request_raw(schema::SetSessionModeRequest::new(sid, mode_id.to_string()))
            .await
            .map_err(|e| self.map_session_error(e))?;
        let mut st = self.shared.lock();
        if let Some(m) = st.modes.as_mut() {
            m.current = mode_id.to_string();
        }
        Ok(())
    }

    /// The agent's latest config options (empty if it offers none).
    pub fn config_options(&self) -> Vec<AgentConfigOption> {
        self.shared.offers.borrow().config_options.clone()
    }

    /// Changes one config option (`session/set_config_option`); the agent answers with its
    /// full option list, which is kept and returned. The caller checks the value first.
    pub async fn set_config_option(
        &self,
        config_id: &str,
        value: &ConfigValue,
    ) -> Result<Vec<AgentConfigOption>, SessionError> {
        let sid = self.session_id()?;
        let value = match value {
            ConfigValue::Bool(b) => schema::SessionConfigOptionValue::boolean(*b),
            ConfigValue::Text(t) => schema::SessionConfigOptionValue::value_id(t.clone()),
        };
        let answer = self
            .request_raw(schema::SetSessionConfigOptionRequest::new(
                sid,
                config_id.to_string(),
                value,
            ))
            .await
            .map_err(|e| self.map_session_error(e))?;
        let list = map::config_options(&answer.config_options);
        let kept = list.clone();
        self.shared.offer(|o| o.config_options = kept);
        Ok(list)
    }

    /// Starts a turn with a text prompt.
    pub fn prompt_text(&self, text: &str) -> Result<(), PromptError> {
        self.prompt(vec![schema::ContentBlock::Text(schema::TextContent::new(
            text.to_string(),
        ))])
    }

    /// Starts a turn. Its deltas arrive as [`AcpEvent::Delta`], its end as
    /// [`AcpEvent::TurnEnded`]. One turn at a time.
    pub fn prompt(&self, blocks: Vec<schema::ContentBlock>) -> Result<(), PromptError> {
        if !self.is_alive() {
            return Err(PromptError::Exited);
        }
        let (sid, seq) = {
            let mut st = self.shared.lock();
            let sid = st.session_id.clone().ok_or(PromptError::NoSession)?;
            if st.turn.is_some() {
                return Err(PromptError::Busy);
            }
            st.turn_seq += 1;
            let seq = st.turn_seq;
            st.turn = Some(TurnState {
                seq,
                parts: Vec::new(),
                cancel_requested: false,
                rejected: Vec::new(),
            });
            (sid, seq)
        };
        let sent = self
            .cx
            .send_request(schema::PromptRequest::new(sid, blocks));
        let shared = self.shared.clone();
        let exit = self.exit.clone();
        tokio::spawn(async move {
            // Awaited to the end, never dropped: see the module comment.
            let result = sent.block_task().await;
            finish_turn(&shared, seq, result, exit).await;
        });
        Ok(())
    }

    /// Answers a pending permission, found by id, with the agent's option of `kind` (or the
    /// narrower one of the same direction); returns the option that was sent. Its
    /// [`PermissionResponder`] then finds it answered.
    pub fn answer_permission(
        &self,
        permission_id: &PermissionId,
        kind: PermissionKind,
    ) -> Result<PermissionChoice, AnswerError> {
        self.answer_option(permission_id, kind, None)
    }

    /// Like [`Self::answer_permission`], but `option_id`, when given, names the exact option
    /// to send (an agent may offer several of one kind, docs/agents.md §5); `kind` is then
    /// not used.
    pub fn answer_option(
        &self,
        permission_id: &PermissionId,
        kind: PermissionKind,
        option_id: Option<&str>,
    ) -> Result<PermissionChoice, AnswerError> {
        let mut st = self.shared.lock();
        let open = st
            .open
            .get(permission_id)
            .cloned()
            .ok_or_else(|| AnswerError::Unknown(permission_id.to_string()))?;
        let choice = choose(&open.options, kind, option_id)?;
        if !self.shared.settle(&mut st, &open, Some(&choice)) {
            return Err(AnswerError::Unknown(permission_id.to_string()));
        }
        Ok(choice)
    }

    /// Aborts the running turn: `session/cancel`, open permission requests answered `cancelled`,
    /// open tool calls marked cancelled; the turn ends when the agent answers the prompt, or
    /// its process group is killed after the watchdog. Returns whether a turn was running.
    pub fn cancel(&self) -> bool {
        let seq = {
            let mut st = self.shared.lock();
            let Some(turn) = st.turn.as_mut() else {
                return false;
            };
            if turn.cancel_requested {
                return true;
            }
            turn.cancel_requested = true;
            let seq = turn.seq;
            // session/cancel first, so the agent knows why its permission requests end.
            let sid = st.session_id.clone().unwrap_or_default();
            if let Err(e) = self
                .cx
                .send_notification(schema::CancelNotification::new(sid))
            {
                tracing::debug!(error = %e, "could not send session/cancel");
            }
            self.shared.cancel_all(&mut st);
            self.shared.close_tool_calls(&mut st, ToolStatus::Cancelled);
            seq
        };
        let shared = self.shared.clone();
        let body = self.body.clone();
        let watchdog = self.options.watchdog;
        tokio::spawn(async move {
            tokio::time::sleep(watchdog).await;
            let running = shared.lock().turn.as_ref().is_some_and(|t| t.seq == seq);
            if running {
                tracing::warn!(
                    pgid = body.pgid(),
                    "the agent ignored the abort: killing its process group (or task)"
                );
                // Dead from now on for whoever asks, before the kernel and the reaper agree.
                shared.mark_gone();
                body.signal(rustix::process::Signal::KILL);
            }
        });
        true
    }

    /// Stops the agent: answers every open permission request `cancelled`, closes stdin once
    /// those answers are written, SIGTERM to the group after `stop_term_after`, SIGKILL after
    /// `stop_kill_after` more. Waits for the process.
    ///
    /// The answers go out before stdin closes (ACP: every request is answered; an agent that
    /// reads the end of its stdin before the answer may hang or misreport the request): the
    /// connection is ended in order, so the writer closes stdin right after it has written
    /// what was queued. At the latest stdin is closed with the SIGTERM, whatever is left, so
    /// an agent that does not read its stdin delays nothing.
    pub async fn stop(&self) {
        {
            let mut st = self.shared.lock();
            st.stopping = true;
            self.shared.cancel_all(&mut st);
        }
        self.shared.terminals.release_all();
        self.close_connection.cancel();
        let mut exit = self.exit.clone();
        let mut wait = async |d: Duration| {
            tokio::time::timeout(d, exit.wait_for(Option::is_some))
                .await
                .is_ok()
        };
        if !wait(self.options.stop_term_after).await {
            self.close_stdin.cancel();
            self.body.signal(rustix::process::Signal::TERM);
            if !wait(self.options.stop_kill_after).await {
                self.body.signal(rustix::process::Signal::KILL);
                let _ = wait(Duration::from_secs(5)).await;
            }
        }
        self.close_stdin.cancel();
    }
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        self.close_connection.cancel();
        self.close_stdin.cancel();
        // Not `is_alive`: an agent that closed its output may still run, and must not outlive
        // its handle; only a reaped one is surely gone.
        if self.exit.borrow().is_none() {
            self.body.signal(rustix::process::Signal::KILL);
            if let Some(tag) = &self.options.tag {
                ax_agents::process::kill_tagged(|v| v == tag);
            }
        }
    }
}

/// The notice when an agent ends its turn itself after the person rejected its tool calls
/// (`titles`, each shortened as [`rejected_list`] does). The v13 migration of stored shell
/// replies writes the same notice (docs/backend.md, "One agent model").
pub fn rejected_notice(titles: &[String]) -> String {
    format!(
        "the agent ended its turn after you rejected {}",
        rejected_list(titles)
    )
}

/// The rejected tool calls for a notice: each title's first line, shortened.
fn rejected_list(titles: &[String]) -> String {
    titles
        .iter()
        .map(|t| {
            let first = t.lines().next().unwrap_or_default();
            let short: String = first.chars().take(120).collect();
            let more = first.chars().count() > 120 || t.lines().nth(1).is_some();
            format!("`{short}{}`", if more { "…" } else { "" })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

async fn finish_turn(
    shared: &Shared,
    seq: u64,
    result: Result<schema::PromptResponse, acp::Error>,
    mut exit: watch::Receiver<Option<String>>,
) {
    let (cancel_requested, stopping, rejected_titles) = {
        let st = shared.lock();
        let turn = st.turn.as_ref().filter(|t| t.seq == seq);
        (
            turn.is_some_and(|t| t.cancel_requested),
            st.stopping,
            turn.map(|t| t.rejected.clone()).unwrap_or_default(),
        )
    };
    let rejected = rejected_list(&rejected_titles);
    let mut stop_notice = None;
    let end = match result {
        Ok(r) => {
            let reason = serde_json::to_value(r.stop_reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "unknown".into());
            if reason == "cancelled" || cancel_requested {
                // Not the person's abort: the agent ended the turn itself, after a reject
                // (Codex's `abort` option does that). Say why (docs/agents.md §5).
                if !cancel_requested && !stopping && !rejected.is_empty() {
                    stop_notice = Some(rejected_notice(&rejected_titles));
                }
                TurnEnd::Cancelled
            } else {
                if reason != "end_turn" {
                    stop_notice = Some(if rejected.is_empty() {
                        format!("the agent stopped: {reason}")
                    } else {
                        format!("the agent stopped ({reason}) after you rejected {rejected}")
                    });
                }
                TurnEnd::Completed {
                    stop_reason: reason,
                }
            }
        }
        Err(e) if e.code == ErrorCode::AUTH_REQUIRED => TurnEnd::NeedsAuth {
            auth_methods: shared.lock().auth_methods.clone(),
        },
        Err(_) if cancel_requested || stopping => TurnEnd::Cancelled,
        Err(e) => {
            let gone = acp::is_incoming_transport_closed(&e) || acp::is_connection_terminated(&e);
            let message = if gone {
                let status =
                    tokio::time::timeout(Duration::from_secs(3), exit.wait_for(Option::is_some))
                        .await
                        .ok()
                        .and_then(|r| r.ok().and_then(|s| s.clone()))
                        .unwrap_or_else(|| "closed its output".into());
                format!("the agent exited mid-turn ({status})")
            } else {
                format!(
                    "the agent failed the prompt: {} (code {})",
                    e.message,
                    e.code.value()
                )
            };
            TurnEnd::Failed {
                message,
                stderr_tail: shared.stderr_tail(),
            }
        }
    };
    let mut st = shared.lock();
    if let Some(message) = stop_notice {
        shared.emit(
            &mut st,
            TurnDelta::Notice {
                notice: Notice {
                    kind: NoticeKind::Stop,
                    message,
                },
            },
        );
    }
    if let TurnEnd::NeedsAuth { auth_methods } = &end {
        let message = format!(
            "the agent needs authentication: {}",
            describe_auth(auth_methods)
        );
        shared.emit(
            &mut st,
            TurnDelta::Notice {
                notice: Notice {
                    kind: NoticeKind::Auth,
                    message,
                },
            },
        );
    }
    if let TurnEnd::Failed { message, .. } = &end {
        let message = message.clone();
        shared.emit(
            &mut st,
            TurnDelta::Notice {
                notice: Notice {
                    kind: NoticeKind::Error,
                    message,
                },
            },
        );
    }
    shared.cancel_all(&mut st);
    match end {
        TurnEnd::Cancelled => shared.close_tool_calls(&mut st, ToolStatus::Cancelled),
        TurnEnd::Failed { .. } => shared.close_tool_calls(&mut st, ToolStatus::Failed),
        _ => {}
    }
    let parts = st.turn.take().map(|t| t.parts).unwrap_or_default();
    let _ = shared.events.send(AcpEvent::TurnEnded { end, parts });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open session's updates are handled off the SDK's path, but never ahead of a
    /// request or notification handed to the SDK before them; anything else goes to the SDK.
    #[test]
    fn direct_updates_keep_their_order_behind_the_sdk() {
        let (events, mut rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                session_id: Some("s1".into()),
                ..State::default()
            }),
            events,
            offers: watch::Sender::new(AgentOffers::default()),
            project: PathBuf::from("/nonexistent"),
            terminals: Arc::new(LocalTerminals::new()),
            stderr: Arc::new(Mutex::new(Tail::new(64))),
            gone: std::sync::atomic::AtomicBool::new(false),
            trace_terminals: true,
        });
        let direct = Direct {
            shared,
            queued: Arc::default(),
        };
        let update = |sid: &str, text: &str| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\
                 \"sessionId\":\"{sid}\",\"update\":{{\"sessionUpdate\":\
                 \"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"{text}\"}}}}}}}}"
            )
        };
        let handled = |rx: &mut mpsc::UnboundedReceiver<AcpEvent>| {
            let mut texts = Vec::new();
            while let Ok(event) = rx.try_recv() {
                match event {
                    AcpEvent::Idle(TurnDelta::TextAppended { text }) => texts.push(text),
                    other => panic!("unexpected event {other:?}"),
                }
            }
            texts
        };
        let queued = |d: &Direct| d.queued.load(std::sync::atomic::Ordering::SeqCst);

        assert_eq!(direct.take(update("s1", "a")), None);
        assert_eq!(handled(&mut rx), vec!["a".to_string()]);
        // A request goes to the SDK; the update behind it waits for the SDK too.
        let request =
            r#"{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{}}"#;
        assert_eq!(direct.take(request.into()).as_deref(), Some(request));
        assert_eq!(direct.take(update("s1", "b")), Some(update("s1", "b")));
        assert_eq!(queued(&direct), 2);
        assert!(handled(&mut rx).is_empty());
        Direct::dispatched(&direct.queued);
        assert_eq!(direct.take(update("s1", "c")), Some(update("s1", "c")));
        Direct::dispatched(&direct.queued);
        Direct::dispatched(&direct.queued);
        assert_eq!(queued(&direct), 0);
        assert_eq!(direct.take(update("s1", "d")), None);
        assert_eq!(handled(&mut rx), vec!["d".to_string()]);
        // Responses, lines that are not JSON and other sessions' updates go to the SDK;
        // only requests and notifications wait for its dispatch.
        let response = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert_eq!(direct.take(response.into()).as_deref(), Some(response));
        assert_eq!(direct.take("not json".into()).as_deref(), Some("not json"));
        assert_eq!(queued(&direct), 0);
        assert_eq!(direct.take(update("s2", "x")), Some(update("s2", "x")));
        assert_eq!(queued(&direct), 1);
        Direct::dispatched(&direct.queued);
        Direct::dispatched(&direct.queued);
        assert_eq!(queued(&direct), 0);
        assert!(handled(&mut rx).is_empty());
    }

    /// The text chunk fast path gives what the general parse gives, and leaves whatever it
    /// does not fully understand to the general parse.
    #[test]
    fn a_text_chunk_parses_as_the_general_parse_does() {
        let general = |p: &str| serde_json::from_str::<schema::SessionNotification>(p).unwrap();
        let line = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
        };
        for kind in [
            "agent_message_chunk",
            "agent_thought_chunk",
            "user_message_chunk",
        ] {
            for text in ["a", "", r#"with \"quotes\", \n, \u00e9 and é"#] {
                let params = format!(
                    r#"{{"sessionId":"s1","update":{{"sessionUpdate":"{kind}","content":{{"type":"text","text":"{text}"}}}}}}"#
                );
                assert_eq!(
                    text_chunk(&line(&params)),
                    Some(general(&params)),
                    "{params}"
                );
                // Any order of the fields, and white space.
                let params = format!(
                    r#"{{ "update" : {{"content":{{"text":"{text}","type":"text"}},"sessionUpdate":"{kind}"}}, "sessionId":"s1" }}"#
                );
                assert_eq!(
                    text_chunk(&line(&params)),
                    Some(general(&params)),
                    "{params}"
                );
                let reordered =
                    format!(r#"{{"params":{params},"method":"session/update","jsonrpc":"2.0"}}"#);
                assert_eq!(
                    text_chunk(&reordered),
                    Some(general(&params)),
                    "{reordered}"
                );
            }
        }
        let chunk = |update: &str| format!(r#"{{"sessionId":"s1","update":{update}}}"#);
        for other in [
            // More than a plain text chunk: the general parse keeps what it carries.
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}},"_meta":{"k":1}}"#.to_string(),
            chunk(r#"{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"a"}}"#),
            chunk(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","annotations":{"priority":1}}}"#),
            chunk(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","_meta":{}}}"#),
            chunk(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}"#),
            chunk(r#"{"sessionUpdate":"plan","entries":[]}"#),
            chunk(r#"{"sessionUpdate":"agent_message_chunk","sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"a"}}"#),
            chunk(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":1}}"#),
            chunk(r#"{"sessionUpdate":"agent_message_chunk"}"#),
        ] {
            assert_eq!(text_chunk(&line(&other)), None, "{other}");
        }
        // The envelope must be a `session/update` notification, and nothing more.
        let params = chunk(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#,
        );
        assert!(text_chunk(&line(&params)).is_some());
        for other in [
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/other","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"1.0","method":"session/update","params":{params}}}"#),
            format!(r#"{{"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params},"x":1}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}} tail"#),
        ] {
            assert_eq!(text_chunk(&other), None, "{other}");
        }
    }

    fn tail(texts: &[(bool, &str)]) -> ReplayTail {
        ReplayTail {
            texts: texts.iter().map(|(t, s)| (*t, (*s).to_string())).collect(),
            at: (0, 0),
        }
    }

    /// docs/agents.md §7: a replay is matched in order, across stored parts and whatever
    /// the spacing; a text that does not continue it is live work.
    #[test]
    fn a_replay_continues_the_stored_texts_in_order() {
        let mut t = tail(&[
            (false, "Fixing add()."),
            (true, "**Plan**\nfix it"),
            (false, "Fixed add(); tests pass."),
        ]);
        // One chunk over two stored texts of its kind (a thought between is skipped).
        assert!(t.consume(false, "Fixing add().Fixed add();"));
        assert!(!t.exhausted());
        // Going back is not a continuation.
        assert!(!t.consume(false, "Fixing"));
        assert!(t.consume(false, " tests  pass.\n"));
        assert!(t.exhausted(), "thoughts before the cursor are behind it");

        let mut t = tail(&[(false, "old answer"), (true, "**Plan**\nfix it")]);
        assert!(t.consume(true, "**Plan** fix it"), "spacing differs");
        assert!(!t.consume(false, "old answer"), "behind the cursor now");
        assert!(
            t.consume(false, "\n"),
            "whitespace proves nothing either way"
        );

        let mut t = tail(&[(false, "abc")]);
        assert!(!t.consume(false, "abcd"), "more than was stored");
        assert!(!t.consume(true, "abc"), "another kind");
        assert!(t.consume(false, "ab"));
        assert!(!t.exhausted());
        assert!(t.consume(false, "c"));
        assert!(t.exhausted());
    }
}
