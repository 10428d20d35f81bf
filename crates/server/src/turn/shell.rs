//! The built-in `shell` agent's run (docs/backend.md §2): prompt → permission → command →
//! exit, with every step stored and published. Each run is a task that owns its session's
//! run slot; handlers talk to it through [`Control`] messages, so a reply and an abort can
//! never race each other. The lifecycle around it is the one of every turn (`super::core`).

use std::time::Duration;

use ax_agents::{AgentOutput, AgentRequest, RunEnd, process::ProcessGroup};
use ax_protocol::{
    Event, MessageId, Part, Permission, PermissionReply, PermissionState, Prompt, PromptAccepted,
    SessionId, SessionStatus, Stream,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{
    core::{self, TurnOutcome, check_prompt},
    slots::{Control, Inbox, Phase},
};
use crate::{ids, state::Shared, store, turn_error::TurnError};

/// Stores the prompt, asks permission (unless the session allows always) and starts the run.
pub(super) async fn start(
    app: &Shared,
    id: SessionId,
    prompt: Prompt,
) -> Result<PromptAccepted, TurnError> {
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
    let opening = core::Opening {
        ids: [user_id, reply_id],
        parts: checked.parts,
        images: Vec::new(),
        permission: permission.clone(),
        status: if always {
            SessionStatus::Busy
        } else {
            SessionStatus::Pending
        },
    };
    let app2 = app.clone();
    core::launch(app, &id, phase, opening, move |session, reply_id, inbox| {
        let run = Run {
            app: app2,
            session,
            reply_id,
            next_index: 0,
        };
        run.drive(request, permission, inbox)
    })
    .await
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
        let now = ids::now_ms();
        let stored = self
            .app
            .update_session(&self.session, move |c, project, sid| {
                store::set_status(c, project, sid, status, now)
            })
            .await;
        if let Err(e) = stored {
            tracing::error!(error = %e, "storing a session status failed");
        }
        self.app.bus.publish(Event::SessionStatus {
            session_id: self.session.clone(),
            status,
        });
    }

    /// Ends the run: no run row, status idle, the session free for the next prompt.
    async fn finish(self, inbox: &mut Inbox, acks: Vec<oneshot::Sender<()>>, outcome: TurnOutcome) {
        core::end_turn(
            &self.app,
            &self.session,
            SessionStatus::Idle,
            outcome,
            inbox,
            acks,
            |_, _, _| Ok(()),
        )
        .await;
    }

    async fn drive(
        mut self,
        request: AgentRequest,
        permission: Option<Permission>,
        mut inbox: Inbox,
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
                        return self.finish(&mut inbox, vec![ack], TurnOutcome::Aborted).await;
                    }
                    None => return self.finish(&mut inbox, Vec::new(), TurnOutcome::Failed).await,
                },
                () = shutdown.cancelled() => {
                    self.set_permission(&mut permission, PermissionState::Cancelled).await;
                    self.append(Part::Interrupted).await;
                    return self.finish(&mut inbox, Vec::new(), TurnOutcome::Interrupted).await;
                }
            };
            if reply == PermissionReply::Reject {
                self.set_permission(&mut permission, PermissionState::Rejected)
                    .await;
                let _ = ack.send(Ok(permission));
                self.append(Part::Rejected).await;
                return self
                    .finish(&mut inbox, Vec::new(), TurnOutcome::Rejected)
                    .await;
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
            self.app.runs.set_phase(&self.session, Phase::Busy);
            self.set_permission(&mut permission, PermissionState::Approved)
                .await;
            self.set_status(SessionStatus::Busy).await;
            let _ = ack.send(Ok(permission));
        }
        self.work(request, inbox).await;
    }

    async fn work(mut self, request: AgentRequest, mut inbox: Inbox) {
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
        // Aborts that arrived after the loop ended still get their answer there.
        self.finish(&mut inbox, acks, outcome).await;
    }
}
