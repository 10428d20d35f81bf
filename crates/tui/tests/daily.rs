//! Daily keyboard habits, driven without a terminal (docs/tui.md §3a–§3c): the session's
//! prompt history on ↑/↓ and Ctrl+R, find in the transcript, copying, the mouse and the
//! readline keys. Attention and notifications are in `attention.rs`.

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
    assert!(
        app.notice()
            .unwrap()
            .text
            .contains("use /copy, /copy reply, /copy N")
    );
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
