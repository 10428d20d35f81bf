//! Sessions whose agent is an ACP agent (see docs/agents.md): one agent process per session
//! that has work (started at its first prompt, through `ax_acp`), one turn at a time.
//!
//! A turn's task owns the session's run slot (busy while `session/prompt` is outstanding, so
//! a second prompt is 409) and the agent's event stream. Deltas are taken in bursts: each
//! burst is stored in one transaction (append-only rows, folded with `turn::apply` on read,
//! so a reload equals what streamed) and then published as `message.delta` events, one per
//! delta. Permission requests get backend ids (`per_…`), a stored `Permission` row and the
//! usual `permission.asked`/`permission.replied` events; the turn keeps each request's handle
//! ([`PermissionResponder`]) and answers through it, by option kind or id.

use std::{collections::HashMap, sync::Arc, time::Duration};

use ax_acp::{
    AcpEvent, AgentHandle, AgentKind, AgentOffers, AgentSpec, PermissionResponder, SessionError,
    StartOptions, StoredHistory,
};
use ax_protocol::{
    AgentMode, AgentModes, AgentUsage, Event, Message, MessageId, Part, Permission, PermissionId,
    PermissionReply, PermissionState, Prompt, PromptAccepted, Session, SessionId, SessionStatus,
    turn::{
        Notice, NoticeKind, PermissionKind, PermissionOutcome, PermissionPart, TurnDelta, TurnEnd,
    },
};
use tokio::sync::{oneshot, watch};

use super::core::{self, HeldSlot};
use crate::{
    events::DeltaEvents,
    ids,
    state::Shared,
    store,
    turn_error::TurnError,
    turn_outcome::TurnOutcome,
    turn_slots::{AgentSlot, Control, HeldFor, Inbox, Phase},
};

/// Deltas taken from the agent's stream before they are stored and published together.
const BURST: usize = 4096;

/// Largest text delta made by merging queued chunks.
const MERGE_BYTES: usize = 64 * 1024;

/// Longest stderr tail shown in a notice when the agent fails.
const NOTICE_TAIL_BYTES: usize = 4096;

/// Whether `end` is the answer an agent left queued by a cancel rather than the answer to the
/// prompt just sent: the first turn after a cancelled one ended `end_turn` at once without a
/// single update (`deltas` 0). Claude's adapter 0.23.1 does this and then stays one prompt
/// late: each prompt's answer streams during the next prompt (docs/agents.md §7, §10). Its
/// state cannot be mended over ACP, so the process is restarted and the session reopened.
fn stale_after_cancel(slot: &AgentSlot, end: &TurnEnd, deltas: u64) -> bool {
    slot.after_cancel.load(std::sync::atomic::Ordering::SeqCst)
        && deltas == 0
        && matches!(end, TurnEnd::Completed { stop_reason } if stop_reason == "end_turn")
}

/// How a session's agent is started: an ACP agent's process, or the built-in `shell` agent
/// served inside the backend (`ax_acp::shell`, docs/backend.md "One agent model").
#[derive(Clone)]
enum Launch {
    Acp(AgentSpec),
    Shell,
}

/// How the session's agent starts, or why it cannot run.
fn spec_of(app: &Shared, agent: &str) -> Result<Launch, TurnError> {
    match app.agents.get(agent).map(|e| &e.kind) {
        Some(AgentKind::Acp(spec)) => Ok(Launch::Acp(spec.clone())),
        Some(AgentKind::Shell) => Ok(Launch::Shell),
        None => Err(TurnError::not_now(format!(
            "this session's agent `{agent}` is not configured any more; add it back to the \
             config file or create a session with another agent"
        ))),
    }
}

/// How long the start of a `shell` turn waits for the agent's question about its command, to
/// answer the prompt with it (it comes at once: the agent is served inside the backend).
const SHELL_ASKS_WITHIN: Duration = Duration::from_secs(5);

