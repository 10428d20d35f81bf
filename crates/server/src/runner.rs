//! One run per session: prompt → permission → agent work → exit, with every step stored and
//! published. Each run is a task that owns its session's run state; handlers talk to it
//! through [`Control`] messages, so a reply and an abort can never race each other.

use std::time::Duration;

use ax_agents::{
    AgentOutput, AgentRequest, RunEnd,
    process::{self, ProcessGroup},
    project::{self, Attachment},
};
use ax_protocol::{
    Event, Message, MessageId, Part, Permission, PermissionId, PermissionReply, PermissionState,
    Prompt, PromptAccepted, PromptPart, Role, SessionId, SessionStatus, Stream,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::{
    ids,
    queue::TurnOutcome,
    state::{Control, HeldFor, Phase, RunHandle, Shared},
    store,
    turn_error::TurnError,
};

/// A checked prompt: the text to run, the resolved attachments and the checked images.
pub struct CheckedPrompt {
    pub text: String,
    pub parts: Vec<Part>,
    pub attachments: Vec<Attachment>,
    pub images: Vec<crate::attachments::CheckedImage>,
}

pub fn check_prompt(app: &Shared, prompt: Prompt) -> Result<CheckedPrompt, TurnError> {
    let limits = app.limits;
    if prompt.parts.is_empty() || prompt.parts.len() > limits.prompt_parts {
        return Err(TurnError::invalid(format!(
            "a prompt has 1 to {} parts",
            limits.prompt_parts
        )));
    }
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    let mut attachments = Vec::new();
    let mut images = Vec::new();
    let mut image_bytes = 0usize;
    let mut text_bytes = 0usize;
    for part in prompt.parts {
        match part {
            PromptPart::Text { text } => {
                text_bytes += text.len();
                if text_bytes > limits.prompt_text_bytes {
                    return Err(TurnError::too_large(format!(
                        "prompt text is limited to {} bytes",
                        limits.prompt_text_bytes
                    )));
                }
                if text.contains('\0') {
                    return Err(TurnError::invalid("prompt text may not contain NUL"));
                }
                texts.push(text.clone());
                parts.push(Part::Text { text });
            }
            PromptPart::File { path } => {
                let attachment = project::resolve(&app.project_dir, &path)
                    .map_err(|e| TurnError::BadAttachment(e.to_string()))?;
                parts.push(Part::File {
                    path: attachment.shown.clone(),
                });
                attachments.push(attachment);
            }
            PromptPart::Image {
                mime_type,
                data,
                name,
            } => {
                let image = crate::attachments::check_image(
                    &mime_type,
                    data,
                    name,
                    (limits.image_bytes, limits.prompt_image_bytes),
                    &mut image_bytes,
                )?;
                parts.push(crate::attachments::image_part(images.len() as u32, &image));
                images.push(image);
            }
        }
    }
    let text = texts.join("\n");
    if text.trim().is_empty() {
        return Err(TurnError::invalid(
            "a prompt needs a non-empty text part: the command line to run",
        ));
    }
    Ok(CheckedPrompt {
        text,
        parts,
        attachments,
        images,
    })
}

pub(crate) fn busy_message(id: &SessionId, phase: &Phase) -> String {
    match phase {
        Phase::Pending { .. } => format!(
            "session {id} is waiting for approval of its previous prompt; reply to it or abort first"
        ),
        Phase::Busy => {
            format!("session {id} is busy running its previous prompt; wait or abort first")
        }
        Phase::Agent => {
            format!("session {id} is busy with its agent's turn; wait or abort first")
        }
        Phase::Held(HeldFor::Revoking) => format!(
            "session {id} is revoking its standing answers (its agent is being stopped); try again when that is done"
        ),
        Phase::Held(HeldFor::Deleting) => format!("session {id} is being deleted"),
        Phase::Held(HeldFor::StartingAgent) => {
            format!("session {id} is starting its agent to switch its mode; try again in a moment")
        }
    }
}

/// A session's run slot taken without a run: while it lives no prompt can start in the
/// session (a prompt gets a 409 that says why); dropping it frees the slot.
pub struct HeldSlot {
    app: Shared,
    id: SessionId,
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.app.runs().remove(&self.id);
    }
}

