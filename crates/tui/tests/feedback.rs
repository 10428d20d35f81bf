//! Feedback the person gets (docs/tui.md §2, §3): a deletion says "deleting…" until the
//! backend says the session is gone (or why it failed), and the help fits 80x24: every
//! description is whole (wrapped, scrolled), no key runs into its description.

mod util;

use ax_protocol::{Event, SessionStatus};
use ax_tui::app::{App, Effect};
use ax_tui::input::KeyCode;
use ax_tui::render::{HELP_KEYS, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

#[test]
fn a_deletion_says_deleting_until_it_completes() {
    let mut app = ready_app(
        vec![
            session(1, "keep me", SessionStatus::Idle),
            session(2, "drop me", SessionStatus::Idle),
        ],
        false,
    );
    open_loaded(&mut app, 2, vec![]);
    typed(&mut app, "/delete");
    app.handle_input(key(KeyCode::Enter));
    app.handle_input(key(KeyCode::Char('y')));
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::DeleteSession { session } if *session == sid(2)))
    );
    let s = screen(&app);
    assert!(s.lines().nth(1).unwrap().contains("deleting…"), "{s}");
    app.handle_input(key(KeyCode::Esc));
    let s = screen(&app);
    assert!(
        s.lines()
            .any(|l| l.contains("deleting…") && l.contains("drop me")),
        "{s}"
    );
    assert!(
        !s.lines()
            .any(|l| l.contains("deleting…") && l.contains("keep me"))
    );
    // A failure brings the row back as it was, and says why.
    app.on_delete_failed(&sid(2), "delete failed: 500".into());
    let s = screen(&app);
    assert!(
        !s.contains("deleting…") && s.contains("delete failed: 500"),
        "{s}"
    );
    // Done: the row is gone.
    typed(&mut app, "/sessions");
    app.handle_input(key(KeyCode::Enter));
    app.on_event(Event::SessionDeleted { session_id: sid(1) });
    assert!(!app.is_deleting(&sid(1)));
    assert!(!screen(&app).contains("keep me"));
}

#[test]
fn the_help_fits_80x24_whole() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], true);
    typed(&mut app, "/help");
    app.handle_input(key(KeyCode::Enter));
    let mut seen = String::new();
    let mut last = String::new();
    for _ in 0..60 {
        let s = screen(&app);
        if s == last {
            break;
        }
        seen.push_str(&s);
        last = s;
        app.handle_input(key(KeyCode::Down));
    }
    let mut texts: Vec<(String, String)> = HELP_KEYS
        .iter()
        .map(|(k, w)| ((*k).to_owned(), (*w).to_owned()))
        .collect();
    texts.extend(
        ax_tui::command::available(true).map(|c| (c.name().to_owned(), c.help().to_owned())),
    );
    for (k, what) in texts {
        assert!(
            seen.contains(&format!("{k} ")),
            "{k:?} runs into its text:\n{seen}"
        );
        let tail = what.split(' ').next_back().unwrap();
        assert!(seen.contains(tail), "{what:?} is cut:\n{seen}");
    }
}
