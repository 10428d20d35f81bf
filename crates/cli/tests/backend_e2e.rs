//! The backend through the real `ax-code` binary: `serve` found through the `servers/`
//! registry by `session create/list`, a `kill -9` mid-run and a restart on the same data
//! directory, and the credential kept out of logs.

mod support;

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Child, Command, Output},
};

use ax_client::Client;
use ax_protocol::{
    Event, Part, PermissionReply, PermissionState, Session, SessionId, SessionStatus,
    turn::{self, TurnDelta},
};
use support::{
    shell::{shell_call, shell_output, shell_permission, shell_terminal},
    *,
};
use tempfile::TempDir;

struct Dirs {
    project: TempDir,
    data: TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        Dirs {
            project: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, cwd: &Path) -> Command {
        let mut c = Command::new(AX);
        c.current_dir(cwd)
            .env("AX_CODE_DATA_DIR", self.data.path())
            .env_remove("AX_CODE_SERVER_PASSWORD")
            .env_remove("XDG_DATA_HOME");
        c
    }

    /// `ax-code ARGS` in `cwd`, bounded.
    fn run(&self, cwd: &Path, args: &[&str]) -> Output {
        output_bounded(self.command(cwd).args(args), WAIT)
    }

    fn serve(&self) -> Serve {
        let log = self
            .data
            .path()
            .join(format!("serve-{}.log", rand_suffix()));
        let mut cmd = self.command(self.project.path());
        cmd.args(["serve", "--port", "0"])
            .env("RUST_LOG", "debug")
            .stderr(std::fs::File::create(&log).unwrap());
        let mut lines = Vec::new();
        let (child, url, token) = spawn_control_ui(cmd, &mut lines, Some(&log));
        Serve {
            child,
            url,
            token,
            log,
            stdout: lines,
        }
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

struct Serve {
    child: Child,
    url: String,
    token: String,
    log: PathBuf,
    stdout: Vec<String>,
}

impl Serve {
    fn client(&self) -> Client {
        Client::new(&self.url, &self.token).unwrap()
    }

    /// SIGTERM and wait for a clean exit.
    fn stop(mut self) -> String {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let exit = wait_child(&mut self.child);
        assert!(exit.success(), "serve exits cleanly on SIGTERM: {exit:?}");
        std::fs::read_to_string(&self.log).unwrap()
    }

    /// kill -9.
    fn crash(mut self) -> String {
        self.child.kill().unwrap();
        wait_child(&mut self.child);
        std::fs::read_to_string(&self.log).unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "ax-code failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn session_commands_find_the_registered_serve() {
    let dirs = Dirs::new();
    let serve = dirs.serve();
    let project = dirs.project.path();

    let created = stdout(&dirs.run(project, &["session", "create", "--title", "hello"]));
    let id: SessionId = created.trim().parse().expect("create prints the ID");
    let second = stdout(&dirs.run(project, &["session", "create"]));
    let second: SessionId = second.trim().parse().unwrap();

    let json = stdout(&dirs.run(project, &["session", "list", "--json"]));
    let list: Vec<Session> = serde_json::from_str(&json).expect("a JSON array of sessions");
    assert_eq!(
        list.iter().map(|s| &s.id).collect::<Vec<_>>(),
        vec![&second, &id]
    );
    assert_eq!(list[1].title, "hello");
    let text = stdout(&dirs.run(project, &["session", "list"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with(id.as_str()) && l.ends_with("hello")),
        "{text}"
    );

    // --url uses the credential file serve wrote (no secret on the command line).
    let elsewhere = tempfile::tempdir().unwrap();
    let by_url = stdout(&dirs.run(
        elsewhere.path(),
        &["session", "list", "--url", &serve.url, "--json"],
    ));
    assert_eq!(
        serde_json::from_str::<Vec<Session>>(&by_url).unwrap().len(),
        2
    );
    // Another directory has no backend: create refuses, list reads the store (nothing there).
    let refused = dirs.run(elsewhere.path(), &["session", "create"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no running backend"));
    let empty = stdout(&dirs.run(elsewhere.path(), &["session", "list", "--json"]));
    assert_eq!(
        serde_json::from_str::<Vec<Session>>(&empty).unwrap(),
        vec![]
    );

    // Secrets live in 0600 files in 0700 directories.
    let servers = dirs.data.path().join("servers");
    let records = files_in(&servers);
    assert_eq!(records.len(), 1, "{records:?}");
    let credentials = files_in(&dirs.data.path().join("credentials"));
    assert_eq!(credentials.len(), 1);
    for f in records.iter().chain(&credentials) {
        assert_eq!(
            std::fs::metadata(f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    for d in [dirs.data.path().to_owned(), servers.clone()] {
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    // Provoke some logging, including refused requests.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // The typed client withholds a credential the backend cannot prove it holds ...
        let wrong = Client::new(&serve.url, "wrong-token-000000000000").unwrap();
        assert!(wrong.list_sessions().await.unwrap_err().is_not_proven());
        // ... so the refused request goes out raw.
        let refused = reqwest::Client::new()
            .get(format!("{}/session", serve.url))
            .bearer_auth("wrong-token-000000000000")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        let client = serve.client();
        client.get_session(&id).await.unwrap();
    });
    let token = serve.token.clone();
    let printed = serve.stdout.join("\n");
    let log = serve.stop();
    assert!(
        log.contains("path=/session") && log.contains("status=401"),
        "serve logs requests at debug level:\n{log}"
    );
    assert!(
        !log.contains(&token),
        "the token must never appear in the log"
    );
    assert!(
        !printed.contains(&token) && printed.contains("/#code="),
        "never printed: the Control UI link carries a one-time code"
    );

    // Clean exit: registry record and credential file gone; list now reads the store.
    assert!(files_in(&servers).is_empty());
    assert!(files_in(&dirs.data.path().join("credentials")).is_empty());
    let offline = stdout(&dirs.run(project, &["session", "list", "--json"]));
    let offline: Vec<Session> = serde_json::from_str(&offline).unwrap();
    assert_eq!(offline.len(), 2);
    assert_eq!(offline[1].id, id);
}

/// Whether `event` is about session `id`.
fn concerns(event: &Event, id: &SessionId) -> bool {
    match event {
        Event::PermissionReplied { session_id, .. }
        | Event::MessagePart { session_id, .. }
        | Event::MessageDelta { session_id, .. }
        | Event::MessageEnded { session_id, .. }
        | Event::SessionStatus { session_id, .. } => session_id == id,
        Event::SessionUpdated { session } | Event::SessionCreated { session } => &session.id == id,
        _ => false,
    }
}

async fn next_event(
    events: &mut ax_client::EventStream,
    mut pred: impl FnMut(&Event) -> bool,
) -> Event {
    tokio::time::timeout(WAIT, async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if pred(&e.event) {
                return e.event;
            }
        }
    })
    .await
    .expect("timed out waiting for an event")
}

#[test]
fn kill_9_mid_run_then_restart_marks_the_run_interrupted() {
    let dirs = Dirs::new();
    let serve = dirs.serve();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pidfile = dirs.project.path().join("run.pid");
    let (busy, pending, asked) = rt.block_on(async {
        let client = serve.client();
        let busy = client.create_session(Some("busy")).await.unwrap().id;
        let pending = client.create_session(Some("pending")).await.unwrap().id;
        let mut events = client.events(None);
        let accepted = client
            .prompt_text(&busy, "echo started; echo $$ > run.pid; exec sleep 300")
            .await
            .unwrap();
        client
            .reply_permission(
                &busy,
                &accepted.permission.unwrap().id,
                PermissionReply::Once,
            )
            .await
            .unwrap();
        next_event(&mut events, |e| {
            matches!(
                e,
                Event::MessageDelta {
                    delta: TurnDelta::TerminalOutput { .. },
                    ..
                }
            )
        })
        .await;
        client.prompt_text(&pending, "touch never").await.unwrap();
        let asked = next_event(&mut events, |e| matches!(e, Event::PermissionAsked { .. })).await;
        let Event::PermissionAsked { permission } = asked else {
            unreachable!()
        };
        (busy, pending, permission.id)
    });
    let log = serve.crash();
    assert!(
        !log.contains("shutting down"),
        "a kill -9 gives no chance to clean up"
    );
    let orphan: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !process_gone(orphan),
        "the command outlives its killed backend"
    );
    assert_eq!(
        files_in(&dirs.data.path().join("servers")).len(),
        1,
        "a stale record stays"
    );

    let serve = dirs.serve();
    assert_eq!(
        files_in(&dirs.data.path().join("servers")).len(),
        1,
        "the stale record is cleaned at the next start"
    );
    // The restarted backend stopped what the dead one left running.
    eventually("the orphaned command is killed", || process_gone(orphan));
    rt.block_on(async {
        let client = serve.client();
        let sessions = client.list_sessions().await.unwrap();
        assert_eq!(sessions.len(), 2);
        assert!(
            sessions.iter().all(|s| s.status == SessionStatus::Idle),
            "{sessions:?}"
        );

        // A fresh `/event` client reading from this process's start (`Last-Event-ID: 0`, as
        // the hub's join does) is told what the recovery ended, as a turn's end tells it.
        let mut told = client.events(Some(0));
        let mut seen = Vec::new();
        let mut idle = std::collections::BTreeSet::new();
        while idle.len() < 2 {
            let event = next_event(&mut told, |_| true).await;
            if let Event::SessionStatus {
                session_id,
                status: SessionStatus::Idle,
            } = &event
            {
                idle.insert(session_id.clone());
            }
            seen.push(event);
        }
        for id in [&busy, &pending] {
            let reply = client.messages(id).await.unwrap().remove(1);
            let mut expected = Vec::new();
            // What the recovery appended to the reply, as the last deltas: the command's
            // call cancelled, and the question still open cancelled.
            let mut closed = vec![TurnDelta::ToolCallUpdated {
                tool_call_id: shell_call(&reply.parts).tool_call_id.clone(),
                fields: turn::ToolCallFields {
                    status: Some(turn::ToolStatus::Cancelled),
                    ..turn::ToolCallFields::default()
                },
            }];
            if id == &pending {
                expected.push(Event::PermissionReplied {
                    session_id: id.clone(),
                    permission_id: asked.clone(),
                    state: PermissionState::Cancelled,
                });
                closed.push(TurnDelta::PermissionAnswered {
                    permission_id: asked.clone(),
                    outcome: turn::PermissionOutcome::Cancelled,
                });
            }
            let first = reply.deltas + 1 - closed.len() as u64;
            expected.extend(
                closed
                    .into_iter()
                    .enumerate()
                    .map(|(i, delta)| Event::MessageDelta {
                        session_id: id.clone(),
                        message_id: reply.id.clone(),
                        seq: first + i as u64,
                        delta,
                    }),
            );
            expected.extend([
                Event::MessagePart {
                    session_id: id.clone(),
                    message_id: reply.id.clone(),
                    index: reply.parts.len() as u32 - 1,
                    part: Part::Interrupted,
                },
                Event::MessageEnded {
                    session_id: id.clone(),
                    message_id: reply.id.clone(),
                    ended: reply.ended.expect("the reply's end is stored"),
                },
                Event::SessionUpdated {
                    session: client.get_session(id).await.unwrap(),
                },
                Event::SessionStatus {
                    session_id: id.clone(),
                    status: SessionStatus::Idle,
                },
            ]);
            let about: Vec<&Event> = seen.iter().filter(|e| concerns(e, id)).collect();
            assert_eq!(about, expected.iter().collect::<Vec<_>>(), "{seen:?}");
        }

        let messages = client.messages(&busy).await.unwrap();
        assert_eq!(messages.len(), 2);
        let parts = &messages[1].parts;
        assert_eq!(shell_output(parts), "started\n");
        assert_eq!(shell_call(parts).status, turn::ToolStatus::Cancelled);
        assert_eq!(parts.last(), Some(&Part::Interrupted), "{parts:?}");
        let messages = client.messages(&pending).await.unwrap();
        let parts = &messages[1].parts;
        assert!(shell_terminal(parts).is_none(), "nothing ran: {parts:?}");
        assert_eq!(shell_call(parts).status, turn::ToolStatus::Cancelled);
        assert_eq!(
            shell_permission(parts).outcome,
            turn::PermissionOutcome::Cancelled
        );
        assert_eq!(parts.last(), Some(&Part::Interrupted), "{parts:?}");
        assert!(client.permissions().await.unwrap().is_empty());
        // The session takes prompts again.
        let again = client.prompt_text(&pending, "true").await.unwrap();
        assert_eq!(again.permission.unwrap().state, PermissionState::Pending);
    });
    assert!(!dirs.project.path().join("never").exists());
    serve.stop();
    // Whatever happened above, leave no sleeper behind.
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg(orphan.to_string())
        .status();

    let db = rusqlite::Connection::open(dirs.data.path().join("ax-code.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn a_second_backend_for_the_project_is_refused_and_leaves_a_live_run_alone() {
    let dirs = Dirs::new();
    let first = dirs.serve();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pidfile = dirs.project.path().join("live.pid");
    let id = rt.block_on(async {
        let client = first.client();
        let id = client.create_session(None).await.unwrap().id;
        let mut events = client.events(None);
        let accepted = client
            .prompt_text(&id, "echo $$ > live.pid; exec sleep 300")
            .await
            .unwrap();
        client
            .reply_permission(&id, &accepted.permission.unwrap().id, PermissionReply::Once)
            .await
            .unwrap();
        next_event(&mut events, |e| {
            matches!(
                e,
                Event::SessionStatus {
                    status: SessionStatus::Busy,
                    ..
                }
            )
        })
        .await;
        id
    });
    eventually("the pid file", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    // Same project, same data directory: one backend per project, so the second is refused,
    // naming the first, and touches nothing (its recovery never runs).
    let refused = dirs.run(dirs.project.path(), &["serve", "--port", "0"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains(&first.url), "{said}");
    assert!(!process_gone(pid), "the first backend's command still runs");
    rt.block_on(async {
        let session = first.client().get_session(&id).await.unwrap();
        assert_eq!(session.status, SessionStatus::Busy);
        let messages = first.client().messages(&id).await.unwrap();
        assert!(!messages[1].parts.contains(&Part::Interrupted));
        assert!(first.client().abort(&id).await.unwrap().aborted);
    });
    eventually("the command is aborted", || process_gone(pid));
    first.stop();
}