/// Takes the session's run slot for `why`, or says what holds it (a turn, or another hold).
pub fn hold_slot(app: &Shared, id: &SessionId, why: HeldFor) -> Result<HeldSlot, TurnError> {
    let mut runs = app.runs();
    if let Some(run) = runs.get(id) {
        return Err(TurnError::not_now(busy_message(id, &run.phase)));
    }
    // Nobody listens: an abort's send fails, which reads as "nothing runs", and it is true.
    let (control, _) = mpsc::unbounded_channel();
    runs.insert(
        id.clone(),
        RunHandle {
            phase: Phase::Held(why),
            control,
        },
    );
    Ok(HeldSlot {
        app: app.clone(),
        id: id.clone(),
    })
}

/// Stores the prompt, asks permission (unless the session allows always) and starts the run.
/// `client` is the gateway connection the prompt came from, if the client named one (an ACP
/// agent's turn may arrange the screen only when it is a live Control UI).
pub async fn start(
    app: &Shared,
    id: SessionId,
    prompt: Prompt,
    client: Option<&str>,
) -> Result<PromptAccepted, TurnError> {
    let session = {
        let (project, sid) = (app.project_id, id.to_string());
        app.store
            .read(move |c| store::get_session(c, project, &sid))
            .await?
            .ok_or_else(|| TurnError::session_not_found(id.as_str()))?
    };
    if session.agent != ax_acp::config::SHELL {
        return crate::acp_run::start(app, id, session, prompt, client).await;
    }
    let checked = check_prompt(app, prompt)?;
    if !checked.images.is_empty() {
        return Err(crate::attachments::images_not_supported("shell"));
    }
    let project = app.project_id;
    let sid = id.to_string();
    let always = app
        .store
        .read(move |c| {
            if store::get_session(c, project, &sid)?.is_none() {
                return Ok(None);
            }
            Ok(Some(store::always_allowed(c, &sid)?))
        })
        .await?;
    let Some(always) = always else {
        return Err(TurnError::session_not_found(id.as_str()));
    };

    let now = ids::now_ms();
    // Minted before the run slot is taken, so a failure to mint leaves nothing to undo.
    let user_id = ids::message_id()?;
    let reply_id = ids::message_id()?;
    let permission_id = if always {
        None
    } else {
        Some(ids::permission_id()?)
    };
    let checked_parts = checked.parts;
    let request = AgentRequest {
        text: checked.text,
        project_dir: app.project_dir.clone(),
        attachments: checked.attachments,
        output_limit: app.limits.output_bytes_per_message,
    };
    let permission = permission_id.map(|permission_id| Permission {
        id: permission_id,
        session_id: id.clone(),
        command: app.agent.describe(&request),
        attachments: request
            .attachments
            .iter()
            .map(|a| a.shown.clone())
            .collect(),
        state: PermissionState::Pending,
        created: now,
        tool_call: None,
        options: Vec::new(),
        option_id: None,
    });
    let phase = match &permission {
        Some(p) => Phase::Pending {
            permission_id: p.id.clone(),
        },
        None => Phase::Busy,
    };
    let (control, inbox) = mpsc::unbounded_channel();
    {
        let mut runs = app.runs();
        if let Some(run) = runs.get(&id) {
            return Err(TurnError::not_now(busy_message(&id, &run.phase)));
        }
        runs.insert(id.clone(), RunHandle { phase, control });
    }

    // From here on the run slot is taken: finish in a task of our own, so a client that hangs
    // up mid-request cannot leave the slot (and the session) stuck.
    let app2 = app.clone();
    let id2 = id.clone();
    let stages = app.tasks.spawn(async move {
        let (app, id) = (&app2, id2);
        let status = if always {
            SessionStatus::Busy
        } else {
            SessionStatus::Pending
        };
        let (user, reply) = begin_turn(
            app,
            &id,
            [user_id, reply_id],
            checked_parts,
            Vec::new(),
            permission.as_ref(),
            status,
        )
        .await?;
        let task = Run {
            app: app.clone(),
            session: id,
            reply_id: reply.id.clone(),
            next_index: 0,
        };
        app.tasks
            .spawn(task.drive(request, permission.clone(), inbox));
        Ok(PromptAccepted {
            message: user,
            reply_id: reply.id,
            permission,
        })
    });
    match stages.await {
        Ok(result) => result,
        Err(e) => {
            app.runs().remove(&id);
            Err(TurnError::internal(format!("starting the run failed: {e}")))
        }
    }
}

