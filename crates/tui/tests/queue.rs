//! The prompt queue in the TUI (docs/tui.md §3d): Enter queues while a turn runs or prompts
//! wait, the queue shows above the composer in order, and `/queue` edits, cancels, sends now
//! and resumes, each as the effect the owner loop turns into the backend's queue routes.

mod util;

use ax_protocol::{
    Event, Prompt, PromptPart, QueuedId, SessionStatus,
    queue::{PromptQueue, QueuedPrompt},
};
use ax_tui::app::{Effect, Modal, NoticeKind};
use ax_tui::input::KeyCode;
use ax_tui::queue::QueueRow;
use ratatui::{Terminal, backend::TestBackend};
use util::*;

fn qid(n: u32) -> QueuedId {
    format!("que_0000000000{n:02}ABCDEFGHIJKLMN")
        .parse()
        .unwrap()
}

fn item(n: u32, text: &str) -> QueuedPrompt {
    QueuedPrompt {
        id: qid(n),
        session_id: sid(1),
        prompt: Prompt {
            parts: vec![PromptPart::Text { text: text.into() }],
        },
        created: 1,
        updated: 1,
    }
}

fn queue(items: Vec<QueuedPrompt>, paused: Option<&str>) -> Event {
    Event::QueueUpdated {
        queue: PromptQueue {
            session_id: sid(1),
            paused: paused.map(str::to_owned),
            items,
        },
    }
}

/// An app in session 1 (with the given status), loaded.
fn in_session(status: SessionStatus) -> ax_tui::App {
    let mut app = ready_app(vec![session(1, "work", status)], false);
    open_loaded(&mut app, 1, vec![]);
    app
}

fn command(app: &mut ax_tui::App, line: &str) -> Vec<Effect> {
    typed(app, line);
    app.handle_input(key(KeyCode::Enter));
    app.take_effects()
}

fn screen(app: &ax_tui::App) -> String {
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| ax_tui::render::draw(f, app)).unwrap();
    term.backend().to_string()
}

#[test]
fn enter_queues_while_a_turn_runs_or_prompts_wait() {
    let mut app = in_session(SessionStatus::Busy);
    let effects = command(&mut app, "next step");
    assert!(
        matches!(&effects[..], [Effect::Submit { queue: true, session: Some(s), .. }] if *s == sid(1)),
        "{effects:?}"
    );
    let [Effect::Submit { generation, .. }] = effects.as_slice() else {
        unreachable!()
    };
    app.on_sent(*generation, Ok((sid(1), Some(0))));
    assert_eq!(
        app.composer().draft(),
        "",
        "a queued prompt leaves the composer"
    );
    let notice = app.notice().unwrap();
    assert!(notice.text.contains("queued as prompt 1"), "{notice:?}");

    // Images cannot wait (a queued prompt is bounded small): refused, nothing lost.
    app.on_image_loaded(
        "shot.png",
        Ok(ax_tui::composer::ComposerImage {
            path: "shot.png".into(),
            mime: "image/png",
            data: "iVBORw0KGgo=".into(),
            bytes: 8,
        }),
    );
    let effects = command(&mut app, "look");
    assert!(effects.is_empty(), "{effects:?}");
    assert!(app.notice().unwrap().text.contains("cannot be queued"));
    assert_eq!(app.composer().draft(), "look");
    assert_eq!(app.composer().images().len(), 1);

    // Idle with nothing queued: sent as before.
    let mut idle = in_session(SessionStatus::Idle);
    let effects = command(&mut idle, "now");
    assert!(
        matches!(&effects[..], [Effect::Submit { queue: false, .. }]),
        "{effects:?}"
    );

    // Idle, but prompts wait (a paused queue): it goes behind them, never before.
    let mut waiting = in_session(SessionStatus::Idle);
    ev(
        &mut waiting,
        queue(vec![item(1, "first")], Some("the last turn failed")),
    );
    let effects = command(&mut waiting, "later");
    assert!(
        matches!(&effects[..], [Effect::Submit { queue: true, .. }]),
        "{effects:?}"
    );
}

