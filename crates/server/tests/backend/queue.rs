//! Queue and steer (docs/backend.md §3): prompts sent while a turn runs wait in order, are
//! edited, cancelled, sent now, and survive a restart; failures and aborts pause the queue.

use std::time::Duration;

use ax_client::Client;
use ax_protocol::{
    Event, Part, PermissionReply, Prompt, PromptPart, Role, SessionId, SessionStatus,
    queue::{PromptQueue, QueueAnswer, QueuedPrompt},
};

use crate::util::{Backend, next_matching, wait_status, within};

fn text(t: &str) -> Prompt {
    Prompt {
        parts: vec![PromptPart::Text { text: t.into() }],
    }
}

async fn queue(client: &Client, id: &SessionId, t: &str) -> QueuedPrompt {
    match client.queue_prompt(id, &text(t)).await.unwrap() {
        QueueAnswer::Queued { item, .. } => item,
        other => panic!("expected it queued: {other:?}"),
    }
}

/// The person's prompts in the transcript, in order.
async fn prompts(client: &Client, id: &SessionId) -> Vec<String> {
    client
        .messages(id)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Waits until the session ran `n` prompts, is idle and its queue is empty.
async fn settled(client: &Client, id: &SessionId, n: usize) -> Vec<String> {
    within(async {
        loop {
            let done = prompts(client, id).await;
            let idle = client.get_session(id).await.unwrap().status == SessionStatus::Idle;
            let empty = client.prompt_queue(id).await.unwrap().items.is_empty();
            if done.len() >= n && idle && empty {
                return done;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// A session whose commands run without asking, after one `true`.
async fn always_session(b: &Backend) -> SessionId {
    let id = b.session().await;
    let mut events = b.events().await;
    let first = b.client.prompt_text(&id, "true").await.unwrap();
    b.client
        .reply_permission(&id, &first.permission.unwrap().id, PermissionReply::Always)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    settled(&b.client, &id, 1).await;
    id
}

async fn wait_queue(
    events: &mut ax_client::EventStream,
    mut pred: impl FnMut(&PromptQueue) -> bool,
) -> PromptQueue {
    let e = next_matching(
        events,
        |e| matches!(e, Event::QueueUpdated { queue } if pred(queue)),
    )
    .await;
    match e.event {
        Event::QueueUpdated { queue } => queue,
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn prompts_sent_during_a_turn_wait_in_order_and_go_when_it_ends() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    // Free and nothing queued: sent at once.
    let first = match b.client.queue_prompt(&id, &text("true")).await.unwrap() {
        QueueAnswer::Sent { accepted } => accepted,
        other => panic!("{other:?}"),
    };
    // The turn waits for its approval: what comes now is queued, in order.
    let two = queue(&b.client, &id, "echo two").await;
    let answer = b
        .client
        .queue_prompt(&id, &text("echo three"))
        .await
        .unwrap();
    let QueueAnswer::Queued { position, .. } = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(position, 1);
    let shown = wait_queue(&mut events, |q| q.items.len() == 2).await;
    assert_eq!(shown.items[0].id, two.id);
    let listed = b.client.prompt_queue(&id).await.unwrap();
    assert_eq!(listed, shown);
    assert!(listed.paused.is_none());
    // A direct prompt may not overtake the queue.
    let err = b.client.prompt_text(&id, "echo sneaky").await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert!(err.to_string().contains("queue"), "{err}");

    b.client
        .reply_permission(&id, &first.permission.unwrap().id, PermissionReply::Always)
        .await
        .unwrap();
    let done = settled(&b.client, &id, 3).await;
    assert_eq!(done, ["true", "echo two", "echo three"]);
    wait_queue(&mut events, |q| q.items.is_empty()).await;
}

#[tokio::test]
async fn queued_prompts_are_edited_and_cancelled_until_they_are_sent() {
    let b = Backend::start().await;
    let id = b.session().await;
    let first = b.client.prompt_text(&id, "true").await.unwrap();
    let a = queue(&b.client, &id, "echo a").await;
    let bb = queue(&b.client, &id, "echo b").await;
    let c = queue(&b.client, &id, "echo c").await;
    let edited = b
        .client
        .edit_queued(&id, &bb.id, &text("echo b2"))
        .await
        .unwrap();
    assert_eq!(edited.prompt, text("echo b2"));
    assert!(edited.updated >= edited.created);
    let after = b.client.cancel_queued(&id, &a.id).await.unwrap();
    assert_eq!(
        after.items.iter().map(|i| &i.id).collect::<Vec<_>>(),
        [&bb.id, &c.id]
    );
    // Gone is gone: a second cancel and an edit of it are 404s that say why.
    let err = b.client.cancel_queued(&id, &a.id).await.unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert!(err.to_string().contains("sent or cancelled"), "{err}");
    let err = b
        .client
        .edit_queued(&id, &a.id, &text("x"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
    // An edit is checked like a prompt.
    let empty = Prompt { parts: vec![] };
    let err = b.client.edit_queued(&id, &c.id, &empty).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    // A malformed id is a 400 naming the expected form.
    let r = b
        .raw()
        .delete(b.url(&format!("/session/{id}/queue/que_nope")))
        .header("authorization", b.bearer())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("que_"));

    b.client
        .reply_permission(&id, &first.permission.unwrap().id, PermissionReply::Always)
        .await
        .unwrap();
    assert_eq!(
        settled(&b.client, &id, 3).await,
        ["true", "echo b2", "echo c"]
    );
}

#[tokio::test]
async fn the_queue_is_bounded_in_length_and_prompt_size() {
    let b = Backend::start_with(|c| {
        c.limits.queue_len = 2;
        c.limits.queued_prompt_bytes = 200;
    })
    .await;
    let id = b.session().await;
    b.client.prompt_text(&id, "true").await.unwrap();
    let err = b
        .client
        .queue_prompt(&id, &text(&"x".repeat(300)))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(413));
    assert!(err.to_string().contains("200 bytes"), "{err}");
    queue(&b.client, &id, "echo 1").await;
    queue(&b.client, &id, "echo 2").await;
    let err = b
        .client
        .queue_prompt(&id, &text("echo 3"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.api().unwrap().code, "queue_full");
    assert_eq!(b.client.prompt_queue(&id).await.unwrap().items.len(), 2);
}

#[tokio::test]
async fn a_failed_turn_pauses_the_queue_until_the_person_resumes_it() {
    let b = Backend::start().await;
    let id = always_session(&b).await;
    let mut events = b.events().await;
    b.client
        .prompt_text(&id, "sleep 0.3; exit 3")
        .await
        .unwrap();
    queue(&b.client, &id, "echo after").await;
    let paused = wait_queue(&mut events, |q| q.paused.is_some()).await;
    assert!(paused.paused.unwrap().contains("failed"));
    // The pause comes after the turn's end (the status is idle by then).
    assert_eq!(
        b.client.get_session(&id).await.unwrap().status,
        SessionStatus::Idle
    );
    assert_eq!(
        prompts(&b.client, &id).await.len(),
        2,
        "nothing more was sent"
    );
    // A direct prompt is still refused: the queue holds one.
    assert_eq!(
        b.client
            .prompt_text(&id, "true")
            .await
            .unwrap_err()
            .status(),
        Some(409)
    );
    let resumed = b.client.resume_queue(&id).await.unwrap();
    assert!(resumed.paused.is_none());
    assert_eq!(
        settled(&b.client, &id, 3).await,
        ["true", "sleep 0.3; exit 3", "echo after"]
    );
}

/// A shell turn tells the queue what its command did: a refused command pauses the queue
/// saying so, and a command that could not start (its file went away) is a failed turn.
#[tokio::test]
async fn a_refused_or_unstarted_command_pauses_the_queue() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let turn = b.client.prompt_text(&id, "echo refused").await.unwrap();
    queue(&b.client, &id, "echo after").await;
    b.client
        .reply_permission(&id, &turn.permission.unwrap().id, PermissionReply::Reject)
        .await
        .unwrap();
    let paused = wait_queue(&mut events, |q| q.session_id == id && q.paused.is_some()).await;
    assert!(paused.paused.unwrap().contains("refused"));
    assert_eq!(prompts(&b.client, &id).await, ["echo refused"]);

    // The file is checked again when the command starts: gone by then, nothing runs.
    let other = b.session().await;
    std::fs::write(b.project_path().join("gone.txt"), "x").unwrap();
    let prompt = Prompt {
        parts: vec![
            PromptPart::Text {
                text: "cat \"$1\"".into(),
            },
            PromptPart::File {
                path: "gone.txt".into(),
            },
        ],
    };
    let turn = b.client.prompt(&other, &prompt).await.unwrap();
    queue(&b.client, &other, "echo after").await;
    std::fs::remove_file(b.project_path().join("gone.txt")).unwrap();
    b.client
        .reply_permission(&other, &turn.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    let paused = wait_queue(&mut events, |q| q.session_id == other && q.paused.is_some()).await;
    assert!(paused.paused.unwrap().contains("failed"));
}

#[tokio::test]
async fn an_abort_stops_the_turn_and_keeps_the_queue_waiting() {
    let b = Backend::start().await;
    let id = always_session(&b).await;
    let mut events = b.events().await;
    b.client.prompt_text(&id, "sleep 30").await.unwrap();
    wait_status(&mut events, &id, SessionStatus::Busy).await;
    let next = queue(&b.client, &id, "echo next").await;
    assert!(b.client.abort(&id).await.unwrap().aborted);
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let q = b.client.prompt_queue(&id).await.unwrap();
    assert_eq!(q.items.len(), 1);
    assert!(q.paused.unwrap().contains("stopped"));
    assert_eq!(prompts(&b.client, &id).await, ["true", "sleep 30"]);
    // "Send now" on a free session sends it at once and lets the queue flow.
    let q = b.client.send_queued_now(&id, &next.id).await.unwrap();
    assert!(q.items.is_empty(), "{q:?}");
    assert_eq!(
        settled(&b.client, &id, 3).await,
        ["true", "sleep 30", "echo next"]
    );
}

#[tokio::test]
async fn send_now_interrupts_the_turn_and_sends_that_prompt_next() {
    let b = Backend::start().await;
    let id = always_session(&b).await;
    let mut events = b.events().await;
    b.client.prompt_text(&id, "sleep 30").await.unwrap();
    wait_status(&mut events, &id, SessionStatus::Busy).await;
    let a = queue(&b.client, &id, "echo a").await;
    let later = queue(&b.client, &id, "echo b").await;
    let q = b.client.send_queued_now(&id, &later.id).await.unwrap();
    assert_eq!(q.items[0].id, later.id, "it goes first");
    assert_eq!(q.items[1].id, a.id);
    assert_eq!(
        settled(&b.client, &id, 4).await,
        ["true", "sleep 30", "echo b", "echo a"]
    );
    let messages = b.client.messages(&id).await.unwrap();
    let cut = &messages[3];
    assert_eq!(
        crate::util::shell_call(&cut.parts).status,
        ax_protocol::turn::ToolStatus::Cancelled,
        "{cut:?}"
    );
}

#[tokio::test]
async fn prompts_sent_at_once_each_run_once_in_one_order() {
    let b = Backend::start().await;
    let id = always_session(&b).await;
    // Each turn lasts a second, so no turn ends (and no queued prompt leaves the queue) while
    // the six are answered: a place is where the prompt waits at its answer, and a queue that
    // drains meanwhile would give two answers the same place (seen in CI with `echo` alone).
    let texts: Vec<String> = (0..6).map(|i| format!("sleep 1; echo {i}")).collect();
    let bodies: Vec<Prompt> = texts.iter().map(|t| text(t)).collect();
    let answers =
        futures_util::future::join_all(bodies.iter().map(|p| b.client.queue_prompt(&id, p))).await;
    let sent = answers
        .iter()
        .filter(|a| matches!(a, Ok(QueueAnswer::Sent { .. })))
        .count();
    assert!(sent <= 1, "at most one starts at once: {answers:?}");
    let mut positions: Vec<usize> = answers
        .iter()
        .filter_map(|a| match a {
            Ok(QueueAnswer::Queued { position, .. }) => Some(position.to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(sent + positions.len(), 6, "{answers:?}");
    positions.sort();
    positions.dedup();
    assert_eq!(positions.len(), 6 - sent, "each its own place: {answers:?}");
    let mut done = settled(&b.client, &id, 7).await;
    assert_eq!(done.remove(0), "true");
    done.sort();
    assert_eq!(done, texts, "each exactly once");
}

#[tokio::test]
async fn a_cancel_as_the_turn_ends_either_wins_or_finds_it_sent() {
    let b = Backend::start().await;
    let id = b.session().await;
    for round in 0..5 {
        let turn = b.client.prompt_text(&id, "true").await.unwrap();
        let item = queue(&b.client, &id, &format!("echo round {round}")).await;
        let permission = turn.permission.expect("asks");
        let (reply, cancel) = tokio::join!(
            b.client
                .reply_permission(&id, &permission.id, PermissionReply::Once),
            b.client.cancel_queued(&id, &item.id)
        );
        reply.unwrap();
        // The queued prompt (if it was sent) asks for approval; refuse it to end the round.
        let sent = match cancel {
            Ok(_) => false,
            Err(e) => {
                assert_eq!(e.status(), Some(404), "{e}");
                true
            }
        };
        if sent {
            // Removed from the queue only once its turn was stored: its approval waits now.
            let pending = b.client.permissions().await.unwrap();
            let next = pending
                .iter()
                .find(|p| p.session_id == id && p.id != permission.id)
                .expect("the sent prompt asks");
            b.client
                .reply_permission(&id, &next.id, PermissionReply::Reject)
                .await
                .unwrap();
        }
        within(async {
            loop {
                let idle = b.client.get_session(&id).await.unwrap().status == SessionStatus::Idle;
                let q = b.client.prompt_queue(&id).await.unwrap();
                if idle && q.items.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        let ran = prompts(&b.client, &id).await;
        let count = ran
            .iter()
            .filter(|p| **p == format!("echo round {round}"))
            .count();
        assert_eq!(count, usize::from(sent), "round {round}: {ran:?}");
    }
}

#[tokio::test]
async fn the_queue_survives_a_restart_and_waits_for_the_person() {
    let b = Backend::start().await;
    let id = b.session().await;
    b.client.prompt_text(&id, "true").await.unwrap();
    let item = queue(&b.client, &id, "echo later").await;
    let (project, data) = (b.project, b.data);
    b.server.shutdown().await;
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    let server = ax_server::start(config).await.unwrap();
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    let q = client.prompt_queue(&id).await.unwrap();
    assert_eq!(q.items.len(), 1);
    assert_eq!(q.items[0].id, item.id);
    assert_eq!(q.items[0].prompt, text("echo later"));
    assert!(q.paused.is_some(), "{q:?}");
    let q = client.resume_queue(&id).await.unwrap();
    assert!(q.items.is_empty(), "{q:?}");
    let mut prompts_now = Vec::new();
    within(async {
        while prompts_now.len() < 2 {
            prompts_now = prompts(&client, &id).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(prompts_now, ["true", "echo later"]);
    server.shutdown().await;
}

/// Projects share the data directory's store: a backend that starts for another project
/// pauses its own waiting queues, never this live backend's (docs/backend.md §3).
#[tokio::test]
async fn another_projects_backend_starting_leaves_this_queue_alone() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    // The turn waits for an approval, so the queued prompt waits behind it.
    let first = b.client.prompt_text(&id, "true").await.unwrap();
    let first_id = first.permission.map(|p| p.id);
    queue(&b.client, &id, "echo later").await;
    let other = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(other.path(), b.data.path());
    config.register = false;
    let neighbour = ax_server::start(config).await.unwrap();
    let q = b.client.prompt_queue(&id).await.unwrap();
    assert_eq!(q.paused, None, "{q:?}");
    b.client
        .reply_permission(&id, first_id.as_ref().unwrap(), PermissionReply::Once)
        .await
        .unwrap();
    // The queued prompt is sent when the turn ends; its command asks too.
    let asked = next_matching(&mut events, |e| {
        matches!(e, Event::PermissionAsked { permission, .. }
            if permission.session_id == id && Some(&permission.id) != first_id.as_ref())
    })
    .await;
    let Event::PermissionAsked { permission, .. } = asked.event else {
        unreachable!()
    };
    b.client
        .reply_permission(&id, &permission.id, PermissionReply::Once)
        .await
        .unwrap();
    assert_eq!(settled(&b.client, &id, 2).await, ["true", "echo later"]);
    neighbour.shutdown().await;
    b.server.shutdown().await;
}
