//! What a backend answers over NATS beyond the HTTP API (docs/hub.md §2, §4): the `screen`
//! methods relayed to the machine's own gateway, its rules and errors applied there.

mod support;

use ax_gateway::{ClientMode, ConnectOptions, GatewayClient, Method, Scope, client::gateway_url};
use ax_hub::testing::NatsServer;
use serde_json::{Value, json};
use support::{HubClient, Machine, next_ui_command, start_hub, within};

/// A Control UI on the machine itself: a `ui` client with the `ui-commands` cap.
async fn control_ui(machine: &Machine) -> GatewayClient {
    let server = machine.server.as_ref().unwrap();
    let url = gateway_url(server.url()).unwrap();
    let options = ConnectOptions::new(
        server.token().clone(),
        ClientMode::Ui,
        vec![Scope::Read, Scope::Write],
    )
    .with_caps(["ui-commands"]);
    GatewayClient::connect(&url, options).await.unwrap()
}

fn report(revision: u64) -> Value {
    json!({"revision": revision,
           "panes": [{"paneId": "p1", "column": 0, "row": 0, "active": true, "size": 1.0}],
           "sidebar": {"shown": true},
           "terminal": {"shown": false, "dock": "bottom"},
           "browser": {"shown": false, "dock": "right"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screen_is_read_and_arranged_through_the_hub_with_the_gateways_rules() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    api.wait_machine("laptop", |m| m.online).await;

    // No Control UI on the machine: the gateway's own answer, with its code.
    let none = api.post("/machine/laptop/screen/layout", json!({})).await;
    assert_eq!(none.status(), 503);
    let body: Value = none.json().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAVAILABLE", "{body}");

    let ui = control_ui(&laptop).await;
    let mut ui_events = ui.subscribe();
    ui.request(Method::UiLayoutReport, report(7)).await.unwrap();

    let read = api.post("/machine/laptop/screen/layout", json!({})).await;
    assert_eq!(read.status(), 200);
    let body: Value = read.json().await.unwrap();
    let uis = body["uis"].as_array().unwrap();
    assert_eq!(uis.len(), 1, "{body}");
    assert_eq!(uis[0]["uiId"], ui.hello().server.conn_id.as_str());
    assert_eq!(uis[0]["revision"], 7);
    assert_eq!(uis[0]["panes"][0]["paneId"], "p1");

    // Params the gateway refuses are refused as it says, and nothing reaches the UI.
    let bad = api
        .post(
            "/machine/laptop/screen/layout",
            json!({"target": "requester", "uiId": "x"}),
        )
        .await;
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INVALID_REQUEST", "{body}");
    let bad = api
        .post(
            "/machine/laptop/screen/command",
            json!({"command": {"kind": "sidebar", "visible": false, "extra": 1}}),
        )
        .await;
    assert_eq!(bad.status(), 400);

    // A command arranges the machine's Control UI.
    let sent = api
        .post(
            "/machine/laptop/screen/command",
            json!({"command": {"kind": "sidebar", "visible": false}}),
        )
        .await;
    assert_eq!(sent.status(), 200);
    let body: Value = sent.json().await.unwrap();
    assert_eq!(body, json!({"ok": true, "delivered": 1}));
    let event = within("the ui.command event", async {
        loop {
            let e = ui_events.recv().await.unwrap();
            if e.event == "ui.command" {
                return e;
            }
        }
    })
    .await;
    // The first command the UI got: the refused one (with `extra`) never came.
    let payload = event.payload.unwrap();
    assert_eq!(
        payload["command"],
        json!({"kind": "sidebar", "visible": false})
    );

    // A machine that never joined.
    let ghost = api.post("/machine/ghost/screen/layout", json!({})).await;
    assert_eq!(ghost.status(), 503);
    let body: Value = ghost.json().await.unwrap();
    assert_eq!(body["error"]["code"], "offline", "{body}");
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_ui_command_reaches_the_hub_and_a_refused_one_never_reaches_nats() {
    use futures_util::StreamExt;
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let mut laptop = Machine::start(&nats, "laptop").await;
    // The same machine, joined again with sharing on (opt-in).
    drop(laptop.join.take());
    let server = laptop.server.as_ref().unwrap();
    let mut config = ax_hub::join::JoinConfig::new(
        nats.url(),
        laptop.name.clone(),
        server.url(),
        server.token().clone(),
        laptop.project_dir(),
    );
    config.heartbeat = support::HEARTBEAT;
    config.share_ui_commands = true;
    laptop.join = Some(ax_hub::join::start(config).await.unwrap());
    api.wait_machine("laptop", |m| m.online).await;

    // Everything published on the machine's subject, from before the agent sends anything.
    let watcher = async_nats::connect(nats.url()).await.unwrap();
    let mut on_nats = watcher.subscribe("ax.laptop.ui").await.unwrap();
    watcher.flush().await.unwrap();
    let page = api.get("/ui-command?machine=laptop").await;
    assert_eq!(page.status(), 200);
    let mut page_body = Box::pin(page.bytes_stream());
    let mut buffer = String::new();

    let server = laptop.server.as_ref().unwrap();
    let agent = GatewayClient::connect(
        &gateway_url(server.url()).unwrap(),
        ConnectOptions::new(
            server.token().clone(),
            ClientMode::Agent,
            vec![Scope::Write],
        ),
    )
    .await
    .unwrap();
    // Accepted once the relay is one of the machine's UIs (before: UNAVAILABLE, sent nowhere).
    let command = json!({"command": {"kind": "panel", "panel": "terminal", "open": true}});
    within("the relay connected as a UI", async {
        loop {
            match agent.request(Method::UiCommand, command.clone()).await {
                Ok(answer) if answer["delivered"] == 1 => return,
                Ok(answer) => panic!("{answer}"),
                Err(e) => assert_eq!(e.code().as_str(), "UNAVAILABLE", "{e}"),
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    // Refused by the machine's gateway (a sidebar command without `visible`): sent nowhere.
    let refused = agent
        .request(Method::UiCommand, json!({"command": {"kind": "sidebar"}}))
        .await
        .unwrap_err();
    assert_eq!(refused.code().as_str(), "INVALID_REQUEST", "{refused}");
    let second = json!({"command": {"kind": "sidebar", "visible": false}});
    let answer = agent
        .request(Method::UiCommand, second.clone())
        .await
        .unwrap();
    assert_eq!(answer["delivered"], 1, "{answer}");

    // On NATS: the accepted commands, one after the other; the refused one never got there.
    let msg = within("the command on NATS", on_nats.next()).await.unwrap();
    let first: Value = serde_json::from_slice(&msg.payload).unwrap();
    assert_eq!(first["machine"], "laptop");
    assert_eq!(first["command"]["command"], command["command"], "{first}");
    assert!(first["command"]["commandId"].is_string(), "{first}");
    let msg = within("the next command on NATS", on_nats.next())
        .await
        .unwrap();
    let next: Value = serde_json::from_slice(&msg.payload).unwrap();
    assert_eq!(next["command"]["command"], second["command"], "{next}");

    let on_hub = next_ui_command(&mut page_body, &mut buffer).await;
    assert_eq!(on_hub, first);
    let on_hub = next_ui_command(&mut page_body, &mut buffer).await;
    assert_eq!(on_hub, next);
    agent.close().await;
}