/// Stores the prompt and the (empty) reply, takes the run slot and starts the turn. A `shell`
/// session that does not allow always answers with the approval its agent asks for.
pub async fn start(
    app: &Shared,
    id: SessionId,
    session: Session,
    prompt: Prompt,
    client: Option<&str>,
) -> Result<PromptAccepted, TurnError> {
    if session.status == SessionStatus::Pending && app.runs.phase(&id) == Some(Phase::Agent) {
        // Said before the slot refuses it: the person has a question to answer first.
        return Err(TurnError::not_now(format!(
            "session {id} is waiting for approval of its previous prompt; reply to it or abort first"
        )));
    }
    let spec = spec_of(app, &session.agent)?;
    let shell = matches!(spec, Launch::Shell);
    let checked = core::check_prompt(app, prompt)?;
    if shell && !checked.images.is_empty() {
        return Err(crate::attachments::images_not_supported(&session.agent));
    }
    // The names of the files given to a command, shown with its approval.
    let shown: Vec<String> = if shell {
        checked
            .attachments
            .iter()
            .map(|a| a.shown.clone())
            .collect()
    } else {
        Vec::new()
    };
    let asks = if shell {
        let sid = id.to_string();
        !app.store
            .read(move |c| store::always_allowed(c, &sid))
            .await?
    } else {
        false
    };
    let (first_asked, asked) = if asks {
        let (tx, rx) = oneshot::channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    if !checked.images.is_empty() {
        // Refused at once, before anything is stored: the agent's capabilities decide, so an
        // agent that does not run yet is started first, as a mode change does (§3).
        let (slot, _held) = running_agent(app, &id, "images", "it can be sent images").await?;
        if !crate::attachments::prompt_capability(&slot.handle.info().capabilities, "image") {
            return Err(crate::attachments::images_not_supported(&session.agent));
        }
    }
    let mut images = Vec::with_capacity(checked.images.len());
    let mut stored_images = Vec::with_capacity(checked.images.len());
    for image in checked.images {
        images.push((image.mime, image.base64));
        stored_images.push((image.mime, image.data));
    }
    let content = crate::attachments::PromptContent {
        text: checked.text,
        attachments: checked.attachments,
        images,
    };
    // Minted before the run slot is taken, so a failure leaves nothing to undo.
    let (user_id, reply_id) = (ids::message_id()?, ids::message_id()?);
    // Decided now, when the prompt arrives: a Control UI that disconnects later does not
    // take the tool away in the middle of the turn.
    let ui = client
        .filter(|c| app.screens.is_ui_client(c))
        .map(str::to_string);
    let opening = core::Opening {
        ids: [user_id, reply_id],
        parts: checked.parts,
        images: stored_images,
        status: SessionStatus::Busy,
    };
    let app2 = app.clone();
    let mut accepted = core::launch(
        app,
        &id,
        Phase::Agent,
        opening,
        move |session, reply_id, inbox| {
            let deltas = DeltaEvents::new(session.clone(), reply_id.clone());
            let turn = Turn {
                app: app2,
                session,
                reply_id,
                deltas,
                seq: 0,
                status: SessionStatus::Busy,
                perms: HashMap::new(),
                interrupted: false,
                ui,
                usage: None,
                shell: shell.then(|| ShellTurn {
                    shown,
                    first_asked,
                    call: None,
                }),
            };
            turn.drive(spec, content, inbox)
        },
    )
    .await?;
    if let Some(asked) = asked {
        // A turn that ends first drops the sender: answered without a permission then.
        accepted.permission = tokio::time::timeout(SHELL_ASKS_WITHIN, asked)
            .await
            .ok()
            .and_then(Result::ok);
    }
    Ok(accepted)
}

/// What a `shell` turn keeps besides an agent's turn.
struct ShellTurn {
    /// The files given to the command, as the person named them (shown with its approval).
    shown: Vec<String>,
    /// Told the agent's question once it is stored (the 202 of the prompt carries it).
    first_asked: Option<oneshot::Sender<Permission>>,
    /// The latest status of the command's `execute` call: the turn did its work only when
    /// that call completed (the command exited 0).
    call: Option<ax_protocol::turn::ToolStatus>,
}

/// One item of a stored-then-published burst.
enum Item {
    Delta(u64, TurnDelta),
    Asked(Permission),
    Answered(Permission),
    /// A standing "always" the person just gave, listed on the session (docs/agents.md §5).
    Standing(String),
    /// The person allowed every command of this `shell` session: the stored flag the agent
    /// is told when it opens the session again.
    AlwaysAllowed,
}

/// A permission the agent (or ax-code, about a guarded write) asked in this turn.
struct Asked {
    /// Its row, as stored and published; its state is settled once, by whoever answers.
    record: Permission,
    /// Answers the request once; dropped with the turn, it answers `cancelled`.
    responder: PermissionResponder,
}

struct Turn {
    app: Shared,
    session: SessionId,
    reply_id: MessageId,
    /// The reply's `message.delta` events, their JSON's start encoded once.
    deltas: DeltaEvents,
    /// Deltas of the reply message so far.
    seq: u64,
    status: SessionStatus,
    /// The turn's permissions by backend id, each with the handle that answers it.
    perms: HashMap<PermissionId, Asked>,
    interrupted: bool,
    /// The live Control UI the prompt came from: the agent's screen tool works this turn,
    /// and `target: "requester"` reaches that UI.
    ui: Option<String>,
    /// The agent's latest usage, not yet stored (docs/agents.md §4: a meter on the session).
    usage: Option<AgentUsage>,
    /// Set for a `shell` session's turn.
    shell: Option<ShellTurn>,
}

impl Turn {
    fn delta(&mut self, batch: &mut Vec<Item>, delta: TurnDelta) {
        // Chunks that queued up together go out as one delta (folding `a` then `b` is
        // folding `a + b`): a burst costs a few events and rows, not one per chunk, and a
        // slow event consumer is not flooded.
        if let Some(Item::Delta(_, last)) = batch.last_mut() {
            match (last, &delta) {
                (TurnDelta::TextAppended { text: a }, TurnDelta::TextAppended { text: b })
                | (
                    TurnDelta::ThoughtAppended { text: a },
                    TurnDelta::ThoughtAppended { text: b },
                ) if a.len() + b.len() <= MERGE_BYTES => {
                    a.push_str(b);
                    return;
                }
                _ => {}
            }
        }
        self.seq += 1;
        batch.push(Item::Delta(self.seq, delta));
    }

    fn notice(&mut self, batch: &mut Vec<Item>, kind: NoticeKind, message: String) {
        self.delta(
            batch,
            TurnDelta::Notice {
                notice: Notice { kind, message },
            },
        );
    }

    /// Takes one agent event into `batch`; returns the turn's end when it ended.
    fn take(&mut self, event: AcpEvent, batch: &mut Vec<Item>) -> Option<TurnEnd> {
        match event {
            AcpEvent::Delta(d) | AcpEvent::Idle(d) => {
                self.track(&d, batch);
                self.delta(batch, d);
                None
            }
            AcpEvent::Asked {
                permission,
                responder,
            } => {
                self.asked(permission, responder, batch);
                None
            }
            // Replayed history is already stored: shown once, from our store.
            AcpEvent::Replay(_) => None,
            AcpEvent::TurnEnded { end, .. } => Some(end),
            AcpEvent::Exited { .. } => None,
            AcpEvent::Usage(usage) => {
                self.usage = Some(usage);
                None
            }
        }
    }

    /// A permission request: its row (the ACP runtime mints the backend's own
    /// `PermissionId`s, so the ids pass through unchanged), stored and published with its
    /// delta, and its handle kept for the person's answer.
    fn asked(
        &mut self,
        permission: PermissionPart,
        responder: PermissionResponder,
        batch: &mut Vec<Item>,
    ) {
        let record = Permission {
            id: permission.permission_id.clone(),
            session_id: self.session.clone(),
            command: permission.tool_call.title.clone(),
            attachments: self
                .shell
                .as_ref()
                .map(|s| s.shown.clone())
                .unwrap_or_default(),
            state: PermissionState::Pending,
            created: ids::now_ms(),
            tool_call: Some(permission.tool_call.clone()),
            options: permission.options.clone(),
            option_id: None,
        };
        batch.push(Item::Asked(record.clone()));
        self.perms
            .insert(record.id.clone(), Asked { record, responder });
        self.delta(batch, TurnDelta::PermissionAsked { permission });
    }

    /// A permission the runtime answered (`cancelled` by an abort, a stop or the turn's end)
    /// is settled from its delta; one the person answered was settled when they did
    /// ([`Turn::answer`]), and its delta is only the transcript's.
    fn track(&mut self, delta: &TurnDelta, batch: &mut Vec<Item>) {
        if let Some(shell) = self.shell.as_mut() {
            match delta {
                TurnDelta::ToolCallCreated { tool_call } => shell.call = Some(tool_call.status),
                TurnDelta::ToolCallUpdated { fields, .. } if fields.status.is_some() => {
                    shell.call = fields.status;
                }
                _ => {}
            }
        }
        if let TurnDelta::PermissionAnswered {
            permission_id,
            outcome,
        } = delta
            && let Some(asked) = self.perms.get_mut(permission_id)
            && asked.record.state == PermissionState::Pending
        {
            settle(&mut asked.record, outcome);
            batch.push(Item::Answered(asked.record.clone()));
        }
    }

    /// Stores `batch` in one transaction, then publishes it.
    async fn flush(&mut self, batch: Vec<Item>) {
        let usage = self.usage.take();
        if batch.is_empty() && usage.is_none() {
            return;
        }
        let pending = self
            .perms
            .values()
            .any(|p| p.record.state == PermissionState::Pending);
        let status = if pending {
            SessionStatus::Pending
        } else {
            SessionStatus::Busy
        };
        let new_status = (status != self.status).then_some(status);
        self.status = status;
        let mid = &self.reply_id;
        let sid = self.session.as_str();
        let project = self.app.project_id;
        // On this task's thread, not the blocking pool: a burst's transaction takes tens of
        // µs, and the pool's round trip (a thread woken to run it, then this task woken
        // back) cost more CPU than the transaction itself when chunks arrive one by one.
        // The write connection is only ever held by such short transactions.
        let (bus, session_id, deltas) = (&self.app.bus, &self.session, &self.deltas);
        let stored = self.app.store.write_blocking(move |c| {
            let tx = store::begin_write(c)?;
            // Each delta is serialised once: its row's body, and the same bytes in its event.
            let bodies = batch
                .iter()
                .map(|i| match i {
                    Item::Delta(_, d) => store::encode_delta(d).map(Some),
                    _ => Ok(None),
                })
                .collect::<store::Result<Vec<_>>>()?;
            store::append_delta_bodies(
                &tx,
                mid,
                batch.iter().zip(&bodies).filter_map(|(i, b)| match (i, b) {
                    (Item::Delta(seq, _), Some(body)) => Some((*seq, body.as_str())),
                    _ => None,
                }),
            )?;
            let mut session = None;
            for item in &batch {
                match item {
                    Item::Asked(p) => store::insert_permission(&tx, p)?,
                    Item::Answered(p) => store::answer_permission(&tx, p)?,
                    Item::Standing(title) => {
                        session = store::add_standing(&tx, project, sid, title, ids::now_ms())?;
                    }
                    Item::AlwaysAllowed => store::set_always_allowed(&tx, sid)?,
                    Item::Delta(..) => {}
                }
            }
            if let Some(s) = new_status {
                session = store::set_status(&tx, project, sid, s, ids::now_ms())?;
            }
            if let Some(usage) = usage
                && let Some(current) = store::get_session(&tx, project, sid)?
            {
                let mut state = current.agent_state.clone().unwrap_or_default();
                state.usage = Some(usage);
                if current.agent_state.as_ref() != Some(&state) {
                    store::set_agent_state(&tx, sid, &state)?;
                    session = store::get_session(&tx, project, sid)?;
                }
            }
            tx.commit()?;
            // Published after the commit (a reload equals what streamed) and while the writer
            // is held, so the session's states go out in commit order (`Sessions::update`).
            for (item, body) in batch.into_iter().zip(bodies) {
                bus.publish(match item {
                    Item::Delta(seq, delta) => match body {
                        Some(body) => {
                            bus.publish_delta(deltas, seq, delta, &body);
                            continue;
                        }
                        None => deltas.event(seq, delta),
                    },
                    Item::Asked(permission) => Event::PermissionAsked { permission },
                    Item::Answered(p) => Event::PermissionReplied {
                        session_id: session_id.clone(),
                        permission_id: p.id,
                        state: p.state,
                    },
                    Item::Standing(_) | Item::AlwaysAllowed => continue,
                });
            }
            if let Some(session) = session {
                bus.publish(Event::SessionUpdated { session });
                if new_status.is_some() {
                    bus.publish(Event::SessionStatus {
                        session_id: session_id.clone(),
                        status,
                    });
                }
            }
            Ok(())
        });
        if let Err(e) = stored {
            tracing::error!(error = %e, "storing an agent's turn failed");
        }
    }

    /// The person's answer: the option `option_id` names, else the first of the reply's kind,
    /// sent through the request's handle; the permission is settled here, once, and its row
    /// (with a standing "always" it gave) goes into `batch`, for the caller to store before
    /// it answers (the runtime's `PermissionAnswered` delta, already on its way, is the
    /// transcript's). A request the runtime answered first (an abort) is refused.
    fn answer(
        &mut self,
        batch: &mut Vec<Item>,
        permission_id: &PermissionId,
        reply: PermissionReply,
        option_id: Option<&str>,
    ) -> Result<Permission, TurnError> {
        let Some(asked) = self.perms.get_mut(permission_id) else {
            return Err(TurnError::not_found(format!(
                "no permission {permission_id} in session {}",
                self.session
            )));
        };
        let record = &mut asked.record;
        if record.state != PermissionState::Pending {
            return Err(TurnError::not_now(format!(
                "permission {permission_id} is no longer pending (it is {})",
                record.state
            )));
        }
        if let Some(wanted) = option_id
            && !record.options.iter().any(|o| o.option_id == wanted)
        {
            let valid: Vec<&str> = record
                .options
                .iter()
                .map(|o| o.option_id.as_str())
                .collect();
            return Err(TurnError::invalid(format!(
                "optionId {wanted:?} is not an option of permission {permission_id}; \
                 its options are: {}",
                valid.join(", ")
            )));
        }
        match asked.responder.answer(reply.kind(), option_id) {
            Ok(choice) => {
                settle(
                    record,
                    &PermissionOutcome::Selected {
                        option_id: choice.option_id,
                        kind: choice.kind,
                    },
                );
                batch.push(Item::Answered(record.clone()));
                if let Some(title) = standing_title(record) {
                    if self.shell.is_some() {
                        batch.push(Item::AlwaysAllowed);
                        batch.push(Item::Standing(SHELL_STANDING.to_owned()));
                    } else {
                        batch.push(Item::Standing(title));
                    }
                }
                Ok(record.clone())
            }
            Err(ax_acp::AnswerError::Unknown(_)) => Err(TurnError::not_now(format!(
                "permission {permission_id} is no longer pending"
            ))),
            Err(e) => Err(TurnError::invalid(e.to_string())),
        }
    }

    /// Starts the agent (or reuses the running one) and opens its session.
    async fn agent(&mut self, spec: &Launch) -> Result<Arc<AgentSlot>, TurnEnd> {
        open_agent(&self.app, &self.session, spec, Some(&self.reply_id)).await
    }

    async fn drive(
        mut self,
        spec: Launch,
        content: crate::attachments::PromptContent,
        mut inbox: Inbox,
    ) {
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        // When the agent was restarted for a stale answer; at most once per turn (docs/agents.md §7).
        let mut restarted: Option<std::time::Instant> = None;
        loop {
            let slot = match self.agent(&spec).await {
                Ok(slot) => slot,
                Err(end) => return self.finish(end, false, batch, acks, &mut inbox, None).await,
            };
            if let Some(since) = restarted {
                tracing::info!(
                    session = %self.session,
                    ms = since.elapsed().as_millis() as u64,
                    "the agent was restarted and its session reopened"
                );
            }
            // Before the agent sees the prompt, so a tool list it asks for at once is right.
            self.app
                .screens
                .set_enabled(&self.session, self.ui.as_deref());
            // Built for this agent's capabilities (embedded files or links, docs/agents.md §11),
            // reading the files off the async threads.
            let (dir, content) = (self.app.project_dir.clone(), content.clone());
            let caps = slot.handle.info().capabilities.clone();
            let blocks = tokio::task::spawn_blocking(move || {
                crate::attachments::blocks(&dir, &content, &caps)
            })
            .await
            .map_err(|e| e.to_string());
            if let Err(e) = blocks.and_then(|b| slot.handle.prompt(b).map_err(|e| e.to_string())) {
                let end = TurnEnd::Failed {
                    message: e,
                    stderr_tail: slot.handle.stderr_tail(),
                };
                return self
                    .finish(end, false, batch, acks, &mut inbox, Some(&slot))
                    .await;
            }
            let (end, from_runtime) = self
                .await_end(&slot, &mut batch, &mut acks, &mut inbox)
                .await;
            let stale = restarted.is_none()
                && !self.interrupted
                && acks.is_empty()
                && stale_after_cancel(&slot, &end, self.seq);
            slot.after_cancel.store(
                matches!(end, TurnEnd::Cancelled),
                std::sync::atomic::Ordering::SeqCst,
            );
            if !stale {
                return self
                    .finish(end, from_runtime, batch, acks, &mut inbox, Some(&slot))
                    .await;
            }
            tracing::info!(
                session = %self.session,
                "the agent answered the prompt after an abort at once with nothing: \
                 restarting it and reopening its session (docs/agents.md §7)"
            );
            restarted = Some(std::time::Instant::now());
            self.retire(&slot).await;
        }
    }

    /// A `shell` turn's start waits for the agent's question: told it once it is stored.
    fn tell_asked(&mut self) {
        if let Some(shell) = self.shell.as_mut()
            && shell.first_asked.is_some()
            && let Some(asked) = self.perms.values().next()
            && let Some(tell) = shell.first_asked.take()
        {
            let _ = tell.send(asked.record.clone());
        }
    }

    /// Stops `slot`'s process and forgets it, so the next [`Turn::agent`] starts a new one
    /// and reopens the stored agent session. Waits for the process: two processes must never
    /// write the agent's own session record at once.
    async fn retire(&self, slot: &Arc<AgentSlot>) {
        self.app.agent_slots.forget(&self.session, slot);
        slot.handle.stop().await;
    }

    /// Takes the agent's events into the turn until the prompt is answered; serves aborts,
    /// permission answers and the backend's shutdown meanwhile.
    async fn await_end(
        &mut self,
        slot: &Arc<AgentSlot>,
        batch: &mut Vec<Item>,
        acks: &mut Vec<oneshot::Sender<()>>,
        inbox: &mut Inbox,
    ) -> (TurnEnd, bool) {
        let shutdown = self.app.shutdown.clone();
        let mut events = slot.events.lock().await;
        loop {
            tokio::select! {
                event = events.recv() => {
                    let Some(event) = event else {
                        return (TurnEnd::Failed {
                            message: "the agent's connection ended".into(),
                            stderr_tail: slot.handle.stderr_tail(),
                        }, false);
                    };
                    let mut end = self.take(event, batch);
                    while end.is_none() && batch.len() < BURST {
                        match events.try_recv() {
                            Ok(event) => end = self.take(event, batch),
                            Err(_) => break,
                        }
                    }
                    self.flush(std::mem::take(batch)).await;
                    self.tell_asked();
                    if let Some(end) = end {
                        return (end, true);
                    }
                }
                control = inbox.recv() => match control {
                    Some(Control::Abort { ack }) => {
                        slot.handle.cancel();
                        acks.push(ack);
                    }
                    Some(Control::AgentReply { permission_id, reply, option_id, ack }) => {
                        let answer = self.answer(batch, &permission_id, reply, option_id.as_deref());
                        // Stored before the person hears it: the row answered, an "always"
                        // listed on the session.
                        self.flush(std::mem::take(batch)).await;
                        let _ = ack.send(answer);
                    }
                    None => {}
                },
                () = shutdown.cancelled(), if !self.interrupted => {
                    self.interrupted = true;
                    let slot = slot.clone();
                    self.app.tasks.spawn(async move { slot.handle.stop().await });
                }
            }
        }
    }

    /// Ends the turn: notices for a failure, the status (idle or needs_auth), the run slot
    /// freed, aborts answered.
    /// `from_runtime`: the end came from the agent runtime, which already put its notice in
    /// the turn.
    async fn finish(
        mut self,
        end: TurnEnd,
        from_runtime: bool,
        mut batch: Vec<Item>,
        acks: Vec<oneshot::Sender<()>>,
        inbox: &mut Inbox,
        slot: Option<&Arc<AgentSlot>>,
    ) {
        self.app.screens.set_enabled(&self.session, None);
        let outcome = if self.interrupted {
            TurnOutcome::Interrupted
        } else {
            match &end {
                TurnEnd::Failed { .. } | TurnEnd::NeedsAuth { .. } => TurnOutcome::Failed,
                TurnEnd::Cancelled => TurnOutcome::Aborted,
                TurnEnd::Completed { stop_reason } if stop_reason == "cancelled" => {
                    TurnOutcome::Aborted
                }
                // Told to stop, but it ended on its own first: still the person's stop.
                TurnEnd::Completed { .. } if !acks.is_empty() => TurnOutcome::Aborted,
                TurnEnd::Completed { stop_reason } if stop_reason == "refusal" => {
                    TurnOutcome::Failed
                }
                TurnEnd::Completed { .. } => TurnOutcome::Completed,
            }
        };
        // A command line did its work only when it exited 0; a rejected one is the person's
        // refusal, not an abort.
        let outcome = match &self.shell {
            Some(shell) if matches!(outcome, TurnOutcome::Completed | TurnOutcome::Aborted) => {
                let rejected = self
                    .perms
                    .values()
                    .any(|p| p.record.state == PermissionState::Rejected);
                if rejected && acks.is_empty() {
                    TurnOutcome::Rejected
                } else if outcome == TurnOutcome::Aborted {
                    outcome
                } else if shell.call == Some(ax_protocol::turn::ToolStatus::Completed) {
                    TurnOutcome::Completed
                } else {
                    TurnOutcome::Failed
                }
            }
            _ => outcome,
        };
        let mut auth = None;
        match end {
            TurnEnd::Failed {
                message,
                stderr_tail,
            } => {
                if !from_runtime {
                    self.notice(&mut batch, NoticeKind::Error, message);
                }
                let tail = tail_of(&stderr_tail);
                if !tail.is_empty() {
                    self.notice(
                        &mut batch,
                        NoticeKind::Error,
                        format!("the agent's error output ends with:\n{tail}"),
                    );
                }
            }
            TurnEnd::NeedsAuth { auth_methods } => {
                if !from_runtime {
                    self.notice(
                        &mut batch,
                        NoticeKind::Auth,
                        format!(
                            "the agent needs authentication: {}",
                            auth_methods
                                .iter()
                                .map(|m| m.name.clone())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                }
                auth = Some(auth_methods);
            }
            TurnEnd::Cancelled | TurnEnd::Completed { .. } => {}
        }
        if self.interrupted {
            self.notice(&mut batch, NoticeKind::Info, store::CUT_SHORT.into());
        }
        // Nothing stays pending once the turn is over (an agent that crashed or stopped
        // answering left them): the row and the transcript's permission part both say
        // `cancelled`, so no UI shows an approval that can no longer be answered.
        let mut left: Vec<PermissionId> = Vec::new();
        for p in self.perms.values_mut() {
            if p.record.state == PermissionState::Pending {
                settle(&mut p.record, &PermissionOutcome::Cancelled);
                batch.push(Item::Answered(p.record.clone()));
                left.push(p.record.id.clone());
            }
        }
        left.sort();
        for permission_id in left {
            self.delta(
                &mut batch,
                TurnDelta::PermissionAnswered {
                    permission_id,
                    outcome: PermissionOutcome::Cancelled,
                },
            );
        }
        self.flush(batch).await;
        if let Some(slot) = slot
            && !slot.handle.is_alive()
        {
            self.app.agent_slots.forget(&self.session, slot);
        }
        let status = if auth.is_some() {
            SessionStatus::NeedsAuth
        } else {
            SessionStatus::Idle
        };
        core::end_turn(
            &self.app,
            &self.session,
            status,
            outcome,
            inbox,
            acks,
            move |tx, project, sid| {
                if let Some(current) = store::get_session(tx, project, sid)? {
                    let mut state = current.agent_state.unwrap_or_default();
                    let methods = auth.unwrap_or_default();
                    if state.auth_methods != methods {
                        state.auth_methods = methods;
                        store::set_agent_state(tx, sid, &state)?;
                    }
                }
                Ok(())
            },
        )
        .await;
    }
}

/// Starts the session's agent (or reuses the running one) and opens its agent session,
/// storing what it said (its session id, modes); `skip` is a reply not to count as history.
/// Used by a turn and by a mode change while no agent runs (docs/agents.md §3).
async fn open_agent(
    app: &Shared,
    session: &SessionId,
    spec: &Launch,
    skip: Option<&MessageId>,
) -> Result<Arc<AgentSlot>, TurnEnd> {
    if let Some(slot) = app.agent_slots.alive(session) {
        return Ok(slot);
    }
    let mut options = StartOptions::new(&app.project_dir);
    options.watchdog = app.limits.agent_watchdog;
    options.tag = Some(agent_tag(&app.agent_tag_scope, session));
    let started = match spec {
        Launch::Acp(spec) => AgentHandle::start(spec, options).await,
        Launch::Shell => {
            // The session's "always" is ours: the agent is told it as it opens the session.
            let sid = session.to_string();
            let always = app
                .store
                .read(move |c| store::always_allowed(c, &sid))
                .await
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, "reading the session's always-allow failed");
                    false
                });
            options.session_meta = Some(ax_acp::shell::session_meta(always));
            let config = ax_acp::shell::ShellConfig {
                output_limit: app.limits.output_bytes_per_message as u64,
            };
            ax_acp::shell::start(options, config).await
        }
    };
    let (mut handle, events) = match started {
        Ok(x) => x,
        Err(e) => {
            let tail = match &e {
                ax_acp::StartError::ProtocolVersion { stderr_tail, .. }
                | ax_acp::StartError::Handshake { stderr_tail, .. } => stderr_tail.clone(),
                _ => String::new(),
            };
            return Err(TurnEnd::Failed {
                message: e.to_string(),
                stderr_tail: tail,
            });
        }
    };
    let sid = session.to_string();
    let reopen = {
        let sid = sid.clone();
        app.store
            .read(move |c| store::agent_session(c, &sid))
            .await
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "reading the agent's session id failed");
                None
            })
    };
    let screen = match app.screens.mcp_servers(session) {
        Ok(servers) => servers,
        Err(e) => {
            let end = TurnEnd::Failed {
                message: e.to_string(),
                stderr_tail: String::new(),
            };
            app.tasks.spawn(async move { handle.stop().await });
            return Err(end);
        }
    };
    if reopen.is_some() {
        handle.expect_history(stored_history(app, session, skip).await);
    }
    let opened = handle.open_session(screen, reopen.as_deref()).await;
    let info = match opened {
        Ok(info) => info,
        Err(e) => {
            let end = match e {
                SessionError::NeedsAuth { auth_methods } => TurnEnd::NeedsAuth { auth_methods },
                other => TurnEnd::Failed {
                    message: other.to_string(),
                    stderr_tail: handle.stderr_tail(),
                },
            };
            app.tasks.spawn(async move { handle.stop().await });
            return Err(end);
        }
    };
    let modes = info.modes.as_ref().map(|m| AgentModes {
        current: m.current.clone(),
        available: m
            .available
            .iter()
            .map(|a| AgentMode {
                id: a.id.clone(),
                name: a.name.clone(),
                description: a.description.clone(),
            })
            .collect(),
    });
    let pgid = handle.process_group();
    let start = ax_agents::process::process_start_time(pgid);
    let agent_session = info.session_id.clone();
    // What the agent offered with its session's opening is there before any prompt; later
    // changes are kept by `keep_offers`, from exactly this value on.
    let mut offers = handle.offers();
    let opened = offers.borrow_and_update().clone();
    let (commands, config) = (opened.commands, opened.config_options);
    let project = app.project_id;
    if let Err(e) = app
        .store
        .write(move |c| {
            store::set_agent_session(c, &sid, &agent_session)?;
            // The usage meter stays until the agent reports anew.
            let mut state = store::get_session(c, project, &sid)?
                .and_then(|s| s.agent_state)
                .unwrap_or_default();
            state.modes = modes;
            state.auth_methods = Vec::new();
            if let Some(commands) = commands {
                state.commands = commands;
            }
            state.config_options = config;
            store::set_agent_state(c, &sid, &state)?;
            store::set_run_process(c, &sid, pgid, start)
        })
        .await
    {
        tracing::error!(error = %e, "storing the agent's session failed");
    }
    let slot = Arc::new(AgentSlot::new(handle, events));
    app.agent_slots.insert(session.clone(), slot.clone());
    keep_offers(app, session, offers);
    Ok(slot)
}

