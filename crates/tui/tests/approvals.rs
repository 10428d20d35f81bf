//! The approval dialog for real agents' requests (docs/tui.md §3): the answers in one order by
//! kind with allow-once highlighted (Enter never grants "always"), the agent's whole input,
//! buttons that always fit with the agent's own names, an option that asks for feedback
//! opening the composer, and Esc leaving the request for later without leaving the session.

mod util;

use ax_protocol::turn::{PermissionChoice, PermissionKind, ToolCallPart, ToolKind};
use ax_protocol::{Event, Permission, PermissionReply, PermissionState, SessionStatus};
use ax_tui::app::{App, Effect, Route};
use ax_tui::input::KeyCode;
use ax_tui::render::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

const PID: &str = "per_00000000000000000000000021";

fn option(id: &str, name: &str, kind: PermissionKind) -> PermissionChoice {
    PermissionChoice {
        option_id: id.into(),
        name: name.into(),
        kind,
    }
}

/// Claude's order: "always" first.
fn claude_options() -> Vec<PermissionChoice> {
    vec![
        option("allow_always", "Always Allow", PermissionKind::AllowAlways),
        option("allow", "Allow", PermissionKind::AllowOnce),
        option("reject", "Reject", PermissionKind::RejectOnce),
    ]
}

/// Codex's exec approval: internal ids, long names, an option asking for feedback.
fn codex_options() -> Vec<PermissionChoice> {
    vec![
        option("approved", "Yes, proceed", PermissionKind::AllowOnce),
        option(
            "ApprovedExecpolicyAmendment",
            "Yes, and don't ask again for commands that start with `python3 -m pytest`",
            PermissionKind::AllowAlways,
        ),
        option(
            "Abort",
            "No, and tell Codex what to do differently",
            PermissionKind::RejectOnce,
        ),
    ]
}

fn acp_session() -> ax_protocol::Session {
    let mut s = session(1, "fix the tests", SessionStatus::Pending);
    s.agent = "codex".into();
    s
}

fn asked(tool: ToolCallPart, options: Vec<PermissionChoice>) -> App {
    let mut app = ready_app(vec![acp_session()], false);
    app.on_event(Event::PermissionAsked {
        permission: Permission {
            id: PID.parse().unwrap(),
            session_id: sid(1),
            command: tool.title.clone(),
            attachments: Vec::new(),
            state: PermissionState::Pending,
            created: 1,
            tool_call: Some(tool),
            options,
            option_id: None,
        },
    });
    open_loaded(&mut app, 1, vec![]);
    assert!(app.pending_approval().is_some());
    app
}

fn run_tool(input: serde_json::Value) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: "call_1".into(),
        title: "python3 -m pytest".into(),
        kind: ToolKind::Execute,
        raw_input: Some(input),
        ..ToolCallPart::default()
    }
}

fn replied(app: &mut App) -> Vec<PermissionReply> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::ReplyPermission { reply, .. } => Some(reply),
            _ => None,
        })
        .collect()
}

#[test]
fn enter_allows_once_whatever_order_the_agent_sent() {
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        claude_options(),
    );
    let labels: Vec<String> = app
        .approval_choices()
        .iter()
        .map(|c| c.label.clone())
        .collect();
    assert_eq!(labels, ["Allow", "Always Allow", "Reject"]);
    assert_eq!(app.approval_choice(), Some(0));
    let s = screen(&app);
    let (once, always) = (
        s.find("[y] Allow").unwrap(),
        s.find("[a] Always Allow").unwrap(),
    );
    assert!(once < always, "allow once comes first:\n{s}");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(replied(&mut app), [PermissionReply::AllowOnce]);

    // Gemini's order, reject-always included: still once, always, reject, reject always.
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        vec![
            option("proceed_always", "Always", PermissionKind::AllowAlways),
            option("cancel_always", "Never", PermissionKind::RejectAlways),
            option("cancel", "No", PermissionKind::RejectOnce),
            option("proceed_once", "Once", PermissionKind::AllowOnce),
        ],
    );
    let keys: Vec<char> = app.approval_choices().iter().map(|c| c.key).collect();
    assert_eq!(keys, ['y', 'a', 'n', 'r']);
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(replied(&mut app), [PermissionReply::AllowOnce]);
}

#[test]
fn without_an_allow_once_nothing_is_highlighted_and_enter_does_nothing() {
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        vec![
            option("always", "Always Allow", PermissionKind::AllowAlways),
            option("reject", "Reject", PermissionKind::RejectOnce),
        ],
    );
    assert_eq!(app.approval_choice(), None);
    app.handle_input(key(KeyCode::Enter));
    assert!(replied(&mut app).is_empty(), "Enter never grants always");
    assert!(app.pending_approval().is_some());
    // Choosing it on purpose still works.
    app.handle_input(key(KeyCode::Right));
    assert_eq!(app.approval_choice(), Some(0));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(replied(&mut app), [PermissionReply::AllowAlways]);
}

