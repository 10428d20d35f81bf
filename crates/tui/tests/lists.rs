//! Telling sessions apart (docs/tui.md §2): every list and header names the session's agent,
//! titles get the width at 80 columns (the ID gives way), and the empty session's texts name
//! its agent.

mod util;

use ax_protocol::SessionStatus;
use ax_tui::app::App;
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

const LONG: &str = "refactor the session store's migrations";

fn sessions() -> Vec<ax_protocol::Session> {
    let mut a = session(1, LONG, SessionStatus::Idle);
    a.agent = "claude".into();
    let mut b = session(2, "same title", SessionStatus::Idle);
    b.agent = "codex".into();
    let c = session(3, "same title", SessionStatus::Idle);
    vec![a, b, c]
}

#[test]
fn the_home_list_names_agents_and_gives_titles_the_width() {
    let mut app = ready_app(sessions(), false);
    let s = screen(&app);
    assert!(s.contains(LONG), "the whole title at 80 columns:\n{s}");
    let row = |name: &str| {
        s.lines()
            .find(|l| l.contains(name) && l.contains("same title"))
            .map(str::to_owned)
    };
    assert!(row("codex").is_some() && row("shell").is_some(), "{s}");
    assert!(
        s.lines().any(|l| l.contains(LONG) && l.contains("claude")),
        "{s}"
    );
    assert!(!s.contains("ses_0000"), "no ID at 80 columns:\n{s}");
    // Wide enough, the ID shows too.
    app.resize(140, 24);
    let s = screen(&app);
    assert!(s.contains(LONG) && s.contains(sid(1).as_str()), "{s}");
}

#[test]
fn the_session_names_its_agent_in_the_header_and_the_placeholders() {
    let mut app = ready_app(sessions(), false);
    open_loaded(&mut app, 1, vec![]);
    let s = screen(&app);
    let header = s.lines().nth(1).unwrap();
    assert!(
        header.contains(LONG) && header.contains("claude"),
        "{header}"
    );
    assert!(s.contains("No messages yet. Ask claude below"), "{s}");
    assert!(s.contains("Ask claude…"), "{s}");
    assert!(!s.contains("shell command"), "{s}");
    // The shell agent keeps its command wording.
    let mut app = ready_app(sessions(), false);
    open_loaded(&mut app, 3, vec![]);
    let s = screen(&app);
    assert!(s.contains("Type a shell command"), "{s}");
}