/// Stores the person's message and the empty reply (with the pending `permission`, if
/// any), begins the run in `status` and publishes all of it; the start of every turn, the
/// `shell` agent's and an ACP agent's. The caller holds the session's run slot, which is
/// freed here when storing fails.
pub(crate) async fn begin_turn(
    app: &Shared,
    id: &SessionId,
    [user_id, reply_id]: [MessageId; 2],
    parts: Vec<Part>,
    images: Vec<(&'static str, Vec<u8>)>,
    permission: Option<&Permission>,
    status: SessionStatus,
) -> Result<(Message, Message), TurnError> {
    let now = ids::now_ms();
    let user = Message {
        id: user_id,
        session_id: id.clone(),
        role: Role::User,
        created: now,
        ended: None,
        deltas: 0,
        parts,
    };
    let reply = Message {
        id: reply_id,
        session_id: id.clone(),
        role: Role::Assistant,
        created: now,
        ended: None,
        deltas: 0,
        parts: Vec::new(),
    };
    let project = app.project_id;
    let stored = {
        let (user, reply, permission) = (user.clone(), reply.clone(), permission.cloned());
        let sid = id.to_string();
        app.store
            .write(move |c| {
                let tx = store::begin_write(c)?;
                store::insert_message(&tx, &user)?;
                for (index, (mime, data)) in images.iter().enumerate() {
                    store::insert_image(&tx, &user.id, index as u32, mime, data)?;
                }
                store::insert_message(&tx, &reply)?;
                if let Some(p) = &permission {
                    store::insert_permission(&tx, p)?;
                }
                store::begin_run(&tx, &sid, &reply.id, now, process::this_process())?;
                let session = store::set_status(&tx, project, &sid, status, now)?;
                tx.commit()?;
                Ok(session)
            })
            .await
    };
    let session = match stored {
        Ok(Some(session)) => session,
        Ok(None) => {
            app.runs().remove(id);
            return Err(TurnError::session_not_found(id.as_str()));
        }
        Err(e) => {
            app.runs().remove(id);
            return Err(e.into());
        }
    };
    app.bus.publish(Event::MessageCreated {
        message: user.clone(),
    });
    app.bus.publish(Event::MessageCreated {
        message: reply.clone(),
    });
    app.bus.publish(Event::SessionUpdated { session });
    app.bus.publish(Event::SessionStatus {
        session_id: id.clone(),
        status,
    });
    if let Some(p) = permission {
        app.bus.publish(Event::PermissionAsked {
            permission: p.clone(),
        });
    }
    Ok((user, reply))
}

/// What a turn's last write gives back: the session as it now is (`None`: deleted meanwhile)
/// and the reply it stamped as ended, with that end.
pub(crate) type TurnEnd = (
    Option<ax_protocol::Session>,
    Option<(MessageId, ax_protocol::Millis)>,
);

/// The end of every turn once its last write (`stored`) is done: frees the run slot,
/// publishes the reply's stored end, the session and its new `status`, and lets the session's
/// prompt queue go on or pause after a turn that ended as `outcome` ([`crate::queue`]).
pub(crate) fn end_turn(
    app: &Shared,
    id: &SessionId,
    stored: Result<TurnEnd, store::StoreError>,
    status: SessionStatus,
    outcome: TurnOutcome,
) {
    app.runs().remove(id);
    match stored {
        Ok((session, ended)) => {
            if let Some((message_id, ended)) = ended {
                app.bus.publish(Event::MessageEnded {
                    session_id: id.clone(),
                    message_id,
                    ended,
                });
            }
            if let Some(session) = session {
                app.bus.publish(Event::SessionUpdated { session });
            }
        }
        Err(e) => tracing::error!(error = %e, session = %id, "ending a turn failed"),
    }
    app.bus.publish(Event::SessionStatus {
        session_id: id.clone(),
        status,
    });
    crate::queue::after_turn(app, id, outcome);
}

/// Why a run stopped early.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Aborted,
    Interrupted,
}

