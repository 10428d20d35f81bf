//! `ui.command` from a machine's agents to the Control UIs on the hub (docs/hub.md §1-§4).
//!
//! Opt-in ([`crate::join::JoinConfig::share_ui_commands`]): the join then connects to its own
//! backend's gateway as one more Control UI (`mode: ui`, cap `ui-commands`, scope
//! `operator.read`) and publishes each `ui.command` event it is sent on `ax.<machine>.ui`
//! (core NATS: a presentation command is for the UIs watching now, never replayed). So only a
//! command the backend's gateway accepted and delivered reaches NATS: closed params, known
//! sessions, the screen gate of a session's credential and the per-connection bounds are all
//! applied by the backend first, and a `target: "requester"` or `uiId` command goes to its one
//! UI only, never to the hub. The relay never acknowledges (`ui.command.result`), so an agent
//! that waits sees it as `no_answer`, never as having applied anything; human priority is
//! each receiving Control UI's own rule (docs/gateway.md §5), as on the machine.

use std::time::Duration;

use ax_client::Secret;
use ax_gateway::{ClientMode, ConnectOptions, GatewayClient, Scope, client::gateway_url};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;

use crate::{MachineName, wire::MAX_MESSAGE};

/// One `ui.command` as it travels on `ax.<machine>.ui`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachineUiCommand {
    /// The machine whose agent sent it.
    pub machine: MachineName,
    /// The `ui.command` event's payload as the machine's gateway sent it to its UIs
    /// (`commandId`, `command`, `sessionKey`?, `expectedRevision`?).
    pub command: serde_json::Value,
}

/// Relays the backend's `ui.command` events to NATS for as long as it runs, reconnecting to
/// the gateway (every 2 s) when the connection ends.
pub async fn relay(
    nats: async_nats::Client,
    name: MachineName,
    backend_url: String,
    token: Secret,
) {
    let subject = name.ui_subject();
    loop {
        if let Err(e) = relay_once(&nats, &name, &subject, &backend_url, &token).await {
            tracing::debug!(error = %e, "hub: ui.command relay; connecting again shortly");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn relay_once(
    nats: &async_nats::Client,
    name: &MachineName,
    subject: &str,
    backend_url: &str,
    token: &Secret,
) -> Result<(), String> {
    let url = gateway_url(backend_url).map_err(|e| e.to_string())?;
    let options = ConnectOptions::new(token.clone(), ClientMode::Ui, vec![Scope::Read])
        .with_client_id("ax-code-hub-relay")
        .with_caps([ax_gateway::CAP_UI_COMMANDS]);
    let client = GatewayClient::connect(&url, options)
        .await
        .map_err(|e| e.to_string())?;
    let mut events = client.subscribe();
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            // The gateway's bound: commands this relay fell behind on are dropped, said so.
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(dropped = n, "hub: ui.command relay fell behind; dropped");
                continue;
            }
            Err(RecvError::Closed) => return Err("the gateway connection ended".to_owned()),
        };
        if event.event != "ui.command" {
            continue;
        }
        let Some(command) = event.payload else {
            continue;
        };
        let message = MachineUiCommand {
            machine: name.clone(),
            command,
        };
        let Ok(payload) = serde_json::to_vec(&message) else {
            continue;
        };
        if payload.len() > MAX_MESSAGE {
            tracing::warn!(
                bytes = payload.len(),
                "hub: ui.command over the limit; dropped"
            );
            continue;
        }
        if let Err(e) = nats.publish(subject.to_owned(), payload.into()).await {
            tracing::debug!(error = %e, "hub: cannot publish a ui.command; dropped");
        }
    }
}
