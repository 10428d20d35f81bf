//! The built-in `shell` agent served inside the process (`ax_acp::shell`), driven through the
//! real ACP client (`AgentHandle`) over the in-memory transport: permission, run, output,
//! exit, "always", reject, cancel, bounds, files, stop.

use std::{path::Path, time::Duration};

use ax_acp::{
    AcpEvent, AgentHandle, StartOptions, schema,
    shell::{self, ShellConfig},
};
use ax_protocol::turn::{
    PermissionKind, PermissionOutcome, TERMINAL_OUTPUT_KEPT, ToolCallPart, ToolContent, ToolKind,
    ToolStatus, TurnDelta, TurnEnd, TurnPart,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// A bound on waiting for what must happen; never a measure of speed.
const WAIT: Duration = Duration::from_secs(30);

struct Agent {
    _project: tempfile::TempDir,
    dir: std::path::PathBuf,
    handle: AgentHandle,
    events: UnboundedReceiver<AcpEvent>,
}

fn options(project: &Path) -> StartOptions {
    let mut o = StartOptions::new(project);
    o.watchdog = Duration::from_secs(1);
    o.stop_term_after = Duration::from_millis(300);
    o.stop_kill_after = Duration::from_millis(500);
    o.request_timeout = WAIT;
    o
}

async fn start_with(change: impl FnOnce(&mut StartOptions)) -> Agent {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().canonicalize().unwrap();
    let mut o = options(&dir);
    change(&mut o);
    let (mut handle, events) = shell::start(o, ShellConfig::default()).await.unwrap();
    assert_eq!(handle.process_group(), 0, "no process of its own");
    assert!(handle.info().load_session);
    handle.open_session(Vec::new(), None).await.unwrap();
    Agent {
        _project: project,
        dir,
        handle,
        events,
    }
}

async fn start() -> Agent {
    start_with(|_| {}).await
}

/// What one turn did: its deltas, its end, the fold of its deltas.
struct Turn {
    deltas: Vec<TurnDelta>,
    end: TurnEnd,
    parts: Vec<TurnPart>,
}

impl Turn {
    fn asked(&self) -> usize {
        self.deltas
            .iter()
            .filter(|d| matches!(d, TurnDelta::PermissionAsked { .. }))
            .count()
    }

    fn call(&self) -> &ToolCallPart {
        self.parts
            .iter()
            .find_map(|p| match p {
                TurnPart::ToolCall(tc) => Some(tc),
                _ => None,
            })
            .expect("a tool call")
    }

    /// The terminal the call shows: its output, dropped bytes and exit code.
    fn terminal(&self) -> (&str, u64, Option<u32>) {
        self.call()
            .content
            .iter()
            .find_map(|c| match c {
                ToolContent::Terminal {
                    output,
                    dropped_bytes,
                    exit,
                    ..
                } => Some((
                    output.as_str(),
                    *dropped_bytes,
                    exit.as_ref().and_then(|e| e.exit_code),
                )),
                _ => None,
            })
            .expect("the call shows its terminal")
    }
}

impl Agent {
    /// Sends `blocks` and runs the turn to its end, answering each permission with `answer`
    /// (`None`: leaves it waiting); `during` sees every delta as it comes and may act.
    async fn turn_blocks(
        &mut self,
        blocks: Vec<schema::ContentBlock>,
        answer: Option<PermissionKind>,
        mut during: impl FnMut(&AgentHandle, &TurnDelta),
    ) -> Turn {
        self.handle.prompt(blocks).unwrap();
        let mut deltas = Vec::new();
        // Held to the turn's end: a request left waiting is not answered by a drop.
        let mut held = Vec::new();
        loop {
            let event = tokio::time::timeout(WAIT, self.events.recv())
                .await
                .expect("the turn goes on")
                .expect("the agent's events go on");
            match event {
                AcpEvent::Asked {
                    permission,
                    responder,
                } => {
                    if let Some(kind) = answer {
                        responder.answer(kind, None).unwrap();
                    }
                    let delta = TurnDelta::PermissionAsked { permission };
                    during(&self.handle, &delta);
                    deltas.push(delta);
                    held.push(responder);
                }
                AcpEvent::Delta(delta) => {
                    during(&self.handle, &delta);
                    deltas.push(delta);
                }
                AcpEvent::TurnEnded { end, parts } => {
                    return Turn { deltas, end, parts };
                }
                _ => {}
            }
        }
    }

    async fn turn(&mut self, line: &str, answer: Option<PermissionKind>) -> Turn {
        self.turn_blocks(
            vec![schema::ContentBlock::Text(schema::TextContent::new(line))],
            answer,
            |_, _| {},
        )
        .await
    }
}

fn completed(end: &TurnEnd) -> bool {
    matches!(end, TurnEnd::Completed { stop_reason } if stop_reason == "end_turn")
}

#[tokio::test]
async fn allow_once_runs_the_command_and_the_next_one_asks_again() {
    let mut a = start().await;
    let t = a
        .turn(
            "printf 'hi\\n'; printf 'oops\\n' >&2",
            Some(PermissionKind::AllowOnce),
        )
        .await;
    assert!(completed(&t.end), "{:?}", t.end);
    assert_eq!(t.asked(), 1);
    let call = t.call();
    assert_eq!(call.title, "printf 'hi\\n'; printf 'oops\\n' >&2");
    assert_eq!(call.kind, ToolKind::Execute);
    assert_eq!(call.status, ToolStatus::Completed);
    assert_eq!(
        call.raw_input.as_ref().unwrap()["command"],
        "printf 'hi\\n'; printf 'oops\\n' >&2"
    );
    let (output, dropped, exit) = t.terminal();
    assert!(
        output.contains("hi\n") && output.contains("oops\n"),
        "{output:?}"
    );
    assert_eq!((dropped, exit), (0, Some(0)));
    assert_eq!(call.raw_output.as_ref().unwrap()["exitCode"], 0);
    // The permission's options and the one chosen.
    let permission = t
        .parts
        .iter()
        .find_map(|p| match p {
            TurnPart::Permission(p) => Some(p),
            _ => None,
        })
        .unwrap();
    let ids: Vec<&str> = permission
        .options
        .iter()
        .map(|o| o.option_id.as_str())
        .collect();
    assert_eq!(ids, [shell::ALLOW_ONCE, shell::ALLOW_ALWAYS, shell::REJECT]);
    assert_eq!(permission.tool_call.title, call.title);
    assert!(matches!(
        &permission.outcome,
        PermissionOutcome::Selected { option_id, .. } if option_id == shell::ALLOW_ONCE
    ));

    // Once is once: the next command asks again; its exit is the call's status.
    let t = a.turn("exit 3", Some(PermissionKind::AllowOnce)).await;
    assert_eq!(t.asked(), 1);
    assert!(completed(&t.end), "{:?}", t.end);
    assert_eq!(t.call().status, ToolStatus::Failed);
    assert_eq!(t.terminal().2, Some(3));
    assert_eq!(t.call().raw_output.as_ref().unwrap()["exitCode"], 3);
}

#[tokio::test]
async fn always_stops_asking_and_the_backend_can_say_so_at_the_start() {
    let mut a = start().await;
    let t = a.turn("true", Some(PermissionKind::AllowAlways)).await;
    assert_eq!(t.asked(), 1);
    assert_eq!(t.call().status, ToolStatus::Completed);
    let t = a.turn("printf again", None).await;
    assert_eq!(t.asked(), 0, "always: no permission asked");
    assert_eq!(t.terminal().0, "again");
    assert!(completed(&t.end));

    // The backend keeps the flag and tells a new agent at `session/new`.
    let mut b = start_with(|o| o.session_meta = Some(shell::session_meta(true))).await;
    let t = b.turn("printf told", None).await;
    assert_eq!(t.asked(), 0);
    assert_eq!(t.terminal().0, "told");
    // And without it, a new agent asks.
    let mut c = start_with(|o| o.session_meta = Some(shell::session_meta(false))).await;
    let t = c.turn("true", Some(PermissionKind::AllowOnce)).await;
    assert_eq!(t.asked(), 1);
}

#[tokio::test]
async fn reject_runs_nothing_and_ends_the_turn() {
    let mut a = start().await;
    let t = a.turn("touch ran", Some(PermissionKind::RejectOnce)).await;
    assert_eq!(t.end, TurnEnd::Cancelled);
    assert_eq!(t.call().status, ToolStatus::Failed);
    assert!(t.call().content.is_empty(), "no terminal: nothing ran");
    assert!(!a.dir.join("ran").exists());
    // The agent says why its turn ended.
    assert!(t.parts.iter().any(|p| matches!(
        p,
        TurnPart::Notice(n) if n.message.contains("rejected `touch ran`")
    )));
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A zombie has ended; only its parent's wait is missing.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

#[tokio::test]
async fn cancel_mid_command_kills_its_process_group() {
    let mut a = start().await;
    let pidfile = a.dir.join("pid");
    let line = "sleep 60 & echo $! > pid; echo started; wait";
    let mut cancelled = false;
    let t = a
        .turn_blocks(
            vec![schema::ContentBlock::Text(schema::TextContent::new(line))],
            Some(PermissionKind::AllowOnce),
            |handle, delta| {
                if !cancelled
                    && matches!(delta, TurnDelta::TerminalOutput { text, .. } if text.contains("started"))
                {
                    cancelled = handle.cancel();
                }
            },
        )
        .await;
    assert!(cancelled, "the command's output was seen running");
    assert_eq!(t.end, TurnEnd::Cancelled);
    assert_eq!(t.call().status, ToolStatus::Cancelled);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !gone(pid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        gone(pid),
        "the background job of the command was killed with its group"
    );
    // The agent goes on: the next prompt runs.
    let t = a.turn("printf next", Some(PermissionKind::AllowOnce)).await;
    assert_eq!(t.terminal().0, "next");
}

#[tokio::test]
async fn cancel_while_the_permission_waits_runs_nothing() {
    let mut a = start().await;
    let t = a
        .turn_blocks(
            vec![schema::ContentBlock::Text(schema::TextContent::new(
                "touch ran",
            ))],
            None,
            |handle, delta| {
                if matches!(delta, TurnDelta::PermissionAsked { .. }) {
                    handle.cancel();
                }
            },
        )
        .await;
    assert_eq!(t.end, TurnEnd::Cancelled);
    assert_eq!(t.call().status, ToolStatus::Cancelled);
    assert!(!a.dir.join("ran").exists());
}

#[tokio::test]
async fn big_output_is_bounded_and_its_end_kept() {
    let mut a = start().await;
    let t = a
        .turn(
            "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo END",
            Some(PermissionKind::AllowOnce),
        )
        .await;
    assert!(completed(&t.end));
    let (output, dropped, exit) = t.terminal();
    assert!(output.len() <= TERMINAL_OUTPUT_KEPT, "{}", output.len());
    assert!(output.ends_with("\nEND\n"), "the end is kept");
    assert_eq!(
        output.len() as u64 + dropped,
        3_000_005,
        "every byte kept or counted"
    );
    assert_eq!(exit, Some(0));
    assert_eq!(t.call().raw_output.as_ref().unwrap()["truncated"], true);
}

#[tokio::test]
async fn files_reach_the_command_as_arguments_and_a_listing() {
    let mut a = start().await;
    std::fs::write(a.dir.join("a b.txt"), "inside").unwrap();
    let resolved = a.dir.join("a b.txt");
    let blocks = vec![
        schema::ContentBlock::Text(schema::TextContent::new(
            "cat \"$1\"; printf '|%s' \"$AX_ATTACHMENTS\"",
        )),
        schema::ContentBlock::ResourceLink(schema::ResourceLink::new(
            "a b.txt",
            format!("file://{}", resolved.display()),
        )),
    ];
    let t = a
        .turn_blocks(blocks, Some(PermissionKind::AllowOnce), |_, _| {})
        .await;
    let (output, _, exit) = t.terminal();
    assert_eq!(output, format!("inside|{}\n", resolved.display()));
    assert_eq!(exit, Some(0));
    assert_eq!(
        t.call().raw_input.as_ref().unwrap()["attachments"][0],
        "a b.txt"
    );

    // A file that resolves elsewhere by the time the command starts: nothing runs.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x"), "secret").unwrap();
    std::fs::remove_file(&resolved).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x"), &resolved).unwrap();
    let blocks = vec![
        schema::ContentBlock::Text(schema::TextContent::new("touch ran")),
        schema::ContentBlock::ResourceLink(schema::ResourceLink::new(
            "a b.txt",
            format!("file://{}", resolved.display()),
        )),
    ];
    let t = a
        .turn_blocks(blocks, Some(PermissionKind::AllowOnce), |_, _| {})
        .await;
    assert_eq!(t.call().status, ToolStatus::Failed);
    assert!(!a.dir.join("ran").exists());
}

#[tokio::test]
async fn commands_carry_the_agent_tag_and_images_are_refused() {
    let tag = format!("shell-agent-test:{}", std::process::id());
    let mut a = start_with(|o| o.tag = Some(tag.clone())).await;
    let t = a
        .turn(
            "printf %s \"$AX_CODE_AGENT_TAG\"",
            Some(PermissionKind::AllowOnce),
        )
        .await;
    assert_eq!(t.terminal().0, tag);

    let t = a
        .turn_blocks(
            vec![
                schema::ContentBlock::Text(schema::TextContent::new("true")),
                schema::ContentBlock::Image(schema::ImageContent::new("AAAA", "image/png")),
            ],
            Some(PermissionKind::AllowOnce),
            |_, _| {},
        )
        .await;
    assert!(
        matches!(&t.end, TurnEnd::Failed { message, .. } if message.contains("-32602")),
        "{:?}",
        t.end
    );
}

#[tokio::test]
async fn stop_ends_the_agents_task() {
    let mut a = start().await;
    assert!(a.handle.is_alive());
    a.handle.stop().await;
    assert!(!a.handle.is_alive());
    let exited = loop {
        match tokio::time::timeout(WAIT, a.events.recv()).await.unwrap() {
            Some(AcpEvent::Exited { status, .. }) => break status,
            Some(_) => {}
            None => panic!("no exit reported"),
        }
    };
    assert!(exited == "ended" || exited == "stopped", "{exited}");
    assert!(a.handle.prompt_text("true").is_err());
}

/// An in-memory agent that answers `initialize` and `session/new` by hand and then ignores
/// everything, its input's end included (as some real agents ignore theirs).
async fn deaf_agent(io: tokio::io::DuplexStream) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (read, mut write) = tokio::io::split(io);
    let mut lines = tokio::io::BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        let result = match message["method"].as_str() {
            Some("initialize") => {
                serde_json::json!({"protocolVersion": 1, "agentCapabilities": {}})
            }
            Some("session/new") => serde_json::json!({"sessionId": "deaf-1"}),
            _ => continue,
        };
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
        write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .unwrap();
    }
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn the_watchdog_and_stop_end_an_in_memory_agent_that_does_not_listen() {
    let project = tempfile::tempdir().unwrap();
    // The watchdog: a cancel the agent ignores ends its task, and the turn with it.
    let (mut handle, mut events) =
        AgentHandle::start_in_memory("deaf", options(project.path()), deaf_agent)
            .await
            .unwrap();
    handle.open_session(Vec::new(), None).await.unwrap();
    handle.prompt_text("anything").unwrap();
    assert!(handle.cancel());
    let (mut ended, mut exited) = (None, None);
    while ended.is_none() || exited.is_none() {
        match tokio::time::timeout(WAIT, events.recv()).await.unwrap() {
            Some(AcpEvent::TurnEnded { end, .. }) => ended = Some(end),
            Some(AcpEvent::Exited { status, .. }) => exited = Some(status),
            Some(_) => {}
            None => panic!("the events ended early"),
        }
    }
    assert_eq!(ended, Some(TurnEnd::Cancelled));
    assert_eq!(exited.as_deref(), Some("stopped"));
    assert!(!handle.is_alive());

    // Stop: the closed input is not heard, so the task is aborted.
    let (mut handle, _events) =
        AgentHandle::start_in_memory("deaf", options(project.path()), deaf_agent)
            .await
            .unwrap();
    handle.open_session(Vec::new(), None).await.unwrap();
    handle.stop().await;
    assert!(!handle.is_alive());
}
