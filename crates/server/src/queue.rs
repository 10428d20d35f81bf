//! Queue and steer (docs/backend.md §3, docs/agents.md §4): a prompt sent while a turn runs
//! waits in the session's queue (stored, so it survives a restart) and is sent when the turn
//! ends, one at a time, in order. Every session kind has it: the hook is [`after_turn`], called
//! by `turn::core::end_turn`, the one end of the `shell` agent's runs and of ACP agents' turns.
//!
//! Every change to one session's queue, and every decision to start one of its prompts, is made
//! under that session's gate (an async mutex), so two prompts at once, a prompt that arrives as
//! the turn ends and a cancel while the item is being sent each have one order: a prompt that
//! finds the queue non-empty goes behind it, the turn-end hook sends only what is still queued
//! once it holds the gate, and a cancel either wins (nothing is sent) or finds the item gone
//! (404: it was sent).
//!
//! When the queue waits for the person instead (it is "paused", with a reason):
//! - the turn failed (the agent failed, needed authentication, a `shell` command exited
//!   non-zero or was refused): what comes next may depend on what failed;
//! - the person stopped the turn (`POST /session/{id}/abort` pauses the queue *before* it
//!   stops the turn, so a turn that ends on its own at that moment does not send the next
//!   prompt either);
//! - the backend stopped during the turn, or restarted with prompts queued.
//!
//! `POST /session/{id}/queue/resume` lets it flow again; "send now" on an item resumes too.

use ax_protocol::{
    Event, Prompt, PromptAccepted, PromptPart, QueuedId, SessionId,
    queue::{PromptQueue, QueueAnswer, QueuedPrompt},
};

use crate::{
    state::Shared,
    store, turn,
    turn_error::TurnError,
    turn_outcome::TurnOutcome,
    turn_slots::{self, Phase},
};

/// Why the queue waits for the person after a turn that ended as `outcome`; `None` when it
/// goes on.
fn pause_reason(outcome: TurnOutcome) -> Option<&'static str> {
    match outcome {
        TurnOutcome::Completed => None,
        TurnOutcome::Failed => Some("the last turn failed; the queue waits for you"),
        TurnOutcome::Rejected => {
            Some("you refused the last turn's command; the queue waits for you")
        }
        TurnOutcome::Aborted => Some("the last turn was stopped; the queue waits for you"),
        TurnOutcome::Interrupted => {
            Some("the backend stopped during the last turn; the queue waits for you")
        }
    }
}

/// Why queues that still hold prompts wait after a restart.
pub const RESTART_REASON: &str = "the backend restarted; the queue waits for you";

/// What holds the session's run slot: `Some(true)` a turn, `Some(false)` a hold without a turn
/// (a mode switch, a revocation, a deletion), `None` nothing.
fn slot_state(app: &Shared, id: &SessionId) -> Option<bool> {
    app.runs
        .phase(id)
        .map(|phase| !matches!(phase, Phase::Held(_)))
}

async fn load(app: &Shared, id: &SessionId) -> Result<PromptQueue, TurnError> {
    let sid = id.clone();
    Ok(app
        .store
        .read(move |c| store::prompt_queue(c, &sid))
        .await?)
}

async fn publish(app: &Shared, id: &SessionId) -> Result<PromptQueue, TurnError> {
    let queue = load(app, id).await?;
    app.bus.publish(Event::QueueUpdated {
        queue: queue.clone(),
    });
    Ok(queue)
}

async fn set_paused(app: &Shared, id: &SessionId, reason: Option<&str>) -> Result<(), TurnError> {
    let (sid, reason) = (id.clone(), reason.map(str::to_owned));
    app.store
        .write(move |c| store::set_queue_paused(c, &sid, reason.as_deref()))
        .await?;
    Ok(())
}

/// Checks a prompt as a turn would take it, and bounds its stored size.
fn check(app: &Shared, prompt: &Prompt) -> Result<(), TurnError> {
    turn::check_prompt(app, prompt.clone())?;
    let size = serde_json::to_vec(prompt)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > app.limits.queued_prompt_bytes {
        return Err(TurnError::too_large(format!(
            "a queued prompt is limited to {} bytes (this one is {size}); send it when the \
             session is free",
            app.limits.queued_prompt_bytes
        )));
    }
    Ok(())
}

/// How long a title made from a prompt's text is (then an ellipsis).
const TITLE_FROM_TEXT_CHARS: usize = 60;

/// The title a session gets from its first prompt: the first non-blank line of its first
/// text, control characters and bidi controls turned into spaces, shortened to
/// [`TITLE_FROM_TEXT_CHARS`] characters with an ellipsis.
fn title_from_prompt(prompt: &Prompt) -> Option<String> {
    prompt.parts.iter().find_map(|p| match p {
        PromptPart::Text { text } => ax_core::text::one_line_label(text, TITLE_FROM_TEXT_CHARS),
        PromptPart::File { .. } | PromptPart::Image { .. } => None,
    })
}

