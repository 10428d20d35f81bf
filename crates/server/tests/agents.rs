//! ACP agents in backend sessions, end to end: real HTTP, real SQLite files, the real mock
//! agent as a subprocess.
//!
//! This test binary is also the mock ACP agent: started with `AX_TEST_BE_MOCK_AGENT=1` (set
//! through the agent's configured `env`) it serves ACP instead of running the tests. Hence
//! its own `main` (`harness = false`).

use std::{path::Path, time::Duration};

use ax_client::{Client, ClientError, EventStream};
use ax_protocol::{
    Event, Message, MessageId, Part, PermissionId, PermissionReply, PermissionState, SessionId,
    SessionStatus,
    turn::{self, NoticeKind, TurnDelta, TurnPart},
};
use ax_server::{RunningServer, ServerConfig};

const WAIT: Duration = Duration::from_secs(20);

mod agent_queue;
mod agent_state;
mod attach;

type TestFn = fn() -> std::pin::Pin<Box<dyn Future<Output = ()>>>;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    // A credential in the backend's own environment must reach no agent and no terminal.
    // Changing this process's environment is unsafe, so the harness runs itself again with
    // the credential set.
    const CREDENTIAL: &str = "secret-must-not-leak";
    if std::env::var_os("AX_CODE_SERVER_PASSWORD").is_none_or(|v| v != CREDENTIAL) {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(std::env::args_os().skip(1))
            .env("AX_CODE_SERVER_PASSWORD", CREDENTIAL)
            .status()
            .unwrap();
        std::process::exit(status.code().unwrap_or(1));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let tests: Vec<(&str, TestFn)> = vec![
        ("every_part_kind_streams_and_reloads_equal", || {
            Box::pin(every_part_kind_streams_and_reloads_equal())
        }),
        ("every_delta_streams_as_its_stored_bytes", || {
            Box::pin(every_delta_streams_as_its_stored_bytes())
        }),
        ("a_load_mid_turn_names_its_last_delta", || {
            Box::pin(a_load_mid_turn_names_its_last_delta())
        }),
        ("a_terminal_streams_into_its_card_and_reloads_equal", || {
            Box::pin(a_terminal_streams_into_its_card_and_reloads_equal())
        }),
        ("agent_is_fixed_at_creation_and_checked", || {
            Box::pin(agent_is_fixed_at_creation_and_checked())
        }),
        ("permissions_are_answered_by_kind", || {
            Box::pin(permissions_are_answered_by_kind())
        }),
        ("a_permission_is_answered_by_its_exact_option", || {
            Box::pin(a_permission_is_answered_by_its_exact_option())
        }),
        ("abort_while_pending_cancels_and_watchdog_kills", || {
            Box::pin(abort_while_pending_cancels_and_watchdog_kills())
        }),
        (
            "stopping_the_backend_answers_the_agents_pending_permission",
            || Box::pin(stopping_the_backend_answers_the_agents_pending_permission()),
        ),
        ("crash_auth_and_version_are_clear_states", || {
            Box::pin(crash_auth_and_version_are_clear_states())
        }),
        ("restart_reopens_without_showing_replay_twice", || {
            Box::pin(restart_reopens_without_showing_replay_twice())
        }),
        ("fs_terminal_and_env_through_the_backend", || {
            Box::pin(fs_terminal_and_env_through_the_backend())
        }),
        ("twenty_sessions_at_once_no_cross_talk", || {
            Box::pin(twenty_sessions_at_once_no_cross_talk())
        }),
        ("a_standing_always_of_an_agent_is_revoked", || {
            Box::pin(a_standing_always_of_an_agent_is_revoked())
        }),
        ("a_prompt_during_a_revoke_is_refused_not_stopped", || {
            Box::pin(a_prompt_during_a_revoke_is_refused_not_stopped())
        }),
        ("a_crash_leaves_no_permission_pending", || {
            Box::pin(a_crash_leaves_no_permission_pending())
        }),
        ("abort_while_busy_without_a_permission", || {
            Box::pin(abort_while_busy_without_a_permission())
        }),
        ("abort_says_so_when_the_run_does_not_stop", || {
            Box::pin(abort_says_so_when_the_run_does_not_stop())
        }),
        ("a_gemini_replay_is_never_shown_as_new_work", || {
            Box::pin(a_gemini_replay_is_never_shown_as_new_work())
        }),
        (
            "a_detached_command_stops_with_its_session_and_the_backend",
            || Box::pin(a_detached_command_stops_with_its_session_and_the_backend()),
        ),
        (
            "a_mode_is_switched_before_the_first_prompt_and_after_a_restart",
            || Box::pin(a_mode_is_switched_before_the_first_prompt_and_after_a_restart()),
        ),
        ("usage_is_a_meter_on_the_session", || {
            Box::pin(usage_is_a_meter_on_the_session())
        }),
        ("a_codex_reject_keeps_its_card_and_says_why", || {
            Box::pin(a_codex_reject_keeps_its_card_and_says_why())
        }),
        ("the_prompt_after_an_abort_gets_its_own_answer", || {
            Box::pin(the_prompt_after_an_abort_gets_its_own_answer())
        }),
        (
            "the_session_screen_credential_cannot_answer_a_permission",
            || Box::pin(the_session_screen_credential_cannot_answer_a_permission()),
        ),
        (
            "served_writes_and_terminals_leave_a_stored_trace_and_git_asks_first",
            || Box::pin(served_writes_and_terminals_leave_a_stored_trace_and_git_asks_first()),
        ),
        ("nothing_is_served_between_turns", || {
            Box::pin(nothing_is_served_between_turns())
        }),
        ("agent_commands_are_kept_published_and_run", || {
            Box::pin(agent_state::agent_commands_are_kept_published_and_run())
        }),
        ("commands_sent_between_turns_are_kept_at_once", || {
            Box::pin(agent_state::commands_sent_between_turns_are_kept_at_once())
        }),
        ("the_agent_titles_a_session_no_person_named", || {
            Box::pin(agent_state::the_agent_titles_a_session_no_person_named())
        }),
        ("an_agent_session_queues_steers_and_pauses", || {
            Box::pin(agent_queue::an_agent_session_queues_steers_and_pauses())
        }),
        ("config_options_are_chosen_before_and_after_prompts", || {
            Box::pin(agent_state::config_options_are_chosen_before_and_after_prompts())
        }),
        ("attach_files_go_as_links_or_embedded_text", || {
            Box::pin(attach::files_go_as_links_or_embedded_text())
        }),
        ("attach_bad_paths_are_refused_at_once", || {
            Box::pin(attach::bad_attachment_paths_are_refused_at_once())
        }),
        ("attach_images_are_sent_stored_and_served", || {
            Box::pin(attach::images_are_sent_stored_and_served())
        }),
        ("attach_images_are_refused_for_agents_without_them", || {
            Box::pin(attach::images_are_refused_for_agents_without_them())
        }),
    ];
    for (name, test) in tests {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        println!("test {name} ...");
        rt.block_on(test());
        println!("test {name} ... ok");
    }
}

struct Backend {
    _project: tempfile::TempDir,
    data: tempfile::TempDir,
    project_dir: std::path::PathBuf,
    server: Option<RunningServer>,
    client: Client,
    env: String,
}

/// A config naming the mock agent `mock` (this binary), with extra `env` entries.
fn config(env: &str) -> ax_acp::AgentsConfig {
    let exe = std::env::current_exe().unwrap();
    let text = format!(
        "[agents.mock]\ncommand = {:?}\nenv = {{ AX_TEST_BE_MOCK_AGENT = \"1\"{env} }}\n",
        exe.to_string_lossy()
    );
    ax_acp::AgentsConfig::parse(Path::new("test-config.toml"), &text).unwrap()
}

async fn serve(project: &Path, data: &Path, env: &str) -> RunningServer {
    let mut c = ServerConfig::new(project, data);
    c.register = false;
    c.agents = config(env);
    c.limits.agent_watchdog = Duration::from_secs(2);
    ax_server::start(c).await.expect("backend starts")
}

impl Backend {
    async fn start(env: &str) -> Backend {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let server = serve(project.path(), data.path(), env).await;
        let client = Client::new(server.url(), server.token().expose()).unwrap();
        Backend {
            project_dir: project.path().to_owned(),
            _project: project,
            data,
            server: Some(server),
            client,
            env: env.to_owned(),
        }
    }

    /// Stops the backend and starts a new one on the same data.
    async fn restart(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
        let server = serve(&self.project_dir, self.data.path(), &self.env).await;
        self.client = Client::new(server.url(), server.token().expose()).unwrap();
        self.server = Some(server);
    }

