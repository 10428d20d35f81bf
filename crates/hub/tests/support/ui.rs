//! Control UIs and agents of `ui.command` on a hub's gateway and on a machine's, with the
//! gateway's own client (docs/hub.md §3, §4).

use ax_gateway::{ClientMode, ConnectOptions, EventFrame, GatewayClient, Method, Scope};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::{Machine, within};

/// A Control UI (`ui`, cap `ui-commands`) on the gateway at `url`.
pub async fn control_ui(url: &str, token: &str) -> GatewayClient {
    let options = ConnectOptions::new(
        token.to_owned(),
        ClientMode::Ui,
        vec![Scope::Read, Scope::Write],
    )
    .with_caps(["ui-commands"]);
    GatewayClient::connect(url, options).await.unwrap()
}

/// An agent on the machine's own gateway.
pub async fn agent(machine: &Machine) -> GatewayClient {
    let server = machine.server.as_ref().unwrap();
    let url = ax_gateway::client::gateway_url(server.url()).unwrap();
    let options = ConnectOptions::new(
        server.token().clone(),
        ClientMode::Agent,
        vec![Scope::Write],
    );
    GatewayClient::connect(&url, options).await.unwrap()
}

/// What the tests send while they wait for the relay: never acknowledged.
pub fn probe() -> Value {
    json!({"command": {"kind": "annotations-clear"}})
}

/// Sends probes until one is delivered to exactly one UI (the relay, or the one local UI).
pub async fn until_one_ui(agent: &GatewayClient) {
    within("the machine's gateway has its one UI", async {
        loop {
            match agent.request(Method::UiCommand, probe()).await {
                Ok(answer) if answer["delivered"] == 1 => return,
                Ok(answer) => panic!("{answer}"),
                Err(e) => assert_eq!(e.code().as_str(), "UNAVAILABLE", "{e}"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// The next `ui.command` event whose command is `kind`; the ones before it must be probes.
pub async fn next_command(events: &mut broadcast::Receiver<EventFrame>, kind: &str) -> Value {
    within(&format!("a {kind} ui.command"), async {
        loop {
            let e = events.recv().await.unwrap();
            if e.event != "ui.command" {
                continue;
            }
            let payload = e.payload.unwrap();
            let got = payload["command"]["kind"].as_str().unwrap().to_owned();
            if got == kind {
                return payload;
            }
            assert_eq!(got, "annotations-clear", "an unexpected command: {payload}");
        }
    })
    .await
}

pub fn ack(command_id: &str, outcome: &str, extra: Value) -> Value {
    let mut params = json!({"commandId": command_id, "outcome": outcome});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    params
}
