//! An ACP agent's turn in the TUI, driven without a terminal: every part kind streams in as
//! `message.delta`s and renders (snapshots of the state model and of the screen), deltas change
//! parts in place, a tool call opens to its coloured diff by keyboard and by mouse, long
//! content folds behind "show all", the live view equals a reload, and an opened part blocks
//! TUIMCP navigation like a modal.

mod util;

use ax_protocol::turn::{
    Notice, NoticeKind, PermissionChoice, PermissionKind, PermissionOutcome, PermissionPart,
    PlanEntry, PlanPriority, PlanStatus, TerminalExit, ToolCallFields, ToolCallPart, ToolContent,
    ToolKind, ToolLocation, ToolStatus, TurnDelta, TurnPart,
};
use ax_protocol::{Event, Message, Part, Role, SessionStatus};
use ax_tui::app::App;
use ax_tui::input::{Input, KeyCode, Modifiers};
use ax_tui::render::draw;
use ax_tui::transcript::Transcript;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use util::*;

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

fn buffer(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

fn tool(id: &str, title: &str, kind: ToolKind) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: id.into(),
        title: title.into(),
        kind,
        ..ToolCallPart::default()
    }
}

fn plan(statuses: [PlanStatus; 3]) -> Vec<PlanEntry> {
    ["Read the parser", "Fix the last line", "Run the tests"]
        .iter()
        .zip(statuses)
        .map(|(c, status)| PlanEntry {
            content: (*c).into(),
            priority: PlanPriority::Medium,
            status,
        })
        .collect()
}

/// A turn with every part kind, as the backend streams it.
fn every_kind() -> Vec<TurnDelta> {
    use PlanStatus::*;
    let mut edit = tool("t2", "Edit src/lib.rs", ToolKind::Edit);
    edit.content = vec![ToolContent::Diff {
        path: "src/lib.rs".into(),
        old_text: Some("fn a() {}\nfn b() {\n    1\n}\nfn c() {}\n".into()),
        new_text: "fn a() {}\nfn b() {\n    2\n}\nfn c() {}\n".into(),
        line: None,
    }];
    edit.locations = vec![ToolLocation {
        path: "src/lib.rs".into(),
        line: Some(2),
    }];
    let mut run = tool("t1", "cargo test", ToolKind::Execute);
    run.raw_input = Some(serde_json::json!({"command": "cargo test\n  --quiet"}));
    vec![
        TurnDelta::ThoughtAppended {
            text: "The user wants\n".into(),
        },
        TurnDelta::ThoughtAppended {
            text: "a fix.".into(),
        },
        TurnDelta::PlanReplaced {
            entries: plan([InProgress, Pending, Pending]),
        },
        TurnDelta::TextAppended {
            text: "# Fix\n\nThe **parser** drops".into(),
        },
        TurnDelta::TextAppended {
            text: " the *last* line.\n\n```rust\nlet n = 1;\n```\n".into(),
        },
        TurnDelta::ToolCallCreated { tool_call: run },
        TurnDelta::ToolCallUpdated {
            tool_call_id: "t1".into(),
            fields: ToolCallFields {
                status: Some(ToolStatus::InProgress),
                content: Some(vec![ToolContent::Text {
                    text: "\u{1b}[32mok\u{1b}[0m 3 passed\n".into(),
                }]),
                ..ToolCallFields::default()
            },
        },
        TurnDelta::PermissionAsked {
            permission: PermissionPart {
                permission_id: "per_00000000000000000000000011".parse().unwrap(),
                tool_call: edit.clone(),
                options: vec![
                    PermissionChoice {
                        option_id: "allow".into(),
                        name: "Allow".into(),
                        kind: PermissionKind::AllowOnce,
                    },
                    PermissionChoice {
                        option_id: "reject".into(),
                        name: "Reject".into(),
                        kind: PermissionKind::RejectOnce,
                    },
                ],
                outcome: PermissionOutcome::Pending,
            },
        },
        TurnDelta::PermissionAnswered {
            permission_id: "per_00000000000000000000000011".parse().unwrap(),
            outcome: PermissionOutcome::Selected {
                option_id: "allow".into(),
                kind: PermissionKind::AllowOnce,
            },
        },
        TurnDelta::ToolCallCreated { tool_call: edit },
        TurnDelta::ToolCallUpdated {
            tool_call_id: "t2".into(),
            fields: ToolCallFields {
                status: Some(ToolStatus::Completed),
                ..ToolCallFields::default()
            },
        },
        TurnDelta::ToolCallUpdated {
            tool_call_id: "t1".into(),
            fields: ToolCallFields {
                status: Some(ToolStatus::Failed),
                ..ToolCallFields::default()
            },
        },
        TurnDelta::PlanReplaced {
            entries: plan([Completed, Completed, InProgress]),
        },
        TurnDelta::Notice {
            notice: Notice {
                kind: NoticeKind::Usage,
                message: "1,234 tokens".into(),
            },
        },
        TurnDelta::Notice {
            notice: Notice {
                kind: NoticeKind::Auth,
                message: "the agent needs authentication: Mock API key".into(),
            },
        },
        TurnDelta::Notice {
            notice: Notice {
                kind: NoticeKind::Error,
                message: "the agent's error output ends with:\nboom".into(),
            },
        },
        TurnDelta::TextAppended {
            text: "Done.".into(),
        },
    ]
}

