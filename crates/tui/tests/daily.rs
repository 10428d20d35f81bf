//! Daily keyboard habits and attention, driven without a terminal (docs/tui.md §3a–§3d):
//! the session's prompt history on ↑/↓ and Ctrl+R, find in the transcript, the attention
//! state of each session, terminal notifications and copying.

mod util;

use ax_protocol::{Part, Role, SessionStatus};
use ax_tui::app::{App, Effect};
use ax_tui::input::{Input, KeyCode};
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

fn prompt(id: &str, text: &str) -> ax_protocol::Message {
    message(id, 1, Role::User, vec![Part::Text { text: text.into() }])
}

fn up(app: &mut App) {
    app.handle_input(key(KeyCode::Up));
}

fn down(app: &mut App) {
    app.handle_input(key(KeyCode::Down));
}

/// Session 1 open with three stored prompts (and a reply between them).
fn with_history() -> App {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![
            prompt("msg_0123456789abABCDEFGHIJ0001", "cargo build"),
            message(
                "msg_0123456789abABCDEFGHIJ0002",
                1,
                Role::Assistant,
                vec![out("ok\n")],
            ),
            prompt("msg_0123456789abABCDEFGHIJ0003", "git status"),
            prompt("msg_0123456789abABCDEFGHIJ0004", "cargo test -p ax-tui"),
        ],
    );
    app
}

fn send(app: &mut App) {
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::Submit { generation, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_submitted(*generation, Ok(sid(1)));
}

#[test]
fn up_and_down_walk_every_stored_prompt_and_give_the_draft_back() {
    let mut app = with_history();
    assert_eq!(
        app.history().entries(),
        ["cargo build", "git status", "cargo test -p ax-tui"]
    );
    typed(&mut app, "half-written");
    up(&mut app);
    assert_eq!(app.composer().draft(), "cargo test -p ax-tui");
    up(&mut app);
    assert_eq!(app.composer().draft(), "git status");
    up(&mut app);
    assert_eq!(app.composer().draft(), "cargo build");
    up(&mut app);
    assert_eq!(
        app.composer().draft(),
        "cargo build",
        "nothing older: stays"
    );
    assert_eq!(
        app.scroll(),
        0,
        "the oldest entry does not scroll the transcript"
    );
    down(&mut app);
    down(&mut app);
    assert_eq!(app.composer().draft(), "cargo test -p ax-tui");
    down(&mut app);
    assert_eq!(
        app.composer().draft(),
        "half-written",
        "the draft comes back"
    );
    assert!(!app.history().walking());
}

#[test]
fn a_sent_prompt_joins_the_history_and_an_edit_is_kept() {
    let mut app = with_history();
    typed(&mut app, "ls -la");
    send(&mut app);
    assert_eq!(app.history().entries().last().unwrap(), "ls -la");
    up(&mut app);
    assert_eq!(app.composer().draft(), "ls -la");
    up(&mut app);
    assert_eq!(app.composer().draft(), "cargo test -p ax-tui");
    // Edited: the walk ends, and the edit is what comes back after the next walk.
    typed(&mut app, " --lib");
    up(&mut app);
    assert_eq!(app.composer().draft(), "ls -la");
    down(&mut app);
    assert_eq!(app.composer().draft(), "cargo test -p ax-tui --lib");
}

#[test]
fn in_a_multi_line_draft_up_moves_the_cursor_before_the_history() {
    let mut app = with_history();
    typed(&mut app, "one");
    app.handle_input(ctrl('j'));
    typed(&mut app, "two");
    up(&mut app);
    assert_eq!(
        app.composer().draft(),
        "one\ntwo",
        "the cursor moved up a line"
    );
    assert_eq!(app.composer().cursor_line_col().0, 0);
    up(&mut app);
    assert_eq!(app.composer().draft(), "cargo test -p ax-tui");
    down(&mut app);
    assert_eq!(app.composer().draft(), "one\ntwo");
}

#[test]
fn without_history_up_still_scrolls_and_home_keeps_its_list() {
    let lines: String = (0..60).map(|i| format!("line {i}\n")).collect();
    let mut app = ready_app(
        vec![
            session(1, "a", SessionStatus::Idle),
            session(2, "b", SessionStatus::Idle),
        ],
        false,
    );
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0001",
            1,
            Role::Assistant,
            vec![out(&lines)],
        )],
    );
    up(&mut app);
    assert_eq!(app.scroll(), 1, "no prompts: ↑ scrolls the transcript");
    assert_eq!(app.composer().draft(), "");
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.selected_index(), Some(1), "session 1 is the older one");
    up(&mut app);
    assert_eq!(app.selected_index(), Some(0), "home: ↑ selects");
}

