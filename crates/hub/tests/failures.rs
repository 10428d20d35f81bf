//! When things fail (docs/hub.md §3), against a real nats-server: a machine that crashes is
//! shown offline with its sessions as last seen and comes back without duplicates; NATS
//! restarting; a hub restarting (its cache is rebuilt from JetStream) and two hubs at once.

mod support;

use std::time::Duration;

use ax_hub::{hub::MachineSessions, nats::now_ms, testing::NatsServer};
use ax_protocol::SessionId;
use support::{HEARTBEAT, HubClient, HubEvents, Machine, created_title, start_hub, within};

/// Waits until the machine's heartbeat published after now (and so after any change made
/// before now: the session snapshot goes out before the record of the same tick).
async fn wait_state_published(api: &HubClient, name: &str) {
    let after = now_ms() + 2 * HEARTBEAT.as_millis() as u64;
    api.wait_machine(name, |m| m.online && m.last_seen_ms > after)
        .await;
}

fn entry<'a>(all: &'a [MachineSessions], machine: &str) -> &'a MachineSessions {
    let found: Vec<_> = all
        .iter()
        .filter(|s| s.machine.as_str() == machine)
        .collect();
    assert_eq!(found.len(), 1, "{machine} once in {all:?}");
    found[0]
}

fn ids(entry: &MachineSessions) -> Vec<SessionId> {
    entry.sessions.iter().map(|s| s.id.clone()).collect()
}

