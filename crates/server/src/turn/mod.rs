//! Turns: what a prompt starts in a session, for every agent (docs/backend.md §2,
//! docs/agents.md). The entry points here dispatch by the session's agent:
//!
//! - [`core`]: the one lifecycle of a turn: check the prompt, take the slot, store and publish
//!   its start, end it in one transaction, answer late controls, tell the queue;
//! - [`acp`]: an agent's turn (its process, events, permissions, modes), the built-in
//!   `shell` agent's included: it is an ACP agent served inside the backend
//!   (`ax_acp::shell`, docs/backend.md "One agent model").
//!
//! Dependencies point one way: the API and the queue call these entry points, which call
//! `acp`, which calls `core`; all of them use the app state and the leaves it holds, the
//! session's run and agent slots (`crate::turn_slots`) and how a turn ended
//! (`crate::turn_outcome`), which name nothing of the turn logic or the state.

pub mod acp;
pub mod core;

use std::time::Duration;

use ax_protocol::{Permission, PermissionId, PermissionReply, Prompt, PromptAccepted, SessionId};
use tokio::sync::{mpsc, oneshot};

pub use self::core::{check_prompt, hold_slot};
use crate::{
    state::Shared,
    store,
    turn_error::TurnError,
    turn_slots::{Control, Phase},
};

/// Starts a turn of the session's agent with `prompt`. `client` is the gateway connection the
/// prompt came from, if the client named one (an ACP agent's turn may arrange the screen only
/// when it is a live Control UI).
pub async fn start(
    app: &Shared,
    id: SessionId,
    prompt: Prompt,
    client: Option<&str>,
) -> Result<PromptAccepted, TurnError> {
    let session = app
        .sessions()
        .get(&id)
        .await?
        .ok_or_else(|| TurnError::session_not_found(id.as_str()))?;
    acp::start(app, id, session, prompt, client).await
}

/// Replies to the session's pending permission `pid`: sent to the turn that waits on it,
/// which stores the answer (and an "always" it gave, listed on the session as a standing
/// answer, docs/agents.md §5) before it says so. When no turn waits on it, the error says
/// why from the store (no such permission, or its state).
pub async fn reply(
    app: &Shared,
    id: &SessionId,
    pid: &PermissionId,
    reply: PermissionReply,
    option_id: Option<String>,
) -> Result<Permission, TurnError> {
    if let Some((Phase::Agent, control)) = app.runs.turn(id) {
        let (ack, answer) = oneshot::channel();
        let sent = control
            .send(Control::AgentReply {
                permission_id: pid.clone(),
                reply,
                option_id,
                ack,
            })
            .is_ok();
        if sent && let Ok(Ok(result)) = tokio::time::timeout(Duration::from_secs(10), answer).await
        {
            return result;
        }
        // The turn ended meanwhile: answered from the store below.
    }
    Err(not_pending(app, id, pid).await?)
}

/// Why `pid` cannot be answered now: no such session, no such permission, or its state.
async fn not_pending(
    app: &Shared,
    id: &SessionId,
    pid: &PermissionId,
) -> Result<TurnError, TurnError> {
    let (project, sid, pid2) = (app.project_id, id.to_string(), pid.to_owned());
    let (session, found) = app
        .store
        .read(move |c| {
            Ok((
                store::get_session(c, project, &sid)?,
                store::get_permission(c, &sid, &pid2)?,
            ))
        })
        .await?;
    Ok(match (session, found) {
        (None, _) => TurnError::session_not_found(id.as_str()),
        (Some(_), None) => TurnError::not_found(format!("no permission {pid} in session {id}")),
        (Some(_), Some(p)) => TurnError::not_now(format!(
            "permission {pid} is no longer pending (it is {})",
            serde_json::to_value(p.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        )),
    })
}

/// Stops the session's turn, if any, and waits until it has ended. `Ok(true)` once it has,
/// `Ok(false)` when nothing ran, an error when it did not end within
/// [`crate::Limits::abort_wait`] (it was told to stop and may still be stopping).
pub async fn abort(app: &Shared, id: &SessionId) -> Result<bool, TurnError> {
    let Some((_, control)) = app.runs.turn(id) else {
        return Ok(false);
    };
    abort_run(app, id, control).await
}

/// Stops the turn behind `control` and waits until it has ended, as [`abort`] does; a turn
/// that already ended is `Ok(false)`.
pub(crate) async fn abort_run(
    app: &Shared,
    id: &SessionId,
    control: mpsc::UnboundedSender<Control>,
) -> Result<bool, TurnError> {
    let wait = app.limits.abort_wait;
    let (ack, done) = oneshot::channel();
    if control.send(Control::Abort { ack }).is_err() {
        // The turn's task ended between the lookup and the send: nothing runs any more.
        return Ok(false);
    }
    match tokio::time::timeout(wait, done).await {
        Ok(Ok(())) => Ok(true),
        // The turn's task dropped the answer: it is gone, so nothing runs.
        Ok(Err(_)) => Ok(true),
        Err(_) => Err(TurnError::not_now(format!(
            "session {id}: the run was told to stop but has not ended after {} s; it may still be stopping",
            wait.as_secs_f32()
        ))),
    }
}