#[test]
fn the_whole_input_shows_every_field() {
    let app = {
        let mut app = asked(
            run_tool(serde_json::json!({
                "command": ["bash", "-lc", "python3 -m pytest -q 'tests/a b.py'"],
                "cwd": "/work/project",
                "workdir": "/work/project/sub",
                "dangerouslyDisableSandbox": true,
                "timeout": 120000,
                "env": {"PYTHONPATH": "src"},
                "description": "Run the tests\x1b[2J",
            })),
            claude_options(),
        );
        app.resize(120, 40);
        app
    };
    let s = screen(&app);
    for want in [
        r"$ bash -lc 'python3 -m pytest -q '\''tests/a b.py'\'''",
        "cwd: /work/project",
        "workdir: /work/project/sub",
        "dangerouslyDisableSandbox: true",
        "timeout: 120000",
        r#"env: {"PYTHONPATH":"src"}"#,
        "description: Run the tests^[[2J",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    // `cmd` (Codex's other spelling) is the command too.
    let mut app = asked(
        run_tool(serde_json::json!({"cmd": "make check", "yield_time_ms": 1000})),
        claude_options(),
    );
    app.resize(100, 30);
    let s = screen(&app);
    assert!(
        s.contains("$ make check") && s.contains("yield_time_ms: 1000"),
        "{s}"
    );
}

#[test]
fn codex_buttons_fit_at_120_columns_with_the_agents_names() {
    let mut app = asked(
        run_tool(serde_json::json!({"command": ["bash", "-lc", "python3 -m pytest"], "cwd": "/w"})),
        codex_options(),
    );
    app.resize(120, 30);
    let s = screen(&app);
    for want in [
        "[y] Yes, proceed",
        "[a] Yes, and don't ask again for commands that start with `python3 -m pytest`",
        "[n] No, and tell Codex what to do differently",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    for internal in ["ApprovedExecpolicyAmendment", "Abort"] {
        assert!(!s.contains(internal), "{internal} shown:\n{s}");
    }
    // At 80 columns too: a name wider than the dialog wraps, never cut.
    app.resize(80, 24);
    let s = screen(&app);
    assert!(
        s.contains("[n] No, and tell Codex what to do differently"),
        "{s}"
    );
    assert!(
        s.contains("[a] Yes, and don't ask again for commands"),
        "{s}"
    );
    assert!(s.contains("pytest`") && !s.contains("py…"), "{s}");
}

#[test]
fn the_feedback_option_is_sent_and_opens_the_composer() {
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        codex_options(),
    );
    app.handle_input(key(KeyCode::Char('n')));
    assert_eq!(replied(&mut app), [PermissionReply::RejectOnce]);
    assert!(app.awaiting_feedback());
    app.on_event(Event::PermissionReplied {
        session_id: sid(1),
        permission_id: PID.parse().unwrap(),
        state: PermissionState::Rejected,
    });
    let s = screen(&app);
    assert!(s.contains("Tell codex what to do differently"), "{s}");
    typed(&mut app, "use pytest -x");
    assert_eq!(app.composer().draft(), "use pytest -x");
    // Another option asks for nothing.
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        codex_options(),
    );
    app.handle_input(key(KeyCode::Char('y')));
    assert!(!app.awaiting_feedback());
}

#[test]
fn esc_leaves_the_approval_for_later_and_stays_in_the_session() {
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        claude_options(),
    );
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.route(), &Route::Session(sid(1)));
    assert!(app.pending_approval().is_none(), "the dialog is closed");
    assert!(replied(&mut app).is_empty());
    let s = screen(&app);
    assert!(s.contains("Enter answers"), "{s}");
    // Enter on the empty prompt brings it back.
    app.handle_input(key(KeyCode::Enter));
    assert!(app.pending_approval().is_some());
}

/// Codex's edit approval as the real adapter sends it (codex-acp 0.16.0): a diff, a
/// `changes` map in its input, the options "Yes" and "No, provide feedback".
fn codex_edit() -> ToolCallPart {
    let path = "/home/me/project/notes.txt";
    ToolCallPart {
        tool_call_id: "call_edit_1".into(),
        title: format!("Edit {path}"),
        kind: ToolKind::Edit,
        status: ax_protocol::turn::ToolStatus::Pending,
        content: vec![ax_protocol::turn::ToolContent::Diff {
            path: path.into(),
            old_text: Some("alpha\n".into()),
            new_text: "omega\n".into(),
            line: None,
        }],
        locations: vec![ax_protocol::turn::ToolLocation {
            path: path.into(),
            line: None,
        }],
        raw_input: Some(serde_json::json!({
            "call_id": "call_edit_1",
            "turn_id": "01a233a2-5890-7e30-8cf9-999b1708a2f0",
            "started_at_ms": 1796162609322u64,
            "changes": {path: {"type": "update", "unified_diff": "@@ -1 +1 @@\n-alpha\n+omega\n", "move_path": null}}
        })),
        ..ToolCallPart::default()
    }
}

