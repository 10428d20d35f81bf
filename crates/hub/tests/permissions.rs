//! NATS users and subject permissions (docs/hub.md §1, docs/SECURITY.md "Several machines"):
//! a backend with its own user joins and works through a hub; a wrong password is refused
//! with a clear error; a client holding backend A's user cannot speak for machine B.

mod support;

use std::sync::{Arc, Mutex};

use ax_core::Secret;
use ax_hub::{
    MachineName,
    nats::{backend_permissions, check_credentials, hub_permissions},
    testing::{NatsServer, NatsUser},
};
use support::{HubClient, Machine, next_ui_command, start_hub_as, terminal::Operator, within};

fn creds(user: &str, password: &str) -> Option<(String, Secret)> {
    Some((user.to_owned(), Secret::new(password.to_owned())))
}

fn server() -> NatsServer {
    let user = |name: &str, permissions| NatsUser {
        user: name.to_owned(),
        password: format!("pw-{name}-secret"),
        permissions,
    };
    NatsServer::start_with_users(&[
        user("hub", hub_permissions()),
        user(
            "alpha",
            backend_permissions(&MachineName::new("alpha").unwrap()),
        ),
        user(
            "beta",
            backend_permissions(&MachineName::new("beta").unwrap()),
        ),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backends_with_their_users_work_and_a_rogue_cannot_speak_for_another() {
    let nats = server();
    let hub = start_hub_as(&nats, creds("hub", "pw-hub-secret")).await;
    let api = HubClient::new(hub.url());
    let alpha = Machine::start_as(&nats, "alpha", creds("alpha", "pw-alpha-secret")).await;
    let beta = Machine::start_as(&nats, "beta", creds("beta", "pw-beta-secret")).await;
    let b1 = beta.client.create_session(Some("b1")).await.unwrap().id;
    alpha.client.create_session(Some("a1")).await.unwrap();
    api.wait_machine("alpha", |m| m.online).await;
    api.wait_machine("beta", |m| m.online).await;
    // Requests through the hub are answered over request/reply under the permissions.
    let one: ax_hub::hub::MachineSessions = api.json("/machine/beta/session").await;
    assert_eq!(one.sessions.len(), 1, "{one:?}");
    assert_eq!(one.sessions[0].id, b1);

    // A rogue client holding alpha's user and password.
    let violations = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = violations.clone();
    let rogue = async_nats::ConnectOptions::new()
        .user_and_password("alpha".into(), "pw-alpha-secret".into())
        .custom_inbox_prefix("_INBOX_alpha")
        .event_callback(move |event| {
            let seen = seen.clone();
            async move {
                if let async_nats::Event::ServerError(e) = event {
                    seen.lock().unwrap().push(e.to_string());
                }
            }
        })
        .connect(nats.url())
        .await
        .expect("alpha's user connects");
    // A page on the hub following the machines' shared `ui.command`s.
    let page = api.get("/ui-command").await;
    assert_eq!(page.status(), 200);
    let mut page_body = Box::pin(page.bytes_stream());
    let mut buffer = String::new();

    let forged = serde_json::json!({"name": "forged", "project": "/x", "boot": "b",
        "online": true, "sentMs": 1, "heartbeatMs": 2000});
    for subject in ["ax.beta.event", "ax.beta.sessions", "ax.forged.machine"] {
        rogue
            .publish(subject, forged.to_string().into())
            .await
            .unwrap();
    }
    // Alpha's user may share alpha's ui.commands (the hub's user may read them), not beta's.
    let ui = |machine: &str, id: &str| {
        serde_json::json!({"machine": machine,
            "command": {"commandId": id, "command": {"kind": "focus_pane", "paneId": "p1"}}})
        .to_string()
    };
    rogue
        .publish("ax.beta.ui", ui("beta", "as-beta").into())
        .await
        .unwrap();
    rogue
        .publish("ax.alpha.ui", ui("alpha", "as-alpha").into())
        .await
        .unwrap();
    let shared = next_ui_command(&mut page_body, &mut buffer).await;
    assert_eq!(shared["machine"], "alpha", "{shared}");
    assert_eq!(shared["command"]["commandId"], "as-alpha", "{shared}");
    // Beta's terminal through the hub: beta's user publishes its output, the hub's reads it.
    let mut beta_term = Operator::hub(&hub, "beta").await;
    let term = beta_term.open().await;
    let mut seen = String::new();
    beta_term.type_in(&term, "echo beta-$((6*7))\r").await;
    beta_term.until(&term, &mut seen, "beta-42").await;
    // Alpha's user can neither write into another machine's terminal output nor read it.
    let forged_exit = serde_json::json!({"kind": "exit", "offset": 0}).to_string();
    rogue
        .publish("ax.beta.term.t0", forged_exit.into())
        .await
        .unwrap();
    let _peek = rogue.subscribe("ax.beta.term.*").await.unwrap();
    let _sub = rogue.subscribe("ax.req.beta").await.unwrap();
    let asked = rogue.request("ax.req.beta", "{}".into()).await;
    assert!(asked.is_err(), "a request from alpha's user was answered");
    rogue.flush().await.unwrap();
    within("the server reports each violation", async {
        loop {
            let got = violations.lock().unwrap().clone();
            let has = |what: &str| got.iter().any(|v| v.contains(what));
            if has("Publish to \"ax.beta.event\"")
                && has("Publish to \"ax.beta.sessions\"")
                && has("Publish to \"ax.forged.machine\"")
                && has("Publish to \"ax.beta.ui\"")
                && has("Publish to \"ax.beta.term.t0\"")
                && has("Subscription to \"ax.beta.term.*\"")
                && has("Subscription to \"ax.req.beta\"")
                && has("Publish to \"ax.req.beta\"")
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    // The hub still sees the two real machines, and beta's sessions are beta's own.
    let machines = api.machines().await;
    let names: Vec<&str> = machines.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, vec!["alpha", "beta"], "{machines:?}");
    let one: ax_hub::hub::MachineSessions = api.json("/machine/beta/session").await;
    assert_eq!(one.sessions.len(), 1, "{one:?}");
    // Beta's terminal still runs.
    beta_term.type_in(&term, "echo still-$((1+1))\r").await;
    beta_term.until(&term, &mut seen, "still-2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_uis_acknowledgement_reaches_the_agent_under_the_users() {
    use ax_gateway::Method;
    use serde_json::json;
    use support::{
        HUB_TOKEN,
        terminal::hub_gateway,
        ui::{ack, agent, control_ui, next_command, until_one_ui},
    };
    let nats = server();
    let hub = start_hub_as(&nats, creds("hub", "pw-hub-secret")).await;
    let api = HubClient::new(hub.url());
    let mut alpha = Machine::start_as(&nats, "alpha", creds("alpha", "pw-alpha-secret")).await;
    alpha.rejoin(|c| c.share_ui_commands = true).await;
    api.wait_machine("alpha", |m| m.online).await;
    // The shared command reaches the hub's UI of alpha, and its answer goes back as the
    // hub's request, which alpha's user answers: no other subject is needed.
    let on_hub = control_ui(&hub_gateway(&hub, "alpha"), HUB_TOKEN).await;
    let mut events = on_hub.subscribe();
    let agent = agent(&alpha).await;
    until_one_ui(&agent).await;
    let waited = agent
        .send(
            Method::UiCommand,
            json!({"command": {"kind": "sidebar", "visible": false}, "wait": true}),
        )
        .await
        .unwrap();
    let got = next_command(&mut events, "sidebar").await;
    let answer = on_hub
        .request(
            Method::UiCommandResult,
            ack(
                got["commandId"].as_str().unwrap(),
                "applied",
                json!({"revision": 3}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(answer, json!({"accepted": true}));
    let response = within("the waited answer", waited.response())
        .await
        .unwrap();
    assert_eq!(response["outcomes"][0]["outcome"], "applied", "{response}");
    assert_eq!(response["outcomes"][0]["revision"], 3, "{response}");
    agent.close().await;
    on_hub.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_refused_clearly_without_the_secret() {
    let nats = server();
    let refused = check_credentials(
        &nats.url(),
        &creds("alpha", "wrong-pass-xyz"),
        Default::default(),
    )
    .await
    .expect_err("a wrong password is refused");
    let text = refused.to_string();
    assert!(text.contains("refused NATS user \"alpha\""), "{text}");
    assert!(!text.contains("wrong-pass-xyz"), "{text}");
    check_credentials(
        &nats.url(),
        &creds("alpha", "pw-alpha-secret"),
        Default::default(),
    )
    .await
    .expect("the right password is accepted");
}