fn delta(seq: u64, d: TurnDelta) -> Event {
    Event::MessageDelta {
        session_id: sid(1),
        message_id: "msg_00000000000000000000000002".parse().unwrap(),
        seq,
        delta: d,
    }
}

/// Session 1 (an ACP agent's, `mock`) open at 100x40 with the person's prompt and the agent's
/// reply streamed in.
fn streamed() -> App {
    let mut s = session(1, "agent turn", SessionStatus::Busy);
    s.agent = "mock".into();
    let mut app = ready_app(vec![s], false);
    app.resize(100, 40);
    let prompt = message(
        "msg_00000000000000000000000001",
        1,
        Role::User,
        vec![Part::Text {
            text: "fix the parser".into(),
        }],
    );
    open_loaded(&mut app, 1, vec![prompt]);
    app.on_event(Event::MessageCreated {
        message: message("msg_00000000000000000000000002", 1, Role::Assistant, vec![]),
    });
    for (i, d) in every_kind().into_iter().enumerate() {
        app.on_event(delta(i as u64 + 1, d));
    }
    app
}

#[test]
fn every_part_kind_renders() {
    let app = streamed();
    let parts = app.transcript().turn_parts();
    assert_eq!(parts.len(), 1);
    insta::assert_debug_snapshot!("state_model", parts[0].1);
    let s = screen(&app);
    for want in [
        "✻ Thought (2 lines) ▸",
        "Plan",
        "[x] Read the parser",
        "[~] Run the tests",
        "Fix",
        "The parser drops the last line.",
        "let n = 1;",
        "✗ [run] cargo test · failed ▸",
        "✓ permission: Edit src/lib.rs — allowed once (“Allow”) ▸",
        "✓ [edit] Edit src/lib.rs ▸",
        "│ needs auth: the agent needs authentication: Mock API key",
        "what to do: set the variable",
        "│ error: the agent's error output ends with:",
        "│   boom",
        "Done.",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    assert!(!s.contains("fn b()"), "cards start collapsed:\n{s}");
    assert!(!s.contains("usage:"), "usage is a meter, not a line:\n{s}");
    insta::assert_snapshot!("screen", s);
}

#[test]
fn deltas_change_parts_in_place_and_repeats_are_ignored() {
    let mut app = streamed();
    let rows = app.transcript().total_rows();
    // The same delta again (a replay after a reconnect) changes nothing.
    app.on_event(delta(
        3,
        TurnDelta::TextAppended {
            text: "REPLAYED".into(),
        },
    ));
    assert_eq!(app.transcript().total_rows(), rows);
    assert!(
        !app.transcript()
            .all_rows()
            .iter()
            .any(|r| r.contains("REPLAYED"))
    );
    // A running tool call becomes completed where it is, not below.
    let n = every_kind().len() as u64;
    app.on_event(delta(
        n + 1,
        TurnDelta::ToolCallCreated {
            tool_call: tool("t3", "ls", ToolKind::Execute),
        },
    ));
    let before = app.transcript().all_rows();
    let at = before.iter().position(|r| r.contains("[run] ls")).unwrap();
    assert!(before[at].contains("pending"), "{}", before[at]);
    app.on_event(delta(
        n + 2,
        TurnDelta::TextAppended {
            text: "after".into(),
        },
    ));
    app.on_event(delta(
        n + 3,
        TurnDelta::ToolCallUpdated {
            tool_call_id: "t3".into(),
            fields: ToolCallFields {
                status: Some(ToolStatus::Completed),
                ..ToolCallFields::default()
            },
        },
    ));
    let after = app.transcript().all_rows();
    assert_eq!(after[at], "✓ [run] ls");
    assert_eq!(after.last().unwrap(), "after");
    // A gap asks for a reload.
    app.take_effects();
    app.on_event(delta(n + 9, TurnDelta::TextAppended { text: "x".into() }));
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, ax_tui::app::Effect::LoadTranscript { .. }))
    );
}

