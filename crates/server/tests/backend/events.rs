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

/// docs/backend.md §1, §3: a backend started on the store a crashed one left (a run of a
/// process that is gone, its command's output stored) tells what its recovery ended as the
/// process's first events: a fresh client reading from the start (`Last-Event-ID: 0`) gets
/// them as a turn's end tells it, a client asking for nothing old gets only what follows,
/// and an ID of another process is still a reset. The queue the cut turn held back is told
/// paused after them.
#[tokio::test]
async fn a_restart_after_a_crash_tells_the_cut_turn_from_the_process_start() {
    use ax_protocol::{
        Message, MessageId, Part, Prompt, PromptPart, QueuedId, Role, Session, SessionStatus,
        Stream,
    };
    use ax_server::store;
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The run's owner: a backend process that is gone.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
    let reply: MessageId = "msg_0123456789abABCDEFGHIJKLMA".parse().unwrap();
    let directory = std::fs::canonicalize(project.path())
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let cut = store::Store::open(data.path()).unwrap();
    cut.write_blocking(|c| {
        let p = store::project_id(c, &directory)?;
        store::insert_session(
            c,
            p,
            &Session {
                id: id.clone(),
                title: "cut".into(),
                created: 1,
                updated: 1,
                status: SessionStatus::Busy,
                agent: "shell".into(),
                agent_state: None,
                standing: Vec::new(),
            },
        )?;
        store::insert_message(
            c,
            &Message {
                id: reply.clone(),
                session_id: id.clone(),
                role: Role::Assistant,
                created: 1,
                ended: None,
                deltas: 0,
                parts: vec![Part::Output {
                    stream: Stream::Stdout,
                    text: "started\n".into(),
                }],
            },
        )?;
        store::begin_run(c, id.as_str(), &reply, 1, (dead_pid, Some(1)))?;
        // A prompt the person queued behind the cut turn.
        let prompt = Prompt {
            parts: vec![PromptPart::Text {
                text: "next".into(),
            }],
        };
        let queued: QueuedId = "que_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        store::enqueue(c, &id, &queued, &prompt, 1, 10).map(drop)
    })
    .unwrap();
    drop(cut);

    let (project_dir, data_dir) = (project.path().to_owned(), data.path().to_owned());
    let b = Backend::start_with(|c| {
        c.project_dir = project_dir;
        c.data_dir = data_dir;
    })
    .await;
    let mut from_start = b.client.events(Some(0));
    let mut told = Vec::new();
    for _ in 0..5 {
        told.push(within(from_start.next()).await.unwrap().unwrap().event);
    }
    let stored = b.client.messages(&id).await.unwrap().remove(0);
    assert_eq!(stored.parts.last(), Some(&Part::Interrupted));
    assert_eq!(
        told,
        vec![
            Event::MessagePart {
                session_id: id.clone(),
                message_id: reply.clone(),
                index: 1,
                part: Part::Interrupted,
            },
            Event::MessageEnded {
                session_id: id.clone(),
                message_id: reply.clone(),
                ended: stored.ended.expect("the end is stored"),
            },
            Event::SessionUpdated {
                session: b.client.get_session(&id).await.unwrap(),
            },
            Event::SessionStatus {
                session_id: id.clone(),
                status: SessionStatus::Idle,
            },
            // The queue that waited for the turn now waits for the person.
            Event::QueueUpdated {
                queue: b.client.prompt_queue(&id).await.unwrap(),
            },
        ]
    );
    assert!(
        matches!(&told[4], Event::QueueUpdated { queue } if queue.paused.is_some()
            && queue.items.len() == 1),
        "{:?}",
        told[4]
    );
    // A client that asks for nothing old starts with what follows.
    let mut live = b.events().await;
    let next = b.session().await;
    let first = within(live.next()).await.unwrap().unwrap();
    assert_eq!(created(&first.event), Some(next));
    // An ID from before this process cannot be replayed.
    let mut stale = b.client.events(Some(1));
    assert_eq!(
        within(stale.next()).await.unwrap().unwrap().event,
        Event::Reset
    );
}
