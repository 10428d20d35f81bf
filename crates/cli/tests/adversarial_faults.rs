//! Fault injection through the real `ax-code` binary, one test per fault (docs/SECURITY.md):
//!
//! - the backend killed while the TUI validates a session for an agent;
//! - the TUI killed with SIGKILL while a `select_session` is in flight;
//! - the TUI stopped with SIGSTOP (the adapter keeps its deadlines) and continued;
//! - the endpoint directory swapped for a symlink, and deleted, under a live adapter;
//! - the server killed with SIGKILL while a command writes a lot of output.
//!
//! The gateway with a client that never reads is proven in the gateway crate:
//! `crates/gateway/tests/gateway/fanout.rs::a_stalled_ui_is_cut_and_does_not_hold_up_the_others`
//! (and `protocol.rs`, a peer that never reads never answers pings and is dropped).

mod support;

use std::path::PathBuf;
use std::time::Duration;

use ax_client::Client;
use ax_protocol::{Event, Part, PermissionReply, SessionStatus, turn};
use serde_json::json;
use support::*;

const PASSWORD: &str = "adversarial-faults-credential-0123456789";

/// `ax-code serve` with two sessions and a TUI attached to it with `--tui-mcp`, plus an
/// adapter that has seen the TUI ready.
struct Attached {
    env: Env,
    serve: Serve,
    tui: Pty,
    endpoint: PathBuf,
    adapter: Adapter,
    a: String,
    b: String,
}

fn attached() -> Attached {
    let env = Env::new();
    let serve = Serve::start(&env, 0, Some(PASSWORD));
    let a = env.ax(
        &[
            "session", "create", "--title", "fault-a", "--url", &serve.url,
        ],
        Some(PASSWORD),
    );
    let b = env.ax(
        &[
            "session", "create", "--title", "fault-b", "--url", &serve.url,
        ],
        Some(PASSWORD),
    );
    let (a, b) = (a.trim().to_owned(), b.trim().to_owned());
    let tui = Pty::spawn(&env, &["attach", &serve.url, "--tui-mcp"], Some(PASSWORD));
    let endpoint = tui.endpoint_path();
    tui.wait_text("fault-b");
    tui.wait_text("● connected");
    let mut adapter = Adapter::spawn(&env, &endpoint);
    adapter.wait_context("ready", unblocked);
    Attached {
        env,
        serve,
        tui,
        endpoint,
        adapter,
        a,
        b,
    }
}

/// The frame is in the TUI and its validation waits on the (stopped) backend: nothing can
/// answer it yet, so after a moment the call must still be pending.
fn assert_in_flight(adapter: &mut Adapter, call: i64) {
    if let Some(early) = adapter.try_answer(call, Duration::from_millis(500)) {
        panic!("the select_session should wait on the stopped backend, got {early}");
    }
}