#[test]
fn the_queue_shows_above_the_composer_in_order_with_its_pause() {
    let mut app = in_session(SessionStatus::Busy);
    let opened = app.layout().main.height;
    ev(
        &mut app,
        queue(
            vec![item(1, "run the tests"), item(2, "then fix\nwhat fails")],
            Some("the turn was stopped"),
        ),
    );
    assert_eq!(
        app.queue_rows(),
        vec![
            QueueRow::Paused("queue paused: the turn was stopped · /queue resume".into()),
            QueueRow::Item {
                position: 1,
                text: "run the tests".into(),
                editing: false
            },
            QueueRow::Item {
                position: 2,
                text: "then fix (+1 lines)".into(),
                editing: false
            },
        ]
    );
    assert_eq!(
        app.layout().main.height + 3,
        opened,
        "the tray takes its rows"
    );
    let s = screen(&app);
    let rows: Vec<&str> = s.lines().collect();
    let first = rows.iter().position(|l| l.contains("queued 1")).unwrap();
    assert!(rows[first].contains("run the tests"), "{s}");
    assert!(rows[first + 1].contains("queued 2  then fix"), "{s}");
    assert!(
        rows[first - 1].contains("queue paused: the turn was stopped"),
        "{s}"
    );
    assert!(s.contains("Enter queues it"), "{s}");

    // Many: the first three and a count.
    let many = (1..=6).map(|n| item(n, &format!("p{n}"))).collect();
    ev(&mut app, queue(many, None));
    let rows = app.queue_rows();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3], QueueRow::More(3));

    // Emptied: the tray gives its rows back.
    ev(&mut app, queue(vec![], None));
    assert!(app.queue_rows().is_empty());
    assert_eq!(app.layout().main.height, opened);
}

#[test]
fn cancel_send_now_and_resume_name_their_item() {
    let mut app = in_session(SessionStatus::Busy);
    ev(&mut app, queue(vec![item(1, "a"), item(2, "b")], None));
    let effects = command(&mut app, "/queue cancel 2");
    assert_eq!(
        effects,
        [Effect::CancelQueued {
            session: sid(1),
            id: qid(2)
        }]
    );
    let effects = command(&mut app, "/queue send");
    assert_eq!(
        effects,
        [Effect::SendQueuedNow {
            session: sid(1),
            id: qid(1)
        }]
    );
    assert!(app.notice().unwrap().text.contains("stopping the turn"));
    assert!(command(&mut app, "/queue cancel 3").is_empty());
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Error);
    assert!(app.notice().unwrap().text.contains("no queued prompt 3"));

    // Resume only when paused.
    assert!(command(&mut app, "/queue resume").is_empty());
    assert!(app.notice().unwrap().text.contains("not paused"));
    ev(
        &mut app,
        queue(vec![item(1, "a")], Some("the backend restarted")),
    );
    assert_eq!(
        command(&mut app, "/queue resume"),
        [Effect::ResumeQueue { session: sid(1) }]
    );
    // A failure says why.
    app.on_queue_changed(Err("not resumed: 404".into()));
    assert_eq!(app.notice().unwrap().text, "not resumed: 404");
}

#[test]
fn the_queue_list_acts_on_the_highlighted_prompt() {
    let mut app = in_session(SessionStatus::Busy);
    ev(&mut app, queue(vec![item(1, "a"), item(2, "b")], None));
    assert!(command(&mut app, "/queue").is_empty());
    assert_eq!(app.modal(), Some(&Modal::Queue { selected: 0 }));
    let s = screen(&app);
    assert!(s.contains("Queued prompts") && s.contains("2. b"), "{s}");
    app.handle_input(key(KeyCode::Down));
    app.handle_input(key(KeyCode::Char('s')));
    assert_eq!(
        app.take_effects(),
        [Effect::SendQueuedNow {
            session: sid(1),
            id: qid(2)
        }]
    );
    assert_eq!(app.modal(), None);
    command(&mut app, "/queue");
    app.handle_input(key(KeyCode::Char('x')));
    assert_eq!(
        app.take_effects(),
        [Effect::CancelQueued {
            session: sid(1),
            id: qid(1)
        }]
    );
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.modal(), None);
}

