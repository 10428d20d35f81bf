use ax_protocol::{
    Event, Part, PermissionReply, PermissionState, Prompt, PromptPart, Role, SessionId,
    SessionStatus, Stream,
};

use crate::util::{Backend, eventually, last_reply, next_matching, process_gone, wait_status};

fn stream_text(parts: &[Part], which: Stream) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Output { stream, text } if *stream == which => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn once_runs_the_command_and_streams_output_in_order() {
    let b = Backend::start().await;
    let id = b.session().await;
    let mut events = b.events().await;
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
    // Nothing ran yet.
    let reply = last_reply(&b.client.messages(&id).await.unwrap()).clone();
    assert!(reply.parts.is_empty());

    let answered = b
        .client
        .reply_permission(&id, &permission.id, PermissionReply::Once)
        .await
        .unwrap();
    assert_eq!(answered.state, PermissionState::Approved);
    wait_status(&mut events, &id, SessionStatus::Busy).await;

    // Collect the streamed parts until the run ends.
    let mut streamed = Vec::new();
    loop {
        let e = next_matching(&mut events, |e| {
            matches!(e, Event::MessagePart { .. } | Event::SessionStatus { .. })
        })
        .await;
        match e.event {
            Event::MessagePart {
                message_id,
                index,
                part,
                ..
            } => {
                assert_eq!(message_id, accepted.reply_id);
                assert_eq!(
                    index as usize,
                    streamed.len(),
                    "parts arrive in index order"
                );
                streamed.push(part);
            }
            Event::SessionStatus { status, .. } => {
                assert_eq!(status, SessionStatus::Idle);
                break;
            }
            _ => unreachable!(),
        }
    }
    let expected_stdout: String = std::iter::once("one\n".to_owned())
        .chain((1..=500).map(|i| format!("{i}\n")))
        .collect();
    assert_eq!(stream_text(&streamed, Stream::Stdout), expected_stdout);
    assert_eq!(stream_text(&streamed, Stream::Stderr), "two\n");
    // Cross-stream order: one (stdout), then two (stderr), then the numbers.
    let order: Vec<Stream> = streamed
        .iter()
        .filter_map(|p| match p {
            Part::Output { stream, .. } => Some(*stream),
            _ => None,
        })
        .collect();
    assert_eq!(&order[..2], &[Stream::Stdout, Stream::Stderr]);
    assert_eq!(
        streamed.last(),
        Some(&Part::Exit {
            code: Some(7),
            signal: None
        })
    );

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
    assert_eq!(last_reply(&messages).parts, vec![Part::Rejected]);
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
    assert_eq!(
        last_reply(&messages).parts,
        vec![
            Part::Output {
                stream: Stream::Stdout,
                text: "second\n".into()
            },
            Part::Exit {
                code: Some(0),
                signal: None
            }
        ]
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
    assert!(shown.standing[0].title.contains("every command"));
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
    assert_eq!(last_reply(&messages).parts.last(), Some(&Part::Aborted));
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
    assert_eq!(last_reply(&messages).parts, vec![Part::Aborted]);
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
    let out = stream_text(&last_reply(&messages).parts, Stream::Stdout);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        vec!["alpha", "1"]
    );
}

