//! A `shell` session's turn as an ACP turn (docs/backend.md "One agent model"): the command is
//! an `execute` tool call with a terminal, and the transcript shows it as the command's run —
//! its output, not folded, then `exit N`, `killed by signal S` or `[aborted]` — while the
//! same call in another agent's session stays a card that opens to its terminal.

mod util;

use ax_protocol::turn::{
    PermissionKind, PermissionOutcome, PermissionPart, TerminalExit, ToolCallFields, ToolCallPart,
    ToolContent, ToolKind, ToolStatus, TurnDelta,
};
use ax_protocol::{Event, Role, SessionStatus};
use ax_tui::app::App;
use ax_tui::kind::LineStyle;
use ax_tui::render::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

const PROMPT: &str = "msg_00000000000000000000000001";
const REPLY: &str = "msg_00000000000000000000000002";
const PERMISSION: &str = "per_00000000000000000000000011";

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

fn delta(seq: u64, d: TurnDelta) -> Event {
    Event::MessageDelta {
        session_id: sid(1),
        message_id: REPLY.parse().unwrap(),
        seq,
        delta: d,
    }
}

fn call(line: &str) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: "cmd-1".into(),
        title: line.into(),
        kind: ToolKind::Execute,
        status: ToolStatus::Pending,
        raw_input: Some(serde_json::json!({"command": line, "attachments": []})),
        ..ToolCallPart::default()
    }
}

fn update(fields: ToolCallFields) -> TurnDelta {
    TurnDelta::ToolCallUpdated {
        tool_call_id: "cmd-1".into(),
        fields,
    }
}

fn status(s: ToolStatus) -> ToolCallFields {
    ToolCallFields {
        status: Some(s),
        ..ToolCallFields::default()
    }
}

/// The deltas of the `shell` agent's turn for `line`, up to the exit: the call, the question,
/// the answer `option`, and (allowed) the terminal and `output`.
fn asked_and_answered(line: &str, option: &str, output: &[&str]) -> Vec<TurnDelta> {
    let kind = match option {
        "once" => PermissionKind::AllowOnce,
        "always" => PermissionKind::AllowAlways,
        _ => PermissionKind::RejectOnce,
    };
    let mut d = vec![
        TurnDelta::ToolCallCreated {
            tool_call: call(line),
        },
        TurnDelta::PermissionAsked {
            permission: PermissionPart {
                permission_id: PERMISSION.parse().unwrap(),
                tool_call: call(line),
                options: shell_options(),
                outcome: PermissionOutcome::Pending,
            },
        },
        TurnDelta::PermissionAnswered {
            permission_id: PERMISSION.parse().unwrap(),
            outcome: PermissionOutcome::Selected {
                option_id: option.into(),
                kind,
            },
        },
    ];
    if kind == PermissionKind::RejectOnce {
        d.push(update(status(ToolStatus::Failed)));
        return d;
    }
    d.push(update(ToolCallFields {
        status: Some(ToolStatus::InProgress),
        content: Some(vec![ToolContent::terminal("term-1")]),
        ..ToolCallFields::default()
    }));
    for text in output {
        d.push(TurnDelta::TerminalOutput {
            terminal_id: "term-1".into(),
            text: (*text).into(),
            dropped_bytes: 0,
        });
    }
    d
}

/// The deltas of the command's end: the terminal's exit, then the call's status.
fn exited(code: Option<u32>, signal: Option<&str>) -> Vec<TurnDelta> {
    let ok = code == Some(0) && signal.is_none();
    vec![
        TurnDelta::TerminalExited {
            terminal_id: "term-1".into(),
            exit: TerminalExit {
                exit_code: code,
                signal: signal.map(str::to_owned),
            },
        },
        update(ToolCallFields {
            status: Some(if ok {
                ToolStatus::Completed
            } else {
                ToolStatus::Failed
            }),
            raw_output: Some(
                serde_json::json!({"exitCode": code, "signal": signal, "truncated": false}),
            ),
            ..ToolCallFields::default()
        }),
    ]
}

/// Session 1 of `agent` open at 80x24 with the person's command and the turn's deltas.
fn session_with(agent: &str, line: &str, deltas: Vec<TurnDelta>) -> App {
    let mut s = session(1, "list the files", SessionStatus::Busy);
    s.agent = agent.into();
    let mut app = ready_app(vec![s], false);
    let prompt = message(
        PROMPT,
        1,
        Role::User,
        vec![ax_protocol::Part::Text { text: line.into() }],
    );
    open_loaded(&mut app, 1, vec![prompt]);
    app.on_event(Event::MessageCreated {
        message: message(REPLY, 1, Role::Assistant, vec![]),
    });
    for (i, d) in deltas.into_iter().enumerate() {
        app.on_event(delta(i as u64 + 1, d));
    }
    app
}

