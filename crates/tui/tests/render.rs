//! Render snapshots: the state drawn into ratatui's TestBackend.

mod util;

use ax_protocol::{Event, Part, Role, SessionStatus};
use ax_tui::app::App;
use ax_tui::input::KeyCode;
use ax_tui::render::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

fn screen(app: &App) -> String {
    let (w, h) = (80, 24);
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

fn sample() -> App {
    ready_app(
        vec![
            session(1, "list the files", SessionStatus::Idle),
            session(2, "build the project", SessionStatus::Busy),
            session(3, "clean up", SessionStatus::Pending),
        ],
        true,
    )
}

#[test]
fn home_with_sharing_bar() {
    let app = sample();
    let s = screen(&app);
    assert!(s.contains("TUIMCP on: /tmp/ax-tui-Ab12Cd/endpoint.json"));
    assert!(s.contains("[Revoke]"));
    insta::assert_snapshot!(s);
}

#[test]
fn home_after_revoke_gives_the_row_back() {
    let mut app = sample();
    let revoke = app.layout().revoke.unwrap();
    app.handle_input(click(revoke.x, revoke.y));
    let s = screen(&app);
    assert!(!s.contains("TUIMCP on:"));
    insta::assert_snapshot!(s);
}

#[test]
fn session_with_streaming_output_and_notice() {
    let mut app = sample();
    app.navigate_by_agent(sid(1));
    let effects = app.take_effects();
    app.on_transcript(
        transcript_gen(&effects),
        Ok(vec![
            message(
                "msg_0123456789abABCDEFGHIJ0001",
                1,
                Role::User,
                vec![Part::Text {
                    text: "ls -1".into(),
                }],
            ),
            message(
                "msg_0123456789abABCDEFGHIJ0002",
                1,
                Role::Assistant,
                vec![out("Cargo.toml\nsrc\n")],
            ),
        ]),
    );
    app.on_event(Event::MessagePart {
        session_id: sid(1),
        message_id: "msg_0123456789abABCDEFGHIJ0002".parse().unwrap(),
        index: 1,
        part: Part::Output {
            stream: ax_protocol::Stream::Stderr,
            text: "warning: something\n".into(),
        },
    });
    app.on_event(Event::MessagePart {
        session_id: sid(1),
        message_id: "msg_0123456789abABCDEFGHIJ0002".parse().unwrap(),
        index: 2,
        part: Part::Exit {
            code: Some(0),
            signal: None,
        },
    });
    typed(&mut app, "cat Cargo.toml");
    let s = screen(&app);
    assert!(s.contains("Navigated by agent via TUIMCP"));
    assert!(s.contains("warning: something"));
    insta::assert_snapshot!(s);
}

#[test]
fn approval_dialog() {
    let mut app = sample();
    app.on_event(Event::PermissionAsked {
        permission: permission("per_0123456789abABCDEFGHIJ0001", 3, "rm -rf target"),
    });
    open_loaded(&mut app, 3, vec![]);
    let s = screen(&app);
    assert!(s.contains("Allow once") && s.contains("rm -rf target"));
    insta::assert_snapshot!(s);
}

#[test]
fn approval_dialog_lists_the_attachments() {
    let mut app = sample();
    let mut p = permission("per_0123456789abABCDEFGHIJ0001", 3, "wc -l \"$@\"");
    p.attachments = (1..=6).map(|i| format!("src/file{i}.rs")).collect();
    app.on_event(Event::PermissionAsked { permission: p });
    open_loaded(&mut app, 3, vec![]);
    let s = screen(&app);
    assert!(s.contains("with 6 attached files:"), "{s}");
    for i in 1..=4 {
        assert!(s.contains(&format!("@ src/file{i}.rs")), "{s}");
    }
    assert!(s.contains("… and 2 more"), "{s}");
    assert!(s.contains("Allow once"), "the buttons still fit: {s}");
    insta::assert_snapshot!(s);
}

#[test]
fn palette_and_chips() {
    let mut app = sample();
    typed(&mut app, "/attach src/main.rs");
    app.handle_input(key(KeyCode::Enter));
    app.handle_input(ctrl('p'));
    let s = screen(&app);
    assert!(s.contains("src/main.rs ×"));
    insta::assert_snapshot!(s);
    // The list scrolls with the selection down to the last command.
    for _ in 0..ax_tui::command::Command::ALL.len() {
        app.handle_input(key(KeyCode::Down));
    }
    let s = screen(&app);
    assert!(s.contains("/tui-mcp-revoke"), "{s}");
    assert!(!s.contains("/sessions "), "{s}");
}

#[test]
fn startup_overlay() {
    let mut app = App::new("/home/me/project", None);
    app.resize(80, 24);
    let s = screen(&app);
    assert!(s.contains("Connecting to the backend"));
    insta::assert_snapshot!(s);
}

#[test]
fn reconnecting_state() {
    let mut app = sample();
    app.on_stream_down(std::time::Duration::from_millis(3500));
    let s = screen(&app);
    assert!(s.contains("reconnecting… (down 3s)"));
    insta::assert_snapshot!(s);
}

#[test]
fn help_modal() {
    let mut app = sample();
    typed(&mut app, "/help");
    app.handle_input(key(KeyCode::Enter));
    let s = screen(&app);
    assert!(s.contains("Alt+Enter") && s.contains("Tab, Shift+Tab"));
    assert!(s.contains("Alt+B/F") && s.contains("^A/^E"));
    assert!(
        s.contains("PgUp/PgDn") && s.contains("mouse") && s.contains("chip"),
        "{s}"
    );
    insta::assert_snapshot!(s);
    // The rest of the commands is below: the help scrolls.
    assert!(s.contains("↑↓ PgDn scroll"), "{s}");
    for _ in 0..4 {
        app.handle_input(key(KeyCode::PageDown));
    }
    let s = screen(&app);
    assert!(s.contains("/tui-mcp-revoke") && s.contains("/mode"), "{s}");
}

#[test]
fn exit_overlay() {
    let mut app = sample();
    typed(&mut app, "/quit");
    app.handle_input(key(KeyCode::Enter));
    let s = screen(&app);
    assert!(s.contains("Shutting down"));
    insta::assert_snapshot!(s);
}

#[test]
fn scrolled_transcript_and_multiline_draft() {
    let mut app = sample();
    let text: String = (1..=60).map(|i| format!("output line {i}\n")).collect();
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
    app.handle_input(key(KeyCode::PageUp));
    app.handle_input(ax_tui::input::Input::Paste(
        "first line\nsecond line".into(),
    ));
    let s = screen(&app);
    assert!(s.contains("more"), "the scroll indicator shows");
    assert!(s.contains("second line"));
    insta::assert_snapshot!(s);
}

/// The screen plus where the terminal cursor is drawn.
fn screen_with_cursor(app: &App) -> (String, ratatui::layout::Position) {
    use ratatui::backend::Backend;
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    let pos = term.backend_mut().get_cursor_position().unwrap();
    (term.backend().to_string(), pos)
}

#[test]
fn cursor_in_the_middle_of_a_draft() {
    let mut app = sample();
    app.handle_input(ax_tui::input::Input::Paste(
        "grep -rn 'größe' src\ncargo test".into(),
    ));
    app.handle_input(key(KeyCode::Up));
    app.handle_input(key(KeyCode::End));
    for _ in 0..3 {
        app.handle_input(key(KeyCode::Left));
    }
    typed(&mut app, "--all ");
    let (s, pos) = screen_with_cursor(&app);
    assert!(s.contains("grep -rn 'größe' --all src"));
    let comp = app.layout().composer.inner();
    // "grep -rn 'größe' --all " is 23 columns wide; the cursor sits before "src" on row 1.
    assert_eq!((pos.x, pos.y), (comp.x + 23, comp.y));
    insta::assert_snapshot!(format!("{s}\ncursor at column {}, row {}", pos.x, pos.y));
}

#[test]
fn a_long_draft_scrolls_to_keep_the_cursor_visible() {
    let mut app = sample();
    let lines: Vec<String> = (1..=12).map(|i| format!("line {i}")).collect();
    app.handle_input(ax_tui::input::Input::Paste(lines.join("\n")));
    let comp = app.layout().composer.inner();
    let (s, pos) = screen_with_cursor(&app);
    assert!(
        s.contains("line 12") && !s.contains("line 1 "),
        "the tail shows"
    );
    assert_eq!(pos.y, comp.y + comp.height - 1);
    for _ in 0..11 {
        app.handle_input(key(KeyCode::Up));
    }
    let (s, pos) = screen_with_cursor(&app);
    assert!(
        s.contains("│line 1 "),
        "the first line shows once the cursor is on it"
    );
    assert!(!s.contains("line 12"));
    assert_eq!(
        (pos.x, pos.y),
        (comp.x + 6, comp.y),
        "at the end of \"line 1\""
    );
    // A line wider than the box wraps and the composer grows; nothing scrolls sideways.
    let mut app = sample();
    let long: String = (0..120)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let one_row = app.layout().composer.height;
    typed(&mut app, &long);
    let comp = app.layout().composer.inner();
    assert_eq!(app.layout().composer.height, one_row + 1, "grew by a row");
    let (s, pos) = screen_with_cursor(&app);
    let w = comp.width as usize;
    assert!(s.contains(&long[..w]) && s.contains(&long[w..]), "{s}");
    assert_eq!((pos.x, pos.y), (comp.x + (120 - w) as u16, comp.y + 1));
    app.handle_input(key(KeyCode::Home));
    let (_, pos) = screen_with_cursor(&app);
    assert_eq!((pos.x, pos.y), (comp.x, comp.y));
}

/// macOS's temp root resolves to about this; 86 bytes with the endpoint's own part.
const LONG: &str =
    "/private/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T/ax-tui-Ab12Cd/endpoint.json";

#[test]
fn a_long_endpoint_path_wraps_whole_at_80_columns() {
    let app = ready_app_at(
        vec![session(1, "list the files", SessionStatus::Idle)],
        Some(LONG),
    );
    let s = screen(&app);
    let rows: Vec<&str> = s.lines().collect();
    let bar = app.layout().bar.unwrap();
    assert!(
        bar.height >= 2,
        "the path needs rows of its own at 80 columns"
    );
    assert!(rows[1].contains("TUIMCP on:") && rows[1].contains("[Revoke]"));
    // The path rows, joined, are the whole path: nothing clipped, nothing covered.
    let joined: String = rows[2..(bar.y + bar.height) as usize]
        .iter()
        .map(|r| r.trim_matches('"').trim_end())
        .collect();
    assert_eq!(joined, LONG);
    insta::assert_snapshot!(s);
}

#[test]
fn the_mcp_config_modal_shows_the_real_path() {
    let mut app = ready_app_at(vec![], Some(LONG));
    typed(&mut app, "/tui-mcp-config");
    app.handle_input(key(KeyCode::Enter));
    let s = screen(&app);
    assert!(s.contains("\"mcpServers\""), "{s}");
    insta::assert_snapshot!(s);
}