/// Keeps what the agent offers for the session (its commands, config options and title) in
/// the session as it changes, in a turn or between turns: an agent sends these when it
/// pleases (Codex's command list may come after its first turn ended), so they are not turn
/// events (docs/agents.md §4). A title the agent gave before this task began is kept too.
/// Ends with the agent process or the backend.
fn keep_offers(app: &Shared, session: &SessionId, mut offers: watch::Receiver<AgentOffers>) {
    let (app, session, shutdown) = (app.clone(), session.clone(), app.shutdown.clone());
    let tasks = app.tasks.clone();
    tasks.spawn(async move {
        let mut first = offers.borrow().title.is_some();
        loop {
            if !first {
                tokio::select! {
                    changed = offers.changed() => if changed.is_err() { return },
                    () = shutdown.cancelled() => return,
                }
            }
            first = false;
            let now = offers.borrow_and_update().clone();
            let kept = app
                .update_session(&session, move |tx, project, sid| {
                    let Some(current) = store::get_session(tx, project, sid)? else {
                        return Ok(None);
                    };
                    let mut state = current.agent_state.clone().unwrap_or_default();
                    if let Some(commands) = now.commands {
                        state.commands = commands;
                    }
                    state.config_options = now.config_options;
                    let mut changed = current.agent_state.as_ref() != Some(&state);
                    if changed {
                        store::set_agent_state(tx, sid, &state)?;
                    }
                    if let Some(title) = &now.title {
                        changed |= store::offer_title(
                            tx,
                            project,
                            sid,
                            title,
                            store::OfferedTitle::Agent,
                        )?
                        .is_some();
                    }
                    if !changed {
                        return Ok(None);
                    }
                    store::get_session(tx, project, sid)
                })
                .await;
            if let Err(e) = kept {
                tracing::error!(error = %e, "storing the agent's offers failed");
            }
        }
    });
}