    async fn events(&self) -> EventStream {
        let events = self.client.events(None);
        within(async {
            while !events.is_connected() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        events
    }

    async fn mock_session(&self) -> SessionId {
        self.client
            .create_session_with(Some("t"), Some("mock"))
            .await
            .unwrap()
            .id
    }
}

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f).await.expect("timed out")
}

/// What one turn streamed: its deltas folded, and how the session status ended.
struct Streamed {
    parts: Vec<TurnPart>,
    asked: Vec<ax_protocol::Permission>,
    /// The seq of the last delta seen (0: none).
    last_seq: u64,
    /// Every delta, in order.
    deltas: Vec<TurnDelta>,
}

/// Waits until `reply`'s first delta arrives: the agent is at work on it.
async fn first_delta(events: &mut EventStream, reply: &MessageId) {
    within(async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if matches!(e.event, Event::MessageDelta { ref message_id, .. } if message_id == reply)
            {
                return;
            }
        }
    })
    .await;
}

/// Follows `reply`'s deltas until the session is idle (or needs auth) again; answers each
/// permission with `answer(index)` when given.
async fn follow(
    b: &Backend,
    events: &mut EventStream,
    id: &SessionId,
    reply: &MessageId,
    mut answer: impl FnMut(usize) -> Option<PermissionReply>,
) -> Streamed {
    let mut out = Streamed {
        parts: Vec::new(),
        asked: Vec::new(),
        last_seq: 0,
        deltas: Vec::new(),
    };
    // A caller that already read the first deltas (waiting for a permission) follows on.
    let mut next_seq = None;
    // Status events of an earlier turn may still be queued: only those after this turn's
    // message or deltas count.
    let mut seen = false;
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            match e.event {
                Event::MessageCreated { message } if message.id == *reply => seen = true,
                Event::MessageDelta {
                    session_id,
                    message_id,
                    seq,
                    delta,
                } if session_id == *id => {
                    assert_eq!(message_id, *reply, "a delta of another message");
                    seen = true;
                    assert_eq!(
                        seq,
                        *next_seq.get_or_insert(seq),
                        "deltas in order, none lost"
                    );
                    next_seq = Some(seq + 1);
                    out.last_seq = seq;
                    out.deltas.push(delta.clone());
                    turn::apply(&mut out.parts, delta);
                }
                Event::MessageDelta { .. } => {}
                Event::PermissionAsked { permission } if permission.session_id == *id => {
                    let n = out.asked.len();
                    out.asked.push(permission.clone());
                    if let Some(reply) = answer(n) {
                        let answered = b
                            .client
                            .reply_permission(id, &permission.id, reply)
                            .await
                            .unwrap();
                        assert!(answered.option_id.is_some(), "the reply names the option");
                    }
                }
                Event::SessionStatus { session_id, status }
                    if seen
                        && session_id == *id
                        && matches!(status, SessionStatus::Idle | SessionStatus::NeedsAuth) =>
                {
                    return;
                }
                _ => {}
            }
        }
    })
    .await;
    out
}

fn as_parts(parts: &[TurnPart]) -> Vec<Part> {
    parts.iter().cloned().map(Part::from_turn).collect()
}

fn reply_of<'a>(messages: &'a [Message], id: &MessageId) -> &'a Message {
    messages.iter().find(|m| m.id == *id).expect("reply stored")
}

fn text_of(parts: &[TurnPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            TurnPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn every_part_kind_streams_and_reloads_equal() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let script = "thought let me see\ntext hello \nchunks 300\nplan a|b|c\ntool t1 ls -l\n\
                  tool-done t1\ndiff src/a.rs old new\npermission p1 claude\n\
                  term 1000 printf 'out\\n'; exit 1\nusage\n\
                  stop max_tokens";
    let accepted = b.client.prompt_text(&id, script).await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| {
        Some(PermissionReply::AllowOnce)
    })
    .await;
    let kinds: Vec<&str> = live
        .parts
        .iter()
        .map(|p| match p {
            TurnPart::Text { .. } => "text",
            TurnPart::Thought { .. } => "thought",
            TurnPart::ToolCall(_) => "tool_call",
            TurnPart::Plan { .. } => "plan",
            TurnPart::Permission(_) => "permission",
            TurnPart::Notice(_) => "notice",
        })
        .collect();
    for kind in [
        "text",
        "thought",
        "tool_call",
        "plan",
        "permission",
        "notice",
    ] {
        assert!(kinds.contains(&kind), "{kind} streamed: {kinds:?}");
    }
    let text = text_of(&live.parts);
    assert!(text.starts_with("helloc0 c1 "), "{text}");
    assert!(text.contains("c299 "), "{text}");
    assert!(text.contains("permission p1: allow"), "{text}");
    assert!(
        live.parts
            .iter()
            .any(|p| matches!(p, TurnPart::Notice(n) if n.kind == NoticeKind::Stop)),
        "stop reason other than end_turn is a notice"
    );
    assert!(
        live.deltas
            .iter()
            .any(|d| matches!(d, TurnDelta::TerminalOutput { text, .. } if text == "out\n")),
        "the terminal's output streamed (and is in the reload compared below)"
    );
    let stored = b.client.messages(&id).await.unwrap();
    let reply = reply_of(&stored, &accepted.reply_id);
    assert_eq!(reply.parts, as_parts(&live.parts));
    // The turn's end and the delta count are stored with the reply.
    assert!(
        reply.ended.is_some_and(|e| e >= reply.created),
        "the ended turn has its end: {:?} (created {})",
        reply.ended,
        reply.created
    );
    assert!(live.last_seq > 0, "{}", live.last_seq);
    assert_eq!(reply.deltas, live.last_seq, "the load names its last delta");
    let user = reply_of(&stored, &accepted.message.id);
    assert_eq!((user.ended, user.deltas), (None, 0), "the person's message");
    let session = b.client.get_session(&id).await.unwrap();
    assert_eq!(session.agent, "mock");
    assert_eq!(session.status, SessionStatus::Idle);
    b.restart().await;
    let reloaded = b.client.messages(&id).await.unwrap();
    assert_eq!(
        reloaded, stored,
        "a reload after a restart equals what streamed"
    );
}