#[test]
fn backend_killed_during_a_session_validation_never_navigates() {
    let mut t = attached();
    let view = t.adapter.context();
    let applied = t
        .adapter
        .call("select_session", select_args(&view, &uuid(), &t.a));
    assert_eq!(applied["status"], "applied", "{applied}");
    t.tui.wait_text("fault-a ses_");
    let view = t.adapter.wait_context("unblocked on a", unblocked);

    // The backend hangs (its sockets stay open), so the TUI's lookup of b hangs with it.
    signal(t.serve.pid(), "STOP");
    let request_id = uuid();
    let args = select_args(&view, &request_id, &t.b);
    let call = t.adapter.start_call("select_session", args.clone());
    assert_in_flight(&mut t.adapter, call);
    // Now it dies in the middle of the validation.
    t.serve.kill();
    let answer = t.adapter.finish_call(call);
    eprintln!("validation cut by the backend's death: {answer}");
    assert_eq!(answer["status"], "rejected", "{answer}");
    assert!(
        ["not_ready", "target_unavailable", "deadline_exceeded"].contains(&code(&answer)),
        "a definitive refusal, got {answer}"
    );
    // Nothing navigated, and while the backend is down nothing can.
    t.tui.wait_text("reconnecting");
    let down = t
        .adapter
        .wait_context("not ready", |v| v["context"]["ready"] == false);
    assert_eq!(down["context"]["sessionId"], json!(t.a), "{down}");
    assert!(
        !t.tui.screen().contains("fault-b ses_"),
        "{}",
        t.tui.screen()
    );
    let view = t.adapter.context();
    let refused = t
        .adapter
        .call("select_session", select_args(&view, &uuid(), &t.b));
    assert_eq!(code(&refused), "not_ready", "{refused}");
    // The receipt stays what it was.
    assert_eq!(t.adapter.call("select_session", args), answer);

    // The backend comes back on the same port: the TUI resyncs, navigation works again.
    let port = t.serve.port();
    let _serve = Serve::start(&t.env, port, Some(PASSWORD));
    let view = t.adapter.wait_context("ready again", unblocked);
    let applied = t
        .adapter
        .call("select_session", select_args(&view, &uuid(), &t.b));
    assert_eq!(applied["status"], "applied", "{applied}");
    t.tui.wait_text("fault-b ses_");
    assert!(t.adapter.finish().success());
}

#[test]
fn tui_sigkilled_with_a_select_in_flight_leaves_an_unreachable_endpoint() {
    let mut t = attached();
    let view = t.adapter.context();
    let old_identity = (
        view["context"]["instanceId"].clone(),
        view["context"]["generation"].clone(),
    );

    // The validation hangs on the stopped backend; the TUI dies under it.
    signal(t.serve.pid(), "STOP");
    let args = select_args(&view, &uuid(), &t.b);
    let call = t.adapter.start_call("select_session", args.clone());
    assert_in_flight(&mut t.adapter, call);
    signal(t.tui.pid(), "KILL");
    let answer = t.adapter.finish_call(call);
    // The frame was sent and no answer came: the outcome is not known to the adapter.
    assert_eq!(
        answer,
        json!({"status": "rejected", "code": "timeout_unknown"}),
        "{answer}"
    );
    t.tui.wait_exit();
    signal(t.serve.pid(), "CONT");

    // A crash leaves an inert directory: nobody listens on its socket any more.
    assert!(t.endpoint.exists(), "SIGKILL gives no chance to clean up");
    let gone = t.adapter.context();
    assert_eq!(
        gone,
        json!({"status": "rejected", "code": "target_unavailable", "detail": "tui_unreachable"})
    );
    let gone = t.adapter.call("select_session", args);
    assert_eq!(
        gone,
        json!({"status": "rejected", "code": "target_unavailable", "detail": "tui_unreachable"})
    );

    // A restarted TUI has a new endpoint and a new identity.
    let tui = Pty::spawn(
        &t.env,
        &["attach", &t.serve.url, "--tui-mcp"],
        Some(PASSWORD),
    );
    let endpoint = tui.endpoint_path();
    assert_ne!(endpoint, t.endpoint);
    tui.wait_text("● connected");
    let mut fresh = Adapter::spawn(&t.env, &endpoint);
    let view = fresh.wait_context("ready", unblocked);
    assert_ne!(view["context"]["instanceId"], old_identity.0);
    assert_ne!(view["context"]["generation"], old_identity.1);
    // The old identity means nothing to it, and the old path still reaches nobody.
    let mut stale = select_args(&view, &uuid(), &t.b);
    stale["instanceId"] = old_identity.0.clone();
    stale["generation"] = old_identity.1.clone();
    assert_eq!(code(&fresh.call("select_session", stale)), "stale_target");
    assert_eq!(code(&t.adapter.context()), "target_unavailable");
    assert!(!tui.screen().contains("fault-b ses_"));
    let applied = fresh.call("select_session", select_args(&view, &uuid(), &t.b));
    assert_eq!(applied["status"], "applied", "{applied}");
    tui.wait_text("fault-b ses_");
}

