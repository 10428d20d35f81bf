//! The ACP client runtime against the real mock agent process.

mod support;

use ax_acp::{AcpEvent, AnswerError, PromptError, ReplayItem, Restored, SessionError, StartError};
use ax_protocol::turn::{
    NoticeKind, PermissionKind, PermissionOutcome, PlanStatus, ToolContent, ToolStatus, TurnDelta,
    TurnEnd, TurnPart,
};
use support::*;

fn tool<'a>(parts: &'a [TurnPart], id: &str) -> &'a ax_protocol::turn::ToolCallPart {
    parts
        .iter()
        .find_map(|p| match p {
            TurnPart::ToolCall(t) if t.tool_call_id == id => Some(t),
            _ => None,
        })
        .unwrap_or_else(|| panic!("tool call {id} in {parts:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_delta_kind_streams_and_folds_to_the_turn() {
    let mut fx = start(&[]).await;
    let info = fx.agent.info().clone();
    assert_eq!(info.name, "ax-mock-agent");
    assert_eq!(info.protocol_version, 1);
    let turn = run(
        &mut fx,
        "chunks 3\nthought let me think\nthought , harder\nplan read|edit|test\n\
         tool t1 ls -la\ntool-done t1\ndiff src/x.rs old new\nusage\nunknown-update\n\
         text done\nstop max_tokens",
    )
    .await;
    assert_eq!(
        turn.end,
        TurnEnd::Completed {
            stop_reason: "max_tokens".into()
        }
    );
    let p = &turn.parts;
    assert_eq!(
        p[0],
        TurnPart::Text {
            text: "c0 c1 c2 ".into()
        },
        "chunks of one message append to one part"
    );
    assert_eq!(
        p[1],
        TurnPart::Thought {
            text: "let me think, harder".into()
        }
    );
    let TurnPart::Plan { entries } = &p[2] else {
        panic!("{:?}", p[2])
    };
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].status, PlanStatus::InProgress);
    let t1 = tool(p, "t1");
    assert_eq!(t1.status, ToolStatus::Completed);
    assert_eq!(t1.raw_input.as_ref().unwrap()["command"], "ls -la");
    let edit = tool(p, "edit-1");
    assert_eq!(
        edit.content,
        vec![ToolContent::Diff {
            path: "src/x.rs".into(),
            old_text: Some("old".into()),
            new_text: "new".into(),
            line: None,
        }]
    );
    assert_eq!(edit.locations[0].line, Some(1));
    let notices: Vec<_> = p
        .iter()
        .filter_map(|x| match x {
            TurnPart::Notice(n) => Some(n.kind),
            _ => None,
        })
        .collect();
    // Usage is a meter (AcpEvent::Usage), not a transcript line.
    assert_eq!(notices, vec![NoticeKind::Stop]);
    // The unknown update kind was skipped and the turn went on.
    assert!(turn.text().ends_with("done"), "{}", turn.text());
    assert!(fx.agent.is_alive());

    // The deltas are strict wire types: each survives a JSON round trip unchanged.
    for d in &turn.deltas {
        let json = serde_json::to_string(d).unwrap();
        assert_eq!(&serde_json::from_str::<TurnDelta>(&json).unwrap(), d);
    }
    fx.agent.stop().await;
    assert!(!fx.agent.is_alive());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_turn_at_a_time() {
    let mut fx = start(&[]).await;
    fx.agent.prompt_text("wait-cancel").unwrap();
    assert_eq!(fx.agent.prompt_text("text again"), Err(PromptError::Busy));
    assert!(fx.agent.is_busy());
    assert!(fx.agent.cancel());
    let turn = finish(&mut fx.events, Vec::new()).await;
    assert_eq!(turn.end, TurnEnd::Cancelled);
    // The agent answered the cancel itself: it lives and takes the next prompt.
    assert!(fx.agent.is_alive());
    let turn = run(&mut fx, "text again").await;
    assert_eq!(turn.text(), "again");
    fx.agent.stop().await;
}