/// The `/event` frames of a raw connection as they arrived: `(id, data)` per event.
async fn raw_frames(
    response: &mut reqwest::Response,
    buffer: &mut String,
    until: impl Fn(&str) -> bool,
) -> Vec<(u64, String)> {
    within(async {
        loop {
            if let Some(end) = buffer.rfind("\n\n")
                && buffer[..end]
                    .lines()
                    .any(|l| l.strip_prefix("data: ").is_some_and(&until))
            {
                let frames = buffer[..end]
                    .split("\n\n")
                    .filter_map(|frame| {
                        let line = |p: &str| frame.lines().find_map(|l| l.strip_prefix(p));
                        Some((line("id: ")?.parse().unwrap(), line("data: ")?.to_owned()))
                    })
                    .collect();
                buffer.drain(..end + 2);
                return frames;
            }
            let chunk = response
                .chunk()
                .await
                .unwrap()
                .expect("the stream stays open");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await
}

/// Each `message.delta` goes out as the bytes its row stores (the backend serialises a delta
/// once, for both): the event's `delta` is the stored body unchanged, and every frame of the
/// turn is exactly what serde writes for the typed event, with the SSE `id` of its envelope.
async fn every_delta_streams_as_its_stored_bytes() {
    #[derive(serde::Deserialize)]
    struct Frame<'a> {
        #[serde(borrow)]
        event: DeltaOnly<'a>,
    }
    #[derive(serde::Deserialize)]
    struct DeltaOnly<'a> {
        #[serde(borrow)]
        delta: &'a serde_json::value::RawValue,
    }
    let b = Backend::start("").await;
    let id = b.mock_session().await;
    let server = b.server.as_ref().unwrap();
    // Subscribed once the response starts (the handler subscribes before it answers).
    let mut raw = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{}/event", server.url()))
        .bearer_auth(server.token().expose())
        .send()
        .await
        .unwrap();
    assert!(raw.status().is_success());
    let mut events = b.events().await;
    let script = "thought let me \"see\"\ntext hello \\ é \nchunks 300\nplan a|b|c\n\
                  tool t1 ls -l\ntool-done t1\ndiff src/a.rs old new\npermission p1 claude\n\
                  term 1000 printf 'out\\n'; exit 1\nusage\nstop max_tokens";
    let accepted = b.client.prompt_text(&id, script).await.unwrap();
    let reply = accepted.reply_id.clone();
    let live = follow(&b, &mut events, &id, &reply, |_| {
        Some(PermissionReply::AllowOnce)
    })
    .await;
    let ended = format!("\"type\":\"message.ended\",\"sessionId\":\"{id}\"");
    let frames = raw_frames(&mut raw, &mut String::new(), |d| d.contains(&ended)).await;

    let mut streamed = Vec::new();
    for (sse_id, data) in &frames {
        let envelope: ax_protocol::EventEnvelope = serde_json::from_str(data).unwrap();
        assert_eq!(envelope.id, *sse_id, "{data}");
        assert_eq!(
            &serde_json::to_string(&envelope).unwrap(),
            data,
            "the frame is serde's JSON of its event"
        );
        if let Event::MessageDelta {
            message_id, seq, ..
        } = &envelope.event
            && *message_id == reply
        {
            let frame: Frame = serde_json::from_str(data).unwrap();
            streamed.push((*seq, frame.event.delta.get().to_owned()));
        }
    }
    assert_eq!(streamed.len() as u64, live.last_seq, "every delta streamed");

    let db = rusqlite::Connection::open_with_flags(
        b.data.path().join(ax_server::store::DB_FILE),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = db
        .prepare("SELECT seq, body FROM delta WHERE message_id = ?1 ORDER BY seq")
        .unwrap();
    let stored: Vec<(u64, String)> = stmt
        .query_map([reply.as_str()], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get(1)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        streamed, stored,
        "each event's delta is its row's body, byte for byte"
    );
    assert!(
        stored
            .iter()
            .any(|(_, body)| body.contains("\"type\":\"terminal_output\""))
            && stored.iter().any(|(_, body)| body.contains("\\\"see\\\"")),
        "the turn had its terminal and an escaped quote: {stored:?}"
    );
}

async fn agent_is_fixed_at_creation_and_checked() {
    let b = Backend::start("").await;
    let default = b.client.create_session(None).await.unwrap();
    assert_eq!(default.agent, "shell");
    match b.client.create_session_with(None, Some("nope")).await {
        Err(ClientError::Api { status, error }) => {
            assert_eq!(status, 400);
            assert!(
                error.message.contains("unknown agent `nope`"),
                "{}",
                error.message
            );
            assert!(error.message.contains("mock"), "{}", error.message);
        }
        other => panic!("unknown agent must be 400: {other:?}"),
    }
    // Unknown fields on the new bodies are refused.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let server = b.server.as_ref().unwrap();
    for (path, body) in [
        ("/session".to_string(), r#"{"agent":"mock","x":1}"#),
        (
            format!("/session/{}/mode", default.id),
            r#"{"modeId":"a","x":1}"#,
        ),
        // `client` must be a gateway connection id.
        (
            format!("/session/{}/prompt", default.id),
            r#"{"parts":[{"type":"text","text":"true"}],"client":"not a connection"}"#,
        ),
        (
            format!("/session/{}/prompt", default.id),
            r#"{"parts":[{"type":"text","text":"true"}],"client":"conn_"}"#,
        ),
    ] {
        let r = http
            .post(format!("{}{path}", server.url()))
            .bearer_auth(server.token().expose())
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{path} {body}");
    }
    // The shell agent keeps working as one agent among others.
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&default.id, "echo hi").await.unwrap();
    let p = accepted.permission.expect("shell asks");
    b.client
        .reply_permission(&default.id, &p.id, PermissionReply::AllowOnce)
        .await
        .unwrap();
    within(async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if let Event::SessionStatus { session_id, status } = e.event
                && session_id == default.id
                && status == SessionStatus::Idle
            {
                break;
            }
        }
    })
    .await;
    let messages = b.client.messages(&default.id).await.unwrap();
    // Its command's call completed, its terminal showing the exit.
    let ran = reply_of(&messages, &accepted.reply_id)
        .parts
        .iter()
        .any(|p| {
            matches!(p, Part::Turn(TurnPart::ToolCall(t))
            if t.kind == turn::ToolKind::Execute
                && t.status == turn::ToolStatus::Completed
                && t.content.iter().any(|c| matches!(c,
                    turn::ToolContent::Terminal { output, exit: Some(e), .. }
                        if output == "hi\n" && e.exit_code == Some(0))))
        });
    assert!(ran, "{messages:?}");
    // Modes: switched on the running agent, strict.
    let id = b.mock_session().await;
    let accepted = b.client.prompt_text(&id, "mode").await.unwrap();
    follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    let session = b.client.get_session(&id).await.unwrap();
    let modes = session.agent_state.unwrap().modes.expect("modes shown");
    assert_eq!(modes.current, "default");
    let switched = b.client.set_mode(&id, "acceptEdits").await.unwrap();
    assert_eq!(
        switched.agent_state.unwrap().modes.unwrap().current,
        "acceptEdits"
    );
    assert!(b.client.set_mode(&id, "nope").await.is_err());
    let accepted = b.client.prompt_text(&id, "mode").await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(text_of(&live.parts).contains("mode: acceptEdits"));
}

async fn permissions_are_answered_by_kind() {
    let b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    // Several in one turn, each option set, a bare request (no prior tool_call).
    let script = "permission a claude\npermission b gemini\npermission c full\n\
                  permission-bare d gemini";
    let answers = [
        PermissionReply::AllowOnce,
        PermissionReply::AllowAlways,
        PermissionReply::RejectAlways,
        PermissionReply::RejectOnce,
    ];
    let accepted = b.client.prompt_text(&id, script).await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |i| {
        Some(answers[i])
    })
    .await;
    let text = text_of(&live.parts);
    for want in [
        "permission a: allow",
        "permission b: proceed_always",
        "permission d: cancel",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    assert_eq!(live.asked.len(), 4);
    let bare = &live.asked[3];
    assert!(
        bare.tool_call.is_some(),
        "a bare request shows its own toolCall"
    );
    // Each answered exactly once.
    let again = b
        .client
        .reply_permission(&id, &live.asked[0].id, PermissionReply::AllowOnce)
        .await;
    assert!(
        matches!(again, Err(ClientError::Api { status: 409, .. })),
        "{again:?}"
    );
    assert!(b.client.permissions().await.unwrap().is_empty());
    // An agent without reject_always: the narrower reject is sent (Codex's `abort`, which
    // ends its whole turn `cancelled`).
    let accepted = b
        .client
        .prompt_text(&id, "permission e codex")
        .await
        .unwrap();
    let asked = next_asked(&mut events).await;
    assert_eq!(asked.options.len(), 3, "the agent's options are shown");
    let answered = b
        .client
        .reply_permission(&id, &asked.id, PermissionReply::RejectAlways)
        .await
        .unwrap();
    assert_eq!(answered.option_id.as_deref(), Some("abort"));
    assert_eq!(answered.state, PermissionState::Rejected);
    follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    // An agent that offers no reject at all: a clear 400, the request still pending.
    let accepted = b
        .client
        .prompt_text(&id, "permission f allow-only")
        .await
        .unwrap();
    let asked = next_asked(&mut events).await;
    let refused = b
        .client
        .reply_permission(&id, &asked.id, PermissionReply::RejectOnce)
        .await;
    assert!(
        matches!(refused, Err(ClientError::Api { status: 400, .. })),
        "{refused:?}"
    );
    // The screen credential (what agent-facing surfaces hold) cannot answer it.
    let server = b.server.as_ref().unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = http
        .post(format!(
            "{}/session/{id}/permission/{}",
            server.url(),
            asked.id
        ))
        .bearer_auth(server.screen_token().expose().to_owned())
        .header("content-type", "application/json")
        .body(r#"{"reply":"allow_once"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "the screen credential cannot answer");
    let pending = b.client.permissions().await.unwrap();
    assert_eq!(pending.len(), 1);
    // A second prompt while busy: 409.
    let busy = b.client.prompt_text(&id, "text x").await;
    assert!(
        matches!(busy, Err(ClientError::Api { status: 409, .. })),
        "{busy:?}"
    );
    let answered = b
        .client
        .reply_permission(&id, &asked.id, PermissionReply::Once)
        .await
        .unwrap();
    assert_eq!(answered.option_id.as_deref(), Some("ok"));
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(text_of(&live.parts).contains("permission f: ok"));
}

/// Codex offers two options of one kind; the person's answer can name the second one, and it
/// is what the agent receives (docs/agents.md §5).
async fn a_permission_is_answered_by_its_exact_option() {
    let b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let accepted = b
        .client
        .prompt_text(&id, "permission g codex-exec")
        .await
        .unwrap();
    let asked = next_asked(&mut events).await;
    let ids: Vec<&str> = asked.options.iter().map(|o| o.option_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "approved",
            "approved-for-session",
            "approved-execpolicy-amendment",
            "denied",
            "abort"
        ],
        "every option is kept, in the agent's order"
    );
    // An id that is not one of the options: 400 naming the valid ones, still pending.
    let refused = b
        .client
        .reply_permission_option(&id, &asked.id, PermissionReply::AllowOnce, "yes")
        .await;
    match &refused {
        Err(ClientError::Api { status: 400, error }) => {
            for valid in &ids {
                assert!(error.message.contains(valid), "{valid} in {error:?}");
            }
        }
        other => panic!("expected a 400, got {other:?}"),
    }
    assert_eq!(b.client.permissions().await.unwrap().len(), 1);
    // The second allow_always, which a reply by kind alone could never choose.
    let answered = b
        .client
        .reply_permission_option(
            &id,
            &asked.id,
            PermissionReply::AllowAlways,
            "approved-execpolicy-amendment",
        )
        .await
        .unwrap();
    assert_eq!(
        answered.option_id.as_deref(),
        Some("approved-execpolicy-amendment")
    );
    assert_eq!(answered.state, PermissionState::Approved);
    // Stored before the reply was answered: no longer pending, its standing grant listed.
    assert!(b.client.permissions().await.unwrap().is_empty());
    assert_eq!(b.client.get_session(&id).await.unwrap().standing.len(), 1);
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    let text = text_of(&live.parts);
    assert!(
        text.contains("permission g: approved-execpolicy-amendment"),
        "the agent received the chosen option: {text}"
    );
    // An allow_always option, so a standing grant is recorded, named after that option.
    let session = b.client.get_session(&id).await.unwrap();
    assert_eq!(session.standing.len(), 1, "{session:?}");
    assert!(
        session.standing[0]
            .title
            .contains("remember this command pattern"),
        "{:?}",
        session.standing
    );
    // The second reject_once of the next request (`abort` ends Codex's turn).
    let accepted = b
        .client
        .prompt_text(&id, "permission h codex-exec")
        .await
        .unwrap();
    let asked = next_asked(&mut events).await;
    let answered = b
        .client
        .reply_permission_option(&id, &asked.id, PermissionReply::RejectOnce, "abort")
        .await
        .unwrap();
    assert_eq!(answered.option_id.as_deref(), Some("abort"));
    assert_eq!(answered.state, PermissionState::Rejected);
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(text_of(&live.parts).contains("permission h: abort"));
}

