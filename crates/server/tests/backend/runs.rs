use ax_protocol::{
    Event, Part, PermissionReply, PermissionState, Prompt, PromptPart, Role, SessionId,
    SessionStatus,
    turn::{self, PermissionKind, PermissionOutcome, TERMINAL_OUTPUT_KEPT, ToolStatus, TurnPart},
};

use crate::util::{
    Backend, eventually, last_reply, next_matching, process_gone, shell_call, shell_exit,
    shell_output, shell_permission, shell_said, shell_terminal, wait_status,
};

#[tokio::test]
async fn once_runs_the_command_and_streams_output_in_order() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    // Read from the start for the reply's deltas, while `events` waits for statuses.
    let mut deltas = b.events().await;
    let command = "echo one; sleep 0.2; echo two >&2; sleep 0.2; seq 1 500; exit 7";
    let accepted = b.client.prompt_text(&id, command).await.unwrap();
    let permission = accepted.permission.expect("the shell agent asks first");
    assert_eq!(permission.command, command);
    assert_eq!(permission.state, PermissionState::Pending);
    wait_status(&mut events, &id, SessionStatus::Pending).await;
    assert_eq!(
        b.client.get_session(&id).await.unwrap().status,
        SessionStatus::Pending
    );
    let pending = b.client.permissions().await.unwrap();
    assert_eq!(pending, vec![permission.clone()]);
    // Nothing ran yet: the call waits for the answer and shows no terminal.
    let reply = last_reply(&b.client.messages(&id).await.unwrap()).clone();
    assert_eq!(shell_call(&reply.parts).status, ToolStatus::Pending);
    assert_eq!(shell_call(&reply.parts).title, command);
    assert!(shell_terminal(&reply.parts).is_none(), "{:?}", reply.parts);

    let answered = b
        .client
        .reply_permission(&id, &permission.id, PermissionReply::Once)
        .await
        .unwrap();
    assert_eq!(answered.state, PermissionState::Approved);

    // Every delta of the reply, from its first, folded as it streamed, until the turn ends.
    let mut streamed = Vec::new();
    let mut next_seq = 1;
    let mut statuses = Vec::new();
    loop {
        let e = next_matching(&mut deltas, |e| {
            matches!(e, Event::MessageDelta { .. } | Event::SessionStatus { .. })
        })
        .await;
        match e.event {
            Event::MessageDelta {
                message_id,
                seq,
                delta,
                ..
            } => {
                assert_eq!(message_id, accepted.reply_id);
                assert_eq!(seq, next_seq, "deltas arrive in seq order");
                next_seq += 1;
                turn::apply(&mut streamed, delta);
            }
            Event::SessionStatus { status, .. } => {
                statuses.push(status);
                if status == SessionStatus::Idle {
                    break;
                }
            }
            _ => unreachable!(),
        }
    }
    assert_eq!(
        statuses,
        [
            SessionStatus::Busy,
            SessionStatus::Pending,
            SessionStatus::Busy,
            SessionStatus::Idle
        ]
    );
    let streamed: Vec<Part> = streamed.into_iter().map(Part::Turn).collect();
    // stdout and stderr are one stream in a terminal, in the order they were written: one
    // (stdout), then two (stderr), then the numbers.
    let expected: String = ["one\n".to_owned(), "two\n".to_owned()]
        .into_iter()
        .chain((1..=500).map(|i| format!("{i}\n")))
        .collect();
    assert_eq!(shell_output(&streamed), expected);
    assert_eq!(shell_exit(&streamed), Some((Some(7), None)));
    assert_eq!(shell_call(&streamed).status, ToolStatus::Failed);

    let messages = b.client.messages(&id).await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].role, Role::User);
    assert_eq!(
        messages[0].parts,
        vec![Part::Text {
            text: command.into()
        }]
    );
    assert_eq!(messages[1].role, Role::Assistant);
    assert_eq!(
        messages[1].parts, streamed,
        "the transcript equals the stream"
    );
    assert_eq!(
        b.client.get_session(&id).await.unwrap().status,
        SessionStatus::Idle
    );
    assert!(b.client.permissions().await.unwrap().is_empty());
}