#[test]
fn tui_sigstopped_the_adapter_keeps_its_deadlines_and_sigcont_recovers() {
    let env = Env::new();
    let tui = Pty::spawn(&env, &["--tui-mcp"], None);
    let endpoint = tui.endpoint_path();
    tui.wait_text("● connected");
    let target = env.ax(&["session", "create", "--title", "stop-target"], None);
    let target = target.trim().to_owned();
    tui.wait_text("stop-target");
    let mut adapter = Adapter::spawn(&env, &endpoint);
    let view = adapter.wait_context("ready", unblocked);

    signal(tui.pid(), "STOP");
    // Both calls at once, while the TUI cannot run at all.
    let request_id = uuid();
    let args = select_args(&view, &request_id, &target);
    let read = adapter.start_call("get_view_context", json!({}));
    let select = adapter.start_call("select_session", args.clone());
    // The adapter itself stays responsive meanwhile.
    let ping = adapter.request("ping", json!({}));
    assert!(ping["result"].is_object(), "{ping}");
    // Each answers by the adapter's own deadline (4.5 s; WAIT bounds the test).
    assert_eq!(
        adapter.finish_call(read),
        json!({"status": "rejected", "code": "target_unavailable", "detail": "tui_unreachable"})
    );
    assert_eq!(
        adapter.finish_call(select),
        json!({"status": "rejected", "code": "timeout_unknown"})
    );

    signal(tui.pid(), "CONT");
    // Reconcile as the tool description teaches: read the context.
    let after = adapter.wait_context("answering again", |v| v["status"] == "context");
    assert_eq!(
        after["context"]["instanceId"],
        view["context"]["instanceId"]
    );
    // The late frame either was cancelled (its caller had hung up) or navigated once; the
    // receipt says which, and the screen agrees.
    let receipt = adapter.call("select_session", args.clone());
    eprintln!("the frame sent while stopped ended as: {receipt}");
    match receipt["status"].as_str() {
        Some("applied") => {
            tui.wait_text("stop-target ses_");
        }
        _ => {
            assert!(
                ["cancelled", "stale_revision", "user_active", "not_ready"]
                    .contains(&code(&receipt)),
                "{receipt}"
            );
            assert!(!tui.screen().contains("stop-target ses_"));
            let view = adapter.wait_context("unblocked", unblocked);
            let applied = adapter.call("select_session", select_args(&view, &uuid(), &target));
            assert_eq!(applied["status"], "applied", "{applied}");
            tui.wait_text("stop-target ses_");
        }
    }
    // Same requestId, same receipt, every time.
    assert_eq!(adapter.call("select_session", args), receipt);
    assert!(adapter.finish().success());
}