async fn next_asked(events: &mut EventStream) -> ax_protocol::Permission {
    within(async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if let Event::PermissionAsked { permission } = e.event {
                break permission;
            }
        }
    })
    .await
}

async fn abort_while_pending_cancels_and_watchdog_kills() {
    let b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let accepted = b
        .client
        .prompt_text(&id, "tool t0 make\npermission p claude")
        .await
        .unwrap();
    let pid = first_permission(&mut events).await;
    assert!(b.client.abort(&id).await.unwrap().aborted);
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &reply_of(&messages, &accepted.reply_id).parts;
    let permission = parts.iter().find_map(|p| match p {
        Part::Turn(TurnPart::Permission(p)) => Some(p),
        _ => None,
    });
    assert_eq!(
        permission.unwrap().outcome,
        turn::PermissionOutcome::Cancelled
    );
    assert!(parts.iter().any(|p| matches!(p,
        Part::Turn(TurnPart::ToolCall(t)) if t.tool_call_id == "t0" && t.status == turn::ToolStatus::Cancelled)));
    let after = b
        .client
        .reply_permission(&id, &pid, PermissionReply::AllowOnce)
        .await;
    assert!(
        matches!(after, Err(ClientError::Api { status: 409, .. })),
        "{after:?}"
    );
    // An agent that ignores the cancel is killed by the watchdog; the session stays usable.
    let accepted = b
        .client
        .prompt_text(&id, "text waiting\nignore-cancel")
        .await
        .unwrap();
    first_delta(&mut events, &accepted.reply_id).await;
    let started = std::time::Instant::now();
    assert!(b.client.abort(&id).await.unwrap().aborted);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the watchdog waited"
    );
    let accepted = b.client.prompt_text(&id, "text again").await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(text_of(&live.parts).contains("again"), "{:?}", live.parts);
}

/// docs/agents.md §2, §5: when the backend stops while an agent waits on a permission request,
/// the agent is answered `cancelled` before its stdin closes (it reads the answer, then the
/// end of its input, and ends by itself).
async fn stopping_the_backend_answers_the_agents_pending_permission() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("input.jsonl");
    let mut b = Backend::start(&format!(
        ", AX_MOCK_INPUT_LOG = {:?}",
        log.to_str().unwrap()
    ))
    .await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    b.client
        .prompt_text(&id, "permission p1 claude\ntext never")
        .await
        .unwrap();
    next_asked(&mut events).await;
    b.server.take().unwrap().shutdown().await;
    // What the agent read (not shown whole: `session/new` carries its screen credential).
    let read = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = read.lines().collect();
    assert_eq!(
        lines.pop(),
        Some(ax_mock_agent::INPUT_LOG_EOF),
        "the agent read its stdin to the end"
    );
    let answers: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|m| m.get("method").is_none())
        .collect();
    // The agent asked nothing else: its one answer is the permission request's.
    assert_eq!(
        answers,
        [serde_json::json!({
            "jsonrpc": "2.0",
            "id": answers.first().map(|a| a["id"].clone()),
            "result": {"outcome": {"outcome": "cancelled"}},
        })],
        "the agent's answers"
    );
}

async fn crash_auth_and_version_are_clear_states() {
    let b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let accepted = b
        .client
        .prompt_text(&id, "text before\ncrash")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(text_of(&live.parts).contains("before"), "nothing lost");
    let notices: Vec<&str> = live
        .parts
        .iter()
        .filter_map(|p| match p {
            TurnPart::Notice(n) if n.kind == NoticeKind::Error => Some(n.message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notices.iter().any(|n| n.contains("exited mid-turn")),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|n| n.contains("error output ends with")),
        "the stderr tail is shown: {notices:?}"
    );
    let accepted = b
        .client
        .prompt_text(&id, "garbage\ntext after")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(
        text_of(&live.parts).contains("after"),
        "usable after a crash and garbage"
    );

    // Authentication required: a visible state with the agent's methods.
    let auth = Backend::start(", AX_MOCK_REQUIRE_AUTH = \"1\"").await;
    let mut events = auth.events().await;
    let id = auth.mock_session().await;
    let accepted = auth.client.prompt_text(&id, "text x").await.unwrap();
    let live = follow(&auth, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(
        live.parts
            .iter()
            .any(|p| matches!(p, TurnPart::Notice(n) if n.kind == NoticeKind::Auth))
    );
    let session = auth.client.get_session(&id).await.unwrap();
    assert_eq!(session.status, SessionStatus::NeedsAuth);
    assert!(!session.agent_state.unwrap().auth_methods.is_empty());

    // Another protocol version: refused with a clear message, the session usable.
    let old = Backend::start(", AX_MOCK_PROTOCOL_VERSION = \"2\"").await;
    let mut events = old.events().await;
    let id = old.mock_session().await;
    let accepted = old.client.prompt_text(&id, "text x").await.unwrap();
    let live = follow(&old, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(
        live.parts
            .iter()
            .any(|p| matches!(p, TurnPart::Notice(n) if n.message.contains("protocol version"))),
        "{:?}",
        live.parts
    );
    assert_eq!(
        old.client.get_session(&id).await.unwrap().status,
        SessionStatus::Idle
    );
}

async fn restart_reopens_without_showing_replay_twice() {
    let state = tempfile::tempdir().unwrap();
    let env = format!(
        ", AX_MOCK_STATE_DIR = {:?}, AX_MOCK_LOAD = \"1\"",
        state.path().to_string_lossy()
    );
    let mut b = Backend::start(&env).await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let first = b
        .client
        .prompt_text(&id, "text first answer")
        .await
        .unwrap();
    follow(&b, &mut events, &id, &first.reply_id, |_| None).await;
    let before = b.client.messages(&id).await.unwrap();
    b.restart().await;
    let mut events = b.events().await;
    let second = b
        .client
        .prompt_text(&id, "text second answer")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &second.reply_id, |_| None).await;
    assert!(
        !text_of(&live.parts).contains("first"),
        "replay not shown in the new turn"
    );
    let after = b.client.messages(&id).await.unwrap();
    assert_eq!(after.len(), 4, "two turns, each once: {after:?}");
    assert_eq!(after[..2], before[..]);

    // Without loadSession: a new agent session and a notice.
    let mut plain = Backend::start("").await;
    let id = plain.mock_session().await;
    let mut events = plain.events().await;
    let first = plain.client.prompt_text(&id, "text one").await.unwrap();
    follow(&plain, &mut events, &id, &first.reply_id, |_| None).await;
    plain.restart().await;
    let mut events = plain.events().await;
    let second = plain.client.prompt_text(&id, "text two").await.unwrap();
    let live = follow(&plain, &mut events, &id, &second.reply_id, |_| None).await;
    assert!(
        live.parts
            .iter()
            .any(|p| matches!(p, TurnPart::Notice(n) if n.message.contains("not restored"))),
        "{:?}",
        live.parts
    );
}

async fn twenty_sessions_at_once_no_cross_talk() {
    let b = Backend::start("").await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(b.mock_session().await);
    }
    let mut events = b.events().await;
    let mut replies = std::collections::HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        let script = if i % 3 == 0 {
            format!("text <s{i}>\npermission p{i} claude\nchunks 20")
        } else {
            format!("text <s{i}>\nchunks 50")
        };
        let accepted = b.client.prompt_text(id, &script).await.unwrap();
        replies.insert(id.clone(), accepted.reply_id);
    }
    let mut parts: std::collections::HashMap<SessionId, Vec<TurnPart>> = Default::default();
    let mut idle = std::collections::HashSet::new();
    within(async {
        while idle.len() < ids.len() {
            let e = events.next().await.unwrap().unwrap();
            match e.event {
                Event::MessageDelta {
                    session_id,
                    message_id,
                    delta,
                    ..
                } => {
                    assert_eq!(replies[&session_id], message_id, "no cross-talk");
                    turn::apply(parts.entry(session_id).or_default(), delta);
                }
                Event::PermissionAsked { permission } => {
                    b.client
                        .reply_permission(
                            &permission.session_id,
                            &permission.id,
                            PermissionReply::AllowOnce,
                        )
                        .await
                        .unwrap();
                }
                Event::SessionStatus {
                    session_id,
                    status: SessionStatus::Idle,
                } => {
                    idle.insert(session_id);
                }
                _ => {}
            }
        }
    })
    .await;
    for (i, id) in ids.iter().enumerate() {
        let text = text_of(&parts[id]);
        assert!(text.starts_with(&format!("<s{i}>")), "{text}");
        for (j, _) in ids.iter().enumerate() {
            if j != i {
                assert!(!text.contains(&format!("<s{j}>")), "session {i} saw s{j}");
            }
        }
        let stored = b.client.messages(id).await.unwrap();
        assert_eq!(reply_of(&stored, &replies[id]).parts, as_parts(&parts[id]));
    }
}

