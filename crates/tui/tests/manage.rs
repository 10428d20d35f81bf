//! Renaming and deleting sessions from the TUI, the list order, the connecting screen's
//! cause, and the TUIMCP revision following the session list.

mod util;

use ax_protocol::{Event, SessionStatus};
use ax_tui::app::{App, Effect, Modal};
use ax_tui::input::KeyCode;
use ax_tuimcp::controller::{Controller, Identity};
use ratatui::{Terminal, backend::TestBackend};
use util::*;

fn screen(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(100, 20)).unwrap();
    term.draw(|f| ax_tui::render::draw(f, app)).unwrap();
    term.backend().to_string()
}

#[test]
fn rename_and_delete_act_on_the_selected_or_open_session() {
    let mut app = ready_app(
        vec![
            session(1, "one", SessionStatus::Idle),
            session(2, "two", SessionStatus::Idle),
        ],
        false,
    );
    // Home: the selected session (the most recent, "two").
    typed(&mut app, "/rename  fresh name ");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        app.take_effects(),
        vec![Effect::RenameSession {
            session: sid(2),
            title: "fresh name".into()
        }]
    );

    typed(&mut app, "/delete");
    app.handle_input(key(KeyCode::Enter));
    assert!(
        matches!(app.modal(), Some(Modal::ConfirmDelete { session, .. }) if *session == sid(2))
    );
    assert!(app.blocked_inputs().modal, "the confirmation is a modal");
    assert!(screen(&app).contains("Delete session?"));
    // Keeping it sends nothing.
    app.handle_input(key(KeyCode::Char('n')));
    assert_eq!(app.modal(), None);
    assert!(app.take_effects().is_empty());

    // On a session route: the open one; `y` confirms.
    open_loaded(&mut app, 1, vec![]);
    app.take_effects();
    typed(&mut app, "/delete");
    app.handle_input(key(KeyCode::Enter));
    app.handle_input(key(KeyCode::Char('y')));
    assert_eq!(
        app.take_effects(),
        vec![Effect::DeleteSession { session: sid(1) }]
    );
    ev(&mut app, Event::SessionDeleted { session_id: sid(1) });
    assert_eq!(app.route(), &ax_tui::Route::Home);
    assert_eq!(app.sessions().len(), 1);
}

#[test]
fn the_list_follows_last_activity_like_the_backend() {
    let mut app = ready_app(
        vec![
            session(1, "older", SessionStatus::Idle),
            session(2, "newer", SessionStatus::Idle),
        ],
        false,
    );
    assert_eq!(app.sessions()[0].title, "newer");
    let mut older = session(1, "older", SessionStatus::Idle);
    older.updated = session(2, "", SessionStatus::Idle).updated + 1_000;
    ev(&mut app, Event::SessionUpdated { session: older });
    let titles: Vec<_> = app.sessions().iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["older", "newer"]);
}

#[test]
fn a_deleted_session_makes_a_held_tuimcp_revision_stale() {
    // The owner loop hands the controller `guard_inputs()` after every mutation.
    let mut app = ready_app(
        vec![
            session(1, "one", SessionStatus::Idle),
            session(2, "two", SessionStatus::Idle),
        ],
        true,
    );
    let mut controller = Controller::new(Identity::random(), app.guard_inputs());
    let held = controller.revision();
    ev(&mut app, Event::SessionDeleted { session_id: sid(1) });
    controller.observe(app.guard_inputs());
    assert_ne!(
        controller.revision(),
        held,
        "a deletion must bump the revision"
    );
    // A new session does too; a status change of a listed one only through its blockers.
    let held = controller.revision();
    ev(
        &mut app,
        Event::SessionCreated {
            session: session(3, "three", SessionStatus::Idle),
        },
    );
    controller.observe(app.guard_inputs());
    assert_ne!(controller.revision(), held);
}

#[test]
fn the_connecting_screen_names_the_backend_and_the_cause() {
    let mut app = App::new("/p", None);
    app.set_backend_url("http://127.0.0.1:4722");
    app.set_down_cause(Some("cannot reach the backend: connection refused".into()));
    let s = screen(&app);
    assert!(s.contains("http://127.0.0.1:4722"), "{s}");
    assert!(s.contains("connection refused"), "{s}");
}