struct Run {
    app: Shared,
    session: SessionId,
    reply_id: MessageId,
    next_index: u32,
}

impl Run {
    async fn append(&mut self, part: Part) {
        let index = self.next_index;
        self.next_index += 1;
        let mid = self.reply_id.clone();
        let stored = part.clone();
        if let Err(e) = self
            .app
            .store
            .write(move |c| store::append_part(c, &mid, index, &stored))
            .await
        {
            tracing::error!(error = %e, "storing an output part failed");
        }
        self.app.bus.publish(Event::MessagePart {
            session_id: self.session.clone(),
            message_id: self.reply_id.clone(),
            index,
            part,
        });
    }

    async fn record_process(&self, group: ProcessGroup) {
        let ProcessGroup { pgid, start } = group;
        let sid = self.session.to_string();
        if let Err(e) = self
            .app
            .store
            .write(move |c| store::set_run_process(c, &sid, pgid, start))
            .await
        {
            tracing::error!(error = %e, "storing a run's process group failed");
        }
    }

    async fn set_permission(&self, permission: &mut Permission, state: PermissionState) {
        permission.state = state;
        let pid = permission.id.clone();
        let sid = self.session.to_string();
        if let Err(e) = self
            .app
            .store
            .write(move |c| store::set_permission_state(c, &pid, state))
            .await
        {
            tracing::error!(error = %e, session = %sid, "storing a permission reply failed");
        }
        self.app.bus.publish(Event::PermissionReplied {
            session_id: self.session.clone(),
            permission_id: permission.id.clone(),
            state,
        });
    }