#[tokio::test]
async fn reject_runs_nothing() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let marker = b.project_path().join("marker");
    let accepted = b.client.prompt_text(&id, "touch marker").await.unwrap();
    let pid = accepted.permission.unwrap().id;
    let answered = b
        .client
        .reply_permission(&id, &pid, PermissionReply::Reject)
        .await
        .unwrap();
    assert_eq!(answered.state, PermissionState::Rejected);
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    assert!(!marker.exists(), "a rejected command must not run");
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    assert_eq!(shell_call(parts).status, ToolStatus::Failed);
    assert!(shell_terminal(parts).is_none(), "nothing ran: {parts:?}");
    assert!(matches!(
        &shell_permission(parts).outcome,
        PermissionOutcome::Selected {
            kind: PermissionKind::RejectOnce,
            ..
        }
    ));
    // A second reply to the same permission is a conflict.
    let again = b
        .client
        .reply_permission(&id, &pid, PermissionReply::Once)
        .await
        .unwrap_err();
    assert_eq!(again.status(), Some(409));
    assert!(!marker.exists());
}

#[tokio::test]
async fn always_stops_asking() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let first = b.client.prompt_text(&id, "echo first").await.unwrap();
    b.client
        .reply_permission(&id, &first.permission.unwrap().id, PermissionReply::Always)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;

    let second = b.client.prompt_text(&id, "echo second").await.unwrap();
    assert!(second.permission.is_none(), "always means no new question");
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    assert_eq!(shell_output(parts), "second\n");
    assert_eq!(shell_exit(parts), Some((Some(0), None)));
    assert_eq!(shell_call(parts).status, ToolStatus::Completed);
    assert!(
        !parts
            .iter()
            .any(|p| matches!(p, Part::Turn(TurnPart::Permission(_)))),
        "not asked: {parts:?}"
    );
    // Another session still asks.
    let other = b.session().await;
    assert!(
        b.client
            .prompt_text(&other, "true")
            .await
            .unwrap()
            .permission
            .is_some()
    );
    assert!(
        b.client
            .get_session(&other)
            .await
            .unwrap()
            .standing
            .is_empty()
    );
}

#[tokio::test]
async fn a_standing_always_is_shown_and_revoked() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    assert!(b.client.get_session(&id).await.unwrap().standing.is_empty());
    let first = b.client.prompt_text(&id, "true").await.unwrap();
    b.client
        .reply_permission(&id, &first.permission.unwrap().id, PermissionReply::Always)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let shown = b.client.get_session(&id).await.unwrap();
    assert_eq!(shown.standing.len(), 1, "{shown:?}");
    assert_eq!(
        shown.standing[0].title,
        "run every command in this session without asking"
    );
    let listed = b.client.list_sessions().await.unwrap();
    assert_eq!(
        listed.iter().find(|s| s.id == id).unwrap().standing,
        shown.standing
    );

    let revoked = b.client.revoke_standing(&id).await.unwrap();
    assert!(revoked.standing.is_empty());
    assert!(b.client.get_session(&id).await.unwrap().standing.is_empty());
    let asked = b.client.prompt_text(&id, "true").await.unwrap();
    assert!(
        asked.permission.is_some(),
        "after revoking, the agent asks again"
    );
    // While it waits for the answer, revoking is refused: a turn is running.
    let busy = b.client.revoke_standing(&id).await.unwrap_err();
    assert_eq!(busy.status(), Some(409));
    // A malformed or unknown session: a clear 400 / 404.
    let missing: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
    assert_eq!(
        b.client
            .revoke_standing(&missing)
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}

#[tokio::test]
async fn abort_kills_the_command_and_its_children() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let pidfile = b.project_path().join("child.pid");
    let accepted = b
        .client
        .prompt_text(&id, "sleep 300 & echo $! > child.pid; echo started; wait")
        .await
        .unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    eventually("the child pid file", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let child: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(child), "the child runs before the abort");

    let result = b.client.abort(&id).await.unwrap();
    assert!(result.aborted);
    eventually("the child process is killed", || process_gone(child)).await;
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    assert_eq!(shell_call(parts).status, ToolStatus::Cancelled, "{parts:?}");
    assert!(shell_output(parts).starts_with("started\n"), "{parts:?}");
    assert!(
        !b.client.abort(&id).await.unwrap().aborted,
        "nothing left to abort"
    );
}