/// A transcript loaded while a turn runs says which deltas it holds and that the turn has not
/// ended; the deltas after that fold on top to exactly the stored turn.
async fn a_load_mid_turn_names_its_last_delta() {
    let b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let accepted = b
        .client
        .prompt_text(&id, "text first-\nsleep 1500\ntext second")
        .await
        .unwrap();
    // Wait for the first delta, then load.
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            if matches!(&e.event, Event::MessageDelta { message_id, .. } if *message_id == accepted.reply_id)
            {
                return;
            }
        }
    })
    .await;
    let mid = b.client.messages(&id).await.unwrap();
    let loaded = reply_of(&mid, &accepted.reply_id).clone();
    assert_eq!(loaded.ended, None, "the turn still runs");
    assert!(loaded.deltas >= 1, "the load holds the first delta");
    let mut parts: Vec<TurnPart> = loaded
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => TurnPart::Text { text: text.clone() },
            Part::Turn(t) => t.clone(),
            other => panic!("not a turn part: {other:?}"),
        })
        .collect();
    let mut last = loaded.deltas;
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            match e.event {
                Event::MessageDelta { seq, delta, .. } if seq > loaded.deltas => {
                    assert_eq!(seq, last + 1, "no gap after the load");
                    last = seq;
                    turn::apply(&mut parts, delta);
                }
                Event::SessionStatus { session_id, status }
                    if session_id == id && status == SessionStatus::Idle =>
                {
                    return;
                }
                _ => {}
            }
        }
    })
    .await;
    let end = b.client.messages(&id).await.unwrap();
    let reply = reply_of(&end, &accepted.reply_id);
    assert_eq!(
        reply.parts,
        as_parts(&parts),
        "load + later deltas == stored"
    );
    assert_eq!(text_of(&parts), "first-second");
    assert_eq!(reply.deltas, last);
    assert!(reply.ended.is_some());
}

/// A terminal's output reaches its tool call card while the command runs (coalesced), then
/// its exit; the stored turn, also after a restart, equals what streamed.
async fn a_terminal_streams_into_its_card_and_reloads_equal() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let script = "term 1000 for i in $(seq 1 40); do echo line$i; sleep 0.05; done; \
                  printf '\\033[1mbold\\033[0m\\n'; exit 2";
    let accepted = b.client.prompt_text(&id, script).await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    let outputs: Vec<&str> = live
        .deltas
        .iter()
        .filter_map(|d| match d {
            TurnDelta::TerminalOutput { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // ~2 s of output: several deltas while it ran, far fewer than its 41 lines.
    assert!(
        (3..=14).contains(&outputs.len()),
        "coalesced live output: {outputs:?}"
    );
    let exited = live
        .deltas
        .iter()
        .position(|d| matches!(d, TurnDelta::TerminalExited { .. }))
        .expect("the exit streamed");
    let last_output = live
        .deltas
        .iter()
        .rposition(|d| matches!(d, TurnDelta::TerminalOutput { .. }))
        .unwrap();
    assert!(last_output < exited, "the exit comes after all output");
    let want: String = (1..=40)
        .map(|i| format!("line{i}\n"))
        .chain(["\u{1b}[1mbold\u{1b}[0m\n".to_string()])
        .collect();
    let card = live
        .parts
        .iter()
        .find_map(|p| match p {
            TurnPart::ToolCall(t) if t.tool_call_id == "term-call" => Some(t),
            _ => None,
        })
        .expect("the terminal's tool call");
    let [
        turn::ToolContent::Terminal {
            output,
            dropped_bytes,
            exit,
            ..
        },
    ] = card.content.as_slice()
    else {
        panic!("a terminal in the card: {:?}", card.content);
    };
    assert_eq!(output, &want, "every byte once, in order");
    assert_eq!(*dropped_bytes, 0);
    assert_eq!(exit.as_ref().and_then(|e| e.exit_code), Some(2));
    let stored = b.client.messages(&id).await.unwrap();
    assert_eq!(
        reply_of(&stored, &accepted.reply_id).parts,
        as_parts(&live.parts),
        "a reload equals what streamed"
    );
    b.restart().await;
    assert_eq!(
        b.client.messages(&id).await.unwrap(),
        stored,
        "also after a restart"
    );
}

async fn fs_terminal_and_env_through_the_backend() {
    let b = Backend::start("").await;
    std::fs::write(b.project_dir.join("in.txt"), "hello").unwrap();
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let script = "read in.txt\nwrite out/new.txt written\nread ../outside.txt\n\
                  term 5 printf 0123456789\nterm 100000 env\nenv";
    let accepted = b.client.prompt_text(&id, script).await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    let text = text_of(&live.parts);
    assert!(text.contains("read: ok hello"), "{text}");
    assert!(text.contains("write: ok"), "{text}");
    assert_eq!(
        std::fs::read_to_string(b.project_dir.join("out/new.txt")).unwrap(),
        "written"
    );
    assert!(
        text.contains("read: error -32602"),
        "outside the project: {text}"
    );
    assert!(
        text.contains("truncated=true output=56789"),
        "the terminal keeps the end: {text}"
    );
    assert!(text.contains("PATH="), "the terminal ran env: {text}");
    assert!(text.contains("env: "), "{text}");
    assert!(!text.contains("AX_CODE_SERVER_PASSWORD"), "{text}");
    assert!(!text.contains("secret-must-not-leak"), "{text}");
    assert!(
        live.parts.iter().any(|p| matches!(p, TurnPart::ToolCall(t)
            if t.content.iter().any(|c| matches!(c, turn::ToolContent::Terminal { .. })))),
        "a terminal tool call shows its terminal"
    );
}

/// The permission part of `reply` in `messages`.
fn permission_part<'a>(messages: &'a [Message], reply: &MessageId) -> &'a turn::PermissionPart {
    reply_of(messages, reply)
        .parts
        .iter()
        .find_map(|p| match p {
            Part::Turn(TurnPart::Permission(p)) => Some(p),
            _ => None,
        })
        .expect("a permission part")
}