/// Starts a turn with `prompt` and gives the session its title from it when it has none.
async fn start_turn(
    app: &Shared,
    id: &SessionId,
    prompt: Prompt,
    client: Option<&str>,
) -> Result<PromptAccepted, TurnError> {
    let title = title_from_prompt(&prompt);
    let accepted = turn::start(app, id.clone(), prompt, client).await?;
    title_if_untitled(app, id, title).await?;
    Ok(accepted)
}

/// `POST /session/{id}/prompt`: starts the turn now, or says why not (409) — also when prompts
/// are queued, which a direct prompt must not overtake.
pub async fn start_direct(
    app: &Shared,
    id: &SessionId,
    prompt: Prompt,
    client: Option<&str>,
) -> Result<PromptAccepted, TurnError> {
    let gate = app.queue_gates.of(id);
    let _gate = gate.lock().await;
    let queue = load(app, id).await?;
    if !queue.items.is_empty() {
        return Err(TurnError::not_now(format!(
            "session {id} has {} queued prompt(s); add this one to the queue \
             (POST /session/{id}/queue) or send one now",
            queue.items.len()
        )));
    }
    start_turn(app, id, prompt, client).await
}

/// `POST /session/{id}/queue`: sends the prompt at once when the session is free and nothing
/// waits, else queues it behind what does.
pub async fn submit(
    app: &Shared,
    id: &SessionId,
    prompt: Prompt,
    client: Option<&str>,
) -> Result<QueueAnswer, TurnError> {
    check(app, &prompt)?;
    let gate = app.queue_gates.of(id);
    let _gate = gate.lock().await;
    let queue = load(app, id).await?;
    match slot_state(app, id) {
        None if queue.items.is_empty() => {
            let accepted = start_turn(app, id, prompt, client).await?;
            return Ok(QueueAnswer::Sent {
                accepted: Box::new(accepted),
            });
        }
        // A hold ends without a turn end, so nothing would send what queued behind it.
        Some(false) => {
            if let Some(phase) = app.runs.phase(id) {
                return Err(TurnError::not_now(turn_slots::busy_message(id, &phase)));
            }
        }
        _ => {}
    }
    let max = app.limits.queue_len;
    let (sid, qid, stored) = (id.clone(), crate::ids::queued_id()?, prompt);
    let item = app
        .store
        .write(move |c| store::enqueue(c, &sid, &qid, &stored, crate::ids::now_ms(), max))
        .await?
        .ok_or_else(|| {
            TurnError::QueueFull(format!(
                "session {id} already has {max} queued prompts; wait for one to be sent or \
                 cancel one"
            ))
        })?;
    let queue = publish(app, id).await?;
    // Its place among what waits; an item already taken by a turn's end would be next (0).
    let position = queue
        .items
        .iter()
        .position(|q| q.id == item.id)
        .unwrap_or(0);
    Ok(QueueAnswer::Queued { item, position })
}

/// `GET /session/{id}/queue`.
pub async fn list(app: &Shared, id: &SessionId) -> Result<PromptQueue, TurnError> {
    load(app, id).await
}

fn gone(id: &SessionId, qid: &QueuedId) -> TurnError {
    TurnError::not_found(format!(
        "no queued prompt {qid} in session {id} (it was sent or cancelled)"
    ))
}

/// `PATCH /session/{id}/queue/{qid}`: replaces the item's prompt.
pub async fn edit(
    app: &Shared,
    id: &SessionId,
    qid: &QueuedId,
    prompt: Prompt,
) -> Result<QueuedPrompt, TurnError> {
    check(app, &prompt)?;
    let gate = app.queue_gates.of(id);
    let _gate = gate.lock().await;
    let (sid, qid2) = (id.clone(), qid.clone());
    let item = app
        .store
        .write(move |c| store::edit_queued(c, &sid, &qid2, &prompt, crate::ids::now_ms()))
        .await?
        .ok_or_else(|| gone(id, qid))?;
    publish(app, id).await?;
    Ok(item)
}

/// `DELETE /session/{id}/queue/{qid}`: cancels the item; the queue as it now is.
pub async fn cancel(
    app: &Shared,
    id: &SessionId,
    qid: &QueuedId,
) -> Result<PromptQueue, TurnError> {
    let gate = app.queue_gates.of(id);
    let _gate = gate.lock().await;
    let (sid, qid2) = (id.clone(), qid.clone());
    let removed = app
        .store
        .write(move |c| store::remove_queued(c, &sid, &qid2))
        .await?;
    if !removed {
        return Err(gone(id, qid));
    }
    publish(app, id).await
}

