//! A permission is a handle ([`ax_acp::PermissionResponder`]): it answers once, a dropped
//! one answers `cancelled`, and when an abort races an answer the agent hears exactly one
//! of them. The agent here is a scripted one served over the in-memory transport
//! (`AgentHandle::start_in_memory`), which writes down every line it receives.

use std::time::Duration;

use ax_acp::{AcpEvent, AgentHandle, AnswerError, PermissionResponder, StartOptions, schema};
use ax_protocol::turn::{PermissionKind, PermissionOutcome, TurnDelta, TurnEnd};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    sync::mpsc,
};

/// A bound on waiting for what must happen; never a measure of speed.
const WAIT: Duration = Duration::from_secs(30);

/// The id the agent gives each of its permission requests: `perm-N` for its N-th prompt.
fn request_id(turn: u64) -> String {
    format!("perm-{turn}")
}

/// The scripted agent: `initialize` and `session/new` answered; each `session/prompt` asks
/// one permission (`perm-N`), and the prompt is answered when the permission is (`end_turn`
/// when allowed, `cancelled` when cancelled or after `session/cancel`). Every message it
/// receives goes to `seen`, in order.
async fn serve(io: tokio::io::DuplexStream, seen: mpsc::UnboundedSender<Value>) {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    let mut turns = 0u64;
    // The prompt request waiting for its permission's answer.
    let mut prompt: Option<Value> = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let _ = seen.send(msg.clone());
        let method = msg.get("method").and_then(Value::as_str);
        let reply = match method {
            Some("initialize") => Some(json!({
                "jsonrpc": "2.0", "id": msg["id"],
                "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            })),
            Some("session/new") => Some(json!({
                "jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1"}
            })),
            Some("session/prompt") => {
                turns += 1;
                prompt = Some(msg["id"].clone());
                Some(json!({
                    "jsonrpc": "2.0", "id": request_id(turns),
                    "method": "session/request_permission",
                    "params": {
                        "sessionId": "s1",
                        "toolCall": {"toolCallId": format!("t{turns}"), "title": "rm -rf build"},
                        "options": [
                            {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                            {"optionId": "no", "name": "No", "kind": "reject_once"}
                        ]
                    }
                }))
            }
            // The answer to the permission ends the turn.
            None if msg.get("result").is_some() => prompt.take().map(|id| {
                let outcome = &msg["result"]["outcome"]["outcome"];
                let stop = if outcome == "selected" {
                    "end_turn"
                } else {
                    "cancelled"
                };
                json!({"jsonrpc": "2.0", "id": id, "result": {"stopReason": stop}})
            }),
            _ => None,
        };
        if let Some(reply) = reply {
            let mut bytes = serde_json::to_vec(&reply).unwrap();
            bytes.push(b'\n');
            if write.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }
}

struct Agent {
    _project: tempfile::TempDir,
    handle: AgentHandle,
    events: mpsc::UnboundedReceiver<AcpEvent>,
    seen: mpsc::UnboundedReceiver<Value>,
}

async fn start() -> Agent {
    let project = tempfile::tempdir().unwrap();
    let mut options = StartOptions::new(project.path());
    options.watchdog = WAIT;
    options.stop_term_after = Duration::from_millis(300);
    options.stop_kill_after = Duration::from_millis(500);
    options.request_timeout = WAIT;
    let (tx, seen) = mpsc::unbounded_channel();
    let (mut handle, events) =
        AgentHandle::start_in_memory("scripted", options, move |io| serve(io, tx))
            .await
            .unwrap();
    handle.open_session(Vec::new(), None).await.unwrap();
    Agent {
        _project: project,
        handle,
        events,
        seen,
    }
}

impl Agent {
    async fn next(&mut self) -> AcpEvent {
        tokio::time::timeout(WAIT, self.events.recv())
            .await
            .expect("an event in time")
            .expect("the events go on")
    }

    /// Prompts and waits for the turn's permission request.
    async fn ask(&mut self) -> PermissionResponder {
        self.handle
            .prompt(vec![schema::ContentBlock::Text(schema::TextContent::new(
                "go",
            ))])
            .unwrap();
        loop {
            if let AcpEvent::Asked { responder, .. } = self.next().await {
                return responder;
            }
        }
    }

    /// The deltas until the turn ends, and its end.
    async fn until_end(&mut self) -> (Vec<TurnDelta>, TurnEnd) {
        let mut deltas = Vec::new();
        loop {
            match self.next().await {
                AcpEvent::Delta(d) => deltas.push(d),
                AcpEvent::TurnEnded { end, .. } => return (deltas, end),
                _ => {}
            }
        }
    }

    /// Stops the agent and returns every message it received, in order.
    async fn stop(mut self) -> Vec<Value> {
        self.handle.stop().await;
        let mut all = Vec::new();
        while let Ok(Some(msg)) = tokio::time::timeout(WAIT, self.seen.recv()).await {
            all.push(msg);
        }
        all
    }
}

/// The answers the agent received to its permission request `id`.
fn answers_to<'a>(seen: &'a [Value], id: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|m| m.get("method").is_none() && m["id"] == id)
        .collect()
}

/// The outcome an answer carries: the option id, or `cancelled`.
fn outcome(answer: &Value) -> String {
    let outcome = &answer["result"]["outcome"];
    match outcome["outcome"].as_str() {
        Some("selected") => outcome["optionId"].as_str().unwrap().to_owned(),
        Some(other) => other.to_owned(),
        None => panic!("not an answer: {answer}"),
    }
}

/// The permissions answered in `deltas`, with their outcomes.
fn answered(deltas: &[TurnDelta]) -> Vec<PermissionOutcome> {
    deltas
        .iter()
        .filter_map(|d| match d {
            TurnDelta::PermissionAnswered { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_handle_answers_once() {
    let mut a = start().await;
    let responder = a.ask().await;
    let id = responder.permission_id().clone();
    assert!(responder.is_open());
    assert_eq!(a.handle.pending_permissions().len(), 1);
    let sent = responder.answer(PermissionKind::AllowOnce, None).unwrap();
    assert_eq!(sent.option_id, "yes");
    assert!(!responder.is_open());
    assert!(a.handle.pending_permissions().is_empty());
    // A second answer, through the handle or by id, is refused and sends nothing.
    assert_eq!(
        responder.answer(PermissionKind::RejectOnce, None),
        Err(AnswerError::Unknown(id.to_string()))
    );
    assert_eq!(
        a.handle.answer_permission(&id, PermissionKind::RejectOnce),
        Err(AnswerError::Unknown(id.to_string()))
    );
    let (deltas, end) = a.until_end().await;
    assert_eq!(
        end,
        TurnEnd::Completed {
            stop_reason: "end_turn".into()
        }
    );
    assert_eq!(
        answered(&deltas),
        vec![PermissionOutcome::Selected {
            option_id: "yes".into(),
            kind: PermissionKind::AllowOnce
        }]
    );
    // Dropping an answered handle sends nothing more.
    drop(responder);
    let seen = a.stop().await;
    let answers = answers_to(&seen, &request_id(1));
    assert_eq!(answers.len(), 1, "{seen:?}");
    assert_eq!(outcome(answers[0]), "yes");
}

#[tokio::test]
async fn a_handle_with_no_such_option_is_still_open() {
    let mut a = start().await;
    let responder = a.ask().await;
    assert!(matches!(
        responder.answer(PermissionKind::AllowOnce, Some("maybe")),
        Err(AnswerError::NoSuchOptionId { .. })
    ));
    assert!(responder.is_open());
    assert_eq!(
        responder
            .answer(PermissionKind::RejectOnce, Some("no"))
            .unwrap()
            .option_id,
        "no"
    );
    a.until_end().await;
    let seen = a.stop().await;
    let answers = answers_to(&seen, &request_id(1));
    assert_eq!(answers.len(), 1, "{seen:?}");
    assert_eq!(outcome(answers[0]), "no");
}

#[tokio::test]
async fn a_dropped_handle_answers_cancelled_on_the_wire() {
    let mut a = start().await;
    let responder = a.ask().await;
    drop(responder);
    let (deltas, end) = a.until_end().await;
    // The agent heard `cancelled` and ended its turn so.
    assert_eq!(end, TurnEnd::Cancelled);
    assert_eq!(answered(&deltas), vec![PermissionOutcome::Cancelled]);
    assert!(a.handle.pending_permissions().is_empty());
    let seen = a.stop().await;
    let answers = answers_to(&seen, &request_id(1));
    assert_eq!(answers.len(), 1, "{seen:?}");
    assert_eq!(outcome(answers[0]), "cancelled");
}

#[tokio::test]
async fn an_abort_answers_the_handle_after_session_cancel() {
    let mut a = start().await;
    let responder = a.ask().await;
    assert!(a.handle.cancel());
    // The abort answered first: the handle's answer is refused, its drop sends nothing.
    assert!(!responder.is_open());
    assert!(matches!(
        responder.answer(PermissionKind::AllowOnce, None),
        Err(AnswerError::Unknown(_))
    ));
    assert!(!responder.cancel());
    let (deltas, end) = a.until_end().await;
    assert_eq!(end, TurnEnd::Cancelled);
    assert_eq!(answered(&deltas), vec![PermissionOutcome::Cancelled]);
    let seen = a.stop().await;
    let cancel = seen
        .iter()
        .position(|m| m["method"] == "session/cancel")
        .expect("session/cancel sent");
    let answers: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("method").is_none() && m["id"] == request_id(1))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(answers.len(), 1, "{seen:?}");
    assert!(cancel < answers[0], "session/cancel first: {seen:?}");
    assert_eq!(outcome(&seen[answers[0]]), "cancelled");
}

/// A stop answers the open request `cancelled` before it closes the agent's input (whether
/// that answer is written before the input closes is the stop's race, not the handle's).
#[tokio::test]
async fn stop_answers_an_open_handle_cancelled() {
    let mut a = start().await;
    let responder = a.ask().await;
    a.handle.stop().await;
    assert!(!responder.is_open());
    assert!(matches!(
        responder.answer(PermissionKind::AllowOnce, None),
        Err(AnswerError::Unknown(_))
    ));
    assert!(!responder.cancel());
    let seen = a.stop().await;
    let answers = answers_to(&seen, &request_id(1));
    assert!(answers.len() <= 1, "{seen:?}");
    assert!(
        answers.iter().all(|a| outcome(a) == "cancelled"),
        "{seen:?}"
    );
}

/// An abort racing the person's answer, many times over on two threads: each time the agent
/// hears exactly one answer, the one that won (the handle's own answer, or the abort's
/// `cancelled`, sent after `session/cancel`), and the turn reports that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_racing_an_answer_sends_exactly_one() {
    const ROUNDS: u64 = 40;
    let mut a = start().await;
    let mut won = Vec::new();
    for _ in 0..ROUNDS {
        let responder = a.ask().await;
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let answering = {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                responder.answer(PermissionKind::AllowOnce, None).is_ok()
            })
        };
        barrier.wait().await;
        // False when the answer won and the agent ended its turn before the abort came.
        let aborted = a.handle.cancel();
        let by_handle = answering.await.unwrap();
        assert!(aborted || by_handle, "with no abort, the answer is sent");
        let (deltas, _) = a.until_end().await;
        let expected = if by_handle {
            PermissionOutcome::Selected {
                option_id: "yes".into(),
                kind: PermissionKind::AllowOnce,
            }
        } else {
            PermissionOutcome::Cancelled
        };
        assert_eq!(answered(&deltas), vec![expected]);
        won.push(by_handle);
    }
    let seen = a.stop().await;
    for (n, by_handle) in (1..=ROUNDS).zip(won) {
        let answers = answers_to(&seen, &request_id(n));
        assert_eq!(answers.len(), 1, "round {n}: {answers:?}");
        let want = if by_handle { "yes" } else { "cancelled" };
        assert_eq!(outcome(answers[0]), want, "round {n}");
    }
}