/// What the store holds of this conversation (but `skip`), for matching an agent's replay
/// (docs/agents.md §7).
async fn stored_history(
    app: &Shared,
    session: &SessionId,
    skip: Option<&MessageId>,
) -> StoredHistory {
    let id = session.clone();
    let skip = skip.cloned();
    let messages = app
        .store
        .read(move |c| store::messages(c, &id))
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "reading the history to match a replay failed");
            Vec::new()
        });
    history_of(messages.iter().filter(|m| Some(&m.id) != skip.as_ref()))
}

/// The tool call ids and the agent's texts of stored messages, in order.
fn history_of<'a>(messages: impl Iterator<Item = &'a Message>) -> StoredHistory {
    use ax_protocol::turn::TurnPart;
    let mut history = StoredHistory::default();
    for m in messages {
        if m.role != ax_protocol::Role::Assistant {
            continue;
        }
        for part in &m.parts {
            match part {
                Part::Text { text } => history.texts.push((false, text.clone())),
                Part::Turn(TurnPart::Thought { text }) => history.texts.push((true, text.clone())),
                Part::Turn(TurnPart::ToolCall(tc)) => {
                    history.tool_call_ids.insert(tc.tool_call_id.clone());
                }
                Part::Turn(TurnPart::Permission(p)) => {
                    history
                        .tool_call_ids
                        .insert(p.tool_call.tool_call_id.clone());
                }
                _ => {}
            }
        }
    }
    history
}