/// The styles of the transcript rows that are exactly `needle`.
fn styled(app: &App, needle: &str) -> Vec<LineStyle> {
    app.transcript()
        .visible(app.transcript().total_rows(), 0)
        .into_iter()
        .filter(|(_, t)| *t == needle)
        .map(|(s, _)| s)
        .collect()
}

#[test]
fn a_shell_command_shows_as_its_run() {
    let mut d = asked_and_answered(
        "ls -1",
        "once",
        &["Cargo.toml\nsr", "c\nwarning: something\n"],
    );
    d.extend(exited(Some(0), None));
    let app = session_with("shell", "ls -1", d);
    let s = screen(&app);
    // The output, whole and not folded, then the exit, as the shell's runs always showed.
    let rows = app.transcript().all_rows();
    let at = |t: &str| rows.iter().position(|r| r == t);
    let (out, warn, exit) = (at("Cargo.toml"), at("warning: something"), at("exit 0"));
    assert!(
        out.is_some() && warn.is_some() && exit.is_some(),
        "{rows:#?}"
    );
    assert!(
        out < at("src") && at("src") < warn && warn < exit,
        "{rows:#?}"
    );
    assert_eq!(styled(&app, "exit 0"), [LineStyle::ExitOk]);
    assert_eq!(styled(&app, "Cargo.toml"), [LineStyle::Stdout]);
    // No JSON of the raw output, no terminal id: the run says it all.
    assert!(!s.contains("exitCode") && !s.contains("term-1"), "{s}");
    // The answer stays in the transcript.
    assert!(s.contains("permission: ls -1 — allowed once"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn a_failed_killed_or_aborted_command_says_how_it_ended() {
    let mut d = asked_and_answered("make", "once", &["error: no rule\n"]);
    d.extend(exited(Some(2), None));
    let app = session_with("shell", "make", d);
    let rows = app.transcript().all_rows();
    assert!(rows.iter().any(|r| r == "exit 2"), "{rows:#?}");
    assert_eq!(styled(&app, "exit 2"), [LineStyle::ExitFailed]);
    // Read as the old run: the person's command, the output, then how it ended, once — no
    // card header repeating the command or the exit.
    let at = |t: &str| rows.iter().position(|r| r == t);
    assert!(
        at("make") < at("error: no rule") && at("error: no rule") < at("exit 2"),
        "{rows:#?}"
    );
    assert_eq!(
        rows.iter().filter(|r| r.contains("exit 2")).count(),
        1,
        "{rows:#?}"
    );
    assert_eq!(
        rows.iter().filter(|r| r.contains("make")).count(),
        2,
        "the person's command and its permission only: {rows:#?}"
    );
    assert!(!rows.iter().any(|r| r.contains("[run]")), "{rows:#?}");

    let mut d = asked_and_answered("sleep 9", "always", &[]);
    d.extend(exited(None, Some("SIGTERM")));
    let app = session_with("shell", "sleep 9", d);
    let rows = app.transcript().all_rows();
    assert!(
        rows.iter().any(|r| r == "killed by signal SIGTERM"),
        "{rows:#?}"
    );

    // Aborted: the call is cancelled (its terminal was killed): `[aborted]`, not the signal.
    let mut d = asked_and_answered("sleep 9", "once", &["started\n"]);
    d.push(TurnDelta::TerminalExited {
        terminal_id: "term-1".into(),
        exit: TerminalExit {
            exit_code: None,
            signal: Some("SIGKILL".into()),
        },
    });
    d.push(update(status(ToolStatus::Cancelled)));
    let app = session_with("shell", "sleep 9", d);
    let rows = app.transcript().all_rows();
    assert!(rows.iter().any(|r| r == "started"), "{rows:#?}");
    assert!(rows.iter().any(|r| r == "[aborted]"), "{rows:#?}");
    assert!(!rows.iter().any(|r| r.contains("SIGKILL")), "{rows:#?}");
    assert_eq!(styled(&app, "[aborted]"), [LineStyle::Marker]);
}

#[test]
fn a_rejected_command_shows_the_rejection_and_nothing_ran() {
    let app = session_with(
        "shell",
        "rm -rf build",
        asked_and_answered("rm -rf build", "reject", &[]),
    );
    let rows = app.transcript().all_rows();
    // Nothing ran, said once where the output would be; the permission says why.
    assert_eq!(styled(&app, "[nothing ran]"), [LineStyle::Marker]);
    assert!(!rows.iter().any(|r| r.contains("[run]")), "{rows:#?}");
    assert!(
        rows.iter()
            .any(|r| r.contains("permission: rm -rf build — rejected")),
        "{rows:#?}"
    );
    assert!(!rows.iter().any(|r| r.starts_with("exit")), "{rows:#?}");
}

#[test]
fn output_streams_in_place_and_dropped_bytes_are_said() {
    let d = asked_and_answered("yes | head", "once", &["y\ny\n"]);
    let n = d.len() as u64;
    let mut app = session_with("shell", "yes | head", d);
    assert_eq!(
        app.transcript()
            .all_rows()
            .iter()
            .filter(|r| *r == "y")
            .count(),
        2
    );
    app.on_event(delta(
        n + 1,
        TurnDelta::TerminalOutput {
            terminal_id: "term-1".into(),
            text: "tail\n".into(),
            dropped_bytes: 4096,
        },
    ));
    let rows = app.transcript().all_rows();
    assert!(
        rows.iter()
            .any(|r| r == "[output truncated: 4096 bytes dropped]"),
        "{rows:#?}"
    );
    assert!(rows.iter().any(|r| r == "tail"), "{rows:#?}");
    // Still running: no exit line yet, a first row spins (and does not repeat the command).
    assert!(!rows.iter().any(|r| r.starts_with("exit")), "{rows:#?}");
    assert_eq!(styled(&app, "⠋ running"), [LineStyle::Running]);
    let at = |t: &str| rows.iter().position(|r| r == t);
    assert!(at("⠋ running") < at("y"), "{rows:#?}");
    assert!(!rows.iter().any(|r| r.contains("[run]")), "{rows:#?}");
}

#[test]
fn another_agents_terminal_stays_a_card_that_says_its_exit() {
    let mut d = asked_and_answered("make", "once", &["error: no rule\n"]);
    d.extend(exited(Some(2), None));
    let app = session_with("mock", "make", d);
    let rows = app.transcript().all_rows();
    // Collapsed: the header only, saying how it ended.
    assert!(
        rows.iter().any(|r| r.starts_with("✗ [run] make · exit 2")),
        "{rows:#?}"
    );
    assert!(
        !rows.iter().any(|r| r.contains("error: no rule")),
        "{rows:#?}"
    );
}

#[test]
fn the_live_run_equals_a_reload() {
    let mut d = asked_and_answered("ls", "once", &["a\nb\n"]);
    d.extend(exited(Some(1), None));
    let live = session_with("shell", "ls", d.clone());
    let mut parts = Vec::new();
    for x in d {
        ax_protocol::turn::apply(&mut parts, x);
    }
    let mut s = session(1, "list the files", SessionStatus::Idle);
    s.agent = "shell".into();
    let mut fresh = ready_app(vec![s], false);
    open_loaded(
        &mut fresh,
        1,
        vec![
            message(
                PROMPT,
                1,
                Role::User,
                vec![ax_protocol::Part::Text { text: "ls".into() }],
            ),
            message(
                REPLY,
                1,
                Role::Assistant,
                parts.into_iter().map(ax_protocol::Part::Turn).collect(),
            ),
        ],
    );
    assert_eq!(live.transcript().all_rows(), fresh.transcript().all_rows());
}

#[test]
fn copying_the_reply_copies_the_commands_output() {
    let mut d = asked_and_answered("ls", "once", &["\u{1b}[34ma\u{1b}[0m\nb\n"]);
    d.extend(exited(Some(0), None));
    let app = session_with("shell", "ls", d);
    assert_eq!(app.transcript().replies(), ["a\nb"]);
}

/// A session made by a prompt from home opens before its `session.created` arrives: its
/// command shows as a run once the TUI knows it is a `shell` session.
#[test]
fn a_session_known_after_it_opened_shows_its_command_as_a_run() {
    let mut app = ready_app(vec![], false);
    typed(&mut app, "ls");
    app.handle_input(key(ax_tui::input::KeyCode::Enter));
    let effects = app.take_effects();
    let [ax_tui::app::Effect::Submit { generation, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_submitted(*generation, Ok(sid(1)));
    let effects = app.take_effects();
    let mut d = asked_and_answered("ls", "once", &["a\n"]);
    d.extend(exited(Some(0), None));
    let mut parts = Vec::new();
    for x in d {
        ax_protocol::turn::apply(&mut parts, x);
    }
    app.on_transcript(
        transcript_gen(&effects),
        Ok(vec![message(
            REPLY,
            1,
            Role::Assistant,
            parts.into_iter().map(ax_protocol::Part::Turn).collect(),
        )]),
    );
    // Not known yet: a card, folded.
    assert!(!app.transcript().all_rows().iter().any(|r| r == "exit 0"));
    app.on_event(Event::SessionCreated {
        session: session(1, "ls", SessionStatus::Idle),
    });
    let rows = app.transcript().all_rows();
    assert!(
        rows.iter().any(|r| r == "a") && rows.iter().any(|r| r == "exit 0"),
        "{rows:#?}"
    );
}