#[test]
fn endpoint_swapped_for_a_symlink_or_deleted_under_a_live_adapter_is_refused() {
    let env = Env::new();
    let mut tui = Pty::spawn(&env, &["--tui-mcp"], None);
    let endpoint = tui.endpoint_path();
    tui.wait_text("● connected");
    let target = env.ax(&["session", "create", "--title", "swap-target"], None);
    let target = target.trim().to_owned();
    tui.wait_text("swap-target");
    let mut adapter = Adapter::spawn(&env, &endpoint);
    let view = adapter.wait_context("ready", unblocked);
    let unavailable =
        json!({"status": "rejected", "code": "target_unavailable", "detail": "tui_unreachable"});

    // The directory moves away and a symlink takes its name: same files, reached through a
    // link. The adapter refuses before sending anything.
    let dir = endpoint.parent().unwrap().to_owned();
    let moved = dir.with_extension("moved");
    std::fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &dir).unwrap();
    assert!(endpoint.exists(), "the path resolves through the link");
    assert_eq!(adapter.context(), unavailable);
    let args = select_args(&view, &uuid(), &target);
    assert_eq!(adapter.call("select_session", args.clone()), unavailable);
    // A symlinked endpoint.json inside a real private directory is refused as well.
    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(moved.join("endpoint.json"), &endpoint).unwrap();
    std::os::unix::fs::symlink(moved.join("s"), dir.join("s")).unwrap();
    assert_eq!(adapter.context(), unavailable);
    assert_eq!(adapter.call("select_session", args.clone()), unavailable);
    assert!(!tui.screen().contains("swap-target ses_"));

    // Put back: the same adapter works again, and the refused request never reached the TUI
    // (its requestId is still fresh there).
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::rename(&moved, &dir).unwrap();
    let view = adapter.wait_context("reachable again", unblocked);
    let mut again = args.clone();
    again["expectedRevision"] = view["context"]["revision"].clone();
    let applied = adapter.call("select_session", again);
    assert_eq!(applied["status"], "applied", "{applied}");
    tui.wait_text("swap-target ses_");

    // Deleted: refused, and the TUI itself carries on.
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(adapter.context(), unavailable);
    assert_eq!(
        adapter.call("select_session", select_args(&view, &uuid(), &target)),
        unavailable
    );
    assert!(tui.is_running());
    tui.wait_text("TUIMCP on:");
    assert!(adapter.finish().success());
    tui.send("/quit\r");
    assert!(tui.wait_exit().success(), "the TUI exits cleanly");
}

const PAYLOAD: &str = "0123456789abcdef";