/// The standing answer an "always" gives in a `shell` session.
const SHELL_STANDING: &str = "run every command in this session without asking";

/// What a standing "always" the person just gave an agent covers, in words; `None` if the
/// answer was not one (rejected, or an option that is not `allow_always`).
fn standing_title(answered: &Permission) -> Option<String> {
    if answered.state != ax_protocol::PermissionState::Approved {
        return None;
    }
    let sent = answered.option_id.as_deref()?;
    let option = answered.options.iter().find(|o| o.option_id == sent)?;
    if option.kind != ax_protocol::turn::PermissionKind::AllowAlways {
        return None;
    }
    let about = answered
        .tool_call
        .as_ref()
        .map(|t| t.title.as_str())
        .filter(|t| !t.is_empty())
        .unwrap_or(answered.command.as_str());
    Some(format!(
        "\u{201c}{}\u{201d} for {} (the agent decides what else this covers)",
        option.name.chars().take(80).collect::<String>(),
        about.chars().take(160).collect::<String>()
    ))
}

/// Settles `permission` by `outcome`: its state and the option sent.
fn settle(permission: &mut Permission, outcome: &PermissionOutcome) {
    (permission.state, permission.option_id) = match outcome {
        PermissionOutcome::Selected { option_id, kind } => (
            match kind {
                PermissionKind::AllowOnce | PermissionKind::AllowAlways => {
                    PermissionState::Approved
                }
                PermissionKind::RejectOnce | PermissionKind::RejectAlways => {
                    PermissionState::Rejected
                }
            },
            Some(option_id.clone()),
        ),
        _ => (PermissionState::Cancelled, None),
    };
}