    async fn set_status(&self, status: SessionStatus) {
        let project = self.app.project_id;
        let sid = self.session.to_string();
        let now = ids::now_ms();
        match self
            .app
            .store
            .write(move |c| store::set_status(c, project, &sid, status, now))
            .await
        {
            Ok(Some(session)) => {
                self.app.bus.publish(Event::SessionUpdated { session });
            }
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "storing a session status failed"),
        }
        self.app.bus.publish(Event::SessionStatus {
            session_id: self.session.clone(),
            status,
        });
    }

    /// Ends the run: no run row, status idle, the session free for the next prompt.
    async fn finish(self, acks: Vec<oneshot::Sender<()>>, outcome: TurnOutcome) {
        let sid = self.session.to_string();
        let project = self.app.project_id;
        let now = ids::now_ms();
        let stored = self
            .app
            .store
            .write(move |c| {
                let ended = store::end_run(c, &sid, now)?;
                let session = store::set_status(c, project, &sid, SessionStatus::Idle, now)?;
                Ok((session, ended))
            })
            .await;
        end_turn(
            &self.app,
            &self.session,
            stored,
            SessionStatus::Idle,
            outcome,
        );
        for ack in acks {
            let _ = ack.send(());
        }
    }

    async fn drive(
        mut self,
        request: AgentRequest,
        permission: Option<Permission>,
        mut inbox: mpsc::UnboundedReceiver<Control>,
    ) {
        if let Some(mut permission) = permission {
            let shutdown = self.app.shutdown.clone();
            let (reply, ack) = tokio::select! {
                control = inbox.recv() => match control {
                    Some(Control::Reply { reply, ack }) => (reply, ack),
                    Some(Control::AgentReply { reply, ack, .. }) => (reply.shell(), ack),
                    Some(Control::Abort { ack }) => {
                        self.set_permission(&mut permission, PermissionState::Cancelled).await;
                        self.append(Part::Aborted).await;
                        return self.finish(vec![ack], TurnOutcome::Aborted).await;
                    }
                    None => return self.finish(Vec::new(), TurnOutcome::Failed).await,
                },
                () = shutdown.cancelled() => {
                    self.set_permission(&mut permission, PermissionState::Cancelled).await;
                    self.append(Part::Interrupted).await;
                    return self.finish(Vec::new(), TurnOutcome::Interrupted).await;
                }
            };
            if reply == PermissionReply::Reject {
                self.set_permission(&mut permission, PermissionState::Rejected)
                    .await;
                let _ = ack.send(Ok(permission));
                self.append(Part::Rejected).await;
                return self.finish(Vec::new(), TurnOutcome::Rejected).await;
            }
            if reply == PermissionReply::Always {
                let sid = self.session.to_string();
                if let Err(e) = self
                    .app
                    .store
                    .write(move |c| store::set_always_allowed(c, &sid))
                    .await
                {
                    tracing::error!(error = %e, "storing an always-allow failed");
                }
            }
            if let Some(run) = self.app.runs().get_mut(&self.session) {
                run.phase = Phase::Busy;
            }
            self.set_permission(&mut permission, PermissionState::Approved)
                .await;
            self.set_status(SessionStatus::Busy).await;
            let _ = ack.send(Ok(permission));
        }
        self.work(request, inbox).await;
    }

    async fn work(mut self, request: AgentRequest, mut inbox: mpsc::UnboundedReceiver<Control>) {
        let cancel = CancellationToken::new();
        let (output, mut chunks) = mpsc::channel::<AgentOutput>(64);
        let agent = self.app.agent.clone();
        let job = tokio::spawn(agent.run(request, output, cancel.clone()));
        let shutdown = self.app.shutdown.clone();
        let mut stop: Option<Stop> = None;
        let mut acks = Vec::new();
        let mut inbox_open = true;
        loop {
            tokio::select! {
                chunk = chunks.recv() => match chunk {
                    Some(AgentOutput::Output { stream, text }) => {
                        self.append(Part::Output { stream, text }).await;
                    }
                    Some(AgentOutput::Truncated { dropped_bytes }) => {
                        self.append(Part::Truncated { dropped_bytes }).await;
                    }
                    Some(AgentOutput::ProcessGroup(group)) => self.record_process(group).await,
                    None => break,
                },
                control = inbox.recv(), if inbox_open => match control {
                    Some(Control::Abort { ack }) => {
                        cancel.cancel();
                        stop.get_or_insert(Stop::Aborted);
                        acks.push(ack);
                    }
                    Some(Control::Reply { ack, .. } | Control::AgentReply { ack, .. }) => {
                        let _ = ack.send(Err(TurnError::not_now("the command already runs")));
                    }
                    None => inbox_open = false,
                },
                () = shutdown.cancelled(), if stop.is_none() => {
                    cancel.cancel();
                    stop = Some(Stop::Interrupted);
                }
            }
        }
        let end = match tokio::time::timeout(Duration::from_secs(10), job).await {
            Ok(Ok(end)) => end,
            Ok(Err(e)) => RunEnd::Failed(format!("the agent task failed: {e}")),
            Err(_) => {
                cancel.cancel();
                RunEnd::Failed("the agent did not stop in time".into())
            }
        };
        let outcome = match (stop, &end) {
            (Some(Stop::Aborted), _) | (None, RunEnd::Cancelled) => TurnOutcome::Aborted,
            (Some(Stop::Interrupted), _) => TurnOutcome::Interrupted,
            (
                None,
                RunEnd::Exited {
                    code: Some(0),
                    signal: None,
                },
            ) => TurnOutcome::Completed,
            (None, RunEnd::Exited { .. } | RunEnd::Failed(_)) => TurnOutcome::Failed,
        };
        let last = match (stop, end) {
            (Some(Stop::Aborted), _) => Part::Aborted,
            (Some(Stop::Interrupted), _) => Part::Interrupted,
            (None, RunEnd::Exited { code, signal }) => Part::Exit { code, signal },
            (None, RunEnd::Cancelled) => Part::Aborted,
            (None, RunEnd::Failed(message)) => {
                self.append(Part::Output {
                    stream: Stream::Stderr,
                    text: format!("ax-code: {message}\n"),
                })
                .await;
                Part::Exit {
                    code: None,
                    signal: None,
                }
            }
        };
        self.append(last).await;
        // Aborts that arrived after the loop ended still get their answer.
        while let Ok(control) = inbox.try_recv() {
            match control {
                Control::Abort { ack } => acks.push(ack),
                Control::Reply { ack, .. } | Control::AgentReply { ack, .. } => {
                    let _ = ack.send(Err(TurnError::not_now("the run already ended")));
                }
            }
        }
        self.finish(acks, outcome).await;
    }
}