#[test]
fn the_live_view_equals_a_reload() {
    let app = streamed();
    let live = app.transcript().all_rows();
    let (_, parts) = app.transcript().turn_parts()[0];
    let stored = vec![
        message(
            "msg_00000000000000000000000001",
            1,
            Role::User,
            vec![Part::Text {
                text: "fix the parser".into(),
            }],
        ),
        Message {
            parts: parts.iter().cloned().map(Part::from_turn).collect(),
            ..message("msg_00000000000000000000000002", 1, Role::Assistant, vec![])
        },
    ];
    let reloaded = Transcript::from_messages(&stored, 98);
    assert_eq!(reloaded.all_rows(), live);

    // Markdown streamed in small chunks renders exactly as the whole text.
    let text = "# T\n\npara one\nstill one\n\n- a\n- b\n\n```\ncode\n\nmore\n```\n\nlast *x*";
    let mut t = Transcript::new(40);
    t.add_message(&message(
        "msg_00000000000000000000000003",
        1,
        Role::Assistant,
        vec![],
    ));
    for (i, c) in text.chars().enumerate() {
        t.apply_delta(
            "msg_00000000000000000000000003",
            i as u64 + 1,
            TurnDelta::TextAppended { text: c.into() },
        );
    }
    let whole = Transcript::from_messages(
        &[message(
            "msg_00000000000000000000000003",
            1,
            Role::Assistant,
            vec![Part::Text { text: text.into() }],
        )],
        40,
    );
    assert_eq!(t.all_rows(), whole.all_rows());
}

fn find_row(app: &App, text: &str) -> (u16, u16) {
    let s = screen(app);
    for (y, line) in s.lines().enumerate() {
        if let Some(x) = line.find(text) {
            return (line[..x].chars().count() as u16, y as u16);
        }
    }
    panic!("{text:?} not on screen:\n{s}");
}

