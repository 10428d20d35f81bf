use std::time::Duration;

use ax_protocol::{Event, SessionId};

use crate::util::{Backend, next_matching, within};

fn created(e: &Event) -> Option<SessionId> {
    match e {
        Event::SessionCreated { session } => Some(session.id.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn resume_with_last_event_id_misses_nothing() {
    let b = Backend::start().await;
    let mut events = b.events().await;
    let first = b.session().await;
    let seen = next_matching(&mut events, |e| created(e).is_some()).await;
    assert_eq!(created(&seen.event), Some(first));
    drop(events);

    let mut missed = Vec::new();
    for _ in 0..5 {
        missed.push(b.session().await);
    }
    let mut resumed = b.client.events(Some(seen.id));
    let mut got = Vec::new();
    let mut last = seen.id;
    while got.len() < missed.len() {
        let e = within(resumed.next()).await.unwrap().unwrap();
        assert_eq!(e.id, last + 1, "IDs increase without gaps");
        last = e.id;
        got.extend(created(&e.event));
    }
    assert_eq!(got, missed);
    // And live events keep coming on the resumed stream.
    let live = b.session().await;
    let e = next_matching(&mut resumed, |e| created(e).is_some()).await;
    assert_eq!(created(&e.event), Some(live));
}

#[tokio::test]
async fn a_gap_older_than_the_ring_gets_a_reset() {
    let b = Backend::start_with(|c| c.event_ring = 4).await;
    let mut events = b.events().await;
    b.session().await;
    let seen = next_matching(&mut events, |e| created(e).is_some()).await;
    drop(events);
    for _ in 0..10 {
        b.session().await;
    }
    let mut resumed = b.client.events(Some(seen.id));
    let first = within(resumed.next()).await.unwrap().unwrap();
    assert_eq!(first.event, Event::Reset);
    assert!(first.id > seen.id);
    // After the reset, live events follow.
    let live = b.session().await;
    let e = next_matching(&mut resumed, |e| created(e).is_some()).await;
    assert_eq!(created(&e.event), Some(live));
    // A future ID (another process, a forged header) is a reset too.
    let mut future = b.client.events(Some(first.id + 1_000_000));
    assert_eq!(
        within(future.next()).await.unwrap().unwrap().event,
        Event::Reset
    );
}

#[tokio::test]
async fn the_client_reconnects_after_a_backend_restart() {
    let b = Backend::start().await;
    let port = b.server.local_addr().port();
    let token = b.server.token().expose().to_owned();
    let mut events = b.events().await;
    b.session().await;
    next_matching(&mut events, |e| created(e).is_some()).await;
    let (project, data) = (b.project, b.data);
    b.server.shutdown().await;

    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    config.bind = format!("127.0.0.1:{port}").parse().unwrap();
    config.token = Some(token.into());
    let server = ax_server::start(config).await.unwrap();
    // The new process cannot replay the old one's IDs: the stream says reset, then goes on.
    let reset = within(events.next()).await.unwrap().unwrap();
    assert_eq!(reset.event, Event::Reset);
    let client = ax_client::Client::new(server.url(), server.token().expose()).unwrap();
    let id = client.create_session(None).await.unwrap().id;
    let e = next_matching(&mut events, |e| created(e).is_some()).await;
    assert_eq!(created(&e.event), Some(id));
    server.shutdown().await;
}

#[tokio::test]
async fn heartbeats_keep_an_idle_stream_alive() {
    let b = Backend::start_with(|c| c.heartbeat = Duration::from_millis(100)).await;
    let mut response = b
        .raw()
        .get(b.url("/event"))
        .header(reqwest::header::AUTHORIZATION, b.bearer())
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()[reqwest::header::CONTENT_TYPE],
        "text/event-stream"
    );
    let chunk = within(response.chunk()).await.unwrap().unwrap();
    assert!(
        String::from_utf8_lossy(&chunk).starts_with(": heartbeat"),
        "{chunk:?}"
    );
}

#[tokio::test]
async fn the_client_resumes_a_dropped_stream_without_losing_events() {
    let b = Backend::start().await;
    let proxy = crate::util::Proxy::start(b.server.local_addr(), b.server.token().expose()).await;
    let through = ax_client::Client::new(&proxy.url, b.server.token().expose()).unwrap();
    let mut events = through.events(None);
    within(async {
        while !events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    b.session().await;
    let seen = next_matching(&mut events, |e| created(e).is_some()).await;

    proxy.cut_and_hold();
    within(async {
        while events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let mut missed = Vec::new();
    for _ in 0..3 {
        missed.push(b.session().await);
    }
    proxy.resume();

    let mut got = Vec::new();
    let mut last = seen.id;
    while got.len() < missed.len() {
        let e = within(events.next()).await.unwrap().unwrap();
        assert_ne!(e.event, Event::Reset, "the gap is in the ring: no reset");
        assert_eq!(e.id, last + 1, "no event lost or repeated");
        last = e.id;
        got.extend(created(&e.event));
    }
    assert_eq!(got, missed);
    let heads = proxy.heads.lock().unwrap().clone();
    let resumed = heads
        .iter()
        .filter(|h| h.starts_with("GET /event"))
        .nth(1)
        .expect("a second /event request");
    assert!(
        resumed
            .to_ascii_lowercase()
            .contains(&format!("last-event-id: {}", seen.id)),
        "{resumed}"
    );
}
