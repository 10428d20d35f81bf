//! Three machines (own data directories and projects, own NATS users) on one NATS server with
//! two hubs (docs/hub.md §5): both hubs list all three, and a prompt sent through hub 1 to
//! machine 3 shows in hub 2's event stream.

mod support;

use ax_core::Secret;
use ax_hub::{
    MachineName,
    nats::{backend_permissions, hub_permissions},
    testing::{NatsServer, NatsUser},
};
use support::{HubClient, Machine, start_hub_as};

const NAMES: [&str; 3] = ["m1", "m2", "m3"];

fn creds(user: &str) -> Option<(String, Secret)> {
    Some((user.to_owned(), Secret::new(format!("pw-{user}"))))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_machines_two_hubs_a_prompt_through_one_shows_in_the_other() {
    let mut users = vec![NatsUser {
        user: "hub".into(),
        password: "pw-hub".into(),
        permissions: hub_permissions(),
    }];
    for name in NAMES {
        users.push(NatsUser {
            user: name.into(),
            password: format!("pw-{name}"),
            permissions: backend_permissions(&MachineName::new(name).unwrap()),
        });
    }
    let nats = NatsServer::start_with_users(&users);
    let hub1 = start_hub_as(&nats, creds("hub")).await;
    let hub2 = start_hub_as(&nats, creds("hub")).await;
    let (api1, api2) = (HubClient::new(hub1.url()), HubClient::new(hub2.url()));
    let mut machines = Vec::new();
    for name in NAMES {
        machines.push(Machine::start_as(&nats, name, creds(name)).await);
    }
    for api in [&api1, &api2] {
        for name in NAMES {
            api.wait_machine(name, |m| m.online).await;
        }
        let listed = api.machines().await;
        let names: Vec<&str> = listed.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, NAMES, "{listed:?}");
        let projects: std::collections::BTreeSet<&str> =
            listed.iter().map(|m| m.project.as_str()).collect();
        assert_eq!(
            projects.len(),
            3,
            "each machine its own project: {listed:?}"
        );
    }

    // Hub 2 follows machine 3's events from now on.
    let mut events = api2.events("?machine=m3", None).await;
    let created = api1
        .post("/machine/m3/session", serde_json::json!({"title": "far"}))
        .await;
    assert_eq!(created.status(), 201);
    let session: ax_protocol::Session = created.json().await.unwrap();
    let accepted = api1
        .post(
            &format!("/machine/m3/session/{}/prompt", session.id),
            serde_json::json!({"parts": [{"type": "text", "text": "echo three-said-hi"}]}),
        )
        .await;
    assert_eq!(accepted.status(), 202);
    let (_, event) = events
        .next_matching(|e| {
            serde_json::to_string(&e.event)
                .unwrap_or_default()
                .contains("echo three-said-hi")
        })
        .await;
    assert_eq!(event.machine.as_str(), "m3");
    // The session lives on machine 3 only.
    assert_eq!(machines[2].client.list_sessions().await.unwrap().len(), 1);
    assert!(machines[0].client.list_sessions().await.unwrap().is_empty());
}