#[test]
fn editing_takes_a_prompt_back_and_saves_it_in_its_place() {
    let mut app = in_session(SessionStatus::Busy);
    let mut with_file = item(1, "review this");
    with_file.prompt.parts.push(PromptPart::File {
        path: "src/lib.rs".into(),
    });
    ev(&mut app, queue(vec![with_file, item(2, "b")], None));

    // Over a draft (here a chip) it is refused: nothing the person put there is lost.
    command(&mut app, "/attach notes.txt");
    assert!(command(&mut app, "/queue edit 1").is_empty());
    assert!(
        app.notice().unwrap().text.contains("holds a draft"),
        "{:?}",
        app.notice()
    );
    assert_eq!(app.composer().attachments(), ["notes.txt"]);
    app.handle_input(key(KeyCode::Backspace));
    assert!(!app.composer().has_attachments());

    assert!(command(&mut app, "/queue edit 1").is_empty());
    assert_eq!(app.composer().draft(), "review this");
    assert_eq!(app.composer().attachments(), ["src/lib.rs"]);
    assert!(matches!(
        app.queue_rows()[0],
        QueueRow::Item { editing: true, .. }
    ));
    assert!(screen(&app).contains("Editing a queued prompt"));

    typed(&mut app, " again");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [
        Effect::EditQueued {
            session,
            id,
            parts,
            generation,
        },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    assert_eq!((session, id), (&sid(1), &qid(1)));
    assert_eq!(
        parts,
        &[
            PromptPart::Text {
                text: "review this again".into()
            },
            PromptPart::File {
                path: "src/lib.rs".into()
            }
        ]
    );
    app.on_queue_edited(*generation, Ok(()));
    assert_eq!(app.composer().draft(), "");
    assert!(!app.composer().has_attachments());
    assert!(app.editing_queued().is_none());

    // Esc drops an edit (and does not abort the turn).
    command(&mut app, "/queue edit 2");
    assert_eq!(app.composer().draft(), "b");
    app.handle_input(key(KeyCode::Esc));
    assert!(app.editing_queued().is_none());
    assert_eq!(app.composer().draft(), "");
    assert!(app.take_effects().is_empty(), "no abort");

    // The item is sent while the person edits it: the text stays, to send anew.
    command(&mut app, "/queue edit 2");
    typed(&mut app, "!");
    ev(&mut app, queue(vec![item(1, "review this again")], None));
    assert!(app.editing_queued().is_none());
    assert_eq!(app.composer().draft(), "b!");
    assert!(app.notice().unwrap().text.contains("left the queue"));

    // A save that finds it gone (404) keeps the text too.
    app.handle_input(ctrl('c'));
    assert_eq!(app.composer().draft(), "");
    command(&mut app, "/queue edit 1");
    typed(&mut app, "?");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::EditQueued { generation, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_queue_edited(*generation, Err((true, "404".into())));
    assert_eq!(app.composer().draft(), "review this again?");
    assert!(app.editing_queued().is_none());
}

#[test]
fn a_load_older_than_an_event_is_dropped_and_a_resync_reloads() {
    let mut app = ready_app(vec![session(1, "work", SessionStatus::Busy)], false);
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let load = effects
        .iter()
        .find_map(|e| match e {
            Effect::LoadQueue {
                session,
                generation,
            } => Some((session.clone(), *generation)),
            _ => None,
        })
        .expect("opening a session loads its queue");
    assert_eq!(load.0, sid(1));
    app.on_transcript(transcript_gen(&effects), Ok(vec![]));
    ev(&mut app, queue(vec![item(1, "new")], None));
    let stale = PromptQueue {
        session_id: sid(1),
        paused: None,
        items: vec![],
    };
    app.on_queue_loaded(load.1, Ok(stale));
    assert_eq!(
        app.open_queue().unwrap().items.len(),
        1,
        "the event is newer"
    );

    app.on_stream_connected();
    let effects = app.take_effects();
    let Some(Effect::LoadQueue { generation, .. }) = effects
        .iter()
        .find(|e| matches!(e, Effect::LoadQueue { .. }))
    else {
        panic!("a resync reloads the queue: {effects:?}")
    };
    app.on_queue_loaded(
        *generation,
        Ok(PromptQueue {
            session_id: sid(1),
            paused: None,
            items: vec![],
        }),
    );
    assert!(app.open_queue().is_none());
}

#[test]
fn the_session_list_marks_what_waits_in_each_queue() {
    let mut app = ready_app(vec![session(1, "work", SessionStatus::Busy)], false);
    let row = |app: &ax_tui::App| {
        screen(app)
            .lines()
            .find(|l| l.contains("work"))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(!row(&app).contains("queue"), "{}", row(&app));

    ev(&mut app, queue(vec![item(1, "a"), item(2, "b")], None));
    let shown = row(&app);
    assert!(shown.contains("work · 2 queued "), "{shown}");
    assert!(!shown.contains("paused"), "{shown}");

    ev(&mut app, queue(vec![item(2, "b")], Some("the turn failed")));
    assert!(
        row(&app).contains("work · 1 queued, paused"),
        "{}",
        row(&app)
    );

    ev(&mut app, queue(vec![], Some("the turn failed")));
    assert!(row(&app).contains("work · queue paused"), "{}", row(&app));

    ev(&mut app, queue(vec![], None));
    assert!(!row(&app).contains("queue"), "{}", row(&app));
}