#[tokio::test]
async fn abort_while_pending_cancels_the_question() {
    let b = Backend::start().await;
    let id = b.session().await;
    let accepted = b.client.prompt_text(&id, "touch marker").await.unwrap();
    assert!(b.client.abort(&id).await.unwrap().aborted);
    assert!(b.client.permissions().await.unwrap().is_empty());
    let pid = accepted.permission.unwrap().id;
    let late = b
        .client
        .reply_permission(&id, &pid, PermissionReply::Once)
        .await
        .unwrap_err();
    assert_eq!(late.status(), Some(409));
    assert!(!b.project_path().join("marker").exists());
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    assert_eq!(shell_call(parts).status, ToolStatus::Cancelled, "{parts:?}");
    assert_eq!(
        shell_permission(parts).outcome,
        PermissionOutcome::Cancelled
    );
    assert!(shell_terminal(parts).is_none(), "nothing ran: {parts:?}");
}

#[tokio::test]
async fn a_prompt_while_pending_or_busy_is_refused() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&id, "sleep 300").await.unwrap();
    let err = b.client.prompt_text(&id, "echo no").await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert!(
        err.api().unwrap().message.contains("waiting for approval"),
        "{err}"
    );

    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Busy).await;
    let err = b.client.prompt_text(&id, "echo no").await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert!(err.api().unwrap().message.contains("busy"), "{err}");
    // The refused prompts stored nothing.
    assert_eq!(b.client.messages(&id).await.unwrap().len(), 2);
    b.client.abort(&id).await.unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
}

#[tokio::test]
async fn attachments_reach_the_command_as_paths() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    std::fs::create_dir(b.project_path().join("docs")).unwrap();
    std::fs::write(b.project_path().join("docs/a b.txt"), "alpha\n").unwrap();
    let prompt = Prompt {
        parts: vec![
            PromptPart::Text {
                text: "cat \"$1\"; printf %s \"$AX_ATTACHMENTS\" | wc -l".into(),
            },
            PromptPart::File {
                path: "docs/a b.txt".into(),
            },
        ],
    };
    let accepted = b.client.prompt(&id, &prompt).await.unwrap();
    assert_eq!(
        accepted.message.parts[1],
        Part::File {
            path: "docs/a b.txt".into()
        }
    );
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let out = shell_output(&last_reply(&messages).parts);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        vec!["alpha", "1"]
    );
}

/// The command's terminal card keeps the end of a long output, the bytes dropped before it
/// counted (every terminal card's bound, docs/backend.md "One agent model"); what the agent
/// reads of it (`terminal/output`) is bounded by the output limit.
#[tokio::test]
async fn output_is_bounded_with_a_visible_marker() {
    let b = Backend::start_with(|c| c.limits.output_bytes_per_message = 1000).await;
    let id = b.session().await;
    let mut events = b.events().await;
    let total = TERMINAL_OUTPUT_KEPT + 5000;
    let accepted = b
        .client
        .prompt_text(&id, &format!("head -c {total} /dev/zero | tr '\\0' x"))
        .await
        .unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    let (output, dropped, _) = shell_terminal(parts).expect("a terminal");
    assert_eq!(output, "x".repeat(TERMINAL_OUTPUT_KEPT));
    assert_eq!(dropped, 5000, "{parts:?}");
    assert_eq!(shell_exit(parts), Some((Some(0), None)));
    let raw = shell_call(parts)
        .raw_output
        .clone()
        .expect("the command's end");
    assert_eq!(
        raw["truncated"], true,
        "the agent read the last 1000 bytes only"
    );
}