#[test]
fn ctrl_r_searches_backwards_and_enter_takes_the_match() {
    let mut app = with_history();
    typed(&mut app, "draft");
    app.handle_input(ctrl('r'));
    assert!(app.history_search().is_some());
    typed(&mut app, "cargo");
    assert_eq!(app.history_search_found(), Some("cargo test -p ax-tui"));
    let s = screen(&app);
    assert!(s.contains("History search"), "{s}");
    assert!(s.contains("search: cargo → cargo test -p ax-tui"), "{s}");
    app.handle_input(ctrl('r'));
    assert_eq!(app.history_search_found(), Some("cargo build"));
    assert_eq!(app.composer().draft(), "draft", "not taken yet");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.history_search().is_none());
    assert_eq!(app.composer().draft(), "cargo build");
    assert!(
        app.take_effects().is_empty(),
        "taking a match does not send it"
    );

    // Esc gives the draft back; no match says so.
    app.handle_input(ctrl('r'));
    typed(&mut app, "zzz");
    assert!(screen(&app).contains("no match"));
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.composer().draft(), "cargo build");
    // Ctrl+C inside a search cancels it and never quits.
    app.handle_input(ctrl('r'));
    app.handle_input(ctrl('c'));
    assert!(app.history_search().is_none());
    assert!(!app.is_exiting());
    // A paste goes into the query.
    app.handle_input(ctrl('r'));
    app.handle_input(Input::Paste("git".into()));
    assert_eq!(app.history_search_found(), Some("git status"));
}

#[test]
fn ctrl_r_without_history_says_so() {
    let mut app = ready_app(vec![], false);
    app.handle_input(ctrl('r'));
    assert!(app.history_search().is_none());
    assert!(app.notice().unwrap().text.contains("no prompt history"));
}

// ---- find in the transcript -------------------------------------------------------------

fn buffer(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().buffer().clone()
}

/// The text of the cells drawn with background `bg`, row by row.
fn cells_with_bg(app: &App, bg: ratatui::style::Color) -> Vec<String> {
    let buf = buffer(app);
    let mut rows = Vec::new();
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width)
            .map(|x| &buf[(x, y)])
            .filter(|c| c.bg == bg)
            .map(|c| c.symbol())
            .collect();
        if !row.is_empty() {
            rows.push(row);
        }
    }
    rows
}

/// Session 1 open with `lines` lines of output, every tenth saying "needle N".
fn long_transcript(lines: usize) -> App {
    let text: String = (0..lines)
        .map(|i| {
            if i % 10 == 0 {
                format!("row {i} has Needle {i}\n")
            } else {
                format!("row {i}\n")
            }
        })
        .collect();
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0001",
            1,
            Role::Assistant,
            vec![out(&text)],
        )],
    );
    app
}

#[test]
fn ctrl_f_finds_counts_and_steps_through_matches_with_highlights() {
    let mut app = long_transcript(8);
    app.handle_input(ctrl('f'));
    assert!(app.find().is_some());
    assert!(screen(&app).contains("type to find in the transcript"));
    typed(&mut app, "row");
    assert_eq!(app.find().unwrap().status(), "1/8");
    let s = screen(&app);
    assert!(s.contains("find: row  1/8"), "{s}");
    assert_eq!(
        cells_with_bg(&app, ratatui::style::Color::LightMagenta),
        ["row"],
        "the current match, once"
    );
    assert_eq!(
        cells_with_bg(&app, ratatui::style::Color::Yellow).len(),
        7,
        "every other match on screen"
    );
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.find().unwrap().status(), "2/8");
    app.handle_input(ctrl('n'));
    assert_eq!(app.find().unwrap().status(), "3/8");
    app.handle_input(ctrl('p'));
    app.handle_input(Input::Key(ax_tui::input::Key {
        code: KeyCode::Enter,
        mods: ax_tui::input::Modifiers {
            shift: true,
            ..Default::default()
        },
    }));
    assert_eq!(app.find().unwrap().status(), "1/8", "previous twice");
    app.handle_input(key(KeyCode::Up));
    assert_eq!(app.find().unwrap().status(), "8/8", "wraps to the last");
    assert!(app.take_effects().is_empty(), "Enter in find sends nothing");
    // Smart case: an upper-case letter makes it exact.
    typed(&mut app, " 0");
    assert_eq!(app.find().unwrap().status(), "1/1");
    app.handle_input(key(KeyCode::Esc));
    assert!(app.find().is_none());
    assert!(cells_with_bg(&app, ratatui::style::Color::Yellow).is_empty());
    assert!(cells_with_bg(&app, ratatui::style::Color::LightMagenta).is_empty());
}

