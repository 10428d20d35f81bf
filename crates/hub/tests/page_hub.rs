//! What the hub's Control UI page asks beyond the session calls (docs/hub.md §4), against a
//! real nats-server and real backends: a machine's agents for a new session; agent Markdown
//! rendered by the hub as a backend renders it; the transcripts the hub served kept for when
//! their machine is away; a session's prompt queue.

mod support;

use std::{path::Path, time::Duration};

use ax_client::Client;
use ax_hub::{hub::transcripts::LAST_SEEN_HEADER, nats::now_ms, testing::NatsServer};
use ax_protocol::{PermissionReply, SessionId, SessionStatus};
use support::{HubClient, Machine, start_hub, within};

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

/// `POST /markdown` with `body` (raw) to `base`: the status and the JSON answer.
async fn post_markdown(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    body: String,
) -> (u16, serde_json::Value) {
    let res = http
        .post(format!("{base}/markdown"))
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_is_rendered_by_the_hub_as_a_backend_renders_it() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let mut laptop = Machine::start(&nats, "laptop").await;
    api.wait_machine("laptop", |m| m.online).await;
    let backend = laptop.server.as_ref().unwrap();
    let (backend_url, backend_token) = (backend.url(), backend.token().expose().to_owned());
    let hub_token = support::HUB_TOKEN;

    let hostile = "# T\n\n**bold** <b>x</b> <img src=x onerror=alert(1)> [j](javascript:alert(2)) \
                   [d](data:text/html,x) [ok](https://example.com/a) ![pic](javascript:alert(3))\n\n\
                   <script>alert(4)</script>\n\n| a |\n|--|\n| 1 |\n";
    let body = serde_json::json!({ "text": hostile }).to_string();
    let (status, on_hub) = post_markdown(&api.http, &api.base, hub_token, body.clone()).await;
    assert_eq!(status, 200, "{on_hub}");
    let (status, on_backend) = post_markdown(&api.http, backend_url, &backend_token, body).await;
    assert_eq!(status, 200, "{on_backend}");
    assert_eq!(on_hub, on_backend, "the hub's tree is the backend's");
    // The backends' rules (ax-markdown's tests show them all): markup as nodes, raw HTML as
    // text, only safe link targets, no image ever loaded.
    let text = on_hub.to_string();
    assert!(
        text.contains(r#"{"t":"strong","c":[{"t":"text","text":"bold"}]}"#),
        "{text}"
    );
    assert!(
        text.contains("<b>x</b>") && text.contains("<script>alert(4)</script>"),
        "{text}"
    );
    assert!(
        !text.contains(r#""href":"javascript"#) && !text.contains(r#""href":"data"#),
        "{text}"
    );
    assert!(text.contains(r#""href":"https://example.com/a""#), "{text}");
    assert!(text.contains(r#"{"t":"image","alt":"pic"}"#), "{text}");

    // The same refusals as the backend's, status and code.
    let max = ax_markdown::MAX_TEXT_BYTES;
    for (body, status) in [
        (
            serde_json::json!({"text": "a", "extra": 1}).to_string(),
            400,
        ),
        ("{}".to_owned(), 400),
        (r#"["a"]"#.to_owned(), 400),
        ("not json".to_owned(), 400),
        (
            serde_json::json!({"text": "a".repeat(max + 1)}).to_string(),
            413,
        ),
        (
            serde_json::json!({"text": "a".repeat(max)}).to_string(),
            200,
        ),
    ] {
        let short = body[..body.len().min(40)].to_owned();
        let (got, answer) = post_markdown(&api.http, &api.base, hub_token, body.clone()).await;
        assert_eq!(got, status, "hub, {short}: {answer}");
        let (direct, _) = post_markdown(&api.http, backend_url, &backend_token, body).await;
        assert_eq!(direct, status, "backend, {short}");
        if status != 200 {
            let code = if status == 400 {
                "bad_request"
            } else {
                "too_large"
            };
            assert_eq!(answer["error"]["code"], code, "{answer}");
        }
    }

    // No machine needed: the text of a machine that went away renders too.
    laptop.crash().await;
    api.wait_machine("laptop", |m| !m.online).await;
    let body = serde_json::json!({"text": "*still*"}).to_string();
    let (status, answer) = post_markdown(&api.http, &api.base, hub_token, body.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        serde_json::json!({"blocks": [{"t": "p", "c": [{"t": "em", "c": [{"t": "text", "text": "still"}]}]}]})
    );
    let (status, _) = post_markdown(&api.http, &api.base, "not-the-credential", body).await;
    assert_eq!(status, 401);
}

/// One `shell` turn on the machine itself: `command` prompted, approved once, run to its end.
async fn shell_turn(client: &Client, session: &SessionId, command: &str) {
    let accepted = client.prompt_text(session, command).await.unwrap();
    let permission = accepted.permission.expect("the shell agent asks first");
    client
        .reply_permission(session, &permission.id, PermissionReply::Once)
        .await
        .unwrap();
    within("the turn ends", async {
        loop {
            let idle = client.get_session(session).await.unwrap().status == SessionStatus::Idle;
            let messages = client.messages(session).await.unwrap();
            if idle && messages.last().is_some_and(|m| m.ended.is_some()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_transcript_is_kept_and_shown_as_last_seen_while_its_machine_is_away() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let mut laptop = Machine::start(&nats, "laptop").await;
    api.wait_machine("laptop", |m| m.online).await;
    let opened = laptop
        .client
        .create_session(Some("opened"))
        .await
        .unwrap()
        .id;
    let never = laptop
        .client
        .create_session(Some("never"))
        .await
        .unwrap()
        .id;
    // The markers are computed by the shell, so the prompt's own text never matches them.
    shell_turn(&laptop.client, &opened, "echo first-$((2*3))").await;
    let path = format!("/machine/laptop/session/{opened}/message");

    // Served live, from the machine: kept from now on.
    let live = api.get(&path).await;
    assert_eq!(live.status(), 200);
    assert!(live.headers().get(LAST_SEEN_HEADER).is_none());
    let live: serde_json::Value = live.json().await.unwrap();
    assert!(live.to_string().contains("first-6"), "{live}");
    assert!(
        hub.kept_transcript("laptop", &never).is_none(),
        "only what was served"
    );

    // A later turn the hub did not serve: the machine's snapshot shows the session changed and
    // the hub asks for the transcript again.
    shell_turn(&laptop.client, &opened, "echo second-$((2*4))").await;
    within("the kept transcript follows the machine", async {
        loop {
            if hub
                .kept_transcript("laptop", &opened)
                .is_some_and(|t| t.to_string().contains("second-8"))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let last = serde_json::to_value(laptop.client.messages(&opened).await.unwrap()).unwrap();

    // The machine goes away: the kept transcript, as last seen, is the machine's last one.
    let before_crash = now_ms();
    laptop.crash().await;
    api.wait_machine("laptop", |m| !m.online).await;
    let away = api.get(&path).await;
    assert_eq!(away.status(), 200);
    let seen: u64 = away
        .headers()
        .get(LAST_SEEN_HEADER)
        .expect("said to be as last seen")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(seen > 0 && seen <= before_crash, "{seen}");
    let away: serde_json::Value = away.json().await.unwrap();
    assert_eq!(away, last);
    // A transcript never served is not there to show: 503 as before.
    let missing = api
        .get(&format!("/machine/laptop/session/{never}/message"))
        .await;
    assert_eq!(missing.status(), 503);
    let body: serde_json::Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "offline", "{body}");

    // Back: served live again.
    laptop.restart().await;
    api.wait_machine("laptop", |m| m.online).await;
    let back = api.get(&path).await;
    assert_eq!(back.status(), 200);
    assert!(back.headers().get(LAST_SEEN_HEADER).is_none());
    // A session deleted on the machine is dropped from the cache at its next 404.
    laptop.client.delete_session(&opened).await.unwrap();
    assert_eq!(api.get(&path).await.status(), 404);
    assert!(hub.kept_transcript("laptop", &opened).is_none());
}

/// The text of a prompt body.
fn text_prompt(text: &str) -> serde_json::Value {
    serde_json::json!({"parts": [{"type": "text", "text": text}]})
}

/// Approves, on the machine itself, the session's next pending permission whose command
/// contains `marker`.
async fn approve(client: &Client, session: &SessionId, marker: &str) {
    let pending = within(&format!("an approval for {marker}"), async {
        loop {
            let all = client.permissions().await.unwrap();
            if let Some(p) = all
                .into_iter()
                .find(|p| &p.session_id == session && p.command.contains(marker))
            {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    client
        .reply_permission(session, &pending.id, PermissionReply::Once)
        .await
        .unwrap();
}

/// Waits until the session's transcript holds `output` and the session is idle.
async fn ran(client: &Client, session: &SessionId, output: &str) {
    within(&format!("{output} in the transcript"), async {
        loop {
            let idle = client.get_session(session).await.unwrap().status == SessionStatus::Idle;
            let text = serde_json::to_string(&client.messages(session).await.unwrap()).unwrap();
            if idle && text.contains(output) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_prompt_queue_works_through_the_hub() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    api.wait_machine("laptop", |m| m.online).await;
    let client = &laptop.client;
    let session = client.create_session(Some("queued")).await.unwrap().id;
    let queue = format!("/machine/laptop/session/{session}/queue");
    let http = |method: reqwest::Method, path: String, body: Option<serde_json::Value>| {
        let mut request = api
            .http
            .request(method, format!("{}{path}", api.base))
            .bearer_auth(support::HUB_TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let res = request.send().await.unwrap();
            let status = res.status().as_u16();
            (status, res.json::<serde_json::Value>().await.unwrap())
        }
    };

    // Free: sent at once (202). Busy (the shell agent waits for its approval): queued (201).
    let (status, first) = api_post(&api, &queue, text_prompt("echo one-$((0+1))")).await;
    assert_eq!(
        (status, first["state"].as_str()),
        (202, Some("sent")),
        "{first}"
    );
    let (status, second) = api_post(&api, &queue, text_prompt("echo two")).await;
    assert_eq!(
        (status, second["position"].as_u64()),
        (201, Some(0)),
        "{second}"
    );
    let (status, third) = api_post(&api, &queue, text_prompt("echo three")).await;
    assert_eq!(
        (status, third["position"].as_u64()),
        (201, Some(1)),
        "{third}"
    );
    let (second_id, third_id) = (
        second["item"]["id"].as_str().unwrap().to_owned(),
        third["item"]["id"].as_str().unwrap().to_owned(),
    );
    let listed: ax_protocol::queue::PromptQueue = api.json(&queue).await;
    assert_eq!(listed, client.prompt_queue(&session).await.unwrap());
    assert_eq!(listed.items.len(), 2);

    // Edited and cancelled while they wait, on the machine's own queue.
    let (status, edited) = http(
        reqwest::Method::PATCH,
        format!("{queue}/{second_id}"),
        Some(text_prompt("echo edited-$((2+3))")),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    let (status, left) = http(reqwest::Method::DELETE, format!("{queue}/{third_id}"), None).await;
    assert_eq!(status, 200, "{left}");
    let on_machine = client.prompt_queue(&session).await.unwrap();
    assert_eq!(on_machine.items.len(), 1);
    assert!(
        serde_json::to_string(&on_machine.items[0].prompt)
            .unwrap()
            .contains("edited-"),
        "{on_machine:?}"
    );
    // A cancelled item is the machine's 404.
    let (status, gone) = http(reqwest::Method::DELETE, format!("{queue}/{third_id}"), None).await;
    assert_eq!(status, 404, "{gone}");

    // Stopped: the machine pauses the queue; resumed through the hub, the edited prompt goes.
    let (status, _) = api_post(
        &api,
        &format!("/machine/laptop/session/{session}/abort"),
        serde_json::json!({}),
    )
    .await;
    assert_eq!(status, 200);
    let paused = client.prompt_queue(&session).await.unwrap();
    assert!(paused.paused.is_some(), "{paused:?}");
    let (status, resumed) = http(reqwest::Method::POST, format!("{queue}/resume"), None).await;
    assert_eq!(status, 200, "{resumed}");
    approve(client, &session, "edited-").await;
    ran(client, &session, "edited-5").await;

    // Send now: the running turn stops and the queued prompt goes next.
    let (status, _) = api_post(&api, &queue, text_prompt("echo four")).await;
    assert_eq!(status, 202);
    let (status, fifth) = api_post(&api, &queue, text_prompt("echo five-$((2*3))")).await;
    assert_eq!(status, 201, "{fifth}");
    let fifth_id = fifth["item"]["id"].as_str().unwrap().to_owned();
    let (status, now) = http(
        reqwest::Method::POST,
        format!("{queue}/{fifth_id}/send"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{now}");
    approve(client, &session, "five-").await;
    ran(client, &session, "five-6").await;
    assert!(
        client
            .prompt_queue(&session)
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // A machine that never joined.
    let (status, body) = http(
        reqwest::Method::GET,
        format!("/machine/ghost/session/{session}/queue"),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("offline"))
    );
}

/// `POST path` with `body` to the hub: the status and the JSON answer.
async fn api_post(
    api: &HubClient,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let res = api.post(path, body).await;
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

/// docs/hub.md §4: an image a person attached is served through the hub as its machine's
/// backend serves it, byte for byte, one over a NATS message's 1 MiB too (read in pieces);
/// what the backend refuses is its answer, a machine that is not there is 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcripts_images_are_served_through_the_hub() {
    use ax_protocol::{Message, MessageId, Part, Role};
    use ax_server::store::{self, Store};
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    let other = Machine::start(&nats, "other").await;
    api.wait_machine("laptop", |m| m.online).await;
    api.wait_machine("other", |m| m.online).await;
    let id = laptop.client.create_session(Some("pics")).await.unwrap().id;
    let theirs = other.client.create_session(None).await.unwrap().id;

    // A person's message with a small image and one of 1.5 MiB, in the machine's own store.
    let small = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01".to_vec();
    let mut big = b"GIF89a".to_vec();
    let mut x = 7u32;
    big.extend((0..1536 * 1024).map(|_| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (x >> 16) as u8
    }));
    let mid: MessageId = "msg_0123456789abABCDEFGHIJKLMN".parse().unwrap();
    let message = Message {
        id: mid.clone(),
        session_id: id.clone(),
        role: Role::User,
        created: 1,
        ended: Some(1),
        deltas: 0,
        parts: vec![
            Part::Image {
                index: 0,
                mime_type: "image/png".into(),
                bytes: small.len() as u64,
                name: None,
            },
            Part::Image {
                index: 1,
                mime_type: "image/gif".into(),
                bytes: big.len() as u64,
                name: Some("big.gif".into()),
            },
        ],
    };
    let shared_store = Store::open(laptop.data.path()).unwrap();
    shared_store
        .write_blocking(|c| {
            let tx = store::begin_write(c)?;
            store::insert_message(&tx, &message)?;
            store::insert_image(&tx, &mid, 0, "image/png", &small)?;
            store::insert_image(&tx, &mid, 1, "image/gif", &big)?;
            Ok(tx.commit()?)
        })
        .unwrap();

    for (index, mime, bytes) in [(0, "image/png", &small), (1, "image/gif", &big)] {
        let path = format!("/machine/laptop/session/{id}/message/{mid}/image/{index}");
        let got = within("an image", api.get(&path)).await;
        assert_eq!(got.status(), 200, "{path}");
        let header = |name: &str| got.headers()[name].to_str().unwrap().to_owned();
        assert_eq!(header("content-type"), mime);
        assert_eq!(header("x-content-type-options"), "nosniff");
        let body = got.bytes().await.unwrap();
        assert!(body[..] == bytes[..], "image {index}: {} bytes", body.len());
        let direct = laptop.client.image(&id, &mid, index).await.unwrap();
        assert_eq!((direct.0.as_str(), &direct.1), (mime, bytes));
    }

    // What the backend refuses, the hub answers as it did.
    let status = |path: String| {
        let api = api.clone();
        async move { within("an answer", api.get(&path)).await.status().as_u16() }
    };
    assert_eq!(
        status(format!(
            "/machine/laptop/session/{id}/message/{mid}/image/2"
        ))
        .await,
        404
    );
    assert_eq!(
        status(format!(
            "/machine/other/session/{theirs}/message/{mid}/image/0"
        ))
        .await,
        404
    );
    assert_eq!(
        status(format!("/machine/other/session/{id}/message/{mid}/image/0")).await,
        404
    );
    assert_eq!(
        status(format!(
            "/machine/nowhere/session/{id}/message/{mid}/image/0"
        ))
        .await,
        503
    );
    assert_eq!(
        status(format!(
            "/machine/laptop/session/{id}/message/{mid}/image/x"
        ))
        .await,
        400
    );
    let anonymous = api
        .http
        .get(format!(
            "{}/machine/laptop/session/{id}/message/{mid}/image/0",
            api.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}