#[test]
fn a_tool_call_opens_to_its_diff_by_keyboard_and_by_mouse() {
    let mut app = streamed();
    assert!(!app.blocked_inputs().modal);
    // Shift+Tab from no focus takes the newest foldable part (the edit), Enter opens it.
    app.handle_input(key(KeyCode::BackTab));
    let s = screen(&app);
    assert!(s.contains("▶✓ [edit] Edit src/lib.rs ▸"), "{s}");
    app.handle_input(key(KeyCode::Enter));
    let s = screen(&app);
    for want in [
        "✓ [edit] Edit src/lib.rs ▾",
        "@ src/lib.rs:2",
        "--- src/lib.rs",
        "+++ src/lib.rs",
        "@@ -1,5 +1,5 @@",
        "-    1",
        "+    2",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    // Coloured: removed red, added green.
    let buf = buffer(&app);
    let (x, y) = find_row(&app, "-    1");
    assert_eq!(buf[(x, y)].fg, Color::Red);
    let (x, y) = find_row(&app, "+    2");
    assert_eq!(buf[(x, y)].fg, Color::Green);
    // An opened part takes the person's attention: TUIMCP navigation is blocked.
    assert!(app.blocked_inputs().modal);
    app.handle_input(key(KeyCode::Enter));
    assert!(!screen(&app).contains("+    2"));
    assert!(!app.blocked_inputs().modal);

    // A click on a card's row opens it, another closes it.
    let (x, y) = find_row(&app, "[run] cargo test");
    app.handle_input(click(x, y));
    let s = screen(&app);
    assert!(
        s.contains("$ cargo test") && s.contains(">   --quiet"),
        "{s}"
    );
    assert!(s.contains("ok 3 passed"), "{s}");
    let buf = buffer(&app);
    let (x, y) = find_row(&app, "ok 3 passed");
    assert_eq!(buf[(x, y)].fg, Color::Green, "ANSI colour kept");
    let (x, y) = find_row(&app, "[run] cargo test");
    app.handle_input(click(x, y));
    assert!(!screen(&app).contains("ok 3 passed"));

    // The thought unfolds, dimmed.
    let (x, y) = find_row(&app, "✻ Thought (2 lines)");
    app.handle_input(click(x, y));
    let s = screen(&app);
    assert!(s.contains("The user wants") && s.contains("a fix."), "{s}");
    // Esc (not busy) clears the focus before it leaves the session.
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    assert!(app.transcript().focus().is_some());
    app.handle_input(key(KeyCode::Esc));
    assert!(app.transcript().focus().is_none());
    assert_eq!(app.route(), &ax_tui::app::Route::Session(sid(1)));
}

#[test]
fn long_output_folds_behind_show_all() {
    let mut app = streamed();
    let n = every_kind().len() as u64;
    let mut long = tool("t9", "seq 1 60", ToolKind::Execute);
    long.content = vec![ToolContent::Text {
        text: (1..=60).map(|i| format!("out {i}\n")).collect(),
    }];
    app.on_event(delta(n + 1, TurnDelta::ToolCallCreated { tool_call: long }));
    app.handle_input(key(KeyCode::BackTab));
    app.handle_input(key(KeyCode::Enter));
    let rows = app.transcript().all_rows();
    assert!(rows.iter().any(|r| r.trim() == "out 16"));
    assert!(!rows.iter().any(|r| r.trim() == "out 17"));
    let more = rows.iter().find(|r| r.contains("show all")).unwrap();
    assert!(more.contains("44 more rows"), "{more}");
    // Enter again shows all of it; once more closes it.
    app.handle_input(key(KeyCode::Enter));
    let rows = app.transcript().all_rows();
    assert!(rows.iter().any(|r| r.trim() == "out 60"));
    app.handle_input(key(KeyCode::Enter));
    assert!(
        !app.transcript()
            .all_rows()
            .iter()
            .any(|r| r.trim() == "out 1")
    );
    // With a draft, Enter sends instead.
    app.handle_input(Input::Key(ax_tui::input::Key {
        code: KeyCode::Char('x'),
        mods: Modifiers::default(),
    }));
    app.handle_input(key(KeyCode::Enter));
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, ax_tui::app::Effect::Submit { .. }))
    );
}

#[test]
fn a_resize_rerenders_the_parts_at_the_new_width() {
    let mut app = streamed();
    app.handle_input(key(KeyCode::BackTab));
    app.handle_input(key(KeyCode::Enter));
    app.resize(60, 40);
    let rows = app.transcript().all_rows();
    assert!(rows.iter().all(|r| r.chars().count() <= 58), "{rows:#?}");
    assert!(rows.iter().any(|r| r.contains("+    2")), "still open");
    app.resize(100, 40);
    assert_eq!(app.transcript().all_rows(), {
        let mut fresh = streamed();
        fresh.handle_input(key(KeyCode::BackTab));
        fresh.handle_input(key(KeyCode::Enter));
        fresh.transcript().all_rows()
    });
}

// ---- choosing the agent, /agent, /mode, standing "always" ---------------------------------

fn agent_list() -> ax_protocol::AgentList {
    use ax_protocol::{AgentInfo, AgentKindName, AgentOrigin};
    ax_protocol::AgentList {
        default: "mock".into(),
        agents: vec![
            AgentInfo {
                name: "mock".into(),
                kind: AgentKindName::Acp,
                origin: AgentOrigin::Config,
            },
            AgentInfo {
                name: "shell".into(),
                kind: AgentKindName::Shell,
                origin: AgentOrigin::Builtin,
            },
        ],
    }
}