/// The first `count` `session.created` titles of `machine`, replayed from the stream's start
/// (a duplicate or a gap shows as a wrong list).
async fn created_titles(api: &HubClient, machine: &str, count: usize) -> Vec<String> {
    let mut events = api
        .events(&format!("?machine={machine}&after=0"), None)
        .await;
    let mut titles = Vec::new();
    while titles.len() < count {
        let (_, event) = events.next().await;
        if let Some(t) = created_title(&event) {
            titles.push(t);
        }
    }
    titles
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_machine_is_offline_with_its_sessions_as_last_seen_then_back_without_duplicates()
{
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let mut laptop = Machine::start(&nats, "laptop").await;
    let _other = Machine::start(&nats, "other").await;
    let s1 = laptop.client.create_session(Some("s1")).await.unwrap().id;
    let s2 = laptop.client.create_session(Some("s2")).await.unwrap().id;
    wait_state_published(&api, "laptop").await;

    let boot_of = |machines: Vec<ax_hub::hub::MachineView>| {
        machines
            .into_iter()
            .find(|m| m.name.as_str() == "laptop")
            .map(|m| m.boot)
            .unwrap()
    };
    let first_boot = boot_of(api.machines().await);
    laptop.crash().await;
    api.wait_machine("laptop", |m| !m.online).await;
    api.wait_machine("other", |m| m.online).await;
    let all = api.sessions().await;
    let seen = entry(&all, "laptop");
    assert!(!seen.online && seen.last_seen, "{seen:?}");
    assert_eq!(ids(seen), vec![s2.clone(), s1.clone()]);
    assert!(entry(&all, "other").online);
    // Its transcript cannot be read while it is away: a clear 503, not a hang.
    let away = api
        .get(&format!("/machine/laptop/session/{s1}/message"))
        .await;
    assert_eq!(away.status(), 503);
    let body: serde_json::Value = away.json().await.unwrap();
    assert_eq!(body["error"]["code"], "offline", "{body}");

    // Back from the same data directory: the same sessions, once, answered live again.
    laptop.restart().await;
    api.wait_machine("laptop", |m| m.online).await;
    // A new boot, which a page uses to tell the machine restarted (docs/hub.md §4).
    let second_boot = boot_of(api.machines().await);
    assert!(
        !second_boot.is_empty() && second_boot != first_boot,
        "{first_boot} then {second_boot}"
    );
    let s3 = laptop.client.create_session(Some("s3")).await.unwrap().id;
    let all = within("the laptop's sessions live again", async {
        loop {
            let all = api.sessions().await;
            if entry(&all, "laptop").online {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let back = entry(&all, "laptop");
    assert!(!back.last_seen, "{back:?}");
    assert_eq!(ids(back), vec![s3, s2, s1]);
    assert_eq!(api.machines().await.len(), 2);

    // The events of both boots, each once, in order.
    assert_eq!(created_titles(&api, "laptop", 3).await, ["s1", "s2", "s3"]);
}

/// The next `session.created` title, reconnecting with `Last-Event-ID` when the hub ends the
/// stream (as a browser's EventSource does).
async fn next_created(api: &HubClient, events: &mut HubEvents, last: &mut u64) -> String {
    loop {
        match events.try_next().await {
            Some((seq, event)) => {
                assert!(seq > *last, "sequence {seq} after {last}: nothing twice");
                *last = seq;
                if let Some(t) = created_title(&event) {
                    return t;
                }
            }
            None => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let response = api
                    .http
                    .get(format!("{}/event?machine=laptop", api.base))
                    .bearer_auth(support::HUB_TOKEN)
                    .header("Last-Event-ID", last.to_string())
                    .send()
                    .await;
                if let Ok(r) = response
                    && r.status() == 200
                {
                    *events = HubEvents::from_response(r);
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_restarting_the_machine_reconnects_and_nothing_is_lost() {
    let mut nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let laptop = Machine::start(&nats, "laptop").await;
    api.wait_machine("laptop", |m| m.online).await;
    laptop.client.create_session(Some("before")).await.unwrap();
    let mut events = api.events("?machine=laptop&after=0", None).await;
    let mut last = 0;
    assert_eq!(next_created(&api, &mut events, &mut last).await, "before");

    // NATS goes away: the backend works as before.
    nats.stop();
    let away = laptop
        .client
        .create_session(Some("while-away"))
        .await
        .unwrap();
    assert_eq!(laptop.client.list_sessions().await.unwrap().len(), 2);

    // Back on the same port and store: the event made meanwhile arrives, then new ones.
    nats.restart();
    assert_eq!(
        next_created(&api, &mut events, &mut last).await,
        "while-away"
    );
    laptop.client.create_session(Some("after")).await.unwrap();
    assert_eq!(next_created(&api, &mut events, &mut last).await, "after");

    // Requests reach the machine again (its subscription was restored).
    let all = within("the laptop answering again", async {
        loop {
            let all = api.sessions().await;
            if entry(&all, "laptop").online && !entry(&all, "laptop").last_seen {
                return all;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(entry(&all, "laptop").sessions.len(), 3);
    let messages: Vec<serde_json::Value> = api
        .json(&format!("/machine/laptop/session/{}/message", away.id))
        .await;
    assert!(messages.is_empty());
    // The whole replay holds each event once.
    assert_eq!(
        created_titles(&api, "laptop", 3).await,
        ["before", "while-away", "after"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_hub_rebuilds_its_cache_and_two_hubs_agree() {
    let nats = NatsServer::start();
    let first = start_hub(&nats).await;
    let mut laptop = Machine::start(&nats, "laptop").await;
    let s1 = laptop.client.create_session(Some("s1")).await.unwrap().id;
    let api = HubClient::new(first.url());
    wait_state_published(&api, "laptop").await;
    first.shutdown().await;

    // A hub started afterwards knows the machine from JetStream alone.
    let second = start_hub(&nats).await;
    let third = start_hub(&nats).await;
    for hub in [&second, &third] {
        let api = HubClient::new(hub.url());
        api.wait_machine("laptop", |m| m.online).await;
        let all = api.sessions().await;
        assert_eq!(ids(entry(&all, "laptop")), vec![s1.clone()]);
    }

    // With the machine gone, a fresh hub still shows its sessions as last seen.
    laptop.crash().await;
    let fourth = start_hub(&nats).await;
    let api = HubClient::new(fourth.url());
    api.wait_machine("laptop", |m| !m.online).await;
    let all = api.sessions().await;
    let seen = entry(&all, "laptop");
    assert!(seen.last_seen);
    assert_eq!(ids(seen), vec![s1]);
}