#[test]
fn the_current_match_is_scrolled_into_view() {
    let mut app = long_transcript(200);
    typed(&mut app, "/find needle");
    app.handle_input(key(KeyCode::Enter));
    let f = app.find().expect("/find opens the bar");
    assert_eq!(f.matches().len(), 20);
    // The view is at the bottom: the first match at or below its top is current.
    assert!(screen(&app).contains(&format!("{}/20", f.status().split('/').next().unwrap())));
    for _ in 0..25 {
        app.handle_input(ctrl('n'));
        let f = app.find().unwrap();
        let n = f.current().unwrap().line / 10 * 10;
        let s = screen(&app);
        assert!(
            s.contains(&format!("row {n} has Needle {n}")),
            "match {} not on screen:\n{s}",
            f.status()
        );
    }
}

#[test]
fn find_follows_streamed_output_and_is_refused_at_home() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    app.handle_input(ctrl('f'));
    assert!(app.find().is_none());
    assert!(
        app.notice()
            .unwrap()
            .text
            .contains("find works in a session")
    );
    let mut app = long_transcript(20);
    app.handle_input(ctrl('f'));
    typed(&mut app, "needle");
    assert_eq!(
        app.find().unwrap().status(),
        "2/2",
        "row 0 is above the view"
    );
    app.on_event(ax_protocol::Event::MessagePart {
        session_id: sid(1),
        message_id: "msg_0123456789abABCDEFGHIJ0001".parse().unwrap(),
        index: 1,
        part: out("one more needle\n"),
    });
    assert_eq!(app.find().unwrap().matches().len(), 3);
    // Ctrl+C closes the find bar and does not quit.
    app.handle_input(ctrl('c'));
    assert!(app.find().is_none());
    assert!(!app.is_exiting());
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

// ---- copy and mouse ---------------------------------------------------------------------

fn copies(app: &mut App) -> Vec<String> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::CopyToClipboard { text } => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn slash_copy_sends_the_reply_or_its_code_by_osc52() {
    let reply = "Try this:\n\n```sh\ncargo test -p ax-tui\n```\n\nand then:\n\n```\nls\n```\n";
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![
            prompt("msg_0123456789abABCDEFGHIJ0001", "how do I test?"),
            message(
                "msg_0123456789abABCDEFGHIJ0002",
                1,
                Role::Assistant,
                vec![Part::Text { text: reply.into() }],
            ),
        ],
    );
    app.take_effects();
    typed(&mut app, "/copy");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(copies(&mut app), [reply]);
    assert!(app.notice().unwrap().text.contains("copied the last reply"));
    typed(&mut app, "/copy code");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(copies(&mut app), ["ls"]);
    typed(&mut app, "/copy prompt");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(copies(&mut app), ["how do I test?"]);
    typed(&mut app, "/copy 1");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(copies(&mut app), [reply]);
    typed(&mut app, "/copy 2");
    app.handle_input(key(KeyCode::Enter));
    assert!(copies(&mut app).is_empty(), "only one reply");
    assert!(app.notice().unwrap().text.contains("nothing to copy"));
    typed(&mut app, "/copy all");
    app.handle_input(key(KeyCode::Enter));
    assert!(copies(&mut app).is_empty());
    assert!(app.notice().unwrap().text.contains("use /copy, /copy reply, /copy N"));
}

#[test]
fn the_shell_agents_reply_copies_as_its_output_lines() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![
            prompt("msg_0123456789abABCDEFGHIJ0001", "ls"),
            message(
                "msg_0123456789abABCDEFGHIJ0002",
                1,
                Role::Assistant,
                vec![
                    out("\x1b[31ma.txt\x1b[0m\nb.txt\n"),
                    Part::Exit {
                        code: Some(0),
                        signal: None,
                    },
                ],
            ),
            prompt("msg_0123456789abABCDEFGHIJ0003", "pwd"),
        ],
    );
    app.take_effects();
    typed(&mut app, "/copy");
    app.handle_input(key(KeyCode::Enter));
    let c = copies(&mut app);
    assert_eq!(c.len(), 1);
    assert!(c[0].starts_with("a.txt\nb.txt"), "{c:?}");
    assert!(!c[0].contains('\x1b') && !c[0].contains("pwd"), "{c:?}");
    // Nothing to copy at home, nor a code block where none is.
    typed(&mut app, "/copy code");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.notice().unwrap().text.contains("nothing to copy"));
    app.handle_input(key(KeyCode::Esc));
    typed(&mut app, "/copy");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.notice().unwrap().text.contains("works in a session"));
}

