//! Backends joined over a real nats-server, seen and driven through a hub (docs/hub.md):
//! sessions listed per machine, requests answered over request/reply, events in order with
//! resumption by JetStream sequence.

mod support;

use std::time::Duration;

use ax_hub::testing::NatsServer;
use ax_protocol::SessionId;
use support::{HubClient, Machine, created_title, start_hub, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_machines_sessions_are_listed_through_the_hub() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    let box2 = Machine::start(&nats, "workstation").await;
    let a1 = laptop.client.create_session(Some("a1")).await.unwrap().id;
    let a2 = laptop.client.create_session(Some("a2")).await.unwrap().id;
    let b1 = box2.client.create_session(Some("b1")).await.unwrap().id;

    api.wait_machine("laptop", |m| m.online).await;
    api.wait_machine("workstation", |m| m.online).await;
    let machines = api.machines().await;
    assert_eq!(machines.len(), 2, "{machines:?}");
    let laptop_view = machines
        .iter()
        .find(|m| m.name.as_str() == "laptop")
        .unwrap();
    assert_eq!(laptop_view.project, laptop.project_dir());
    let box_view = machines
        .iter()
        .find(|m| m.name.as_str() == "workstation")
        .unwrap();
    assert_eq!(box_view.project, box2.project_dir());

    // Online machines answer the listing themselves, over request/reply.
    let all = api.sessions().await;
    let ids = |machine: &str| -> Vec<SessionId> {
        all.iter()
            .find(|s| s.machine.as_str() == machine)
            .unwrap_or_else(|| panic!("{machine} in {all:?}"))
            .sessions
            .iter()
            .map(|s| s.id.clone())
            .collect()
    };
    assert_eq!(ids("laptop"), vec![a2.clone(), a1.clone()]);
    assert_eq!(ids("workstation"), vec![b1.clone()]);
    assert!(all.iter().all(|s| s.online && !s.last_seen), "{all:?}");

    let one: ax_hub::hub::MachineSessions = api.json("/machine/workstation/session").await;
    assert_eq!(one.sessions.len(), 1);
    assert_eq!(one.sessions[0].title, "b1");

    let messages: Vec<serde_json::Value> = api
        .json(&format!("/machine/laptop/session/{a1}/message"))
        .await;
    assert!(messages.is_empty(), "{messages:?}");

    // A session of another machine is not found on this one: the backend's own answer.
    let wrong = api
        .get(&format!("/machine/laptop/session/{b1}/message"))
        .await;
    assert_eq!(wrong.status(), 404);
    let body: serde_json::Value = wrong.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found", "{body}");

    // A machine that never joined: no responders on its subject.
    let ghost = api
        .get(&format!("/machine/ghost/session/{a1}/message"))
        .await;
    assert_eq!(ghost.status(), 503);
    let body: serde_json::Value = ghost.json().await.unwrap();
    assert_eq!(body["error"]["code"], "offline", "{body}");
    assert_eq!(api.get("/machine/ghost/session").await.status(), 404);
    assert_eq!(api.get("/machine/Bad.Name/session").await.status(), 404);

    // The API asks for the hub's credential.
    let anonymous = api
        .http
        .get(format!("{}/session", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let wrong_token = api
        .http
        .get(format!("{}/session", api.base))
        .bearer_auth("not-the-credential")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_token.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_and_its_approval_go_through_the_hub() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    api.wait_machine("laptop", |m| m.online).await;

    let created = api
        .post(
            "/machine/laptop/session",
            serde_json::json!({"title": "remote"}),
        )
        .await;
    assert_eq!(created.status(), 201);
    let session: ax_protocol::Session = created.json().await.unwrap();
    let local = laptop.client.list_sessions().await.unwrap();
    assert_eq!(local.len(), 1);
    assert_eq!(local[0].id, session.id);

    let accepted = api
        .post(
            &format!("/machine/laptop/session/{}/prompt", session.id),
            // Computed by the shell, so the command line itself (the call's title) never matches.
            serde_json::json!({"parts": [{"type": "text", "text": "echo hub-said-$((6*7))"}]}),
        )
        .await;
    assert_eq!(accepted.status(), 202);
    let accepted: ax_protocol::PromptAccepted = accepted.json().await.unwrap();
    let permission = accepted.permission.expect("the shell agent asks first");

    // The approval is pending on the machine, as the hub lists it.
    let pending: Vec<serde_json::Value> = api.json("/machine/laptop/permission").await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["id"], permission.id.to_string());

    let answered = api
        .post(
            &format!(
                "/machine/laptop/session/{}/permission/{}",
                session.id, permission.id
            ),
            serde_json::json!({"reply": "once"}),
        )
        .await;
    assert_eq!(answered.status(), 200, "{:?}", answered.text().await);

    // The command ran on the machine; its output is in the transcript the hub reads.
    within("the command's output through the hub", async {
        loop {
            let messages: Vec<ax_protocol::Message> = api
                .json(&format!("/machine/laptop/session/{}/message", session.id))
                .await;
            if let Some(reply) = messages.iter().find(|m| m.id == accepted.reply_id)
                && serde_json::to_string(&reply.parts)
                    .unwrap()
                    .contains("hub-said-42")
                && reply.ended.is_some()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // And the machine's own API says the same.
    let local = laptop.client.messages(&session.id).await.unwrap();
    assert_eq!(local.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_the_hub_in_order_and_resume_by_sequence() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    let other = Machine::start(&nats, "other").await;
    api.wait_machine("laptop", |m| m.online).await;
    api.wait_machine("other", |m| m.online).await;

    let titles: Vec<String> = (0..5).map(|i| format!("t{i}")).collect();
    for title in &titles {
        laptop.client.create_session(Some(title)).await.unwrap();
        other.client.create_session(Some("noise")).await.unwrap();
    }

    // Replayed from the start of the stream, only this machine's events, in their order.
    let mut events = api.events("?machine=laptop&after=0", None).await;
    let mut seen = Vec::new();
    let mut last_seq = 0;
    let mut last_event_id = 0;
    while seen.len() < titles.len() {
        let (seq, event) = events.next().await;
        assert_eq!(event.machine.as_str(), "laptop");
        assert!(seq > last_seq, "sequence {seq} after {last_seq}");
        assert!(event.event.id > last_event_id, "event ids increase");
        last_seq = seq;
        last_event_id = event.event.id;
        if let Some(title) = created_title(&event) {
            seen.push((seq, title));
        }
    }
    let seen_titles: Vec<String> = seen.iter().map(|(_, t)| t.clone()).collect();
    assert_eq!(seen_titles, titles);
    drop(events);

    // Resuming after the second one gives the third next: no gap, no duplicate.
    let (second, _) = seen[1];
    let mut resumed = api.events("?machine=laptop", Some(second)).await;
    let (seq, event) = resumed.next_matching(|e| created_title(e).is_some()).await;
    assert!(seq > second);
    assert_eq!(created_title(&event).as_deref(), Some("t2"));
    assert_eq!(seq, seen[2].0);
    let (_, event) = resumed.next_matching(|e| created_title(e).is_some()).await;
    assert_eq!(created_title(&event).as_deref(), Some("t3"));

    // Without a filter both machines' events come, each stamped with its machine.
    let mut all = api.events("?after=0", None).await;
    let mut machines = std::collections::BTreeSet::new();
    while machines.len() < 2 {
        let (_, event) = all.next().await;
        machines.insert(event.machine.as_str().to_owned());
    }
}

/// Rename and delete through the hub (docs/hub.md §4): relayed over request/reply to the
/// machine's own API, so its answers and its rules hold (a title it refuses, a session it
/// does not hold); the session on the other machine is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_renamed_and_deleted_through_the_hub() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    let other = Machine::start(&nats, "other").await;
    api.wait_machine("laptop", |m| m.online).await;
    api.wait_machine("other", |m| m.online).await;
    let doomed = laptop.client.create_session(Some("old")).await.unwrap().id;
    let kept = laptop.client.create_session(Some("kept")).await.unwrap().id;
    let elsewhere = other
        .client
        .create_session(Some("theirs"))
        .await
        .unwrap()
        .id;
    let send = |method: reqwest::Method, path: String, body: Option<serde_json::Value>| {
        let api = api.clone();
        async move {
            let mut request = api
                .http
                .request(method, format!("{}{path}", api.base))
                .bearer_auth(support::HUB_TOKEN);
            if let Some(body) = body {
                request = request.json(&body);
            }
            let response = request.send().await.expect("the hub answers");
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            (
                status,
                serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
            )
        }
    };

    let (status, renamed) = send(
        reqwest::Method::PATCH,
        format!("/machine/laptop/session/{doomed}"),
        Some(serde_json::json!({"title": "new name"})),
    )
    .await;
    assert_eq!(status, 200, "{renamed}");
    assert_eq!(renamed["title"], "new name");
    assert_eq!(
        laptop.client.get_session(&doomed).await.unwrap().title,
        "new name"
    );
    // The backend's own rules: a title it refuses is its 400, with its code.
    let (status, refused) = send(
        reqwest::Method::PATCH,
        format!("/machine/laptop/session/{doomed}"),
        Some(serde_json::json!({"title": "bad\u{202e}title"})),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    // The body is checked by the hub as the backend would: no unknown fields.
    let (status, _) = send(
        reqwest::Method::PATCH,
        format!("/machine/laptop/session/{doomed}"),
        Some(serde_json::json!({"title": "x", "extra": 1})),
    )
    .await;
    assert!(status == 400 || status == 422, "{status}");
    // Another machine's session is not found on this one.
    let (status, missing) = send(
        reqwest::Method::DELETE,
        format!("/machine/laptop/session/{elsewhere}"),
        None,
    )
    .await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["code"], "not_found", "{missing}");

    let (status, deleted) = send(
        reqwest::Method::DELETE,
        format!("/machine/laptop/session/{doomed}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["id"], doomed.to_string());
    let left: Vec<SessionId> = laptop
        .client
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(left, vec![kept.clone()]);
    assert_eq!(other.client.list_sessions().await.unwrap().len(), 1);
    let (status, again) = send(
        reqwest::Method::DELETE,
        format!("/machine/laptop/session/{doomed}"),
        None,
    )
    .await;
    assert_eq!(status, 404, "{again}");

    // A machine that never joined.
    let (status, ghost) = send(
        reqwest::Method::DELETE,
        format!("/machine/ghost/session/{kept}"),
        None,
    )
    .await;
    assert_eq!(status, 503, "{ghost}");
    assert_eq!(ghost["error"]["code"], "offline", "{ghost}");
}