#[tokio::test]
async fn deleting_a_busy_session_kills_its_command() {
    let b = Backend::start().await;
    let id = b.session().await;
    let pidfile = b.project_path().join("pid");
    let accepted = b
        .client
        .prompt_text(&id, "echo $$ > pid; exec sleep 300")
        .await
        .unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    eventually("the pid file", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    b.client.delete_session(&id).await.unwrap();
    eventually("the command is killed", || process_gone(pid)).await;
    assert_eq!(
        b.client.get_session(&id).await.unwrap_err().status(),
        Some(404)
    );
}

fn seq_output(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

/// A long log keeps its end, what matters most for builds and tests, with the bytes dropped
/// before it counted (the terminal card's bound, docs/backend.md "One agent model").
#[tokio::test]
async fn output_keeps_the_tail_with_the_dropped_bytes_counted() {
    let b = Backend::start_with(|c| c.limits.output_bytes_per_message = 1000).await;
    let id = b.session().await;
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&id, "seq 1 20000").await.unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    let full = seq_output(20000);
    let (tail, dropped, _) = shell_terminal(parts).expect("a terminal");
    assert!(tail.ends_with("19999\n20000\n"), "{tail:?}");
    assert!(full.ends_with(tail));
    assert_eq!(tail.len(), TERMINAL_OUTPUT_KEPT);
    assert_eq!(dropped, (full.len() - tail.len()) as u64);
    assert_eq!(shell_exit(parts), Some((Some(0), None)));
}

#[tokio::test]
async fn the_approval_names_the_attachments() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    std::fs::write(b.project_path().join("notes.txt"), "n\n").unwrap();
    let prompt = Prompt {
        parts: vec![
            PromptPart::Text {
                text: "cat \"$1\"".into(),
            },
            PromptPart::File {
                path: "notes.txt".into(),
            },
        ],
    };
    let accepted = b.client.prompt(&id, &prompt).await.unwrap();
    let permission = accepted.permission.unwrap();
    assert_eq!(permission.attachments, ["notes.txt"]);
    // The same in the list of pending approvals and in the event the UIs get.
    let pending = b.client.permissions().await.unwrap();
    assert_eq!(pending[0].attachments, ["notes.txt"]);
    let asked = next_matching(&mut events, |e| matches!(e, Event::PermissionAsked { .. })).await;
    let Event::PermissionAsked { permission: asked } = asked.event else {
        unreachable!()
    };
    assert_eq!(asked.attachments, ["notes.txt"]);
    // On the wire it is a camelCase field of the permission.
    let raw: serde_json::Value = b
        .raw()
        .get(b.url("/permission"))
        .header("authorization", b.bearer())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(raw[0]["attachments"], serde_json::json!(["notes.txt"]));
    b.client.abort(&id).await.unwrap();
}

/// Issue: attachments were checked when the prompt was sent and used after approval, so a
/// file swapped for a symlink in between was read. Now the command starts only if every
/// attachment still resolves, inside the project, to what was approved.
#[tokio::test]
async fn a_file_swapped_for_a_symlink_before_approval_is_refused() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-CONTENT\n").unwrap();
    let notes = b.project_path().join("notes.txt");
    std::fs::write(&notes, "harmless\n").unwrap();
    let prompt = Prompt {
        parts: vec![
            PromptPart::Text {
                text: "cat \"$1\"; cat \"$AX_ATTACHMENTS\" 2>/dev/null; echo ran > ran.txt".into(),
            },
            PromptPart::File {
                path: "notes.txt".into(),
            },
        ],
    };
    let accepted = b.client.prompt(&id, &prompt).await.unwrap();
    // Between the prompt and the approval, the file becomes a symlink out of the project.
    std::fs::remove_file(&notes).unwrap();
    std::os::unix::fs::symlink(&secret, &notes).unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    let all: String = parts.iter().map(|p| format!("{p:?}")).collect();
    assert!(!all.contains("TOP-SECRET"), "{parts:?}");
    let said = shell_said(parts);
    assert!(
        said.contains("notes.txt") && said.contains("outside the project"),
        "{said:?}"
    );
    assert!(said.contains("did not run"), "{said:?}");
    assert!(
        shell_terminal(parts).is_none(),
        "nothing started: {parts:?}"
    );
    assert_eq!(shell_call(parts).status, ToolStatus::Failed);
    assert!(!b.project_path().join("ran.txt").exists(), "nothing ran");

    // Swapped for a symlink to another file inside the project: also refused, as changed.
    std::fs::remove_file(&notes).unwrap();
    std::fs::write(&notes, "harmless\n").unwrap();
    std::fs::write(b.project_path().join("other.txt"), "OTHER-FILE\n").unwrap();
    let accepted = b.client.prompt(&id, &prompt).await.unwrap();
    std::fs::remove_file(&notes).unwrap();
    std::os::unix::fs::symlink(b.project_path().join("other.txt"), &notes).unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    assert!(shell_output(parts).is_empty(), "{parts:?}");
    assert!(
        shell_said(parts).contains("changed since it was approved"),
        "{parts:?}"
    );
    assert!(!b.project_path().join("ran.txt").exists(), "nothing ran");
}

