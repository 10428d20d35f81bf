//! Managing sessions (rename, delete, titles from the first prompt, order by last activity),
//! migrations under a concurrent start, and one backend per project.

use std::sync::{Arc, Barrier};

use ax_protocol::{Event, SessionStatus};

use crate::util::{Backend, next_matching, wait_status};

#[tokio::test]
async fn rename_is_strict_and_reaches_every_listener() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let renamed = b
        .client
        .rename_session(&id, "  build fixes ")
        .await
        .unwrap();
    assert_eq!(renamed.title, "build fixes");
    let e = next_matching(&mut events, |e| matches!(e, Event::SessionUpdated { .. })).await;
    match e.event {
        Event::SessionUpdated { session } => assert_eq!(session, renamed),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        b.client.get_session(&id).await.unwrap().title,
        "build fixes"
    );

    let raw = b.raw();
    let patch = |path: String, body: &'static str| {
        raw.patch(b.url(&path))
            .header("authorization", b.bearer())
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let path = format!("/session/{id}");
    for (body, status) in [
        (r#"{"title":"x","extra":1}"#, 400),
        (r#"{}"#, 400),
        (r#"{"title":""}"#, 400),
        (r#"{"title":"   "}"#, 400),
        (r#"{"title":"a\u0007b"}"#, 400),
        (r#"{"title":42}"#, 400),
    ] {
        let r = patch(path.clone(), body).await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{body}");
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "bad_request", "{body}: {v}");
    }
    let long = format!(r#"{{"title":"{}"}}"#, "t".repeat(201));
    let r = raw
        .patch(b.url(&path))
        .header("authorization", b.bearer())
        .header("content-type", "application/json")
        .body(long)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Nothing of the refused bodies was stored.
    assert_eq!(
        b.client.get_session(&id).await.unwrap().title,
        "build fixes"
    );

    let unknown = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
    let err = b.client.rename_session(&unknown, "x").await.unwrap_err();
    assert_eq!(err.status(), Some(404), "{err}");
    assert_eq!(
        patch("/session/nope".into(), r#"{"title":"x"}"#)
            .await
            .unwrap()
            .status()
            .as_u16(),
        400
    );
    let unauthenticated = raw
        .patch(b.url(&path))
        .header("content-type", "application/json")
        .body(r#"{"title":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status().as_u16(), 401);

    b.client.delete_session(&id).await.unwrap();
    let e = next_matching(&mut events, |e| matches!(e, Event::SessionDeleted { .. })).await;
    assert!(matches!(e.event, Event::SessionDeleted { session_id } if session_id == id));
    assert_eq!(
        b.client
            .rename_session(&id, "x")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

/// docs/SECURITY.md: a right-to-left override (or any bidi control) would let a title read
/// differently from what it is; titles refuse them as they refuse control characters, and a
/// title made from a prompt turns them into spaces.
#[tokio::test]
async fn titles_refuse_bidi_controls() {
    let b = Backend::start().await;
    let id = b.session().await;
    for c in [
        '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
    ] {
        let title = format!("invoice{c}fdp.exe");
        let err = b.client.create_session(Some(&title)).await.unwrap_err();
        assert_eq!(err.status(), Some(400), "{c:?}: {err}");
        let message = err.api().unwrap().message.clone();
        assert!(
            message.contains("bidirectional") && message.contains(&format!("U+{:04X}", c as u32)),
            "{message}"
        );
        let err = b.client.rename_session(&id, &title).await.unwrap_err();
        assert_eq!(err.status(), Some(400), "{c:?}: {err}");
    }
    let untitled = b.client.create_session(None).await.unwrap().id;
    let mut events = b.events().await;
    b.client
        .prompt_text(&untitled, "cat notes\u{202e}txt.sh")
        .await
        .unwrap();
    let e = next_matching(&mut events, |e| {
        matches!(e, Event::SessionUpdated { session } if session.id == untitled && !session.title.is_empty())
    })
    .await;
    let Event::SessionUpdated { session } = e.event else {
        unreachable!()
    };
    assert_eq!(session.title, "cat notes txt.sh");
    let titles: Vec<String> = b
        .client
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect();
    assert!(
        titles
            .iter()
            .all(|t| !t.chars().any(ax_core::text::is_bidi_control)),
        "{titles:?}"
    );
}

#[tokio::test]
async fn the_first_prompt_titles_an_untitled_session_only() {
    let b = Backend::start().await;
    let untitled = b.client.create_session(None).await.unwrap().id;
    let titled = b.session().await;
    let mut events = b.events().await;
    let long = format!("\n  echo {}\nsecond line", "x".repeat(80));
    b.client.prompt_text(&untitled, &long).await.unwrap();
    let e = next_matching(&mut events, |e| {
        matches!(e, Event::SessionUpdated { session } if session.id == untitled && !session.title.is_empty())
    })
    .await;
    let Event::SessionUpdated { session } = e.event else {
        unreachable!()
    };
    let expected: String = format!("echo {}", "x".repeat(80))
        .chars()
        .take(60)
        .collect();
    assert_eq!(session.title, format!("{expected}…"));
    assert_eq!(
        b.client.get_session(&untitled).await.unwrap().title,
        session.title
    );

    b.client.prompt_text(&titled, "echo other").await.unwrap();
    wait_status(&mut events, &titled, SessionStatus::Pending).await;
    assert_eq!(b.client.get_session(&titled).await.unwrap().title, "test");
}

#[tokio::test]
async fn the_list_is_ordered_by_last_activity() {
    let b = Backend::start().await;
    let older = b.client.create_session(Some("older")).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let newer = b.client.create_session(Some("newer")).await.unwrap();
    let ids = |l: Vec<ax_protocol::Session>| l.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(
        ids(b.client.list_sessions().await.unwrap()),
        vec![newer.id.clone(), older.id.clone()]
    );
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    // Activity on the older one (a prompt waiting for approval) moves it to the top.
    b.client.prompt_text(&older.id, "true").await.unwrap();
    let list = b.client.list_sessions().await.unwrap();
    assert!(list[0].updated > newer.updated, "{list:?}");
    assert_eq!(ids(list), vec![older.id.clone(), newer.id.clone()]);
}

#[test]
fn a_concurrent_first_start_migrates_once() {
    // Two backends starting at once on a fresh data directory: both open and migrate the
    // same new database file. Repeated, since the race is a matter of timing.
    for _ in 0..20 {
        let data = tempfile::tempdir().unwrap();
        let barrier = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (dir, barrier) = (data.path().to_owned(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    ax_server::store::Store::open(&dir).map(drop)
                })
            })
            .collect();
        for t in threads {
            if let Err(e) = t.join().unwrap() {
                panic!("a concurrent open failed: {e}");
            }
        }
    }
}

#[tokio::test]
async fn a_second_backend_for_the_project_is_refused_naming_the_first() {
    let b = Backend::start().await;
    let mut config = ax_server::ServerConfig::new(b.project_path(), b.data.path());
    config.register = false;
    let err = ax_server::start(config.clone()).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(b.server.url()) && text.contains(&format!("pid {}", std::process::id())),
        "{text}"
    );
    // The first backend is untouched and the project is free again once it stops.
    b.client.list_sessions().await.unwrap();
    let (project, data) = (b.project, b.data);
    b.server.shutdown().await;
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    ax_server::start(config).await.unwrap().shutdown().await;
}

#[tokio::test]
async fn start_errors_say_their_cause_once() {
    let data = tempfile::tempdir().unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    let config = ax_server::ServerConfig::new(file.path(), data.path());
    let err = ax_server::start(config).await.unwrap_err();
    let full = format!("{:#}", anyhow::Error::from(err));
    assert_eq!(full.matches("not a directory").count(), 1, "{full}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let project = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.bind = taken.local_addr().unwrap();
    let err = ax_server::start(config).await.unwrap_err();
    let full = format!("{:#}", anyhow::Error::from(err));
    assert_eq!(full.matches("in use").count(), 1, "{full}");
}
