//! The one turn lifecycle of every agent
//! (docs/backend.md §2): a prompt is checked ([`check_prompt`]), the session's run slot is
//! taken and the prompt and the empty reply are stored and published ([`launch`]), and the
//! turn's last write is followed by [`end_turn`]: the slot freed,
//! the end published, the controls that came too late answered, the queue told.

use ax_agents::{
    process,
    project::{self, Attachment},
};
use ax_protocol::{
    Event, Message, MessageId, Part, Prompt, PromptAccepted, PromptPart, Role, SessionId,
    SessionStatus,
};
use tokio::sync::oneshot;

use crate::{
    ids,
    state::Shared,
    store,
    turn_error::TurnError,
    turn_outcome::TurnOutcome,
    turn_slots::{Control, HeldFor, Inbox, Phase},
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

/// A session's run slot taken without a run: while it lives no prompt can start in the
/// session (a prompt gets a 409 that says why); dropping it frees the slot.
pub struct HeldSlot {
    app: Shared,
    id: SessionId,
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.app.runs.free(&self.id);
    }
}

/// Takes the session's run slot for `why`, or says what holds it (a turn, or another hold).
pub fn hold_slot(app: &Shared, id: &SessionId, why: HeldFor) -> Result<HeldSlot, TurnError> {
    // Nobody listens: an abort's send fails, which reads as "nothing runs", and it is true.
    drop(app.runs.take(id, Phase::Held(why))?);
    Ok(HeldSlot {
        app: app.clone(),
        id: id.clone(),
    })
}

/// How a turn opens: the ids minted for the person's message and the reply (minted before the
/// slot is taken, so a failure to mint leaves nothing to undo), the message's parts and
/// images, and the session's status while it runs.
pub(crate) struct Opening {
    pub ids: [MessageId; 2],
    pub parts: Vec<Part>,
    pub images: Vec<(&'static str, Vec<u8>)>,
    pub status: SessionStatus,
}

/// The start of every turn: takes the session's run
/// slot for `phase`, stores and publishes the opening ([`begin_turn`]) and spawns the turn's
/// task, `turn(session, reply id, inbox)`. From the slot on, all of it runs in a task of its own, so a
/// client that hangs up mid-request cannot leave the slot (and the session) stuck.
pub(crate) async fn launch<F, T>(
    app: &Shared,
    id: &SessionId,
    phase: Phase,
    opening: Opening,
    turn: F,
) -> Result<PromptAccepted, TurnError>
where
    F: FnOnce(SessionId, MessageId, Inbox) -> T + Send + 'static,
    T: Future<Output = ()> + Send + 'static,
{
    let inbox = app.runs.take(id, phase)?;
    let (app2, id2) = (app.clone(), id.clone());
    let stages = app.tasks.spawn(async move {
        let app = &app2;
        let Opening {
            ids,
            parts,
            images,
            status,
        } = opening;
        let (user, reply) = begin_turn(app, &id2, ids, parts, images, status).await?;
        app.tasks.spawn(turn(id2, reply.id.clone(), inbox));
        Ok(PromptAccepted {
            message: user,
            reply_id: reply.id,
            permission: None,
        })
    });
    match stages.await {
        Ok(result) => result,
        Err(e) => {
            app.runs.free(id);
            Err(TurnError::internal(format!(
                "starting the turn failed: {e}"
            )))
        }
    }
}

/// Stores the person's message and the empty reply, begins the run in `status` and publishes all of it. The caller holds the session's
/// run slot, which is freed here when storing fails.
async fn begin_turn(
    app: &Shared,
    id: &SessionId,
    [user_id, reply_id]: [MessageId; 2],
    parts: Vec<Part>,
    images: Vec<(&'static str, Vec<u8>)>,
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
        let (user, reply) = (user.clone(), reply.clone());
        let (sid, id, bus) = (id.to_string(), id.clone(), app.bus.clone());
        app.store
            .write(move |c| {
                let tx = store::begin_write(c)?;
                store::insert_message(&tx, &user)?;
                for (index, (mime, data)) in images.iter().enumerate() {
                    store::insert_image(&tx, &user.id, index as u32, mime, data)?;
                }
                store::insert_message(&tx, &reply)?;
                store::begin_run(&tx, &sid, &reply.id, now, process::this_process())?;
                let Some(session) = store::set_status(&tx, project, &sid, status, now)? else {
                    return Ok(false);
                };
                tx.commit()?;
                // Published while the writer is held: the session's states go out in the
                // order they were committed (see `Sessions::update`).
                bus.publish(Event::MessageCreated { message: user });
                bus.publish(Event::MessageCreated { message: reply });
                bus.publish(Event::SessionUpdated { session });
                bus.publish(Event::SessionStatus {
                    session_id: id,
                    status,
                });
                Ok(true)
            })
            .await
    };
    match stored {
        Ok(true) => Ok((user, reply)),
        Ok(false) => {
            app.runs.free(id);
            Err(TurnError::session_not_found(id.as_str()))
        }
        Err(e) => {
            app.runs.free(id);
            Err(e.into())
        }
    }
}

/// The end of every turn: one transaction stamps the reply's end, drops the run row and
/// sets the session's `status` (after `also`, the turn's own last changes, e.g. an ACP agent's
/// authentication methods); then the run slot is freed, the end, the session and its status
/// are published, controls that reached the turn too late are answered (an abort as done, an
/// answer as too late), the aborts the turn took are answered, and the prompt queue goes on or
/// pauses after a turn that ended as `outcome` ([`crate::state::AfterTurn`]).
pub(crate) async fn end_turn<F>(
    app: &Shared,
    id: &SessionId,
    status: SessionStatus,
    outcome: TurnOutcome,
    inbox: &mut Inbox,
    mut acks: Vec<oneshot::Sender<()>>,
    also: F,
) where
    F: FnOnce(&rusqlite::Connection, i64, &str) -> store::Result<()> + Send + 'static,
{
    let (project, sid, app2, id2) = (app.project_id, id.to_string(), app.clone(), id.clone());
    let stored = app
        .store
        .write(move |c| {
            let tx = store::begin_write(c)?;
            also(&tx, project, &sid)?;
            let now = ids::now_ms();
            let ended = store::end_run(&tx, &sid, now)?;
            let session = store::set_status(&tx, project, &sid, status, now)?;
            tx.commit()?;
            // While the writer is held: the slot is free before anyone hears the turn ended
            // (a prompt sent on `session.status` idle is taken), and the session's states go
            // out in the order they were committed (see `Sessions::update`).
            app2.runs.free(&id2);
            if let Some((message_id, ended)) = ended {
                app2.bus.publish(Event::MessageEnded {
                    session_id: id2.clone(),
                    message_id,
                    ended,
                });
            }
            if let Some(session) = session {
                app2.bus.publish(Event::SessionUpdated { session });
            }
            app2.bus.publish(Event::SessionStatus {
                session_id: id2,
                status,
            });
            Ok(())
        })
        .await;
    if let Err(e) = stored {
        tracing::error!(error = %e, session = %id, "ending a turn failed");
        app.runs.free(id);
        app.bus.publish(Event::SessionStatus {
            session_id: id.clone(),
            status,
        });
    }
    (app.after_turn)(app, id, outcome);
    while let Ok(control) = inbox.try_recv() {
        match control {
            Control::Abort { ack } => acks.push(ack),
            Control::AgentReply { ack, .. } => {
                let _ = ack.send(Err(TurnError::not_now("the turn already ended")));
            }
        }
    }
    for ack in acks {
        let _ = ack.send(());
    }
}