#[test]
fn f2_and_slash_mouse_hand_the_mouse_to_the_terminal_and_back() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    assert!(app.mouse_capture());
    app.handle_input(key(KeyCode::F(2)));
    assert!(!app.mouse_capture());
    assert!(
        app.take_effects()
            .contains(&Effect::SetMouseCapture { on: false })
    );
    assert!(screen(&app).contains("mouse off · F2"));
    typed(&mut app, "/mouse on");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.mouse_capture());
    assert!(
        app.take_effects()
            .contains(&Effect::SetMouseCapture { on: true })
    );
    assert!(!screen(&app).contains("mouse off · F2"));
    typed(&mut app, "/mouse sideways");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.mouse_capture());
    assert!(app.notice().unwrap().text.contains("use on or off"));
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

#[test]
fn readline_kill_and_yank_redraw_and_ctrl_d_work_as_in_claude_code() {
    let mut app = ready_app(vec![], false);
    typed(&mut app, "cargo test --lib");
    for _ in 0..6 {
        app.handle_input(key(KeyCode::Left));
    }
    app.handle_input(ctrl('k'));
    assert_eq!(app.composer().draft(), "cargo test");
    app.handle_input(ctrl('a'));
    app.handle_input(ctrl('y'));
    assert_eq!(
        app.composer().draft(),
        " --libcargo test",
        "^Y puts back what ^K erased"
    );
    // ^W after the yanked text takes the word back, ^Y at the end puts it there.
    app.handle_input(ctrl('w'));
    app.handle_input(ctrl('e'));
    app.handle_input(ctrl('y'));
    assert_eq!(app.composer().draft(), " cargo test--lib");
    app.handle_input(ctrl('l'));
    assert!(app.take_effects().contains(&Effect::Redraw));
    // ^D in a draft deletes forward; on an empty prompt it quits.
    app.handle_input(ctrl('a'));
    app.handle_input(ctrl('d'));
    assert_eq!(app.composer().draft(), "cargo test--lib");
    app.handle_input(ctrl('c'));
    app.handle_input(ctrl('d'));
    assert!(app.is_exiting());
}

#[test]
fn ctrl_d_asks_first_while_a_session_works() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Busy)], false);
    app.handle_input(ctrl('d'));
    assert!(!app.is_exiting());
    assert_eq!(app.modal(), Some(&ax_tui::app::Modal::ConfirmQuit));
}

#[test]
fn the_history_search_and_the_find_bar_block_agent_navigation() {
    let mut app = with_history();
    assert!(!app.blocked_inputs().modal);
    app.handle_input(ctrl('r'));
    assert!(
        app.blocked_inputs().modal,
        "Ctrl+R takes the person's attention"
    );
    app.handle_input(key(KeyCode::Esc));
    assert!(!app.blocked_inputs().modal);
    app.handle_input(ctrl('f'));
    assert!(app.blocked_inputs().modal, "so does the find bar");
    app.handle_input(key(KeyCode::Esc));
    assert!(!app.blocked_inputs().modal);
}

#[test]
fn slash_copy_takes_the_part_focused_with_tab() {
    use ax_protocol::turn::{ToolCallPart, ToolContent, ToolKind, TurnPart};
    let call = ToolCallPart {
        tool_call_id: "call_1".into(),
        title: "cargo test".into(),
        kind: ToolKind::Execute,
        content: vec![ToolContent::Terminal {
            terminal_id: "term_1".into(),
            output: "\x1b[32mtest result: ok\x1b[0m\n".into(),
            dropped_bytes: 0,
            exit: None,
        }],
        ..Default::default()
    };
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0002",
            1,
            Role::Assistant,
            vec![
                Part::Turn(TurnPart::ToolCall(call)),
                Part::Text {
                    text: "All green.".into(),
                },
            ],
        )],
    );
    app.take_effects();
    typed(&mut app, "/copy");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(copies(&mut app), ["All green."], "no focus: the reply");
    app.handle_input(key(KeyCode::Tab));
    typed(&mut app, "/copy");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        copies(&mut app),
        ["test result: ok\n"],
        "the focused card, escapes gone"
    );
    assert!(
        app.notice()
            .unwrap()
            .text
            .contains("copied the focused part")
    );
    typed(&mut app, "/copy reply");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(copies(&mut app), ["All green."]);
}