#[test]
fn a_new_session_asks_which_agent_with_the_default_preselected() {
    use ax_tui::app::{Effect, Modal};
    let mut app = ready_app(vec![], true);
    typed(&mut app, "/new");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::ListAgents { generation }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_agents(*generation, Ok(agent_list()));
    assert!(matches!(
        app.modal(),
        Some(Modal::AgentPicker { selected: 0, .. })
    ));
    // The picker takes the person's attention: agent navigation is blocked.
    assert!(app.blocked_inputs().modal);
    let s = screen(&app);
    assert!(s.contains("New session: which agent?"), "{s}");
    assert!(s.contains("mock") && s.contains("(default)") && s.contains("shell"));
    // Enter accepts the default.
    app.handle_input(key(KeyCode::Enter));
    assert!(matches!(
        app.take_effects().as_slice(),
        [Effect::CreateSession { agent: Some(a), .. }] if a == "mock"
    ));
    // Ctrl+N, then ↓ picks the other one.
    let mut app = ready_app(vec![], false);
    app.handle_input(ctrl('n'));
    let effects = app.take_effects();
    let [Effect::ListAgents { generation }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_agents(*generation, Ok(agent_list()));
    app.handle_input(key(KeyCode::Down));
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [
        Effect::CreateSession {
            agent: Some(a),
            generation,
        },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    assert_eq!(a, "shell");
    // Esc cancels.
    app.on_created(*generation, Err("x".into()));
    app.handle_input(ctrl('n'));
    let effects = app.take_effects();
    let [Effect::ListAgents { generation }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_agents(*generation, Ok(agent_list()));
    app.handle_input(key(KeyCode::Esc));
    assert!(app.modal().is_none() && app.take_effects().is_empty());
}

/// The picker works with the mouse too: the wheel moves the highlight, a click on an agent's
/// row (found on the rendered screen) creates the session with it, a click outside cancels.
#[test]
fn the_agent_picker_takes_clicks_and_the_wheel() {
    use ax_tui::app::{Effect, Modal};
    use ax_tui::input::{Mouse, MouseKind};
    let open = |app: &mut App| {
        app.handle_input(ctrl('n'));
        let effects = app.take_effects();
        let [Effect::ListAgents { generation }] = effects.as_slice() else {
            panic!("{effects:?}")
        };
        app.on_agents(*generation, Ok(agent_list()));
    };
    let mouse = |kind, col, row| Input::Mouse(Mouse { kind, col, row });
    let mut app = ready_app(vec![], false);
    open(&mut app);
    app.handle_input(mouse(MouseKind::ScrollDown, 40, 12));
    assert!(matches!(
        app.modal(),
        Some(Modal::AgentPicker { selected: 1, .. })
    ));
    app.handle_input(mouse(MouseKind::ScrollUp, 40, 12));
    assert!(matches!(
        app.modal(),
        Some(Modal::AgentPicker { selected: 0, .. })
    ));
    // Where the screen shows the shell agent's row, not the highlighted one.
    let shown = screen(&app);
    let (row, line) = shown
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("shell") && l.contains("builtin"))
        .unwrap_or_else(|| panic!("{shown}"));
    let col = line[..line.find("shell").unwrap()].chars().count();
    app.handle_input(mouse(MouseKind::Down, col as u16, row as u16));
    assert!(app.modal().is_none());
    assert!(matches!(
        app.take_effects().as_slice(),
        [Effect::CreateSession { agent: Some(a), .. }] if a == "shell"
    ));
    // A click outside the box cancels without creating anything.
    let mut app = ready_app(vec![], false);
    open(&mut app);
    app.handle_input(mouse(MouseKind::Down, 0, 1));
    assert!(app.modal().is_none() && app.take_effects().is_empty());
}

fn acp_session(status: SessionStatus) -> ax_protocol::Session {
    use ax_protocol::{AgentMode, AgentModes, AgentState, StandingGrant};
    let mut s = session(1, "acp", status);
    s.agent = "mock".into();
    s.agent_state = Some(AgentState {
        modes: Some(AgentModes {
            current: "default".into(),
            available: vec![
                AgentMode {
                    id: "default".into(),
                    name: "Default".into(),
                    description: None,
                },
                AgentMode {
                    id: "acceptEdits".into(),
                    name: "Accept Edits".into(),
                    description: None,
                },
            ],
        }),
        ..AgentState::default()
    });
    s.standing = vec![StandingGrant {
        title: "Always Allow: Edit src/lib.rs".into(),
        granted: 1_764_450_000_000,
    }];
    s
}

#[test]
fn agent_and_mode_commands_and_the_standing_always() {
    use ax_tui::app::{Effect, Modal};
    let mut app = ready_app(vec![acp_session(SessionStatus::Idle)], false);
    open_loaded(&mut app, 1, vec![]);
    let s = screen(&app);
    assert!(
        s.contains("⚑ always allowed: Always Allow: Edit src/lib.rs · /revoke"),
        "{s}"
    );
    assert!(s.contains("[Revoke]"));
    assert!(s.contains("Ask mock…, or / for commands"));

    typed(&mut app, "/agent");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.modal(), Some(&Modal::AgentInfo));
    let s = screen(&app);
    assert!(
        s.contains("agent: mock") && s.contains("● default — Default"),
        "{s}"
    );
    assert!(s.contains("acceptEdits — Accept Edits"));
    assert!(s.contains("standing “always” answers"));
    app.handle_input(key(KeyCode::Esc));

    // /mode lists the modes, the current one selected; ↓ Enter switches.
    typed(&mut app, "/mode");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.modal(), Some(&Modal::Modes { selected: 0 }));
    assert!(screen(&app).contains("default — Default (current)"));
    app.handle_input(key(KeyCode::Down));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        app.take_effects(),
        [Effect::SetMode {
            session: sid(1),
            mode_id: "acceptEdits".into()
        }]
    );
    // `/mode ID` switches directly; an unknown one says what there is.
    typed(&mut app, "/mode default");
    app.handle_input(key(KeyCode::Enter));
    assert!(
        matches!(app.take_effects().as_slice(), [Effect::SetMode { mode_id, .. }] if mode_id == "default")
    );
    typed(&mut app, "/mode nope");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.take_effects().is_empty());
    assert!(app.notice().unwrap().text.contains("acceptEdits"));

    // A click on [Revoke] revokes; so does /revoke.
    let (x, y) = find_row(&app, "[Revoke]");
    app.handle_input(click(x + 1, y));
    assert_eq!(
        app.take_effects(),
        [Effect::RevokeStanding { session: sid(1) }]
    );
    typed(&mut app, "/revoke");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        app.take_effects(),
        [Effect::RevokeStanding { session: sid(1) }]
    );
    // The answer without standing grants removes the row.
    let mut revoked = acp_session(SessionStatus::Idle);
    revoked.standing.clear();
    app.on_session_changed(Ok(revoked));
    assert!(!screen(&app).contains("always allowed"));
    typed(&mut app, "/revoke");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.take_effects().is_empty());

    // The shell agent has no modes.
    let mut app = ready_app(vec![session(2, "sh", SessionStatus::Idle)], false);
    open_loaded(&mut app, 2, vec![]);
    typed(&mut app, "/mode");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.notice().unwrap().text.contains("no modes"));
}