/// Complete `line-N` lines, consecutive, in the kept `output` of a terminal card (`dropped`
/// bytes before it: from line 0 when nothing was dropped, else from the first line that
/// starts in it); returns how many.
fn consecutive_lines(output: &str, dropped: u64) -> usize {
    let text = if dropped == 0 {
        output
    } else {
        output.split_once('\n').map_or("", |(_, rest)| rest)
    };
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut lines = complete.lines();
    let Some(first) = lines.next() else {
        return 0;
    };
    let start: usize = first
        .strip_prefix("line-")
        .and_then(|l| l.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a line: {first:?}"));
    assert!(dropped > 0 || start == 0, "from line 0: {first:?}");
    let mut n = 0;
    for line in std::iter::once(first).chain(lines) {
        let at = start + n;
        assert_eq!(
            line,
            format!("line-{at}-{}", PAYLOAD.repeat(6)),
            "line {at} intact"
        );
        n += 1;
    }
    n
}

/// A terminal card's kept output and the bytes dropped before it, from the reply's parts.
fn card(parts: &[Part]) -> (String, u64) {
    support::shell::shell_terminal(parts)
        .map(|(o, d, _)| (o.to_owned(), d))
        .unwrap_or_default()
}

#[test]
fn server_sigkilled_while_writing_a_lot_of_output_loses_nothing_stored() {
    let env = Env::new();
    let mut serve = Serve::start(&env, 0, Some(PASSWORD));
    let rt = runtime();
    let client = Client::new(&serve.url, PASSWORD).unwrap();
    let (quiet, loud, seen) = rt.block_on(async {
        // A finished run first, so the store holds more than the run being cut.
        let quiet = client.create_session(Some("quiet")).await.unwrap().id;
        let mut events = client.events(None);
        let accepted = client.prompt_text(&quiet, "echo done").await.unwrap();
        client
            .reply_permission(
                &quiet,
                &accepted.permission.unwrap().id,
                PermissionReply::Once,
            )
            .await
            .unwrap();
        wait_event(&mut events, |e| {
            matches!(e, Event::SessionStatus { session_id, status: SessionStatus::Idle } if *session_id == quiet)
        })
        .await;

        // Then a command that writes as fast as it can, until the backend dies.
        let loud = client.create_session(Some("loud")).await.unwrap().id;
        let accepted = client
            .prompt_text(
                &loud,
                "x=0123456789abcdef; x=$x$x$x$x$x$x; i=0; while :; do echo \"line-$i-$x\"; i=$((i+1)); done",
            )
            .await
            .unwrap();
        client
            .reply_permission(&loud, &accepted.permission.unwrap().id, PermissionReply::Once)
            .await
            .unwrap();
        // Everything the backend announced before it died, folded in order.
        let mut seen = Vec::new();
        wait_event(&mut events, |e| {
            if let Event::MessageDelta {
                session_id, delta, ..
            } = e
                && *session_id == loud
            {
                turn::apply(&mut seen, delta.clone());
            }
            let parts: Vec<Part> = seen.iter().cloned().map(Part::Turn).collect();
            let has_terminal = parts.iter().any(|p| {
                matches!(p, Part::Turn(turn::TurnPart::ToolCall(t))
                    if t.content.iter().any(|c| matches!(c, turn::ToolContent::Terminal { .. })))
            });
            has_terminal && {
                let (output, dropped) = card(&parts);
                dropped + output.len() as u64 >= 256 * 1024
            }
        })
        .await;
        let seen: Vec<Part> = seen.into_iter().map(Part::Turn).collect();
        (quiet, loud, card(&seen))
    });
    // Killed mid-write.
    serve.kill();
    let db = env.data.join("ax-code.db");
    integrity_ok(&db);

    let restarted = Serve::start(&env, 0, Some(PASSWORD));
    let client = Client::new(&restarted.url, PASSWORD).unwrap();
    let stored = rt.block_on(async {
        let sessions = client.list_sessions().await.unwrap();
        assert_eq!(sessions.len(), 2, "{sessions:?}");
        assert!(sessions.iter().all(|s| s.status == SessionStatus::Idle));
        // Every stored message reads back.
        for s in &sessions {
            client.messages(&s.id).await.unwrap();
        }
        let quiet_msgs = client.messages(&quiet).await.unwrap();
        assert_eq!(
            support::shell::shell_output(&quiet_msgs[1].parts),
            "done\n",
            "{quiet_msgs:?}"
        );
        let loud_msgs = client.messages(&loud).await.unwrap();
        assert_eq!(loud_msgs.len(), 2, "{loud_msgs:?}");
        loud_msgs[1].parts.clone()
    });
    assert_eq!(
        stored.last(),
        Some(&Part::Interrupted),
        "the cut run is marked"
    );
    let (output, dropped) = card(&stored);
    let lines = consecutive_lines(&output, dropped);
    assert!(lines > 0, "some output was stored before the kill");
    // Whatever was announced was stored before it was announced: the stored output goes at
    // least as far, and where the kept ends of both overlap, they are the same bytes (the
    // card keeps the end of the output, so each holds a window of one stream).
    let (seen_output, seen_dropped) = seen;
    let (announced, kept) = (
        seen_dropped + seen_output.len() as u64,
        dropped + output.len() as u64,
    );
    assert!(
        kept >= announced,
        "announced output missing from the store: {announced} bytes announced, {kept} stored"
    );
    let from = seen_dropped.max(dropped);
    if from < announced {
        let a = &seen_output.as_bytes()[(from - seen_dropped) as usize..];
        let b = &output.as_bytes()[(from - dropped) as usize..][..a.len()];
        assert!(a == b, "the announced output differs from the stored one");
    }
    // Only the command's call, the question about it, and the interruption.
    for part in &stored {
        assert!(
            matches!(
                part,
                Part::Turn(turn::TurnPart::ToolCall(_) | turn::TurnPart::Permission(_))
                    | Part::Interrupted
            ),
            "{part:?}"
        );
    }
    drop(restarted);
    integrity_ok(&db);
    eprintln!("{lines} intact lines stored before the kill");
}

fn integrity_ok(db: &std::path::Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

async fn wait_event(events: &mut ax_client::EventStream, mut pred: impl FnMut(&Event) -> bool) {
    tokio::time::timeout(WAIT, async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if pred(&e.event) {
                return;
            }
        }
    })
    .await
    .expect("timed out waiting for an event");
}
