//! `GET /ui-command` (docs/hub.md §4): the `ui.command`s machines publish on `ax.<machine>.ui`
//! (only those their own gateway accepted, `crate::ui`), as server-sent events for the hub's
//! Control UI pages: `data:` is `{machine, command}` with `command` the machine gateway's
//! `ui.command` event payload; `?machine=m` filters. Bounded: a page more than
//! [`UI_BUFFER`] commands behind gets the event `dropped` (`{"dropped": N}`) and goes on.
//!
//! The same commands go to the Control UIs connected to the hub's gateway of their machine
//! (`/machine/{m}/gateway`, `terminal.rs`) as `ui.command` events, with the machine's
//! `commandId`, and that gateway collects their `ui.command.result` as a backend's does (only
//! for a command the UI was sent, once, within the wait). The first acknowledgement is sent
//! back to the machine ([`Request::UiCommandResult`]), whose join gives it to the connection
//! the command came from (`crate::ui`), so the agent that waits sees it.

use std::{convert::Infallible, sync::Arc};

use axum::{
    extract::{Query, State},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
};
use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::broadcast;

use ax_gateway::{AckOutcome, Outcome, RelayedCommand, UiCommandEvent, UiCommandResultParams};

use super::{ApiError, S, Shared};
use crate::{
    MachineName,
    subject::machine_of,
    ui::MachineUiCommand,
    wire::{Reply, Request, decode},
};

/// Commands kept for a page that is behind.
pub(super) const UI_BUFFER: usize = 64;

/// Subscribes before anything else the hub sends on its connection, so once the hub has
/// heard of a machine, the server holds this subscription too.
pub(super) async fn subscribe(
    nats: &async_nats::Client,
) -> Result<async_nats::Subscriber, crate::nats::ConnectError> {
    nats.subscribe("ax.*.ui")
        .await
        .map_err(|e| crate::nats::ConnectError {
            url: String::new(),
            reason: e.to_string(),
        })
}

/// Every machine's `ui.command`s into the hub's fan-out; a message whose subject does not
/// match the machine named inside is dropped.
pub(super) async fn follow(shared: Arc<Shared>, mut sub: async_nats::Subscriber) {
    while let Some(msg) = sub.next().await {
        let Ok(command) = decode::<MachineUiCommand>(&msg.payload) else {
            tracing::warn!(subject = %msg.subject, "hub: ignored a bad ui.command");
            continue;
        };
        if machine_of(&msg.subject).as_ref() != Some(&command.machine) {
            continue;
        }
        to_gateway(&shared, &command);
        // No page listening is not an error.
        let _ = shared.ui.send(Arc::new(command));
    }
}

/// Sends a machine's command to the UIs on the hub's gateway of that machine, if any, and
/// their first acknowledgement back to the machine.
fn to_gateway(shared: &Arc<Shared>, command: &MachineUiCommand) {
    let Some(gateway) = shared.gateways.existing(&command.machine) else {
        return;
    };
    if gateway.ui_client_count() == 0 {
        return;
    }
    let event = match serde_json::from_value::<UiCommandEvent>(command.command.clone()) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(machine = %command.machine, error = %e, "hub: ignored a bad ui.command");
            return;
        }
    };
    match gateway.relay_ui_command(&event) {
        Ok(relayed) => {
            tokio::spawn(acknowledge(
                shared.clone(),
                command.machine.clone(),
                event.command_id,
                relayed,
            ));
        }
        Err(e) => tracing::debug!(
            machine = %command.machine,
            error = %e.message,
            "hub: a ui.command did not reach the hub's gateway"
        ),
    }
}

/// The first acknowledgement of a hub UI, to the machine (one per hub: the machine takes one
/// answer per relay connection).
async fn acknowledge(
    shared: Arc<Shared>,
    machine: MachineName,
    command_id: String,
    mut relayed: RelayedCommand,
) {
    let Some(first) = relayed.answers.recv().await else {
        return;
    };
    let outcome = match first.outcome {
        Outcome::Applied => AckOutcome::Applied,
        Outcome::Ignored => AckOutcome::Ignored,
        Outcome::NoAnswer => return,
    };
    let params = UiCommandResultParams {
        command_id,
        outcome,
        reason: first.reason,
        revision: first.revision,
        not_applied: first.not_applied,
    };
    let Ok(params) = serde_json::to_value(params) else {
        return;
    };
    let request = Request::UiCommandResult { params };
    match shared
        .request::<serde_json::Value>(&machine, &request)
        .await
    {
        Ok(Reply::Ok(answer)) => {
            tracing::debug!(%machine, %answer, "hub: a ui.command acknowledged on the machine");
        }
        Ok(Reply::Error(e)) => {
            tracing::debug!(%machine, code = %e.code, message = %e.message, "hub: the machine refused an acknowledgement");
        }
        Err(e) => {
            tracing::debug!(%machine, ?e, "hub: an acknowledgement did not reach the machine")
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UiQuery {
    machine: Option<String>,
}

pub(super) async fn stream(State(shared): S, Query(q): Query<UiQuery>) -> Response {
    let machine = match q.machine.as_deref().map(MachineName::new).transpose() {
        Ok(m) => m,
        Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
    };
    let rx = shared.ui.subscribe();
    let events = futures_util::stream::unfold(rx, move |mut rx| {
        let machine = machine.clone();
        async move {
            loop {
                match rx.recv().await {
                    Ok(c) if machine.as_ref().is_none_or(|m| *m == c.machine) => {
                        let data = serde_json::to_string(&*c).ok()?;
                        let event = SseEvent::default().event("ui.command").data(data);
                        return Some((Ok::<_, Infallible>(event), rx));
                    }
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        let data = serde_json::json!({"dropped": n}).to_string();
                        let event = SseEvent::default().event("dropped").data(data);
                        return Some((Ok(event), rx));
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().text("heartbeat"))
        .into_response()
}