/// Answers the next permission with `kind`, returns the option id that was sent.
async fn answer(fx: &mut Fixture, deltas: &mut Vec<TurnDelta>, kind: PermissionKind) -> String {
    let p = permission(&mut fx.events, deltas).await;
    assert_eq!(p.outcome, PermissionOutcome::Pending);
    assert_eq!(
        fx.agent.pending_permissions().first().map(|x| x.0.clone()),
        Some(p.permission_id.clone())
    );
    let sent = fx.agent.answer_permission(&p.permission_id, kind).unwrap();
    // Answered exactly once.
    assert!(matches!(
        fx.agent.answer_permission(&p.permission_id, kind),
        Err(AnswerError::Unknown(_))
    ));
    sent.option_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_allow_once_allow_always_reject_once() {
    let mut fx = start(&[]).await;
    for (kind, option, status) in [
        (PermissionKind::AllowOnce, "allow", ToolStatus::Completed),
        (
            PermissionKind::AllowAlways,
            "allow_always",
            ToolStatus::Completed,
        ),
        (PermissionKind::RejectOnce, "reject", ToolStatus::Failed),
    ] {
        fx.agent.prompt_text("permission p1 claude").unwrap();
        let mut deltas = Vec::new();
        assert_eq!(answer(&mut fx, &mut deltas, kind).await, option);
        let turn = finish(&mut fx.events, deltas).await;
        assert_eq!(turn.text(), format!("permission p1: {option}\n"));
        assert_eq!(tool(&turn.parts, "p1").status, status);
        let perm = turn
            .parts
            .iter()
            .find_map(|p| match p {
                TurnPart::Permission(p) => Some(p),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            perm.outcome,
            PermissionOutcome::Selected {
                option_id: option.into(),
                kind
            }
        );
        // The request shows the whole command, newlines included, and the agent's names.
        assert_eq!(perm.tool_call.title, "run step p1\nwith a second line");
        assert_eq!(perm.options.len(), 3);
        // Claude's order: the standing grant first.
        assert_eq!(perm.options[0].name, "Always Allow");
    }
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_without_reject_always_and_several_permissions_in_one_turn() {
    let mut fx = start(&[]).await;
    // Gemini-style: no tool_call before the request; the request's own tool call is shown.
    fx.agent
        .prompt_text("permission-bare g1 gemini\npermission p2 full\npermission c3 codex")
        .unwrap();
    let mut deltas = Vec::new();
    let p = permission(&mut fx.events, &mut deltas).await;
    assert_eq!(p.tool_call.tool_call_id, "g1");
    assert_eq!(p.tool_call.title, "run step g1\nwith a second line");
    assert_eq!(
        p.tool_call.raw_input.as_ref().unwrap()["command"],
        "run step g1\nwith a second line"
    );
    let sent = fx
        .agent
        .answer_permission(&p.permission_id, PermissionKind::AllowAlways)
        .unwrap();
    assert_eq!(sent.option_id, "proceed_always");
    assert_eq!(
        answer(&mut fx, &mut deltas, PermissionKind::RejectAlways).await,
        "o4"
    );
    // Codex offers no reject_always: the narrower reject_once option is sent and named.
    let p = permission(&mut fx.events, &mut deltas).await;
    assert_eq!(
        fx.agent
            .answer_permission(&p.permission_id, PermissionKind::RejectAlways),
        Ok(ax_protocol::turn::PermissionChoice {
            option_id: "abort".into(),
            name: "No, and tell Codex what to do differently".into(),
            kind: PermissionKind::RejectOnce
        })
    );
    let turn = finish(&mut fx.events, deltas).await;
    // Codex's reject aborts its whole turn.
    assert_eq!(turn.end, TurnEnd::Cancelled);
    assert_eq!(
        turn.text(),
        "permission g1: proceed_always\npermission p2: o4\npermission c3: abort\n"
    );
    let perms = turn
        .parts
        .iter()
        .filter(|p| matches!(p, TurnPart::Permission(_)))
        .count();
    assert_eq!(perms, 3);
    fx.agent.stop().await;
}

/// docs/agents.md §5: a request the agent sent no tool call for (Gemini) becomes a card once
/// it is answered: allowed, it runs and the agent's later updates complete it (an abort or a
/// backend stop would mark it cancelled, never leave it pending); rejected, it failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_request_without_a_tool_call_becomes_a_card() {
    let mut fx = start(&[]).await;
    fx.agent
        .prompt_text("permission-bare g1 gemini\npermission-bare g2 gemini")
        .unwrap();
    let mut deltas = Vec::new();
    assert_eq!(
        answer(&mut fx, &mut deltas, PermissionKind::AllowOnce).await,
        "proceed_once"
    );
    assert_eq!(
        answer(&mut fx, &mut deltas, PermissionKind::RejectOnce).await,
        "cancel"
    );
    let turn = finish(&mut fx.events, deltas).await;
    let allowed = tool(&turn.parts, "g1");
    // The mock agent sends no tool call for a bare request, only its later status update.
    assert_eq!(allowed.status, ToolStatus::Completed);
    assert_eq!(allowed.title, "run step g1\nwith a second line");
    assert_eq!(tool(&turn.parts, "g2").status, ToolStatus::Failed);
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_the_agent_does_not_offer_is_refused_and_stays_pending() {
    let mut fx = start(&[]).await;
    fx.agent.prompt_text("permission p1 allow-only").unwrap();
    let mut deltas = Vec::new();
    let p = permission(&mut fx.events, &mut deltas).await;
    assert_eq!(
        fx.agent
            .answer_permission(&p.permission_id, PermissionKind::RejectAlways),
        Err(AnswerError::NoSuchOption {
            kind: PermissionKind::RejectAlways,
            offered: vec!["allow_once".into()]
        })
    );
    assert!(matches!(
        fx.agent.answer_permission(
            &"per_00000000000000000000000999".parse().unwrap(),
            PermissionKind::AllowOnce
        ),
        Err(AnswerError::Unknown(_))
    ));
    assert_eq!(fx.agent.pending_permissions().len(), 1);
    fx.agent
        .answer_permission(&p.permission_id, PermissionKind::AllowOnce)
        .unwrap();
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(turn.text(), "permission p1: ok\n");
    fx.agent.stop().await;
}

/// An answer can name the exact option: the second of a kind is what the agent receives; an
/// id the agent did not offer is refused with the offered ids and stays pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_by_option_id_sends_that_option() {
    let mut fx = start(&[]).await;
    fx.agent.prompt_text("permission p1 codex-exec").unwrap();
    let mut deltas = Vec::new();
    let p = permission(&mut fx.events, &mut deltas).await;
    assert_eq!(
        fx.agent
            .answer_option(&p.permission_id, PermissionKind::RejectOnce, Some("nope")),
        Err(AnswerError::NoSuchOptionId {
            option_id: "nope".into(),
            offered: [
                "approved",
                "approved-for-session",
                "approved-execpolicy-amendment",
                "denied",
                "abort"
            ]
            .map(String::from)
            .to_vec(),
        })
    );
    assert_eq!(fx.agent.pending_permissions().len(), 1);
    let sent = fx
        .agent
        .answer_option(
            &p.permission_id,
            PermissionKind::AllowOnce,
            Some("approved-execpolicy-amendment"),
        )
        .unwrap();
    assert_eq!(
        sent.kind,
        PermissionKind::AllowAlways,
        "the option's own kind"
    );
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(
        turn.text(),
        "permission p1: approved-execpolicy-amendment\n"
    );
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_while_a_permission_is_pending_answers_it_cancelled() {
    let mut fx = start(&[]).await;
    fx.agent
        .prompt_text("tool t0 long job\npermission p1 claude\ntext never")
        .unwrap();
    let mut deltas = Vec::new();
    let p = permission(&mut fx.events, &mut deltas).await;
    assert!(fx.agent.cancel());
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(turn.end, TurnEnd::Cancelled);
    let perm = turn
        .parts
        .iter()
        .find_map(|x| match x {
            TurnPart::Permission(x) => Some(x),
            _ => None,
        })
        .unwrap();
    assert_eq!(perm.outcome, PermissionOutcome::Cancelled);
    assert_eq!(turn.text(), "permission p1: cancelled\n");
    assert_eq!(tool(&turn.parts, "t0").status, ToolStatus::Cancelled);
    assert!(matches!(
        fx.agent
            .answer_permission(&p.permission_id, PermissionKind::AllowOnce),
        Err(AnswerError::Unknown(_))
    ));
    assert!(fx.agent.pending_permissions().is_empty());
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_kills_an_agent_that_ignores_cancel() {
    let mut fx = start(&[]).await;
    fx.agent
        .prompt_text("tool t1 stuck\nignore-cancel")
        .unwrap();
    let mut deltas = Vec::new();
    // Wait until the agent is inside the turn.
    loop {
        match next(&mut fx.events).await {
            AcpEvent::Delta(d) => {
                let created = matches!(d, TurnDelta::ToolCallCreated { .. });
                deltas.push(d);
                if created {
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let pgid = fx.agent.process_group();
    assert!(fx.agent.cancel());
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(turn.end, TurnEnd::Cancelled);
    assert_eq!(tool(&turn.parts, "t1").status, ToolStatus::Cancelled);
    // The process group is gone.
    let alive = rustix::process::test_kill_process_group(
        rustix::process::Pid::from_raw(pgid as i32).unwrap(),
    );
    let deadline = std::time::Instant::now() + WAIT;
    let mut alive = alive.is_ok();
    while alive && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        alive = rustix::process::test_kill_process_group(
            rustix::process::Pid::from_raw(pgid as i32).unwrap(),
        )
        .is_ok();
    }
    assert!(!alive, "the agent's process group was killed");
    // The runtime notices the exit (the group can be gone a moment before it reaps the
    // agent); from then on prompts are refused.
    let deadline = std::time::Instant::now() + WAIT;
    while fx.agent.is_alive() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(fx.agent.prompt_text("text hi"), Err(PromptError::Exited));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_turn_ends_failed_with_the_stderr_tail_and_a_new_process_works() {
    let mut fx = start(&[]).await;
    fx.agent
        .prompt_text("text before the crash\ncrash")
        .unwrap();
    let mut saw_exit = false;
    let turn = loop {
        match next(&mut fx.events).await {
            AcpEvent::TurnEnded { end, parts } => break (end, parts),
            AcpEvent::Exited { stderr_tail, .. } => {
                saw_exit = true;
                assert!(stderr_tail.contains("crashing on purpose"));
            }
            _ => {}
        }
    };
    let TurnEnd::Failed {
        message,
        stderr_tail,
    } = &turn.0
    else {
        panic!("{:?}", turn.0)
    };
    assert!(message.contains("exited mid-turn"), "{message}");
    assert!(message.contains("exit status 3"), "{message}");
    assert!(stderr_tail.contains("crashing on purpose"), "{stderr_tail}");
    assert!(
        turn.1.contains(&TurnPart::Text {
            text: "before the crash".into()
        }),
        "what streamed before the crash is kept: {:?}",
        turn.1
    );
    if !saw_exit {
        assert!(matches!(
            next(&mut fx.events).await,
            AcpEvent::Exited { .. }
        ));
    }
    assert_eq!(fx.agent.prompt_text("text hi"), Err(PromptError::Exited));
    // The session stays usable: the next prompt runs on a new process.
    let (mut agent, mut events) = try_start(&[], fx.project.path()).await.unwrap();
    agent.open_session(Vec::new(), None).await.unwrap();
    agent.prompt_text("text alive").unwrap();
    let turn = finish(&mut events, Vec::new()).await;
    assert_eq!(turn.text(), "alive");
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_survived() {
    let mut fx = start(&[]).await;
    let turn = run(&mut fx, "garbage\ntext still here").await;
    assert_eq!(
        turn.end,
        TurnEnd::Completed {
            stop_reason: "end_turn".into()
        }
    );
    assert_eq!(turn.text(), "still here");
    let turn = run(&mut fx, "text and again").await;
    assert_eq!(turn.text(), "and again");
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_protocol_version_is_refused_clearly() {
    let project = tempfile::tempdir().unwrap();
    let err = match try_start(&[("AX_MOCK_PROTOCOL_VERSION", "2")], project.path()).await {
        Ok(_) => panic!("a version 2 agent must be refused"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(matches!(err, StartError::ProtocolVersion { .. }), "{err:?}");
    assert!(msg.contains("protocol version"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_needs_auth_says_so_with_its_methods() {
    let project = tempfile::tempdir().unwrap();
    let (mut agent, _events) = try_start(&[("AX_MOCK_REQUIRE_AUTH", "1")], project.path())
        .await
        .unwrap();
    assert_eq!(agent.info().auth_methods.len(), 1);
    match agent.open_session(Vec::new(), None).await {
        Err(SessionError::NeedsAuth { auth_methods }) => {
            assert_eq!(auth_methods[0].name, "Mock API key");
            assert_eq!(
                auth_methods[0].description.as_deref(),
                Some("set MOCK_API_KEY in the agent's env")
            );
        }
        other => panic!("{other:?}"),
    }
    agent.stop().await;

    // -32000 on a prompt ends that turn needs_auth; the session stays usable.
    let mut fx = start(&[]).await;
    let turn = run(&mut fx, "auth").await;
    assert!(
        matches!(turn.end, TurnEnd::NeedsAuth { .. }),
        "{:?}",
        turn.end
    );
    assert!(matches!(
        turn.parts.last(),
        Some(TurnPart::Notice(n)) if n.kind == NoticeKind::Auth
    ));
    assert_eq!(run(&mut fx, "text ok").await.text(), "ok");
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_loads_with_replay_else_resumes_else_says_context_was_lost() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap().to_string();
    let env = [
        ("AX_MOCK_STATE_DIR", state_dir.as_str()),
        ("AX_MOCK_LOAD", "1"),
    ];
    let mut fx = start(&env).await;
    assert!(fx.agent.info().load_session);
    let id = fx.agent.session().unwrap().session_id.clone();
    assert_eq!(
        run(&mut fx, "text first answer").await.text(),
        "first answer"
    );
    fx.agent.stop().await;

    // A new process, session/load: the history comes back as replay, never as a live turn.
    let (mut agent, mut events) = try_start(&env, fx.project.path()).await.unwrap();
    let info = agent.open_session(Vec::new(), Some(&id)).await.unwrap();
    assert_eq!(info.restored, Restored::Loaded);
    assert_eq!(info.session_id, id);
    let mut replay = Vec::new();
    while let Ok(e) = events.try_recv() {
        replay.push(e);
    }
    assert_eq!(
        replay,
        vec![
            AcpEvent::Replay(ReplayItem::User("text first answer".into())),
            AcpEvent::Replay(ReplayItem::Agent(Box::new(TurnDelta::TextAppended {
                text: "first answer".into()
            }))),
        ]
    );
    agent.prompt_text("text second").unwrap();
    assert_eq!(finish(&mut events, Vec::new()).await.text(), "second");
    agent.stop().await;

    // session/resume: restored without replay.
    let env = [
        ("AX_MOCK_STATE_DIR", state_dir.as_str()),
        ("AX_MOCK_RESUME", "1"),
    ];
    let (mut agent, mut events) = try_start(&env, fx.project.path()).await.unwrap();
    let info = agent.open_session(Vec::new(), Some(&id)).await.unwrap();
    assert_eq!(info.restored, Restored::Resumed);
    // A turn after the resume: every event up to its end arrives after any replay would
    // have, and none is a replay.
    agent.prompt_text("text third").unwrap();
    let mut seen = Vec::new();
    loop {
        let event = next(&mut events).await;
        let ended = matches!(event, AcpEvent::TurnEnded { .. });
        seen.push(event);
        if ended {
            break;
        }
    }
    assert!(
        !seen.iter().any(|e| matches!(e, AcpEvent::Replay(_))),
        "no replay on resume: {seen:?}"
    );
    agent.stop().await;

    // Neither: a new session and a visible notice.
    let (mut agent, mut events) = try_start(&[], fx.project.path()).await.unwrap();
    let info = agent.open_session(Vec::new(), Some(&id)).await.unwrap();
    assert_eq!(info.restored, Restored::NotRestored);
    assert_ne!(info.session_id, id);
    match next(&mut events).await {
        AcpEvent::Idle(TurnDelta::Notice { notice }) => {
            assert_eq!(notice.kind, NoticeKind::Info);
            assert!(
                notice.message.contains("not restored"),
                "{}",
                notice.message
            );
        }
        other => panic!("{other:?}"),
    }
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_never_starts_in_a_bypass_mode() {
    let mut fx = start(&[("AX_MOCK_INITIAL_MODE", "bypassPermissions")]).await;
    let modes = fx.agent.session().unwrap().modes.clone().unwrap();
    assert_eq!(modes.current, "default");
    assert_eq!(modes.available.len(), 3);
    assert_eq!(run(&mut fx, "mode").await.text(), "mode: default");
    fx.agent.set_mode("acceptEdits").await.unwrap();
    assert_eq!(run(&mut fx, "mode").await.text(), "mode: acceptEdits");
    assert_eq!(fx.agent.modes().unwrap().current, "acceptEdits");
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_through_the_agent_stay_inside_the_project() {
    let mut fx = start(&[]).await;
    let p = project_path(&fx);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s3cret").unwrap();

    let turn = run(
        &mut fx,
        &format!("write {}/notes/a.txt hello there", p.display()),
    )
    .await;
    assert_eq!(turn.text(), "write: ok");
    assert_eq!(
        std::fs::read_to_string(p.join("notes/a.txt")).unwrap(),
        "hello there"
    );
    let turn = run(&mut fx, &format!("read {}/notes/a.txt", p.display())).await;
    assert_eq!(turn.text(), "read: ok hello there");

    for path in [
        format!("{}/../{}", p.display(), "etc-passwd-ish"),
        outside.path().join("secret").display().to_string(),
    ] {
        let turn = run(&mut fx, &format!("read {path}")).await;
        assert_eq!(turn.text(), "read: error -32602", "{path}");
    }
    let turn = run(
        &mut fx,
        &format!("write {}/x.txt pwned", outside.path().display()),
    )
    .await;
    assert_eq!(turn.text(), "write: error -32602");
    assert!(!outside.path().join("x.txt").exists());

    // A symlink planted after earlier requests went through is caught at the next use.
    std::os::unix::fs::symlink(outside.path(), p.join("notes/link")).unwrap();
    let turn = run(&mut fx, &format!("read {}/notes/link/secret", p.display())).await;
    assert_eq!(turn.text(), "read: error -32602");
    let turn = run(
        &mut fx,
        &format!("write {}/notes/link/planted yes", p.display()),
    )
    .await;
    assert_eq!(turn.text(), "write: error -32602");
    assert!(!outside.path().join("planted").exists());

    std::fs::write(p.join("big"), vec![b'a'; 10 * 1024 * 1024 + 1]).unwrap();
    let turn = run(&mut fx, &format!("read {}/big", p.display())).await;
    assert_eq!(turn.text(), "read: error -32602");
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminals_keep_the_end_wait_kill_and_release() {
    let mut fx = start(&[]).await;
    let turn = run(&mut fx, "term 10 printf 0123456789abcdefghij; exit 4").await;
    assert_eq!(
        turn.text(),
        "term: exit=4 signal=- truncated=true output=abcdefghij"
    );
    assert_eq!(
        tool(&turn.parts, "term-call").content,
        vec![ToolContent::Terminal {
            terminal_id: "term-1".into(),
            // The card shows the output live (its own bound, not the agent's) and the exit.
            output: "0123456789abcdefghij".into(),
            dropped_bytes: 0,
            exit: Some(ax_protocol::turn::TerminalExit {
                exit_code: Some(4),
                signal: None
            }),
        }]
    );
    let turn = run(&mut fx, "term-kill sleep 30").await;
    assert_eq!(
        turn.text(),
        "term: exit=- signal=SIGKILL truncated=false output="
    );
    let turn = run(&mut fx, "term 100 echo \"$PWD\"").await;
    assert_eq!(
        turn.text(),
        format!(
            "term: exit=0 signal=- truncated=false output={}\n",
            project_path(&fx).display()
        )
    );
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_a_busy_agent_and_its_turn() {
    let mut fx = start(&[]).await;
    fx.agent
        .prompt_text("permission p1 claude\nignore-cancel")
        .unwrap();
    let mut deltas = Vec::new();
    let _asked = permission(&mut fx.events, &mut deltas).await;
    let started = std::time::Instant::now();
    fx.agent.stop().await;
    assert!(!fx.agent.is_alive());
    assert!(started.elapsed() < WAIT);
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(turn.end, TurnEnd::Cancelled);
}

/// The lines the mock agent read from its stdin (`AX_MOCK_INPUT_LOG`), as JSON; the last one
/// must say that stdin closed.
fn read_input_log(path: &std::path::Path) -> Vec<serde_json::Value> {
    let log = std::fs::read_to_string(path).expect("the agent's input log");
    let mut lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.pop(),
        Some(ax_mock_agent::INPUT_LOG_EOF),
        "the agent read its stdin to the end: {log}"
    );
    lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// docs/agents.md §2, §5: a stop answers the permission request the agent is waiting on
/// `cancelled`, and that answer reaches the agent before its stdin closes, also when the
/// agent keeps running after stdin closes (and is stopped by the signal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_answers_a_pending_permission_before_stdin_closes() {
    for ignore_eof in ["0", "1"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("input.jsonl");
        let mut fx = start(&[
            ("AX_MOCK_INPUT_LOG", log.to_str().unwrap()),
            ("AX_MOCK_IGNORE_EOF", ignore_eof),
        ])
        .await;
        fx.agent
            .prompt_text("tool t0 long job\npermission p1 claude\ntext never")
            .unwrap();
        let mut deltas = Vec::new();
        // Held, as a turn holds it, while the agent is stopped; the agent asked nothing else,
        // so the one answer it reads is this request's.
        let asked = permission(&mut fx.events, &mut deltas).await;
        fx.agent.stop().await;
        assert!(!asked.responder.is_open());
        let read = read_input_log(&log);
        let answers: Vec<&serde_json::Value> =
            read.iter().filter(|m| m.get("method").is_none()).collect();
        assert_eq!(
            answers.len(),
            1,
            "one answer, to the permission request (ignore_eof={ignore_eof}): {read:?}"
        );
        assert_eq!(
            answers[0]["result"],
            serde_json::json!({"outcome": {"outcome": "cancelled"}}),
            "ignore_eof={ignore_eof}: {read:?}"
        );
        // The turn ends cancelled, and the agent ends as stopping it ends it: by itself once
        // it has read its stdin to the end (after the answer), else by the SIGTERM.
        let (mut ended, mut status) = (None, None);
        while ended.is_none() || status.is_none() {
            match next(&mut fx.events).await {
                AcpEvent::TurnEnded { end, .. } => ended = Some(end),
                AcpEvent::Exited { status: s, .. } => status = Some(s),
                _ => {}
            }
        }
        assert_eq!(ended, Some(TurnEnd::Cancelled));
        let expected = if ignore_eof == "1" {
            "killed by signal 15"
        } else {
            "exit status 0"
        };
        assert_eq!(status.as_deref(), Some(expected));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sessions_at_once_with_permissions_have_no_cross_talk() {
    let mut tasks = Vec::new();
    for i in 0..20usize {
        tasks.push(tokio::spawn(async move {
            let mut fx = start(&[]).await;
            fx.agent
                .prompt_text(&format!(
                    "text s{i}\nchunks 50\npermission p{i} claude\ntext end{i}"
                ))
                .unwrap();
            let mut deltas = Vec::new();
            let p = permission(&mut fx.events, &mut deltas).await;
            assert_eq!(p.tool_call.tool_call_id, format!("p{i}"));
            let kind = if i % 2 == 0 {
                PermissionKind::AllowOnce
            } else {
                PermissionKind::RejectOnce
            };
            let sent = fx.agent.answer_permission(&p.permission_id, kind).unwrap();
            let turn = finish(&mut fx.events, deltas).await;
            let chunks: String = (0..50).map(|c| format!("c{c} ")).collect();
            assert_eq!(
                turn.text(),
                format!("s{i}{chunks}permission p{i}: {}\nend{i}", sent.option_id)
            );
            fx.agent.stop().await;
        }));
    }
    for t in tasks {
        t.await.expect("session task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_can_call_the_mcp_servers_the_session_gives_it() {
    let project = tempfile::tempdir().unwrap();
    let (mut agent, mut events) = try_start(&[], project.path()).await.unwrap();
    let screen = ax_acp::schema::McpServer::Stdio(
        ax_acp::schema::McpServerStdio::new("screen", env!("CARGO_BIN_EXE_ax-mock-agent"))
            .args(vec!["--mcp-server".into()]),
    );
    agent.open_session(vec![screen], None).await.unwrap();
    agent.prompt_text("mcp screen {\"op\":\"split\"}").unwrap();
    let turn = finish(&mut events, Vec::new()).await;
    assert_eq!(
        turn.text(),
        "mcp: tools=screen result=screen called with {\"op\":\"split\"}"
    );
    agent.stop().await;
}

/// Stops the agent and returns how its process ended, as the exit event reports it.
async fn stop_and_status(mut fx: Fixture) -> (String, std::time::Duration) {
    let t0 = std::time::Instant::now();
    fx.agent.stop().await;
    let took = t0.elapsed();
    assert!(!fx.agent.is_alive());
    loop {
        if let AcpEvent::Exited { status, .. } = next(&mut fx.events).await {
            return (status, took);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_closes_stdin_then_terms_then_kills_the_group() {
    // An agent that exits when stdin closes: no signal needed.
    let (status, _) = stop_and_status(start(&[]).await).await;
    assert_eq!(status, "exit status 0");
    // One that keeps running after stdin closes gets SIGTERM after stop_term_after.
    let (status, took) = stop_and_status(start(&[("AX_MOCK_IGNORE_EOF", "1")]).await).await;
    assert_eq!(status, "killed by signal 15");
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
    // One that also ignores SIGTERM gets SIGKILL after stop_kill_after more.
    let (status, took) =
        stop_and_status(start(&[("AX_MOCK_IGNORE_EOF", "1"), ("AX_MOCK_IGNORE_TERM", "1")]).await)
            .await;
    assert_eq!(status, "killed by signal 9");
    assert!(took >= std::time::Duration::from_millis(800), "{took:?}");
}

/// Every event until the turn ends (whatever their kind).
async fn events_to_end(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<AcpEvent>,
) -> Vec<AcpEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next(events).await;
        let ended = matches!(event, AcpEvent::TurnEnded { .. });
        seen.push(event);
        if ended {
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_a_meter_not_a_transcript_line() {
    let mut fx = start(&[("AX_MOCK_STEP_USAGE", "1")]).await;
    fx.agent
        .prompt_text("text a\ntext b\nusage 5 10 0.25")
        .unwrap();
    let seen = events_to_end(&mut fx.events).await;
    let usage: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            AcpEvent::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    // One after each step (as Claude sends them), the scripted one among them.
    assert_eq!(usage.len(), 4, "{usage:?}");
    assert_eq!(usage[0].used, 1000);
    assert_eq!(usage[0].size, 200_000);
    assert_eq!(usage[2].used, 5);
    assert_eq!(
        usage[2]
            .cost
            .as_ref()
            .map(|c| (c.amount, c.currency.as_str())),
        Some((0.25, "USD"))
    );
    let Some(AcpEvent::TurnEnded { parts, .. }) = seen.last() else {
        panic!("{seen:?}")
    };
    assert!(
        !parts.iter().any(|p| matches!(p, TurnPart::Notice(_))),
        "no usage notice in the transcript: {parts:?}"
    );
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_replay_after_the_load_answer_is_never_new_work() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap().to_string();
    let env = [
        ("AX_MOCK_STATE_DIR", state_dir.as_str()),
        ("AX_MOCK_LOAD", "1"),
        ("AX_MOCK_REPLAY", "gemini"),
    ];
    let mut fx = start(&env).await;
    let id = fx.agent.session().unwrap().session_id.clone();
    let first = run(
        &mut fx,
        "text Fixing add().\ntool r1 ReadFile\ntool-done r1\ntool s1 Shell\ntool-done s1\n\
         text Fixed add(); tests pass.",
    )
    .await;
    fx.agent.stop().await;
    let mut history = ax_acp::StoredHistory::default();
    for p in &first.parts {
        match p {
            TurnPart::Text { text } => history.texts.push((false, text.clone())),
            TurnPart::ToolCall(t) => {
                history.tool_call_ids.insert(t.tool_call_id.clone());
            }
            _ => {}
        }
    }

    // A new process loads the session; Gemini keeps replaying after its answer.
    let (mut agent, mut events) = try_start(&env, fx.project.path()).await.unwrap();
    agent.expect_history(history);
    let info = agent.open_session(Vec::new(), Some(&id)).await.unwrap();
    assert_eq!(info.restored, Restored::Loaded);
    // The same answer again is new work and shows once.
    agent.prompt_text("text Fixed add(); tests pass.").unwrap();
    let seen = events_to_end(&mut events).await;
    for e in &seen {
        match e {
            AcpEvent::Delta(TurnDelta::ToolCallCreated { tool_call })
            | AcpEvent::Idle(TurnDelta::ToolCallCreated { tool_call }) => {
                panic!("an old tool call shown as new: {tool_call:?}")
            }
            AcpEvent::Idle(TurnDelta::TextAppended { text }) => {
                panic!("old text shown outside the replay: {text}")
            }
            _ => {}
        }
    }
    let Some(AcpEvent::TurnEnded { parts, .. }) = seen.last() else {
        panic!("{seen:?}")
    };
    assert_eq!(
        parts,
        &vec![TurnPart::Text {
            text: "Fixed add(); tests pass.".into()
        }],
        "only the new work is in the new turn"
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, AcpEvent::Replay(ReplayItem::Agent(d))
            if matches!(&**d, TurnDelta::ToolCallCreated { .. }))),
        "the old tool calls came back as replay: {seen:?}"
    );
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_reject_keeps_its_card_and_says_why_the_turn_ended() {
    let mut fx = start(&[]).await;
    fx.agent.prompt_text("exec c1 rm -rf build").unwrap();
    let mut deltas = Vec::new();
    let p = permission(&mut fx.events, &mut deltas).await;
    // Codex's shape: the command is the title, an array in rawInput, with its cwd.
    assert_eq!(p.tool_call.title, "rm -rf build");
    let raw = p.tool_call.raw_input.clone().unwrap();
    assert_eq!(raw["command"][2], "rm -rf build");
    assert!(raw["cwd"].is_string(), "{raw}");
    let sent = fx
        .agent
        .answer_permission(&p.permission_id, PermissionKind::RejectOnce)
        .unwrap();
    assert_eq!(sent.option_id, "abort");
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(turn.end, TurnEnd::Cancelled);
    let card = tool(&turn.parts, "c1");
    assert_eq!(card.title, "rm -rf build");
    assert_eq!(card.status, ToolStatus::Failed);
    let notice = turn
        .parts
        .iter()
        .find_map(|p| match p {
            TurnPart::Notice(n) => Some(n),
            _ => None,
        })
        .expect("a notice says why the turn ended");
    assert_eq!(notice.kind, NoticeKind::Stop);
    assert!(
        notice.message.contains("after you rejected `rm -rf build`"),
        "{}",
        notice.message
    );
    // The person's own abort is no such case: no notice.
    fx.agent.prompt_text("wait-cancel").unwrap();
    assert!(fx.agent.cancel());
    let turn = finish(&mut fx.events, Vec::new()).await;
    assert!(!turn.parts.iter().any(|p| matches!(p, TurnPart::Notice(_))));
    fx.agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_numbered_by_where_it_is_in_the_file() {
    let mut fx = start(&[]).await;
    let file = project_path(&fx).join("m.py");
    std::fs::write(&file, "a\nb\nc\nd\nreturn old5\nz\n").unwrap();
    fx.agent.prompt_text("edit e1 m.py old5 new5").unwrap();
    let mut deltas = Vec::new();
    let p = permission(&mut fx.events, &mut deltas).await;
    let line_of = |content: &[ToolContent]| match content {
        [ToolContent::Diff { line, .. }] => *line,
        other => panic!("{other:?}"),
    };
    // The approval shows the fragment's true line, not 1.
    assert_eq!(line_of(&p.tool_call.content), Some(5));
    fx.agent
        .answer_permission(&p.permission_id, PermissionKind::AllowOnce)
        .unwrap();
    let turn = finish(&mut fx.events, deltas).await;
    assert_eq!(line_of(&tool(&turn.parts, "e1").content), Some(5));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "a\nb\nc\nd\nreturn new5\nz\n"
    );
    fx.agent.stop().await;
}

/// docs/agents.md §4: the command list the agent sends right after answering `session/new`
/// (which may be read before that answer) is offered for the session and kept, never as a
/// turn event; a new list replaces it, and a receiver is woken for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_arrive_once_the_session_opens() {
    let mut fx = start(&[]).await;
    let mut offers = fx.agent.offers();
    let first = tokio::time::timeout(WAIT, offers.wait_for(|o| o.commands.is_some()))
        .await
        .expect("the commands in time")
        .expect("the agent is running")
        .commands
        .clone()
        .unwrap();
    let names: Vec<&str> = first.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["compact", "review"]);
    assert_eq!(first[1].input_hint.as_deref(), Some("what to review"));
    assert_eq!(fx.agent.commands(), first);
    fx.agent.prompt_text("commands init").unwrap();
    loop {
        let event = tokio::time::timeout(WAIT, fx.events.recv())
            .await
            .expect("an event in time")
            .expect("event stream open");
        if let AcpEvent::TurnEnded { .. } = event {
            break;
        }
    }
    assert!(
        offers.has_changed().unwrap(),
        "the new list wakes the receiver"
    );
    let now = offers.borrow_and_update().commands.clone().unwrap();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].name, "init");
    assert_eq!(fx.agent.commands(), now);
}
