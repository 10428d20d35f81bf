//! The approvals inbox (docs/tui.md §3h): `/approvals` lists every waiting approval across the
//! sessions, newest first, with the session's title, its agent and what the agent wants;
//! Enter opens the session, where the approval dialog asks; an approval answered elsewhere
//! leaves the list; an empty inbox says so.

mod util;

use ax_protocol::{Event, PermissionState, SessionStatus};
use ax_tui::app::{App, Modal, Route};
use ax_tui::command::{Command, palette_entries};
use ax_tui::input::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use util::*;

const P1: &str = "per_00000000000000000000000031";
const P2: &str = "per_00000000000000000000000032";

fn screen(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(100, 24)).unwrap();
    term.draw(|f| ax_tui::render::draw(f, app)).unwrap();
    term.backend().to_string()
}

/// Two sessions, each waiting on an approval; the second one asked later.
fn two_waiting() -> App {
    let mut app = ready_app(
        vec![
            session(1, "fix the tests", SessionStatus::Pending),
            session(2, "deploy docs", SessionStatus::Pending),
        ],
        false,
    );
    app.resize(100, 24);
    let mut p1 = permission(P1, 1, "cargo test --all\nsecond line");
    p1.created = 10;
    let mut p2 = permission(P2, 2, "rm -rf build");
    p2.created = 20;
    ev(&mut app, Event::PermissionAsked { permission: p1 });
    ev(&mut app, Event::PermissionAsked { permission: p2 });
    app
}

fn open_inbox(app: &mut App) {
    typed(app, "/approvals");
    app.handle_input(key(KeyCode::Enter));
}

#[test]
fn approvals_lists_every_waiting_approval_newest_first() {
    let mut app = two_waiting();
    open_inbox(&mut app);
    assert_eq!(app.modal(), Some(&Modal::Approvals { selected: 0 }));
    let rows = app.inbox_rows();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].title, "deploy docs");
    assert_eq!(rows[0].agent, "shell");
    assert_eq!(rows[0].summary, "The agent wants to run: rm -rf build");
    assert_eq!(rows[1].title, "fix the tests");
    assert_eq!(rows[1].summary, "The agent wants to run: cargo test --all");
    let s = screen(&app);
    assert!(s.contains("Approvals waiting"), "{s}");
    assert!(
        s.contains("deploy docs · shell · The agent wants to run: rm -rf build"),
        "{s}"
    );
    assert!(s.contains("fix the tests · shell"), "{s}");
    let newer = s.find("deploy docs").unwrap();
    let older = s.find("fix the tests ·").unwrap();
    assert!(newer < older, "newest first: {s}");
}

#[test]
fn enter_opens_the_rows_session_and_its_approval_dialog() {
    let mut app = two_waiting();
    open_inbox(&mut app);
    app.handle_input(key(KeyCode::Down));
    assert_eq!(app.modal(), Some(&Modal::Approvals { selected: 1 }));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.modal(), None);
    assert_eq!(app.route(), &Route::Session(sid(1)));
    let p = app.pending_approval().expect("the dialog asks");
    assert_eq!(p.id.to_string(), P1);
    let s = screen(&app);
    assert!(s.contains("Approval needed"), "{s}");
    assert!(s.contains("$ cargo test --all"), "{s}");
    assert!(s.contains("> second line"), "the whole request: {s}");
}

#[test]
fn an_approval_left_for_later_asks_again_when_chosen_from_the_inbox() {
    let mut app = two_waiting();
    open_inbox(&mut app);
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.route(), &Route::Session(sid(2)));
    // Esc leaves it for later; the inbox still lists it, and Enter asks again.
    app.handle_input(key(KeyCode::Esc));
    assert!(app.pending_approval().is_none());
    open_inbox(&mut app);
    assert_eq!(app.inbox_rows().len(), 2);
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.pending_approval().unwrap().id.to_string(), P2);
}

#[test]
fn an_approval_answered_elsewhere_leaves_the_list() {
    let mut app = two_waiting();
    open_inbox(&mut app);
    app.handle_input(key(KeyCode::Down));
    ev(
        &mut app,
        Event::PermissionReplied {
            session_id: sid(1),
            permission_id: P1.parse().unwrap(),
            state: PermissionState::Approved,
        },
    );
    let rows = app.inbox_rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].title, "deploy docs");
    assert!(!screen(&app).contains("fix the tests ·"));
    // The highlight was on the row that left: Enter opens the one that stays.
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.route(), &Route::Session(sid(2)));
}

#[test]
fn an_empty_inbox_says_so_and_esc_closes_it() {
    let mut app = ready_app(vec![session(1, "idle", SessionStatus::Idle)], false);
    app.resize(100, 24);
    open_inbox(&mut app);
    assert!(screen(&app).contains("No approval waits."));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.modal(), Some(&Modal::Approvals { selected: 0 }));
    assert_eq!(app.route(), &Route::Home);
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.modal(), None);
}

#[test]
fn approvals_is_in_the_palette_and_help() {
    assert!(palette_entries("approv", false).contains(&Command::Approvals));
    let mut app = two_waiting();
    typed(&mut app, "/help");
    app.handle_input(key(KeyCode::Enter));
    // The help box scrolls; the command is listed somewhere in it.
    let mut seen = String::new();
    for _ in 0..6 {
        seen.push_str(&screen(&app));
        app.handle_input(key(KeyCode::PageDown));
    }
    assert!(seen.contains("/approvals"), "{seen}");
    assert!(seen.contains("every approval that waits"), "{seen}");
}