async fn a_crash_leaves_no_permission_pending() {
    let mut b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    // The agent dies while its permission request waits for the person.
    let accepted = b
        .client
        .prompt_text(&id, "crash-in 1500\npermission p1 claude")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert_eq!(live.asked.len(), 1, "the permission was asked");
    let shown = live.parts.iter().find_map(|p| match p {
        TurnPart::Permission(p) => Some(p.outcome.clone()),
        _ => None,
    });
    assert_eq!(shown, Some(turn::PermissionOutcome::Cancelled), "live");
    let stored = b.client.messages(&id).await.unwrap();
    assert_eq!(
        permission_part(&stored, &accepted.reply_id).outcome,
        turn::PermissionOutcome::Cancelled
    );
    assert_eq!(
        reply_of(&stored, &accepted.reply_id).parts,
        as_parts(&live.parts),
        "reload equals the stream"
    );
    let pending = b.client.permissions().await.unwrap();
    assert!(
        pending.iter().all(|p| p.session_id != id),
        "nothing pending: {pending:?}"
    );
    let answer = b
        .client
        .reply_permission(&id, &live.asked[0].id, PermissionReply::AllowOnce)
        .await;
    assert!(
        matches!(answer, Err(ClientError::Api { status: 409, .. })),
        "{answer:?}"
    );
    // The session stays usable.
    let accepted = b.client.prompt_text(&id, "text again").await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert_eq!(text_of(&live.parts), "again");
    b.restart().await;
    assert_eq!(b.client.messages(&id).await.unwrap().len(), 4);
}

/// An agent that ignores the abort: the abort says the turn has not ended when its wait is
/// over (here shorter than the watchdog), deleting the session is refused while the turn goes
/// on, and once the watchdog killed the agent the session is idle with nothing to abort.
async fn abort_says_so_when_the_run_does_not_stop() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut c = ServerConfig::new(project.path(), data.path());
    c.register = false;
    c.agents = config("");
    c.limits.agent_watchdog = Duration::from_secs(3);
    c.limits.abort_wait = Duration::from_millis(300);
    let server = ax_server::start(c).await.expect("backend starts");
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    let events = client.events(None);
    within(async {
        while !events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let mut events = events;
    let id = client
        .create_session_with(Some("t"), Some("mock"))
        .await
        .unwrap()
        .id;
    let accepted = client
        .prompt_text(&id, "text waiting\nignore-cancel")
        .await
        .unwrap();
    first_delta(&mut events, &accepted.reply_id).await;
    let err = client.abort(&id).await.unwrap_err();
    match &err {
        ClientError::Api { status: 409, error } => {
            assert!(error.message.contains("has not ended"), "{error:?}")
        }
        other => panic!("expected a 409, got {other:?}"),
    }
    // Deleting the session is refused too while its turn goes on: its rows stay.
    let refused = client.delete_session(&id).await.unwrap_err();
    assert!(
        matches!(refused, ClientError::Api { status: 409, .. }),
        "{refused:?}"
    );
    assert!(client.get_session(&id).await.is_ok());
    // The watchdog kills the agent: the turn ends, stopped.
    within(async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if let Event::SessionStatus { session_id, status } = e.event
                && session_id == id
                && status == SessionStatus::Idle
            {
                break;
            }
        }
    })
    .await;
    assert!(!client.abort(&id).await.unwrap().aborted);
    let messages = client.messages(&id).await.unwrap();
    let reply = reply_of(&messages, &accepted.reply_id);
    assert!(reply.ended.is_some(), "the turn's end is stored: {reply:?}");
    assert_eq!(
        reply.parts,
        [Part::Text {
            text: "waiting".into()
        }]
    );
    server.shutdown().await;
}

