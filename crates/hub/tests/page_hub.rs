//! What the hub's Control UI page asks beyond the session calls (docs/hub.md §4), against a
//! real nats-server and real backends: a machine's agents for a new session.

mod support;

use std::path::Path;

use ax_hub::testing::NatsServer;
use support::{HubClient, Machine, start_hub};

/// A backend whose configuration adds the agent `only` (never started: creating a session
/// does not start its agent).
async fn machine_with_agent(nats: &NatsServer, name: &str, only: &str) -> Machine {
    let text = format!("[agents.{only}]\ncommand = \"/bin/false\"\n");
    Machine::start_with(nats, name, None, |config| {
        config.agents = ax_acp::AgentsConfig::parse(Path::new("test.toml"), &text).unwrap();
    })
    .await
}

fn agent_names(list: &serde_json::Value) -> Vec<String> {
    list["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("an agent list: {list}"))
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_sessions_agents_are_the_machines_own() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = machine_with_agent(&nats, "laptop", "laptop-only").await;
    let other = Machine::start(&nats, "other").await;
    api.wait_machine("laptop", |m| m.online).await;
    api.wait_machine("other", |m| m.online).await;

    // Each machine's own list, as its backend answers `GET /agent`.
    let on_laptop: serde_json::Value = api.json("/machine/laptop/agent").await;
    let direct = serde_json::to_value(laptop.client.agents().await.unwrap()).unwrap();
    assert_eq!(on_laptop, direct);
    assert_eq!(on_laptop["default"], "shell", "{on_laptop}");
    assert!(
        agent_names(&on_laptop).contains(&"laptop-only".to_owned()),
        "{on_laptop}"
    );
    let on_other: serde_json::Value = api.json("/machine/other/agent").await;
    assert!(
        !agent_names(&on_other).contains(&"laptop-only".to_owned()),
        "{on_other}"
    );
    assert!(agent_names(&on_other).contains(&"shell".to_owned()));

    // The agent chosen goes with the new session; a machine refuses one it lacks.
    let made = api
        .post(
            "/machine/laptop/session",
            serde_json::json!({"agent": "laptop-only"}),
        )
        .await;
    assert_eq!(made.status(), 201);
    let made: ax_protocol::Session = made.json().await.unwrap();
    assert_eq!(made.agent, "laptop-only");
    let there = laptop.client.get_session(&made.id).await.unwrap();
    assert_eq!(there.agent, "laptop-only");
    let refused = api
        .post(
            "/machine/other/session",
            serde_json::json!({"agent": "laptop-only"}),
        )
        .await;
    assert_eq!(refused.status(), 400);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "bad_request", "{body}");
    assert!(other.client.list_sessions().await.unwrap().is_empty());

    // A machine that never joined, a bad name, and no credential.
    let ghost = api.get("/machine/ghost/agent").await;
    assert_eq!(ghost.status(), 503);
    let body: serde_json::Value = ghost.json().await.unwrap();
    assert_eq!(body["error"]["code"], "offline", "{body}");
    assert_eq!(api.get("/machine/Bad.Name/agent").await.status(), 400);
    let anonymous = api
        .http
        .get(format!("{}/machine/laptop/agent", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}