/// The end of `tail`, at most [`NOTICE_TAIL_BYTES`], cut at a character boundary.
fn tail_of(tail: &str) -> &str {
    let tail = tail.trim_end();
    let mut start = tail.len().saturating_sub(NOTICE_TAIL_BYTES);
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    &tail[start..]
}

/// The session's running agent, started first (as a prompt would start it, docs/agents.md §3)
/// when it does not run: before a session's first prompt, after a restart. `offers` names
/// what a shell session lacks (400); `before` what needs the agent (in the 409 of an agent
/// that needs authentication). An agent started here comes with the session's run slot
/// held: keep it until the change is made, so a prompt meanwhile is 409, not a second agent.
pub(crate) async fn running_agent(
    app: &Shared,
    id: &SessionId,
    offers: &str,
    before: &str,
) -> Result<(Arc<AgentSlot>, Option<HeldSlot>), TurnError> {
    if let Some(slot) = app.agent_slots.alive(id) {
        return Ok((slot, None));
    }
    let session = app
        .sessions()
        .get(id)
        .await?
        .ok_or_else(|| TurnError::session_not_found(id.as_str()))?;
    if session.agent == ax_acp::config::SHELL {
        return Err(TurnError::invalid(format!(
            "the shell agent offers no {offers}"
        )));
    }
    let spec = spec_of(app, &session.agent)?;
    let held = core::hold_slot(app, id, HeldFor::StartingAgent)?;
    match open_agent(app, id, &spec, None).await {
        Ok(slot) => Ok((slot, Some(held))),
        Err(TurnEnd::NeedsAuth { .. }) => Err(TurnError::not_now(format!(
            "the agent needs authentication before {before}; see the session's \
             authentication methods"
        ))),
        Err(TurnEnd::Failed { message, .. }) => Err(TurnError::not_now(format!(
            "the session's agent could not start: {message}"
        ))),
        Err(_) => Err(TurnError::not_now("the session's agent could not start")),
    }
}

