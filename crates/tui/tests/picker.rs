//! The `@` file picker (docs/tui.md §3g): an `@word` asks the backend for matching files,
//! the list narrows locally while the next answer comes, stale answers are dropped, and
//! choosing a file replaces the `@word` with a chip checked like `/attach`.

mod util;

use ax_protocol::SessionStatus;
use ax_tui::app::Effect;
use ax_tui::input::KeyCode;
use ratatui::{Terminal, backend::TestBackend};
use util::*;

/// The newest find request among `effects`: (query, generation).
fn last_find(effects: &[Effect]) -> Option<(String, u64)> {
    effects.iter().rev().find_map(|e| match e {
        Effect::FindFiles { query, generation } => Some((query.clone(), *generation)),
        _ => None,
    })
}

fn files(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn in_session() -> ax_tui::App {
    let mut app = ready_app(vec![session(1, "work", SessionStatus::Idle)], false);
    open_loaded(&mut app, 1, vec![]);
    app.take_effects();
    app
}

#[test]
fn an_at_word_asks_for_files_and_a_choice_becomes_a_chip() {
    let mut app = in_session();
    typed(&mut app, "look at @m");
    let effects = app.take_effects();
    let (query, first) = last_find(&effects).expect("a find request");
    assert_eq!(query, "m");
    assert_eq!(
        effects
            .iter()
            .filter(|e| matches!(e, Effect::FindFiles { .. }))
            .count(),
        2,
        "one for `@`, one for `@m`: {effects:?}"
    );
    app.on_files_found(
        first,
        Ok((files(&["src/main.rs", "src/mod.rs", "Cargo.toml"]), false)),
    );
    assert_eq!(
        app.picker_files(),
        ["src/main.rs", "src/mod.rs", "Cargo.toml"]
    );

    // The next key narrows the last answer at once; its own answer replaces it.
    typed(&mut app, "a");
    let (query, second) = last_find(&app.take_effects()).unwrap();
    assert_eq!(query, "ma");
    assert_eq!(app.picker_files(), ["src/main.rs"]);
    app.on_files_found(first, Ok((files(&["stale.rs"]), false)));
    assert_eq!(
        app.picker_files(),
        ["src/main.rs"],
        "an older answer is dropped"
    );
    app.on_files_found(
        second,
        Ok((files(&["src/main.rs", "docs/manual.md"]), true)),
    );
    assert_eq!(app.picker_files(), ["src/main.rs", "docs/manual.md"]);

    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| ax_tui::render::draw(f, &app)).unwrap();
    let s = term.backend().to_string();
    assert!(s.contains("@ src/main.rs"), "{s}");
    assert!(s.contains("more files than listed"), "{s}");

    app.handle_input(key(KeyCode::Down));
    assert_eq!(app.picker_selected(), 1);
    app.handle_input(key(KeyCode::Tab));
    assert_eq!(app.composer().draft(), "look at ");
    assert_eq!(app.composer().attachments(), ["docs/manual.md"]);
    assert!(app.picker_files().is_empty());
    let effects = app.take_effects();
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::CheckAttachment { path, .. } if path == "docs/manual.md"
        )),
        "checked at once, as /attach is: {effects:?}"
    );
    assert!(last_find(&effects).is_none());
}

#[test]
fn esc_hides_it_and_words_that_are_not_at_words_never_open_it() {
    let mut app = in_session();
    typed(&mut app, "@li");
    let (_, generation) = last_find(&app.take_effects()).unwrap();
    app.on_files_found(generation, Ok((files(&["src/lib.rs"]), false)));
    assert_eq!(app.picker_files(), ["src/lib.rs"]);
    app.handle_input(key(KeyCode::Esc));
    assert!(app.picker_files().is_empty());
    assert_eq!(app.composer().draft(), "@li", "Esc keeps the text");
    assert_eq!(app.route(), &ax_tui::Route::Session(sid(1)), "and stays");
    // Enter now sends the text as it is.
    app.handle_input(key(KeyCode::Enter));
    assert!(
        app.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::Submit { .. }))
    );

    let mut app = in_session();
    typed(&mut app, "mail me@host.org ");
    assert!(last_find(&app.take_effects()).is_none());
    assert!(app.picker_files().is_empty());
}

#[test]
fn a_failed_search_says_so_and_keeps_the_draft() {
    let mut app = in_session();
    typed(&mut app, "@x");
    let (_, generation) = last_find(&app.take_effects()).unwrap();
    app.on_files_found(generation, Err("503 backend busy".into()));
    assert!(app.notice().unwrap().text.contains("file search failed"));
    assert_eq!(app.composer().draft(), "@x");
}