/// Replies to the session's pending permission `pid`.
pub async fn reply(
    app: &Shared,
    id: &SessionId,
    pid: &PermissionId,
    reply: PermissionReply,
    option_id: Option<String>,
) -> Result<Permission, TurnError> {
    let agent = {
        let runs = app.runs();
        match runs.get(id) {
            Some(RunHandle {
                phase: Phase::Agent,
                control,
            }) => Some(control.clone()),
            _ => None,
        }
    };
    if let Some(control) = agent {
        let (ack, answer) = oneshot::channel();
        let sent = control.send(Control::AgentReply {
            permission_id: pid.clone(),
            reply,
            option_id: option_id.clone(),
            ack,
        });
        if sent.is_ok()
            && let Ok(Ok(result)) = tokio::time::timeout(Duration::from_secs(10), answer).await
        {
            return result;
        }
        // The turn ended meanwhile: answered from the store below.
    }
    let reply = reply.shell();
    let control = {
        let runs = app.runs();
        match runs.get(id) {
            Some(RunHandle {
                phase: Phase::Pending { permission_id },
                control,
            }) if permission_id == pid => Some(control.clone()),
            _ => None,
        }
    };
    let Some(control) = control else {
        let (sid, pid2) = (id.to_string(), pid.to_owned());
        let found = app
            .store
            .read(move |c| store::get_permission(c, &sid, &pid2))
            .await?;
        let project = app.project_id;
        let sid = id.to_string();
        let session = app
            .store
            .read(move |c| store::get_session(c, project, &sid))
            .await?;
        return Err(match (session, found) {
            (None, _) => TurnError::session_not_found(id.as_str()),
            (Some(_), None) => TurnError::not_found(format!("no permission {pid} in session {id}")),
            (Some(_), Some(p)) => TurnError::not_now(format!(
                "permission {pid} is no longer pending (it is {})",
                serde_json::to_value(p.state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )),
        });
    };
    if let Some(option) = option_id {
        // The shell agent offers no options: only the reply names its answer.
        return Err(TurnError::invalid(format!(
            "permission {pid} offers no options, so optionId {option:?} is not one of them \
             (answer with reply alone)"
        )));
    }
    let (ack, answer) = oneshot::channel();
    if control.send(Control::Reply { reply, ack }).is_err() {
        return Err(TurnError::not_now("the run already ended"));
    }
    match tokio::time::timeout(Duration::from_secs(10), answer).await {
        Ok(Ok(result)) => result,
        _ => Err(TurnError::not_now(
            "the run ended before the reply was taken",
        )),
    }
}

/// Stops the session's run, if any, and waits until it has ended. `Ok(true)` once it has,
/// `Ok(false)` when nothing ran, an error when it did not end within
/// [`crate::Limits::abort_wait`] (it was told to stop and may still be stopping).
pub async fn abort(app: &Shared, id: &SessionId) -> Result<bool, TurnError> {
    let control = app
        .runs()
        .get(id)
        .map(|r| (r.control.clone(), r.phase == Phase::Agent));
    let Some((control, agent)) = control else {
        return Ok(false);
    };
    abort_run(app, id, control, agent).await
}

/// Stops the run behind `control` (`agent`: an ACP agent's turn) and waits until it has ended,
/// as [`abort`] does; a run that already ended is `Ok(false)`.
pub(crate) async fn abort_run(
    app: &Shared,
    id: &SessionId,
    control: mpsc::UnboundedSender<Control>,
    agent: bool,
) -> Result<bool, TurnError> {
    let wait = if agent {
        crate::acp_run::abort_wait(app)
    } else {
        app.limits.abort_wait
    };
    let (ack, done) = oneshot::channel();
    if control.send(Control::Abort { ack }).is_err() {
        // The run's task ended between the lookup and the send: nothing runs any more.
        return Ok(false);
    }
    match tokio::time::timeout(wait, done).await {
        Ok(Ok(())) => Ok(true),
        // The run's task dropped the answer: it is gone, so nothing runs.
        Ok(Err(_)) => Ok(true),
        Err(_) => Err(TurnError::not_now(format!(
            "session {id}: the run was told to stop but has not ended after {} s; it may still be stopping",
            wait.as_secs_f32()
        ))),
    }
}
