//! A machine's shared `ui.command`s on the hub's gateway, and the acknowledgements going back
//! (docs/hub.md §3, §4): a Control UI connected to the hub's gateway of machine m gets m's
//! shared commands as a backend's UI would, and its `ui.command.result` reaches the agent on m
//! that waits, under the gateway's rules (only a command the UI was sent, once).
//!
//! Real nats-server, real backends, the gateway's own client as the UIs and the agents.

mod support;

use ax_gateway::Method;
use ax_hub::{
    testing::NatsServer,
    wire::{Reply, Request},
};
use serde_json::json;
use support::{
    HUB_TOKEN, HubClient, Machine, start_hub,
    terminal::hub_gateway,
    ui::{ack, agent, control_ui, next_command, until_one_ui},
    within,
};
use tokio::sync::broadcast;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_uis_acknowledgement_reaches_the_waiting_agent_on_its_machine_only() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let mut one = Machine::start(&nats, "one").await;
    let mut two = Machine::start(&nats, "two").await;
    one.rejoin(|c| c.share_ui_commands = true).await;
    two.rejoin(|c| c.share_ui_commands = true).await;
    api.wait_machine("one", |m| m.online).await;
    api.wait_machine("two", |m| m.online).await;

    // The hub's page stream keeps working beside the gateway.
    let page = api.get("/ui-command?machine=one").await;
    assert_eq!(page.status(), 200);
    let mut page_body = Box::pin(page.bytes_stream());
    let mut buffer = String::new();

    // A Control UI on the hub's gateway of each machine; none on the backends themselves.
    let hub_one = control_ui(&hub_gateway(&hub, "one"), HUB_TOKEN).await;
    let hub_two = control_ui(&hub_gateway(&hub, "two"), HUB_TOKEN).await;
    let mut one_events = hub_one.subscribe();
    let mut two_events = hub_two.subscribe();
    let agent_one = agent(&one).await;
    let agent_two = agent(&two).await;
    until_one_ui(&agent_one).await;
    until_one_ui(&agent_two).await;

    // A waited command on machine 1 reaches the hub's UI of machine 1.
    let waited = agent_one
        .send(
            Method::UiCommand,
            json!({"command": {"kind": "sidebar", "visible": false}, "wait": true}),
        )
        .await
        .unwrap();
    let got = next_command(&mut one_events, "sidebar").await;
    assert_eq!(got["command"], json!({"kind": "sidebar", "visible": false}));
    let id = got["commandId"].as_str().unwrap().to_owned();
    // The same command, with the machine's commandId, on the page stream.
    let on_page = within("the command on /ui-command", async {
        loop {
            let c = support::next_ui_command(&mut page_body, &mut buffer).await;
            if c["command"]["command"]["kind"] == "sidebar" {
                return c;
            }
        }
    })
    .await;
    assert_eq!(on_page["machine"], "one");
    assert_eq!(on_page["command"], got);

    // Acknowledgements for commands a UI was not sent count nowhere: an unknown ID, and
    // machine 1's command acknowledged on machine 2's hub gateway.
    let unknown = hub_one
        .request(
            Method::UiCommandResult,
            ack("cmd_0000000000000000", "applied", json!({})),
        )
        .await
        .unwrap();
    assert_eq!(unknown, json!({"accepted": false}));
    let forged = hub_two
        .request(
            Method::UiCommandResult,
            ack(&id, "applied", json!({"revision": 99})),
        )
        .await
        .unwrap();
    assert_eq!(forged, json!({"accepted": false}));

    // The UI that got it applies it: accepted once, a second answer refused.
    let applied = ack(&id, "applied", json!({"revision": 5}));
    let answer = hub_one
        .request(Method::UiCommandResult, applied.clone())
        .await
        .unwrap();
    assert_eq!(answer, json!({"accepted": true}));
    let again = hub_one
        .request(Method::UiCommandResult, applied)
        .await
        .unwrap();
    assert_eq!(again, json!({"accepted": false}));

    // The agent on machine 1 sees the hub UI's outcome, once, with its revision (not the
    // forged 99).
    let response = within("the waited ui.command's answer", waited.response())
        .await
        .unwrap();
    assert_eq!(response["delivered"], 1, "{response}");
    let outcomes = response["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 1, "{response}");
    assert_eq!(outcomes[0]["outcome"], "applied", "{response}");
    assert_eq!(outcomes[0]["revision"], 5, "{response}");
    assert!(outcomes[0].get("reason").is_none(), "{response}");

    // A refusal comes back with its reason and the UI's revision.
    let waited = agent_one
        .send(
            Method::UiCommand,
            json!({"command": {"kind": "panel", "panel": "terminal", "open": true},
                   "expectedRevision": 3, "wait": true}),
        )
        .await
        .unwrap();
    let got = next_command(&mut one_events, "panel").await;
    assert_eq!(got["expectedRevision"], 3);
    let reason = "stale revision: expected 3, current 5";
    let answer = hub_one
        .request(
            Method::UiCommandResult,
            ack(
                got["commandId"].as_str().unwrap(),
                "ignored",
                json!({"reason": reason, "revision": 5}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(answer, json!({"accepted": true}));
    let response = within("the refused command's answer", waited.response())
        .await
        .unwrap();
    let outcome = &response["outcomes"][0];
    assert_eq!(outcome["outcome"], "ignored", "{response}");
    assert_eq!(outcome["reason"], reason, "{response}");
    assert_eq!(outcome["revision"], 5, "{response}");

    // The join refuses an acknowledgement for a command its relay was not waited on for (the
    // hub's request, as a plain NATS client sends it).
    let nats_client = async_nats::connect(nats.url()).await.unwrap();
    let request = Request::UiCommandResult {
        params: ack("cmd_1111111111111111", "applied", json!({})),
    };
    let reply = nats_client
        .request("ax.req.one", serde_json::to_vec(&request).unwrap().into())
        .await
        .unwrap();
    let reply: Reply = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(reply, Reply::Ok(json!({"accepted": false})));

    // Machine 2's hub UI never got machine 1's commands: the first command it gets after
    // the probes is machine 2's own, sent after machine 1's reached the hub.
    let marker = json!({"command": {"kind": "panel", "panel": "browser", "open": true}});
    let answer = agent_two
        .request(Method::UiCommand, marker.clone())
        .await
        .unwrap();
    assert_eq!(answer["delivered"], 1);
    let got = next_command(&mut two_events, "panel").await;
    assert_eq!(got["command"], marker["command"]);

    agent_one.close().await;
    agent_two.close().await;
    hub_one.close().await;
    hub_two.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sharing_nothing_reaches_the_hub_and_no_acknowledgement_is_taken() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let three = Machine::start(&nats, "three").await;
    api.wait_machine("three", |m| m.online).await;

    let on_hub = control_ui(&hub_gateway(&hub, "three"), HUB_TOKEN).await;
    let mut hub_events = on_hub.subscribe();
    let server = three.server.as_ref().unwrap();
    let local = control_ui(
        &ax_gateway::client::gateway_url(server.url()).unwrap(),
        server.token().expose(),
    )
    .await;
    let mut local_events = local.subscribe();
    let agent = agent(&three).await;
    until_one_ui(&agent).await;

    // Only the machine's own UI is a target (a relay would be a second one), and its answer
    // is the one the agent sees.
    let waited = agent
        .send(
            Method::UiCommand,
            json!({"command": {"kind": "sidebar", "visible": true}, "wait": true}),
        )
        .await
        .unwrap();
    let got = next_command(&mut local_events, "sidebar").await;
    let answer = local
        .request(
            Method::UiCommandResult,
            ack(
                got["commandId"].as_str().unwrap(),
                "applied",
                json!({"revision": 2}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(answer, json!({"accepted": true}));
    let response = within("the waited answer", waited.response())
        .await
        .unwrap();
    assert_eq!(response["delivered"], 1, "{response}");
    assert_eq!(
        response["outcomes"][0]["connId"],
        local.hello().server.conn_id.as_str()
    );

    // The join of a machine that does not share refuses a hub's acknowledgement.
    let nats_client = async_nats::connect(nats.url()).await.unwrap();
    let request = Request::UiCommandResult {
        params: ack(got["commandId"].as_str().unwrap(), "applied", json!({})),
    };
    let reply = nats_client
        .request("ax.req.three", serde_json::to_vec(&request).unwrap().into())
        .await
        .unwrap();
    match serde_json::from_slice::<Reply>(&reply.payload).unwrap() {
        Reply::Error(e) => {
            assert_eq!((e.status, e.code.as_str()), (404, "NOT_FOUND"), "{e:?}");
            assert!(e.message.contains("does not share"), "{}", e.message);
        }
        Reply::Ok(v) => panic!("a machine that does not share took an acknowledgement: {v}"),
    }

    // The hub's UI of the machine got no ui.command at all.
    loop {
        match hub_events.try_recv() {
            Ok(e) => assert_ne!(e.event, "ui.command", "{e:?}"),
            Err(broadcast::error::TryRecvError::Empty) => break,
            Err(e) => panic!("{e}"),
        }
    }
    agent.close().await;
    local.close().await;
    on_hub.close().await;
}
