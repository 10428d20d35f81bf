//! What the person's actions do to the state: opening and leaving sessions, submitting,
//! creating sessions, the commands, attachments, aborts and approval answers. The keys
//! (`keys.rs`) and the owner loop call these; the state's fields live in [`super::App`].

use ax_protocol::{PermissionReply, PromptPart, SessionId, SessionStatus};

use super::{App, Effect, Modal, NoticeKind, Overlay, Route};
use crate::command::{Command, Invocation};
use crate::transcript::Transcript;

impl App {
    // ---- navigation ----------------------------------------------------------------------

    /// Opens a session: the route changes now, the transcript loads in the background.
    pub(crate) fn open(&mut self, id: SessionId) {
        self.selected = Some(id.clone());
        self.route = Route::Session(id.clone());
        self.transcript =
            Transcript::keeping_turn_ends(self.size.0.saturating_sub(2), &self.transcript);
        self.sync_terminals();
        self.scroll = 0;
        self.approval.clear_choice();
        // Opened again: what was left for later asks again.
        self.deferred.clear();
        self.board.seen(&id);
        self.sort_sessions();
        self.recall.forget();
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
        self.recall.forget();
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
        self.recall.remember(&draft);
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
        self.session_area().transcript
    }

    /// The standing row, its button and the transcript inside the open session's box.
    pub fn session_area(&self) -> crate::layout::SessionArea {
        crate::layout::session_area(self.layout().main, self.standing_row())
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
            Command::Approvals => self.open_inbox(),
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

    /// How the open session's tool calls show their terminals: a `shell` session's command
    /// is its turn, shown as a run (its output and exit, never folded).
    pub(crate) fn terminals_of_open(&self) -> crate::turn_view::Terminals {
        match self.open_session() {
            Some(s) if s.agent == "shell" => crate::turn_view::Terminals::AsRun,
            _ => crate::turn_view::Terminals::InCard,
        }
    }

    /// Keeps how the transcript shows terminals in step with the open session's agent (known
    /// once the session list or the session's `session.created` arrived, which may come after
    /// the session opened: a session made by a prompt from home).
    pub(crate) fn sync_terminals(&mut self) {
        let terminals = self.terminals_of_open();
        self.transcript.set_terminals(terminals);
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

    pub(crate) fn reply(&mut self, reply: PermissionReply, option_id: String) {
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
        self.approval.clear_choice();
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
