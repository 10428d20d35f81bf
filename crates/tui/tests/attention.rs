//! Attention at a glance and terminal notifications, driven without a terminal
//! (docs/tui.md §2b, §2c): each session's state in the list and its order, what counts as a
//! failure, unread until opened, and when and how the terminal is rung.

mod util;

use ax_protocol::{Part, SessionStatus};
use ax_tui::app::{App, Effect};
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

// ---- attention at a glance --------------------------------------------------------------

use ax_protocol::Event;
use ax_tui::attention::Attention;

fn status(app: &mut App, n: u32, status: SessionStatus) {
    app.on_event(Event::SessionStatus {
        session_id: sid(n),
        status,
    });
}

fn part(app: &mut App, n: u32, part: Part) {
    app.on_event(Event::MessagePart {
        session_id: sid(n),
        message_id: format!("msg_0123456789abABCDEFGHIJ00{n:02}")
            .parse()
            .unwrap(),
        index: 0,
        part,
    });
}

fn order(app: &App) -> Vec<(u32, Attention)> {
    app.sessions()
        .iter()
        .map(|s| {
            let n = (1..=9).find(|&n| sid(n) == s.id).unwrap();
            (n, app.attention(s))
        })
        .collect()
}

#[test]
fn the_list_shows_each_state_and_sorts_what_needs_you_first() {
    let mut app = ready_app(
        (1..=5)
            .map(|n| session(n, &format!("s{n}"), SessionStatus::Idle))
            .collect(),
        false,
    );
    // Session 1 is open: its turn ends in front of the person.
    open_loaded(&mut app, 1, vec![]);
    for n in [1, 2, 3, 5] {
        status(&mut app, n, SessionStatus::Busy);
    }
    status(&mut app, 1, SessionStatus::Idle);
    // 2 fails (a non-zero exit), 3 ends well, 5 is aborted by the person (not a failure),
    // 4 asks for approval; all while the person looks at session 1.
    part(
        &mut app,
        2,
        Part::Exit {
            code: Some(2),
            signal: None,
        },
    );
    status(&mut app, 2, SessionStatus::Idle);
    assert!(app.notice().unwrap().text.contains("“s2” failed after"));
    status(&mut app, 3, SessionStatus::Idle);
    part(&mut app, 5, Part::Aborted);
    status(&mut app, 5, SessionStatus::Idle);
    app.on_event(Event::PermissionAsked {
        permission: permission("per_0123456789abABCDEFGHIJKLMN", 4, "rm -rf build"),
    });
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(
        order(&app),
        [
            (4, Attention::NeedsYou),
            (5, Attention::Unread),
            (3, Attention::Unread),
            (2, Attention::Failed),
            (1, Attention::Idle),
        ]
    );
    let s = screen(&app);
    assert!(s.contains("Sessions (5) · 1 needs you · 3 unread"), "{s}");
    for (title, marker) in [("s4", "? waiting"), ("s3", "✓ unread"), ("s2", "✗ failed")] {
        let row = s
            .lines()
            .find(|l| l.contains(&format!(" {title} ")))
            .unwrap();
        assert!(row.contains(marker), "{row}");
    }
    // A running turn sorts right after what needs the person.
    status(&mut app, 1, SessionStatus::Busy);
    assert_eq!(order(&app)[1], (1, Attention::Working));
    // Opening a session reads it: it is idle again, and stays so at home.
    open_loaded(&mut app, 2, vec![]);
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(order(&app).last(), Some(&(2, Attention::Idle)));
    assert!(screen(&app).contains("· 2 unread"));
}