#[test]
fn codex_edit_approval_reads_as_an_edit_with_its_diff() {
    let mut app = asked(
        codex_edit(),
        vec![
            option("approved", "Yes", PermissionKind::AllowOnce),
            option("abort", "No, provide feedback", PermissionKind::RejectOnce),
        ],
    );
    app.resize(120, 30);
    let s = screen(&app);
    for want in [
        "The agent wants to edit notes.txt:",
        "-alpha",
        "+omega",
        "update: /home/me/project/notes.txt (diff below)",
        "[y] Yes",
        "[n] No, provide feedback",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    assert!(!s.contains("wants to run") && !s.contains("$ Edit"), "{s}");
    assert!(
        !s.contains("unified_diff") && !s.contains("{\""),
        "no raw JSON:\n{s}"
    );
    assert!(
        !s.contains("abort") && !s.contains("approved"),
        "no option ids:\n{s}"
    );
    app.handle_input(key(KeyCode::Char('n')));
    assert_eq!(replied(&mut app), [PermissionReply::RejectOnce]);
    assert!(
        app.awaiting_feedback(),
        "“No, provide feedback” opens the composer"
    );
}

/// A choice made on one request never carries over to the next: the next one starts on
/// allow once again.
#[test]
fn a_moved_highlight_does_not_carry_over_to_the_next_request() {
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        claude_options(),
    );
    app.handle_input(key(KeyCode::Right));
    assert_eq!(app.approval_choice(), Some(1), "on Always Allow");
    // Answered elsewhere (the Control UI); the agent asks again.
    app.on_event(Event::PermissionReplied {
        session_id: sid(1),
        permission_id: PID.parse().unwrap(),
        state: PermissionState::Approved,
    });
    app.on_event(Event::PermissionAsked {
        permission: Permission {
            id: "per_00000000000000000000000022".parse().unwrap(),
            session_id: sid(1),
            command: "ls -l".into(),
            attachments: Vec::new(),
            state: PermissionState::Pending,
            created: 2,
            tool_call: Some(run_tool(serde_json::json!({"command": "ls -l"}))),
            options: claude_options(),
            option_id: None,
        },
    });
    assert_eq!(app.approval_choice(), Some(0));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(replied(&mut app), [PermissionReply::AllowOnce]);
}

/// Codex's command approval offers two options of a kind: every one gets a button, ordered by
/// kind with the agent's order kept within a kind, and each sends its own id
/// (docs/agents.md §5).
#[test]
fn every_option_of_a_kind_is_offered_and_sends_its_own_id() {
    let options = vec![
        option(
            "abort",
            "No, and tell Codex what to do differently",
            PermissionKind::RejectOnce,
        ),
        option(
            "approved-for-session",
            "Yes, and don't ask again this session",
            PermissionKind::AllowAlways,
        ),
        option("approved", "Yes, proceed", PermissionKind::AllowOnce),
        option(
            "approved-execpolicy-amendment",
            "Yes, and remember this command pattern",
            PermissionKind::AllowAlways,
        ),
        option(
            "denied",
            "No, continue without running it",
            PermissionKind::RejectOnce,
        ),
    ];
    let mut app = asked(
        run_tool(serde_json::json!({"command": "ls"})),
        options.clone(),
    );
    let shown: Vec<(char, String)> = app
        .approval_choices()
        .iter()
        .map(|c| (c.key, c.option_id.clone()))
        .collect();
    let want = [
        ('y', "approved"),
        ('a', "approved-for-session"),
        ('3', "approved-execpolicy-amendment"),
        ('n', "abort"),
        ('5', "denied"),
    ];
    assert_eq!(
        shown,
        want.map(|(k, id)| (k, id.to_owned())),
        "every option, by kind, the agent's order within a kind"
    );
    app.resize(120, 30);
    let s = screen(&app);
    for label in [
        "[y] Yes, proceed",
        "[a] Yes, and don't ask again this session",
        "[3] Yes, and remember this command pattern",
        "[n] No, and tell Codex what to do differently",
        "[5] No, continue without running it",
    ] {
        assert!(s.contains(label), "missing {label:?}:\n{s}");
    }
    // Never an "always" by default.
    assert_eq!(app.approval_choice(), Some(0));
    // The second option of a kind, by its digit: its own id is sent with its kind.
    app.handle_input(key(KeyCode::Char('3')));
    let sent: Vec<(PermissionReply, String)> = app
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::ReplyPermission {
                reply, option_id, ..
            } => Some((reply, option_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        [(
            PermissionReply::AllowAlways,
            "approved-execpolicy-amendment".to_owned()
        )]
    );
    // And by moving to it: the last reject_once is `denied`, not the first one, `abort`.
    let mut app = asked(run_tool(serde_json::json!({"command": "ls"})), options);
    for _ in 0..4 {
        app.handle_input(key(KeyCode::Right));
    }
    app.handle_input(key(KeyCode::Enter));
    let sent: Vec<String> = app
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::ReplyPermission { option_id, .. } => Some(option_id),
            _ => None,
        })
        .collect();
    assert_eq!(sent, ["denied".to_owned()]);
    assert!(!app.awaiting_feedback(), "`denied` asks for no feedback");
}