async fn abort_while_busy_without_a_permission() {
    let b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let accepted = b
        .client
        .prompt_text(&id, "text working\nwait-cancel")
        .await
        .unwrap();
    first_delta(&mut events, &accepted.reply_id).await;
    assert_eq!(
        b.client.get_session(&id).await.unwrap().status,
        SessionStatus::Busy
    );
    let started = std::time::Instant::now();
    assert!(b.client.abort(&id).await.unwrap().aborted);
    // The agent honoured the cancel: no watchdog wait (2 s here).
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        b.client.get_session(&id).await.unwrap().status,
        SessionStatus::Idle
    );
    let messages = b.client.messages(&id).await.unwrap();
    let parts = &reply_of(&messages, &accepted.reply_id).parts;
    assert!(
        parts
            .iter()
            .any(|p| matches!(p, Part::Text { text } if text == "working")),
        "{parts:?}"
    );
    let accepted = b.client.prompt_text(&id, "text next").await.unwrap();
    within(async {
        loop {
            let s = b.client.get_session(&id).await.unwrap();
            let m = b.client.messages(&id).await.unwrap();
            if s.status == SessionStatus::Idle
                && m.iter()
                    .any(|m| m.id == accepted.reply_id && !m.parts.is_empty())
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// An agent that, after an abort, answers the next prompt `end_turn` at once with nothing and
/// delivers that prompt's answer one prompt late (Claude's adapter 0.23.1, docs/agents.md §10):
/// every reply is still its own answer, and the agent's context is restored (§7).
async fn the_prompt_after_an_abort_gets_its_own_answer() {
    let state = tempfile::tempdir().unwrap();
    let env = format!(
        ", AX_MOCK_STATE_DIR = {:?}, AX_MOCK_LOAD = \"1\", AX_MOCK_STALE_CANCEL = \"1\"",
        state.path().to_string_lossy()
    );
    let b = Backend::start(&env).await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let reply_text = async |reply: &MessageId| {
        let messages = b.client.messages(&id).await.unwrap();
        let parts: Vec<TurnPart> = reply_of(&messages, reply)
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(TurnPart::Text { text: text.clone() }),
                _ => None,
            })
            .collect();
        text_of(&parts)
    };
    let first = b
        .client
        .prompt_text(&id, "text first answer")
        .await
        .unwrap();
    follow(&b, &mut events, &id, &first.reply_id, |_| None).await;
    let aborted = b
        .client
        .prompt_text(&id, "text working\nwait-cancel")
        .await
        .unwrap();
    first_delta(&mut events, &aborted.reply_id).await;
    assert!(b.client.abort(&id).await.unwrap().aborted);
    for answer in ["second answer", "third answer"] {
        let next = b
            .client
            .prompt_text(&id, &format!("text {answer}"))
            .await
            .unwrap();
        let live = follow(&b, &mut events, &id, &next.reply_id, |_| None).await;
        assert_eq!(text_of(&live.parts), answer, "{:?}", live.parts);
        assert_eq!(reply_text(&next.reply_id).await, answer);
        assert!(
            !live
                .parts
                .iter()
                .any(|p| matches!(p, TurnPart::Notice(n) if n.message.contains("not restored"))),
            "the agent's context was restored: {:?}",
            live.parts
        );
    }
}

/// The session-scoped screen credential (what the backend hands the agent's screen server)
/// can answer no permission: the HTTP API refuses it, and the gateway grants it write at most
/// and has no method that answers one. A stand-in screen server records the credential.
async fn the_session_screen_credential_cannot_answer_a_permission() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = project.path().join("screen-token");
    let script = project.path().join("screen-server.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s' \"$AX_CODE_SCREEN_TOKEN\" > {:?}.tmp && mv {:?}.tmp {:?}\n",
            out, out, out
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut c = ServerConfig::new(project.path(), data.path());
    c.register = false;
    c.agents = config("");
    c.screen_exe = Some(script);
    let server = ax_server::start(c).await.unwrap();
    let client = Client::new(server.url(), server.token()).unwrap();
    let mut events = client.events(None);
    while !events.is_connected() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = client
        .create_session_with(Some("t"), Some("mock"))
        .await
        .unwrap()
        .id;
    client
        .prompt_text(&id, "mcp screen {}\npermission p1 claude")
        .await
        .unwrap();
    let pid = first_permission(&mut events).await;
    let token = std::fs::read_to_string(&out).expect("the screen server got its credential");
    assert_eq!(token.len(), 64, "a fresh random credential");
    assert_ne!(token, server.token().expose());
    assert_ne!(token, server.screen_token().expose());
    // The HTTP API: 401 on the answer route (and everywhere else).
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    for reply in ["once", "allow_once", "always"] {
        let r = http
            .post(format!("{}/session/{id}/permission/{pid}", server.url()))
            .bearer_auth(&token)
            .json(&serde_json::json!({ "reply": reply }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{reply}");
    }
    // The gateway: write at most, and nothing answers a permission.
    let options = ax_gateway::ConnectOptions::new(
        token.clone(),
        ax_gateway::ClientMode::Agent,
        vec![ax_gateway::Scope::Admin],
    );
    let gw = ax_gateway::GatewayClient::connect(server.url(), options)
        .await
        .unwrap();
    assert!(
        gw.hello()
            .features
            .methods
            .iter()
            .all(|m| !m.contains("permission")),
        "{:?}",
        gw.hello().features.methods
    );
    assert!(
        gw.hello().auth.scopes.is_empty(),
        "asking admin alone grants nothing"
    );
    // Still pending: answered only by the person.
    let pending = client.permissions().await.unwrap();
    assert!(
        pending
            .iter()
            .any(|p| p.id == pid && p.state == PermissionState::Pending)
    );
    let answered = client
        .reply_permission(&id, &pid, PermissionReply::AllowOnce)
        .await
        .unwrap();
    assert_eq!(answered.state, PermissionState::Approved);
    gw.close().await;
    server.shutdown().await;
}

/// The id of the next permission asked on `events`.
async fn first_permission(events: &mut EventStream) -> PermissionId {
    within(async {
        loop {
            let e = events.next().await.unwrap().unwrap();
            if let Event::PermissionAsked { permission } = e.event {
                break permission.id;
            }
        }
    })
    .await
}

/// An agent keeps its own "always" rules: the backend lists the grant and, on revoke, stops
/// the agent process so the rule is gone; the next prompt starts the agent again.
async fn a_standing_always_of_an_agent_is_revoked() {
    let b = Backend::start("").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let accepted = b
        .client
        .prompt_text(&id, "permission a claude\npermission b claude")
        .await
        .unwrap();
    let answers = [PermissionReply::AllowAlways, PermissionReply::AllowOnce];
    follow(&b, &mut events, &id, &accepted.reply_id, |i| {
        Some(answers[i])
    })
    .await;
    let session = b.client.get_session(&id).await.unwrap();
    assert_eq!(
        session.standing.len(),
        1,
        "only the always answer: {session:?}"
    );
    assert!(
        session.standing[0].title.contains("agent decides"),
        "{:?}",
        session.standing
    );
    // The agent process runs until revoked.
    let pid_before = b.client.prompt_text(&id, "pid").await.unwrap();
    let before = text_of(
        &follow(&b, &mut events, &id, &pid_before.reply_id, |_| None)
            .await
            .parts,
    );
    let revoked = b.client.revoke_standing(&id).await.unwrap();
    assert!(revoked.standing.is_empty());
    let pid_after = b.client.prompt_text(&id, "pid").await.unwrap();
    let after = text_of(
        &follow(&b, &mut events, &id, &pid_after.reply_id, |_| None)
            .await
            .parts,
    );
    assert!(before.contains("pid "), "{before}");
    assert_ne!(before, after, "revoking restarts the agent process");
}

/// A revoke stops the agent process, which takes a while for an agent that outlives its
/// stdin (SIGTERM after a second). A prompt that arrives meanwhile is refused with a 409 that
/// says why; it never starts a turn in the middle of the revoke. A prompt that got in before
/// the revoke makes the revoke the refused one, and its turn runs to its end.
async fn a_prompt_during_a_revoke_is_refused_not_stopped() {
    let b = Backend::start(", AX_MOCK_IGNORE_EOF = \"1\"").await;
    let mut events = b.events().await;
    let id = b.mock_session().await;
    let mut refused_for_revoke = false;
    for _ in 0..5 {
        let accepted = b
            .client
            .prompt_text(&id, "permission a claude")
            .await
            .unwrap();
        follow(&b, &mut events, &id, &accepted.reply_id, |_| {
            Some(PermissionReply::AllowAlways)
        })
        .await;
        assert_eq!(b.client.get_session(&id).await.unwrap().standing.len(), 1);
        let revoke = tokio::spawn({
            let (client, id) = (b.client.clone(), id.clone());
            async move { client.revoke_standing(&id).await }
        });
        // Gives the revoke time to begin stopping the agent (it takes a second or more).
        tokio::time::sleep(Duration::from_millis(200)).await;
        let during = b.client.prompt_text(&id, "pid").await;
        let revoke_finished = revoke.is_finished();
        let revoked = within(revoke).await.unwrap();
        match during {
            Err(e) => {
                assert_eq!(e.status(), Some(409), "{e}");
                assert!(e.to_string().contains("revoking"), "{e}");
                assert!(revoked.unwrap().standing.is_empty());
                refused_for_revoke = true;
                break;
            }
            Ok(accepted) => {
                // Only fine when the revoke was over, or the prompt came first and the
                // revoke was the one refused; either way the turn ends normally.
                assert!(
                    revoke_finished || revoked.as_ref().is_err_and(|e| e.status() == Some(409)),
                    "a prompt started a turn while a revoke was stopping the agent: {revoked:?}"
                );
                let streamed = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
                assert!(
                    text_of(&streamed.parts).contains("pid "),
                    "{:?}",
                    streamed.parts
                );
            }
        }
    }
    assert!(
        refused_for_revoke,
        "no prompt reached the backend while a revoke was stopping the agent"
    );
}

/// The notices of `parts`, in order.
fn notices(parts: &[TurnPart]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|p| match p {
            TurnPart::Notice(n) => Some(n.message.clone()),
            _ => None,
        })
        .collect()
}

/// docs/SECURITY.md "The agent hosted in a session": every write and terminal the backend
/// serves leaves a notice in the turn (stored: a reload shows it), and a write into
/// version-control internals (also through a symlink) asks the person first; refused, the
/// agent gets an error and nothing is written.
async fn served_writes_and_terminals_leave_a_stored_trace_and_git_asks_first() {
    let mut b = Backend::start("").await;
    std::fs::create_dir_all(b.project_dir.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(".git/hooks", b.project_dir.join("hooks")).unwrap();
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let script = "term 1000 echo traced\nwrite notes/a.txt hello\n\
                  write .git/hooks/post-checkout evil\nwrite hooks/post-merge evil\n\
                  write .git/hooks/pre-commit good";
    let accepted = b.client.prompt_text(&id, script).await.unwrap();
    // The first two asks are refused, the third allowed.
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |n| {
        Some(if n < 2 {
            PermissionReply::RejectOnce
        } else {
            PermissionReply::AllowOnce
        })
    })
    .await;
    let asked: Vec<&str> = live.asked.iter().map(|p| p.command.as_str()).collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    for (ask, path) in asked.iter().zip([
        ".git/hooks/post-checkout",
        ".git/hooks/post-merge",
        ".git/hooks/pre-commit",
    ]) {
        assert!(ask.contains(path), "the ask names the real place: {ask}");
    }
    let text = text_of(&live.parts);
    assert_eq!(
        text.matches("write: error -32602").count(),
        2,
        "refused writes fail for the agent: {text}"
    );
    assert_eq!(text.matches("write: ok").count(), 2, "{text}");
    let hooks = b.project_dir.join(".git/hooks");
    assert!(!hooks.join("post-checkout").exists());
    assert!(!hooks.join("post-merge").exists());
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit")).unwrap(),
        "good"
    );
    let notes = notices(&live.parts);
    let want = [
        "ax-code started a terminal for the agent (term-1, in .): sh -c echo traced",
        "ax-code wrote a file for the agent: notes/a.txt (5 bytes)",
        "ax-code did not write .git/hooks/post-checkout for the agent: the person did not allow it",
        "ax-code did not write hooks/post-merge for the agent: the person did not allow it",
        "ax-code wrote a file for the agent: .git/hooks/pre-commit (4 bytes)",
    ];
    for w in want {
        assert!(notes.iter().any(|n| n == w), "{w:?} in {notes:#?}");
    }
    let stored = b.client.messages(&id).await.unwrap();
    assert_eq!(
        reply_of(&stored, &accepted.reply_id).parts,
        as_parts(&live.parts),
        "a reload shows the same trace"
    );
    b.restart().await;
    assert_eq!(b.client.messages(&id).await.unwrap(), stored);
}

/// Between turns no one would see a write or a terminal: the backend serves neither, and the
/// agent hears why.
async fn nothing_is_served_between_turns() {
    let b = Backend::start("").await;
    let markers = tempfile::tempdir().unwrap();
    let (term_marker, write_marker) = (markers.path().join("term"), markers.path().join("write"));
    let touched = b.project_dir.join("touched");
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let script = format!(
        "later 300 {} term touch {}\nlater 300 {} write late.txt x\ntext done",
        term_marker.display(),
        touched.display(),
        write_marker.display()
    );
    let accepted = b.client.prompt_text(&id, &script).await.unwrap();
    follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    let report = |marker: &Path| {
        let marker = marker.to_owned();
        async move {
            within(async {
                loop {
                    if let Ok(r) = std::fs::read_to_string(&marker) {
                        return r;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
        }
    };
    for marker in [&term_marker, &write_marker] {
        let r = report(marker).await;
        assert!(
            r.starts_with("error -32602") && r.contains("only during a turn"),
            "{r}"
        );
    }
    assert!(!touched.exists(), "the terminal never ran");
    assert!(!b.project_dir.join("late.txt").exists(), "nothing written");
}

/// docs/agents.md §7: Gemini replays its history on `session/load` with the old tool call ids
/// and texts, partly after answering the load; none of it is new work in the next turn.
async fn a_gemini_replay_is_never_shown_as_new_work() {
    let state = tempfile::tempdir().unwrap();
    let env = format!(
        ", AX_MOCK_STATE_DIR = {:?}, AX_MOCK_LOAD = \"1\", AX_MOCK_REPLAY = \"gemini\"",
        state.path().to_string_lossy()
    );
    let mut b = Backend::start(&env).await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let first = b
        .client
        .prompt_text(
            &id,
            "text Fixing add().\ntool r1 ReadFile\ntool-done r1\ntool s1 Shell\ntool-done s1\n\
             text Fixed add(); tests pass.",
        )
        .await
        .unwrap();
    follow(&b, &mut events, &id, &first.reply_id, |_| None).await;
    let before = b.client.messages(&id).await.unwrap();
    b.restart().await;
    let mut events = b.events().await;
    let second = b
        .client
        .prompt_text(&id, "text Fixed add(); tests pass.")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &second.reply_id, |_| None).await;
    assert_eq!(
        live.parts,
        vec![TurnPart::Text {
            text: "Fixed add(); tests pass.".into()
        }],
        "no old card, no old text in the new reply"
    );
    let after = b.client.messages(&id).await.unwrap();
    assert_eq!(after.len(), 4, "two turns, each once: {after:?}");
    assert_eq!(after[..2], before[..]);
    assert_eq!(
        reply_of(&after, &second.reply_id).parts,
        as_parts(&live.parts)
    );
}

/// docs/agents.md §4: `usage_update` is a meter on the session (`agentState.usage`), sent
/// live as `session.updated` and equal after a reload; never a transcript line.
async fn usage_is_a_meter_on_the_session() {
    let mut b = Backend::start(", AX_MOCK_STEP_USAGE = \"1\"").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let accepted = b
        .client
        .prompt_text(&id, "text a\nusage 5 10 0.25")
        .await
        .unwrap();
    let mut live_usage = None;
    let mut seen = false;
    within(async {
        loop {
            let e = events.next().await.expect("open").expect("no error");
            match e.event {
                Event::MessageDelta { message_id, .. } if message_id == accepted.reply_id => {
                    seen = true
                }
                Event::SessionUpdated { session } if session.id == id => {
                    if let Some(u) = session.agent_state.and_then(|s| s.usage) {
                        live_usage = Some(u);
                    }
                }
                Event::SessionStatus { session_id, status }
                    if seen && session_id == id && status == SessionStatus::Idle =>
                {
                    return;
                }
                _ => {}
            }
        }
    })
    .await;
    let session = b.client.get_session(&id).await.unwrap();
    let json = serde_json::to_value(&session).unwrap();
    // After the last step: 2 steps of 1000 tokens, $0.02 (the mock's figures).
    assert_eq!(
        json["agentState"]["usage"],
        serde_json::json!({"used": 2000, "size": 200000, "cost": {"amount": 0.02, "currency": "USD"}})
    );
    let stored = session.agent_state.and_then(|s| s.usage);
    assert_eq!(live_usage, stored, "what streamed equals what is stored");
    let messages = b.client.messages(&id).await.unwrap();
    let reply = reply_of(&messages, &accepted.reply_id);
    assert!(
        !reply
            .parts
            .iter()
            .any(|p| matches!(p, Part::Turn(TurnPart::Notice(_)))),
        "no usage line in the transcript: {:?}",
        reply.parts
    );
    b.restart().await;
    let again = b.client.get_session(&id).await.unwrap();
    assert_eq!(again.agent_state.and_then(|s| s.usage), stored);
}

/// docs/agents.md §5: Codex's reject option (`abort`) ends the whole turn `cancelled`; the
/// rejected command keeps its card and a notice says why the turn ended.
async fn a_codex_reject_keeps_its_card_and_says_why() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let mut events = b.events().await;
    let accepted = b
        .client
        .prompt_text(&id, "exec c1 rm -rf build\ntext never said")
        .await
        .unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| {
        Some(PermissionReply::RejectOnce)
    })
    .await;
    let card = live
        .parts
        .iter()
        .find_map(|p| match p {
            TurnPart::ToolCall(t) if t.tool_call_id == "c1" => Some(t),
            _ => None,
        })
        .expect("the rejected command has a card");
    assert_eq!(card.title, "rm -rf build");
    assert_eq!(card.status, turn::ToolStatus::Failed);
    assert!(
        live.parts.iter().any(|p| matches!(p, TurnPart::Notice(n)
            if n.kind == NoticeKind::Stop
                && n.message.contains("ended its turn after you rejected `rm -rf build`"))),
        "{:?}",
        live.parts
    );
    b.restart().await;
    let stored = b.client.messages(&id).await.unwrap();
    assert_eq!(
        reply_of(&stored, &accepted.reply_id).parts,
        as_parts(&live.parts)
    );
}

/// Whether `pid` runs (a zombie waiting for its reaper does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// The process group and session of `pid`.
fn group_and_session(pid: u32) -> (u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f[2].parse().unwrap(), f[3].parse().unwrap())
}

async fn gone(pid: u32, what: &str) {
    within(async {
        while running(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(!running(pid), "{what}");
}

/// Starts `sleep` in a session of its own through the agent (as a command of Claude's Bash
/// tool may); its pid.
async fn detached(b: &Backend, id: &SessionId) -> u32 {
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(id, "detach 600\npid").await.unwrap();
    let live = follow(b, &mut events, id, &accepted.reply_id, |_| None).await;
    let text = text_of(&live.parts);
    let pid: u32 = text
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    let agent: u32 = text
        .rsplit_once("pid ")
        .and_then(|(_, p)| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(running(pid), "the detached command runs");
    let (group, session) = group_and_session(pid);
    assert_ne!(
        (group, session),
        group_and_session(agent),
        "it left the agent's process group and session"
    );
    pid
}

/// docs/agents.md §2: whatever an agent started stops when its session is deleted and when
/// the backend stops, also a command that left the agent's process group (`setsid`).
async fn a_detached_command_stops_with_its_session_and_the_backend() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let pid = detached(&b, &id).await;
    b.client.delete_session(&id).await.unwrap();
    gone(pid, "deleting the session stopped the detached command").await;

    let id = b.mock_session().await;
    let pid = detached(&b, &id).await;
    b.restart().await;
    gone(pid, "stopping the backend stopped the detached command").await;
}

/// docs/agents.md §3: the agent's modes can be switched whenever the session exists: a
/// mode change starts an agent that does not run (before the first prompt, after a restart).
async fn a_mode_is_switched_before_the_first_prompt_and_after_a_restart() {
    let mut b = Backend::start("").await;
    let id = b.mock_session().await;
    let switched = b.client.set_mode(&id, "acceptEdits").await.unwrap();
    let modes = switched
        .agent_state
        .unwrap()
        .modes
        .expect("the agent's modes");
    assert_eq!(modes.current, "acceptEdits");
    assert_eq!(modes.available.len(), 3);
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&id, "mode\npid").await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(
        text_of(&live.parts).contains("mode: acceptEdits"),
        "the agent the mode change started takes the prompt: {:?}",
        live.parts
    );

    b.restart().await;
    // The modes are still offered after the restart, from the stored state ...
    let session = b.client.get_session(&id).await.unwrap();
    let modes = session
        .agent_state
        .unwrap()
        .modes
        .expect("kept across the restart");
    assert_eq!(modes.available.len(), 3);
    // ... and switching them starts the agent again.
    let switched = b.client.set_mode(&id, "acceptEdits").await.unwrap();
    assert_eq!(
        switched.agent_state.unwrap().modes.unwrap().current,
        "acceptEdits"
    );
    let mut events = b.events().await;
    let accepted = b.client.prompt_text(&id, "mode").await.unwrap();
    let live = follow(&b, &mut events, &id, &accepted.reply_id, |_| None).await;
    assert!(
        text_of(&live.parts).contains("mode: acceptEdits"),
        "{:?}",
        live.parts
    );
    // A shell session has no modes: a clear 400, not a start.
    let shell = b.client.create_session(None).await.unwrap();
    match b.client.set_mode(&shell.id, "default").await {
        Err(ClientError::Api { status, .. }) => assert_eq!(status, 400),
        other => panic!("{other:?}"),
    }
}