#[test]
fn an_error_notice_or_a_restart_fails_a_turn_and_a_new_turn_clears_it() {
    use ax_protocol::turn::{Notice, NoticeKind, TurnDelta};
    let mut app = ready_app(
        vec![
            session(1, "a", SessionStatus::Idle),
            session(2, "b", SessionStatus::Idle),
        ],
        false,
    );
    status(&mut app, 1, SessionStatus::Busy);
    app.on_event(Event::MessageDelta {
        session_id: sid(1),
        message_id: "msg_0123456789abABCDEFGHIJ0001".parse().unwrap(),
        seq: 1,
        delta: TurnDelta::Notice {
            notice: Notice {
                kind: NoticeKind::Error,
                message: "agent crashed".into(),
            },
        },
    });
    status(&mut app, 1, SessionStatus::Idle);
    status(&mut app, 2, SessionStatus::Busy);
    part(&mut app, 2, Part::Interrupted);
    status(&mut app, 2, SessionStatus::Idle);
    let s1 = app.sessions().iter().find(|s| s.id == sid(1)).unwrap();
    assert_eq!(app.attention(s1), Attention::Failed);
    let s2 = app.sessions().iter().find(|s| s.id == sid(2)).unwrap();
    assert_eq!(app.attention(s2), Attention::Failed);
    // The next turn of 1 ends well: unread, no longer failed.
    status(&mut app, 1, SessionStatus::Busy);
    status(&mut app, 1, SessionStatus::Idle);
    let s1 = app.sessions().iter().find(|s| s.id == sid(1)).unwrap();
    assert_eq!(app.attention(s1), Attention::Unread);
}

/// A `shell` session's command is an `execute` call: a call that failed with an exit status
/// or a signal fails the turn; a rejection (failed with neither) and an abort (cancelled)
/// do not, and another agent's failed command is not its turn failing.
#[test]
fn a_shell_commands_failed_call_fails_its_turn_and_nothing_else_does() {
    use ax_protocol::turn::{ToolCallFields, ToolStatus, TurnDelta};
    let mut sessions: Vec<_> = (1..=5)
        .map(|n| session(n, &format!("s{n}"), SessionStatus::Idle))
        .collect();
    sessions[4].agent = "mock".into();
    let mut app = ready_app(sessions, false);
    let ended = |app: &mut App, n: u32, status: ToolStatus, raw: Option<serde_json::Value>| {
        app.on_event(Event::MessageDelta {
            session_id: sid(n),
            message_id: format!("msg_0123456789abABCDEFGHIJ00{n:02}")
                .parse()
                .unwrap(),
            seq: 5,
            delta: TurnDelta::ToolCallUpdated {
                tool_call_id: "cmd-1".into(),
                fields: ToolCallFields {
                    status: Some(status),
                    raw_output: raw,
                    ..ToolCallFields::default()
                },
            },
        });
    };
    for n in 1..=5 {
        status(&mut app, n, SessionStatus::Busy);
    }
    let exit = |code: Option<u32>, signal: Option<&str>| {
        Some(serde_json::json!({"exitCode": code, "signal": signal, "truncated": false}))
    };
    ended(&mut app, 1, ToolStatus::Failed, exit(Some(2), None));
    ended(&mut app, 2, ToolStatus::Failed, exit(None, Some("SIGTERM")));
    ended(&mut app, 3, ToolStatus::Failed, None);
    ended(&mut app, 4, ToolStatus::Cancelled, None);
    ended(&mut app, 5, ToolStatus::Failed, exit(Some(2), None));
    for n in 1..=5 {
        status(&mut app, n, SessionStatus::Idle);
    }
    let of = |app: &App, n: u32| {
        let s = app.sessions().iter().find(|s| s.id == sid(n)).unwrap();
        app.attention(s)
    };
    assert_eq!(of(&app, 1), Attention::Failed, "exit 2");
    assert_eq!(of(&app, 2), Attention::Failed, "killed by a signal");
    assert_eq!(of(&app, 3), Attention::Unread, "rejected: nothing ran");
    assert_eq!(of(&app, 4), Attention::Unread, "aborted by the person");
    assert_eq!(of(&app, 5), Attention::Unread, "another agent's command");
}

// ---- notifications ----------------------------------------------------------------------

use ax_tui::notify::{NotifyMode, Ring};

fn rings(app: &mut App) -> Vec<String> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Ring { sequence } => Some(sequence),
            _ => None,
        })
        .collect()
}