/// An opened card and the agent picker block agent navigation in a real TUIMCP controller,
/// exactly like the other modals; closing them unblocks it.
#[test]
fn an_open_card_and_the_picker_block_the_agent_in_the_controller() {
    use ax_tuimcp::{Controller, Identity};
    use std::time::{Duration, Instant};

    let mut app = streamed();
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    let mut ctl = Controller::new(Identity::random(), app.guard_inputs());
    let now = Instant::now() + Duration::from_secs(60);
    let mut blocked = |app: &App| {
        ctl.observe(app.guard_inputs());
        ctl.view(now).blocked
    };
    assert!(!blocked(&app));
    app.handle_input(key(KeyCode::BackTab));
    assert!(!blocked(&app), "a focus alone takes nothing");
    app.handle_input(key(KeyCode::Enter));
    assert!(blocked(&app), "an open card blocks");
    app.handle_input(key(KeyCode::Enter));
    assert!(!blocked(&app));

    app.handle_input(ctrl('n'));
    let effects = app.take_effects();
    let [ax_tui::app::Effect::ListAgents { generation }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_agents(*generation, Ok(agent_list()));
    assert!(blocked(&app), "the agent picker blocks");
    app.handle_input(key(KeyCode::Esc));
    assert!(!blocked(&app));
}

/// An ACP agent's permission: the dialog shows the tool call (kind, location, the whole
/// command, the diff of an edit) and the agent's own options by name; a key answers by kind.
#[test]
fn the_approval_dialog_shows_an_acp_request_and_the_agents_options() {
    use ax_protocol::{Permission, PermissionReply, PermissionState};
    let mut app = ready_app(vec![acp_session(SessionStatus::Pending)], false);
    let mut edit = tool("t2", "Edit src/lib.rs", ToolKind::Edit);
    edit.content = vec![ToolContent::Diff {
        path: "src/lib.rs".into(),
        old_text: Some("a\nold line\nc\n".into()),
        new_text: "a\nnew line\nc\n".into(),
        line: None,
    }];
    edit.raw_input = Some(serde_json::json!({"command": "apply\n--patch"}));
    let option = |id: &str, name: &str, kind| PermissionChoice {
        option_id: id.into(),
        name: name.into(),
        kind,
    };
    app.on_event(Event::PermissionAsked {
        permission: Permission {
            id: "per_00000000000000000000000009".parse().unwrap(),
            session_id: sid(1),
            command: "Edit src/lib.rs".into(),
            attachments: Vec::new(),
            state: PermissionState::Pending,
            created: 1,
            tool_call: Some(edit),
            options: vec![
                option("approved", "Yes", PermissionKind::AllowOnce),
                option(
                    "approved-for-session",
                    "Yes, for this session",
                    PermissionKind::AllowAlways,
                ),
                option("abort", "No, and tell Codex", PermissionKind::RejectOnce),
            ],
            option_id: None,
        },
    });
    open_loaded(&mut app, 1, vec![]);
    app.resize(100, 40);
    let s = screen(&app);
    for want in [
        "The agent wants to edit src/lib.rs:",
        "  Edit src/lib.rs",
        "kind: edit",
        "$ apply",
        "> --patch",
        "-old line",
        "+new line",
        "[y] Yes",
        "[a] Yes, for this session",
        "[n] No, and tell Codex",
        "“Yes, for this session” lets the agent do this again without asking",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    assert!(
        !s.contains("Reject always"),
        "no option the agent did not offer"
    );
    let buf = buffer(&app);
    let (x, y) = find_row(&app, "+new line");
    assert_eq!(buf[(x, y)].fg, Color::Green);
    // `r` (reject always) is not offered: nothing happens; `a` answers "always".
    app.handle_input(key(KeyCode::Char('r')));
    assert!(app.take_effects().is_empty());
    app.handle_input(key(KeyCode::Char('a')));
    assert_eq!(
        app.take_effects(),
        [ax_tui::app::Effect::ReplyPermission {
            session: sid(1),
            permission_id: "per_00000000000000000000000009".parse().unwrap(),
            reply: PermissionReply::AllowAlways,
            option_id: "approved-for-session".into(),
        }]
    );
}

/// A transcript loaded mid-turn says how many deltas it holds: only later ones apply, with no
/// reload; a turn that ended before the TUI started shows its stored duration and end.
#[test]
fn a_load_mid_turn_applies_only_later_deltas_and_stored_ends_show() {
    let mut app = ready_app(vec![session(1, "agent turn", SessionStatus::Busy)], false);
    app.resize(100, 40);
    let earlier = Message {
        ended: Some(1 + 83_000),
        ..message(
            "msg_00000000000000000000000000",
            1,
            Role::Assistant,
            vec![Part::Text {
                text: "earlier answer".into(),
            }],
        )
    };
    let running = Message {
        deltas: 2,
        ..message(
            "msg_00000000000000000000000002",
            1,
            Role::Assistant,
            vec![Part::Text { text: "ab".into() }],
        )
    };
    open_loaded(&mut app, 1, vec![earlier, running]);
    app.take_effects();
    let rows = app.transcript().all_rows();
    let end = rows
        .iter()
        .position(|r| r.starts_with("── turn took 1m 23s · ended 1970-01-01 00:01"))
        .unwrap_or_else(|| panic!("the stored end shows: {rows:#?}"));
    assert!(rows[end - 1].contains("earlier answer"), "{rows:#?}");
    // Deltas 1 and 2 are in the load already (a replay); 3 is new.
    for (seq, text) in [(1, "a"), (2, "b"), (3, "c")] {
        app.on_event(delta(seq, TurnDelta::TextAppended { text: text.into() }));
    }
    assert!(
        !app.take_effects()
            .iter()
            .any(|e| matches!(e, ax_tui::app::Effect::LoadTranscript { .. })),
        "no reload"
    );
    assert_eq!(
        app.transcript().turn_parts().last().unwrap().1,
        [ax_protocol::turn::TurnPart::Text { text: "abc".into() }]
    );
}

/// A turn watched to its end shows the end the backend stored (`message.ended`, sent before
/// the status turns idle), not this TUI's own clock: the same line a reload shows.
#[test]
fn a_watched_turn_shows_its_stored_end_as_a_reload_would() {
    let mut app = ready_app(vec![session(1, "agent turn", SessionStatus::Busy)], false);
    app.resize(100, 40);
    let running = message(
        "msg_00000000000000000000000002",
        1,
        Role::Assistant,
        vec![Part::Text { text: "ab".into() }],
    );
    open_loaded(&mut app, 1, vec![running.clone()]);
    app.take_effects();
    app.on_event(Event::MessageEnded {
        session_id: sid(1),
        message_id: running.id.clone(),
        ended: 1 + 83_000,
    });
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    let ends = |app: &App| -> Vec<String> {
        app.transcript()
            .all_rows()
            .into_iter()
            .filter(|r| r.starts_with("── turn took"))
            .collect()
    };
    let live = ends(&app);
    assert_eq!(
        live,
        ["── turn took 1m 23s · ended 1970-01-01 00:01 UTC"],
        "one line, the stored end"
    );
    // A reload of the same turn, now stored with its end, shows exactly that.
    let stored = Message {
        ended: Some(1 + 83_000),
        ..running
    };
    let mut fresh = ready_app(vec![session(1, "agent turn", SessionStatus::Idle)], false);
    fresh.resize(100, 40);
    open_loaded(&mut fresh, 1, vec![stored]);
    assert_eq!(ends(&fresh), live);
}

/// A terminal's output streams into its card: shown through the ANSI renderer when the card
/// is open (colours kept, `\r` overwrites), updated in place, with the exit.
#[test]
fn terminal_output_streams_into_its_open_card() {
    let mut app = streamed();
    let n = every_kind().len() as u64;
    let mut call = tool("tt", "make", ToolKind::Execute);
    call.content = vec![ToolContent::terminal("term-1")];
    app.on_event(delta(n + 1, TurnDelta::ToolCallCreated { tool_call: call }));
    let (x, y) = find_row(&app, "[run] make");
    app.handle_input(click(x, y));
    assert!(screen(&app).contains("terminal term-1 · running"));
    app.on_event(delta(
        n + 2,
        TurnDelta::TerminalOutput {
            terminal_id: "term-1".into(),
            text: "\u{1b}[32mbuilt ok\u{1b}[0m\n10%\r".into(),
            dropped_bytes: 0,
        },
    ));
    app.on_event(delta(
        n + 3,
        TurnDelta::TerminalOutput {
            terminal_id: "term-1".into(),
            text: "100% done\n".into(),
            dropped_bytes: 0,
        },
    ));
    app.on_event(delta(
        n + 4,
        TurnDelta::TerminalExited {
            terminal_id: "term-1".into(),
            exit: TerminalExit {
                exit_code: Some(0),
                signal: None,
            },
        },
    ));
    let s = screen(&app);
    assert!(s.contains("terminal term-1 · exit 0"), "{s}");
    assert!(s.contains("built ok") && s.contains("100% done"), "{s}");
    assert!(!s.contains("10%\u{1b}") && !s.contains("[32m"), "{s}");
    assert!(!s.contains("100% done10%"), "\\r overwrote: {s}");
    let buf = buffer(&app);
    let (x, y) = find_row(&app, "built ok");
    assert_eq!(buf[(x, y)].fg, Color::Green, "ANSI colour kept");
    // The state model holds the output and the exit.
    let (_, parts) = app.transcript().turn_parts()[0];
    assert!(parts.iter().any(|p| matches!(p, TurnPart::ToolCall(t)
        if matches!(&t.content[..], [ToolContent::Terminal { output, exit: Some(_), .. }]
            if output.ends_with("100% done\n")))));
}