/// `POST /session/{id}/queue/resume`: lets a paused queue flow; sends its first item at once
/// when the session is free.
pub async fn resume(app: &Shared, id: &SessionId) -> Result<PromptQueue, TurnError> {
    let gate = app.queue_gates.of(id);
    let _gate = gate.lock().await;
    set_paused(app, id, None).await?;
    if slot_state(app, id).is_none() {
        send_first(app, id).await?;
    }
    publish(app, id).await
}

/// `POST /session/{id}/queue/{qid}/send`: the item goes next, and now: a running turn is
/// stopped (the abort path) and its end sends the item, whatever that end was.
pub async fn send_now(
    app: &Shared,
    id: &SessionId,
    qid: &QueuedId,
) -> Result<PromptQueue, TurnError> {
    let gate = app.queue_gates.of(id);
    let mut state = gate.lock().await;
    let (sid, qid2) = (id.clone(), qid.clone());
    let moved = app
        .store
        .write(move |c| {
            let tx = store::begin_write(c)?;
            let moved = store::move_to_front(&tx, &sid, &qid2)?;
            if moved {
                store::set_queue_paused(&tx, &sid, None)?;
            }
            tx.commit()?;
            Ok(moved)
        })
        .await?;
    if !moved {
        return Err(gone(id, qid));
    }
    // The running turn's own control channel, taken under the gate: if that turn ends before
    // the abort reaches it, the abort finds its channel closed and no later turn is stopped.
    let running = app.runs.turn(id).map(|(_, control)| control);
    let queue = match running {
        None => {
            send_first(app, id).await?;
            publish(app, id).await?
        }
        Some(_) => {
            state.steering = true;
            publish(app, id).await?
        }
    };
    drop(state);
    if let Some(control) = running {
        turn::abort_run(app, id, control).await?;
    }
    Ok(queue)
}

/// `POST /session/{id}/abort`, before it stops the turn: the person means to stop, so what
/// is queued waits (also if the turn ends on its own before the abort reaches it).
pub async fn pause_for_abort(app: &Shared, id: &SessionId) -> Result<(), TurnError> {
    let gate = app.queue_gates.of(id);
    let mut state = gate.lock().await;
    state.steering = false;
    if load(app, id).await?.items.is_empty() {
        return Ok(());
    }
    set_paused(app, id, pause_reason(TurnOutcome::Aborted)).await?;
    publish(app, id).await?;
    Ok(())
}

/// Sends the queue's first item; called with the gate held and the session free. A prompt
/// that cannot start (its file went away, the agent is not configured any more) stays first
/// and pauses the queue with the reason.
async fn send_first(app: &Shared, id: &SessionId) -> Result<(), TurnError> {
    let queue = load(app, id).await?;
    let Some(first) = queue.items.into_iter().next() else {
        return Ok(());
    };
    match start_turn(app, id, first.prompt, None).await {
        Ok(_) => {
            let sid = id.clone();
            app.store
                .write(move |c| store::remove_queued(c, &sid, &first.id))
                .await?;
        }
        Err(e) => {
            tracing::warn!(session = %id, error = %e, "a queued prompt could not start");
            set_paused(
                app,
                id,
                Some(&format!("the next prompt could not start: {e}")),
            )
            .await?;
        }
    }
    Ok(())
}

/// The turn-end hook: after a turn's slot is freed, sends the next queued prompt or pauses
/// the queue (see the module doc). Runs as a task of its own, so the ending turn never waits
/// for the gate.
pub fn after_turn(app: &Shared, id: &SessionId, outcome: TurnOutcome) {
    let (app2, id) = (app.clone(), id.clone());
    app.tasks.spawn(async move {
        let app = &app2;
        let gate = app.queue_gates.of(&id);
        let mut state = gate.lock().await;
        let steering = std::mem::take(&mut state.steering);
        let result = async {
            let queue = load(app, &id).await?;
            if queue.items.is_empty() || slot_state(app, &id).is_some() {
                // Nothing waits, or a prompt already took the free slot (its end comes back here).
                return Ok(());
            }
            if !steering {
                if queue.paused.is_some() {
                    return Ok(());
                }
                if let Some(reason) = pause_reason(outcome) {
                    set_paused(app, &id, Some(reason)).await?;
                    publish(app, &id).await?;
                    return Ok(());
                }
            }
            if app.shutdown.is_cancelled() {
                return Ok(());
            }
            send_first(app, &id).await?;
            publish(app, &id).await?;
            Ok::<(), TurnError>(())
        }
        .await;
        if let Err(e) = result {
            tracing::error!(session = %id, error = %e, "the queue could not go on after a turn");
        }
    });
}

/// Every session gets a title from its first prompt (`title`), however it was created.
async fn title_if_untitled(
    app: &Shared,
    id: &SessionId,
    title: Option<String>,
) -> Result<(), TurnError> {
    if let Some(title) = title {
        app.update_session(id, move |c, project, sid| {
            store::offer_title(c, project, sid, &title, store::OfferedTitle::Prompt)
        })
        .await?;
    }
    Ok(())
}
