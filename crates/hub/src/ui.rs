//! `ui.command` from a machine's agents to the Control UIs on the hub (docs/hub.md §1-§4).
//!
//! Opt-in ([`crate::join::JoinConfig::share_ui_commands`]): the join then connects to its own
//! backend's gateway as one more Control UI (`mode: ui`, cap `ui-commands`, scope
//! `operator.read`) and publishes each `ui.command` event it is sent on `ax.<machine>.ui`
//! (core NATS: a presentation command is for the UIs watching now, never replayed). So only a
//! command the backend's gateway accepted and delivered reaches NATS: closed params, known
//! sessions, the screen gate of a session's credential and the per-connection bounds are all
//! applied by the backend first, and a `target: "requester"` or `uiId` command goes to its one
//! UI only, never to the hub. Human priority is each receiving Control UI's own rule
//! (docs/gateway.md §5), as on the machine.
//!
//! The relay answers `ui.command.result` only for a hub: a Control UI connected to the hub's
//! gateway of this machine acknowledges a shared command there, the hub sends the first such
//! acknowledgement as a [`crate::wire::Request::UiCommandResult`] on `ax.req.<machine>`, and
//! the join hands it to the relay's gateway connection ([`acknowledge`]), the one the command
//! was sent to. The backend's gateway applies its own rules to it: an answer only for a
//! command that connection was sent and an agent still waits for, once. So an agent that
//! waits sees the hub UI's outcome under the relay's connection, else `no_answer`.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_client::Secret;
use ax_gateway::{ClientMode, ConnectOptions, GatewayClient, Method, Scope, client::gateway_url};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::error::RecvError;

use crate::{
    MachineName,
    wire::{MAX_MESSAGE, Reply, ReplyError},
};

/// Longest the join waits for its gateway's answer to an acknowledgement.
const ACK_WAIT: Duration = Duration::from_secs(5);

/// The relay's gateway connection while it is connected: where a hub's acknowledgement goes.
#[derive(Clone, Default)]
pub(crate) struct RelayLink(Arc<Mutex<Option<Arc<GatewayClient>>>>);

impl RelayLink {
    fn set(&self, client: Option<Arc<GatewayClient>>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = client;
    }

    fn current(&self) -> Option<Arc<GatewayClient>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Answers a hub's [`crate::wire::Request::UiCommandResult`]: its params go as
/// `ui.command.result` on the relay's connection (`link`; `None` when this machine does not
/// share its `ui.command`s), and the gateway's answer (`{accepted}`) or error comes back.
pub(crate) async fn acknowledge(link: Option<&RelayLink>, params: serde_json::Value) -> Reply {
    let refused = |status: u16, code: &str, message: &str| {
        Reply::Error(ReplyError {
            status,
            code: code.to_owned(),
            message: message.to_owned(),
        })
    };
    let Some(link) = link else {
        return refused(
            404,
            "NOT_FOUND",
            "this machine does not share its ui.commands (serve --join --share-ui-commands)",
        );
    };
    let Some(client) = link.current() else {
        return refused(503, "UNAVAILABLE", "the ui.command relay is not connected");
    };
    match tokio::time::timeout(ACK_WAIT, client.request(Method::UiCommandResult, params)).await {
        Ok(Ok(answer)) => Reply::Ok(answer),
        Ok(Err(e)) => crate::screen::error_reply(&e),
        Err(_) => refused(503, "UNAVAILABLE", "the machine's gateway did not answer"),
    }
}

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
/// The connection is kept in `link` while it lasts.
pub(crate) async fn relay(
    nats: async_nats::Client,
    name: MachineName,
    backend_url: String,
    token: Secret,
    link: RelayLink,
) {
    let subject = name.ui_subject();
    loop {
        let ended = relay_once(&nats, &name, &subject, &backend_url, &token, &link).await;
        link.set(None);
        if let Err(e) = ended {
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
    link: &RelayLink,
) -> Result<(), String> {
    let url = gateway_url(backend_url).map_err(|e| e.to_string())?;
    let options = ConnectOptions::new(token.clone(), ClientMode::Ui, vec![Scope::Read])
        .with_client_id("ax-code-hub-relay")
        .with_caps([ax_gateway::CAP_UI_COMMANDS]);
    let client = GatewayClient::connect(&url, options)
        .await
        .map_err(|e| e.to_string())?;
    let mut events = client.subscribe();
    link.set(Some(Arc::new(client)));
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