#[tokio::test]
async fn attachment_paths_with_control_characters_are_refused() {
    let b = Backend::start().await;
    let id = b.session().await;
    // A name the person typed with a control character.
    let prompt = |path: &str| Prompt {
        parts: vec![
            PromptPart::Text {
                text: "true".into(),
            },
            PromptPart::File { path: path.into() },
        ],
    };
    for bad in ["a\tb", "a\u{1b}]0;x\u{7}b", "a\u{7f}"] {
        let err = b.client.prompt(&id, &prompt(bad)).await.unwrap_err();
        assert_eq!(err.status(), Some(400), "{bad:?}");
        assert_eq!(err.api().unwrap().code, "bad_attachment");
    }
    // A clean name that resolves to a name with a line break, which would split the
    // `AX_ATTACHMENTS` list.
    std::fs::write(b.project_path().join("two\nlines"), "x").unwrap();
    std::os::unix::fs::symlink(
        b.project_path().join("two\nlines"),
        b.project_path().join("clean"),
    )
    .unwrap();
    let err = b.client.prompt(&id, &prompt("clean")).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.api().unwrap().message.contains("control characters"),
        "{err}"
    );
    assert!(b.client.messages(&id).await.unwrap().is_empty());
}

#[tokio::test]
async fn ax_attachments_lists_every_path_on_its_own_line() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    std::fs::write(b.project_path().join("a b.txt"), "a").unwrap();
    std::fs::write(b.project_path().join("c.txt"), "c").unwrap();
    let prompt = Prompt {
        parts: vec![
            PromptPart::Text {
                text: "printf '%s' \"$AX_ATTACHMENTS\"".into(),
            },
            PromptPart::File {
                path: "a b.txt".into(),
            },
            PromptPart::File {
                path: "c.txt".into(),
            },
        ],
    };
    let accepted = b.client.prompt(&id, &prompt).await.unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let out = shell_output(&last_reply(&messages).parts);
    let root = std::fs::canonicalize(b.project_path()).unwrap();
    assert_eq!(
        out,
        format!(
            "{}\n{}\n",
            root.join("a b.txt").display(),
            root.join("c.txt").display()
        )
    );
}

/// The end of a turn is sent live as the store holds it: `message.ended` for the reply, with
/// the reply's stored `ended`, before the status turns idle; once per turn.
#[tokio::test]
async fn the_stored_end_of_a_turn_is_sent_before_idle() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&id, "echo hi").await.unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    let mut ended = Vec::new();
    loop {
        let e = next_matching(&mut events, |_| true).await;
        match e.event {
            Event::MessageEnded {
                session_id,
                message_id,
                ended: at,
            } if session_id == id => ended.push((message_id, at)),
            Event::SessionStatus {
                session_id,
                status: SessionStatus::Idle,
            } if session_id == id => break,
            _ => {}
        }
    }
    let reply = last_reply(&b.client.messages(&id).await.unwrap()).clone();
    assert_eq!(reply.id, accepted.reply_id);
    assert_eq!(
        ended,
        [(reply.id.clone(), reply.ended.expect("a stored end"))],
        "one message.ended, before idle, equal to the stored end"
    );
    assert!(reply.ended.unwrap() >= reply.created);
}

/// The shell agent's permission offers its three options; an answer naming another is a
/// clear 400 and the request stays pending for a proper answer (docs/backend.md §3).
#[tokio::test]
async fn a_shell_permission_refuses_an_unknown_option_id_and_stays_pending() {
    let b = Backend::start().await;
    let id = b.session().await;
    let accepted = b.client.prompt_text(&id, "echo hi").await.unwrap();
    let permission = accepted.permission.expect("the shell agent asks first");
    let offered: Vec<(&str, PermissionKind)> = permission
        .options
        .iter()
        .map(|o| (o.option_id.as_str(), o.kind))
        .collect();
    assert_eq!(
        offered,
        [
            ("once", PermissionKind::AllowOnce),
            ("always", PermissionKind::AllowAlways),
            ("reject", PermissionKind::RejectOnce)
        ]
    );
    let refused = b
        .client
        .reply_permission_option(&id, &permission.id, PermissionReply::Once, "approved")
        .await;
    match &refused {
        Err(ax_client::ClientError::Api { status: 400, error }) => {
            assert!(error.message.contains("not an option"), "{error:?}")
        }
        other => panic!("expected a 400, got {other:?}"),
    }
    assert_eq!(
        b.client.permissions().await.unwrap(),
        vec![permission.clone()]
    );
    let answered = b
        .client
        .reply_permission(&id, &permission.id, PermissionReply::Once)
        .await
        .unwrap();
    assert_eq!(answered.state, PermissionState::Approved);
}