#[test]
fn a_session_out_of_sight_rings_when_its_turn_ends_fails_or_asks() {
    let mut app = ready_app(
        vec![
            session(1, "open one", SessionStatus::Idle),
            session(2, "other\x1b]0;evil\x07", SessionStatus::Idle),
        ],
        false,
    );
    app.set_notifications(NotifyMode::Osc777, Ring::Bell);
    open_loaded(&mut app, 1, vec![]);
    app.take_effects();
    status(&mut app, 2, SessionStatus::Busy);
    assert!(rings(&mut app).is_empty(), "a start does not ring");
    status(&mut app, 2, SessionStatus::Idle);
    let r = rings(&mut app);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(
        r[0].starts_with("\x1b]777;notify;ax-code;“other]0,evil” finished in "),
        "{:?}",
        r[0]
    );
    assert!(r[0].ends_with('\x07') && r[0].matches('\x07').count() == 1);
    status(&mut app, 2, SessionStatus::Pending);
    let r = rings(&mut app);
    assert!(r[0].contains("asks for approval"), "{r:?}");
    part(
        &mut app,
        2,
        Part::Exit {
            code: Some(1),
            signal: None,
        },
    );
    status(&mut app, 2, SessionStatus::Idle);
    assert!(rings(&mut app)[0].contains("failed after"));

    // The open session's turn ends in front of the person: no ring, unless the terminal
    // lost the focus.
    status(&mut app, 1, SessionStatus::Busy);
    status(&mut app, 1, SessionStatus::Idle);
    assert!(rings(&mut app).is_empty());
    app.set_focused(false);
    status(&mut app, 1, SessionStatus::Busy);
    status(&mut app, 1, SessionStatus::Idle);
    assert!(rings(&mut app)[0].contains("“open one” finished"));

    // Bell, and off.
    app.set_notifications(NotifyMode::Bell, Ring::Osc9);
    status(&mut app, 2, SessionStatus::Busy);
    status(&mut app, 2, SessionStatus::Idle);
    assert_eq!(rings(&mut app), ["\x07"]);
    app.set_notifications(NotifyMode::Off, Ring::Osc9);
    status(&mut app, 2, SessionStatus::Busy);
    status(&mut app, 2, SessionStatus::Idle);
    assert!(rings(&mut app).is_empty());
}

#[test]
fn slash_notify_shows_and_switches_the_mode() {
    let mut app = ready_app(vec![], false);
    app.set_notifications(NotifyMode::Auto, Ring::Osc9);
    typed(&mut app, "/notify");
    app.handle_input(key(KeyCode::Enter));
    let n = app.notice().unwrap().text.clone();
    assert!(
        n.contains("notifications: auto (rings with OSC 9 notifications)"),
        "{n}"
    );
    typed(&mut app, "/notify bell");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.notifications(), (NotifyMode::Bell, Ring::Bell));
    typed(&mut app, "/notify auto");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.notifications(), (NotifyMode::Auto, Ring::Osc9));
    typed(&mut app, "/notify loud");
    app.handle_input(key(KeyCode::Enter));
    assert!(
        app.notice()
            .unwrap()
            .text
            .contains("not a notification mode")
    );
    assert_eq!(app.notifications(), (NotifyMode::Auto, Ring::Osc9));
}

#[test]
fn a_session_created_by_a_prompt_from_home_does_not_ring_before_it_opens() {
    let mut app = ready_app(vec![], false);
    app.set_notifications(NotifyMode::Osc9, Ring::Bell);
    typed(&mut app, "ls");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::Submit { generation, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_event(Event::SessionCreated {
        session: session(1, "", SessionStatus::Idle),
    });
    status(&mut app, 1, SessionStatus::Pending);
    assert!(rings(&mut app).is_empty(), "the person just sent it");
    app.on_submitted(*generation, Ok(sid(1)));
    assert_eq!(app.route(), &ax_tui::app::Route::Session(sid(1)));
    // Once it is open and then left, it rings again.
    app.handle_input(key(KeyCode::Esc));
    status(&mut app, 1, SessionStatus::Idle);
    assert_eq!(rings(&mut app).len(), 1);
}