/// `POST /session/{id}/mode`: switches the agent's mode; an agent that does not run (a
/// session never prompted, or reopened after a restart) is started first, as a prompt would
/// start it (docs/agents.md §3).
pub async fn set_mode(app: &Shared, id: &SessionId, mode_id: &str) -> Result<Session, TurnError> {
    let (slot, _held) = running_agent(app, id, "modes", "its mode can be switched").await?;
    let Some(modes) = slot.handle.modes() else {
        return Err(TurnError::invalid("this agent offers no modes"));
    };
    if !modes.available.iter().any(|m| m.id == mode_id) {
        return Err(TurnError::invalid(format!(
            "unknown mode `{mode_id}`; the agent offers: {}",
            modes
                .available
                .iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    slot.handle
        .set_mode(mode_id)
        .await
        .map_err(|e| TurnError::not_now(format!("the agent refused the mode: {e}")))?;
    let mode_id = mode_id.to_owned();
    app.update_agent_state(id, move |state| {
        if let Some(m) = state.modes.as_mut() {
            m.current = mode_id;
        }
    })
    .await?
    .ok_or_else(|| TurnError::session_not_found(id.as_str()))
}

/// The scope of the agent tags of the backend serving `project_dir` from `data_dir`: a
/// hash of both, so one backend's tags never match another's, and a backend restarted on
/// the same data finds what its dead predecessor's agents left (docs/agents.md §2).
pub fn tag_scope(data_dir: &std::path::Path, project_dir: &std::path::Path) -> String {
    let data = data_dir
        .canonicalize()
        .unwrap_or_else(|_| data_dir.to_owned());
    // FNV-1a: stable across builds, unlike the standard library's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in data
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .chain(b"\0")
        .chain(project_dir.as_os_str().as_encoded_bytes())
    {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("axc{hash:016x}")
}

/// A new tag for an agent process of `session`: unique to this start, so the cleanup after
/// an agent that ended can never hit its successor.
fn agent_tag(scope: &str, session: &SessionId) -> String {
    static STARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{scope}:{session}:{n}")
}

/// At start: kills every process an agent of a dead backend on the same data and project
/// started, even those that left the agent's process group (the project lock proves no live
/// backend owns them).
pub fn kill_left_behind(scope: &str) -> usize {
    let prefix = format!("{scope}:");
    let killed = ax_agents::process::kill_tagged(|v| v.starts_with(&prefix));
    if killed > 0 {
        tracing::warn!(
            killed,
            "killed processes agents of a crashed backend left running"
        );
    }
    killed
}

/// Stops the session's agent process, if one runs (session deleted, backend stopping).
pub async fn stop_agent(app: &Shared, id: &SessionId) {
    app.screens.revoke(id);
    if let Some(slot) = app.agent_slots.remove(id) {
        slot.handle.stop().await;
    }
}

/// Stops every agent process (backend shutdown).
pub async fn stop_all(app: &Shared) {
    let slots = app.agent_slots.drain();
    let stops = slots.iter().map(|s| s.handle.stop());
    futures_util::future::join_all(stops).await;
}