#[tokio::test]
async fn output_is_bounded_with_a_visible_marker() {
    let b = Backend::start_with(|c| c.limits.output_bytes_per_message = 1000).await;
    let id = b.session().await;
    let mut events = b.events().await;
    let accepted = b
        .client
        .prompt_text(&id, "head -c 5000 /dev/zero | tr '\\0' x")
        .await
        .unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &last_reply(&messages).parts;
    assert_eq!(stream_text(parts, Stream::Stdout), "x".repeat(1000));
    assert!(
        parts.contains(&Part::Truncated {
            dropped_bytes: 4000
        }),
        "{parts:?}"
    );
    assert!(matches!(
        parts.last(),
        Some(Part::Exit { code: Some(0), .. })
    ));
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

#[tokio::test]
async fn output_keeps_head_and_tail_with_a_marker_between() {
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
    let marker = parts
        .iter()
        .position(|p| matches!(p, Part::Truncated { .. }))
        .expect("a truncation marker");
    let head = stream_text(&parts[..marker], Stream::Stdout);
    let tail = stream_text(&parts[marker..], Stream::Stdout);
    // The start of a log and, what matters most for builds and tests, its end.
    assert!(head.starts_with("1\n2\n3\n"), "{head:?}");
    assert!(full.starts_with(&head));
    assert!(tail.ends_with("19999\n20000\n"), "{tail:?}");
    assert!(full.ends_with(&tail));
    assert_eq!(head.len() + tail.len(), 1000);
    assert_eq!(
        parts[marker],
        Part::Truncated {
            dropped_bytes: (full.len() - 1000) as u64
        }
    );
    assert_eq!(
        parts.last(),
        Some(&Part::Exit {
            code: Some(0),
            signal: None
        })
    );
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
    let stderr = stream_text(parts, Stream::Stderr);
    assert!(
        stderr.contains("notes.txt") && stderr.contains("outside the project"),
        "{stderr:?}"
    );
    assert!(stderr.contains("did not run"), "{stderr:?}");
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
    assert!(stream_text(parts, Stream::Stdout).is_empty(), "{parts:?}");
    assert!(
        stream_text(parts, Stream::Stderr).contains("changed since it was approved"),
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
    let out = stream_text(&last_reply(&messages).parts, Stream::Stdout);
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

/// An agent that ignores cancellation until the test lets it go.
struct Stubborn {
    release: std::sync::Arc<tokio::sync::Notify>,
}

impl ax_server::Agent for Stubborn {
    fn name(&self) -> &'static str {
        "stubborn"
    }

    fn describe(&self, request: &ax_server::AgentRequest) -> String {
        request.text.clone()
    }

    fn run(
        &self,
        _request: ax_server::AgentRequest,
        output: tokio::sync::mpsc::Sender<ax_server::AgentOutput>,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> futures_util::future::BoxFuture<'static, ax_server::RunEnd> {
        let release = self.release.clone();
        Box::pin(async move {
            release.notified().await;
            drop(output);
            ax_server::RunEnd::Cancelled
        })
    }
}

#[tokio::test]
async fn abort_says_so_when_the_run_does_not_stop() {
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let agent = Stubborn {
        release: release.clone(),
    };
    let b = Backend::start_with(|c| {
        c.agent = std::sync::Arc::new(agent);
        c.limits.abort_wait = std::time::Duration::from_millis(300);
    })
    .await;
    let id = b.session().await;
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&id, "anything").await.unwrap();
    b.client
        .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
        .await
        .unwrap();
    wait_status(&mut events, &id, SessionStatus::Busy).await;
    let err = b.client.abort(&id).await.unwrap_err();
    assert_eq!(err.status(), Some(409), "{err}");
    assert!(
        err.api().unwrap().message.contains("has not ended"),
        "{err}"
    );
    // Deleting the session is refused too while its run goes on: its rows stay.
    let err = b.client.delete_session(&id).await.unwrap_err();
    assert_eq!(err.status(), Some(409), "{err}");
    assert!(b.client.get_session(&id).await.is_ok());

    release.notify_one();
    wait_status(&mut events, &id, SessionStatus::Idle).await;
    assert!(!b.client.abort(&id).await.unwrap().aborted);
    let messages = b.client.messages(&id).await.unwrap();
    assert_eq!(last_reply(&messages).parts.last(), Some(&Part::Aborted));
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

/// The shell agent's permissions have no options: an answer naming one is a clear 400 and
/// the request stays pending for a proper answer (docs/backend.md §3).
#[tokio::test]
async fn a_shell_permission_refuses_an_option_id_and_stays_pending() {
    let b = Backend::start().await;
    let id = b.session().await;
    let accepted = b.client.prompt_text(&id, "echo hi").await.unwrap();
    let permission = accepted.permission.expect("the shell agent asks first");
    let refused = b
        .client
        .reply_permission_option(&id, &permission.id, PermissionReply::Once, "approved")
        .await;
    match &refused {
        Err(ax_client::ClientError::Api { status: 400, error }) => {
            assert!(error.message.contains("no options"), "{error:?}")
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
