//! The state model driven without a terminal: inputs in, effects and facts out.

mod util;

use std::time::Duration;

use ax_protocol::{Event, Part, PermissionReply, PermissionState, PromptPart, Role, SessionStatus};
use ax_tui::app::{App, Connection, Effect, Modal, NoticeKind, Overlay, Route};
use ax_tui::input::{Input, KeyCode, Modifiers, Mouse, MouseKind};
use util::*;

#[test]
fn startup_overlay_until_the_first_sync() {
    let mut app = App::new("/p", None);
    assert_eq!(app.overlay(), Some(Overlay::Startup));
    assert!(app.blocked_inputs().startup_overlay && app.blocked_inputs().composer_missing);
    assert!(!app.ready());
    app.on_stream_connected();
    assert!(!app.ready(), "connected but not synced");
    let generation = resync_gen(&mut app);
    app.on_synced(
        generation,
        Ok((vec![session(1, "a", SessionStatus::Idle)], vec![])),
    );
    assert_eq!(app.overlay(), None);
    assert!(app.ready());
    assert!(!app.blocked_inputs().any());
}

#[test]
fn every_blocked_input_is_reported() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], true);
    assert!(!app.blocked_inputs().any());

    // Draft, whitespace included.
    typed(&mut app, " ");
    assert!(app.blocked_inputs().draft);
    app.handle_input(key(KeyCode::Backspace));
    assert!(!app.blocked_inputs().any());

    // Attachment chip.
    typed(&mut app, "/attach notes.txt");
    app.handle_input(key(KeyCode::Enter));
    let b = app.blocked_inputs();
    assert!(b.attachment && !b.draft, "{b:?}");
    app.handle_input(key(KeyCode::Backspace));
    assert!(!app.blocked_inputs().any());

    // Palette and help are modals.
    app.handle_input(ctrl('p'));
    assert!(app.blocked_inputs().modal);
    app.handle_input(key(KeyCode::Esc));
    assert!(!app.blocked_inputs().any());
    typed(&mut app, "/help");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.modal(), Some(&Modal::Help));
    assert!(app.blocked_inputs().modal);
    app.handle_input(key(KeyCode::Esc));
    assert!(!app.blocked_inputs().any());

    // A busy session anywhere.
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Busy,
    });
    assert!(app.blocked_inputs().session_busy);
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    assert!(!app.blocked_inputs().any());

    // A pending approval anywhere (not the open session: no dialog, still blocked).
    app.on_event(Event::PermissionAsked {
        permission: permission("per_0123456789abABCDEFGHIJ0001", 1, "rm -rf build"),
    });
    let b = app.blocked_inputs();
    assert!(b.pending_approval && !b.modal, "{b:?}");
    // Opening that session shows the approval dialog, a modal.
    open_loaded(&mut app, 1, vec![]);
    assert!(app.pending_approval().is_some());
    assert!(app.blocked_inputs().modal);
    app.on_event(Event::PermissionReplied {
        session_id: sid(1),
        permission_id: "per_0123456789abABCDEFGHIJ0001".parse().unwrap(),
        state: PermissionState::Approved,
    });
    assert!(!app.blocked_inputs().any());

    // The exit overlay.
    app.handle_input(ctrl('c'));
    assert_eq!(app.overlay(), Some(Overlay::Exit));
    assert!(app.blocked_inputs().exit_overlay && app.blocked_inputs().composer_missing);
    assert!(app.take_effects().contains(&Effect::Quit));
}

#[test]
fn readiness_follows_the_stream_and_the_sync() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.route(), &Route::Session(sid(1)));
    assert!(!app.ready(), "session route not loaded yet");
    let effects = app.take_effects();
    let tgen = transcript_gen(&effects);
    app.on_transcript(tgen, Ok(vec![]));
    assert!(app.ready());

    app.on_stream_down(Duration::from_millis(500));
    assert!(!app.ready());
    assert_eq!(
        app.connection(),
        Connection::Reconnecting {
            down_for: Duration::from_millis(500)
        }
    );
    // A stale answer from before the drop changes nothing.
    app.on_transcript(tgen, Ok(vec![]));
    assert!(!app.ready());

    app.on_stream_connected();
    assert!(!app.ready(), "full resync after reconnect");
    let effects = app.take_effects();
    let sgen = effects
        .iter()
        .find_map(|e| match e {
            Effect::Resync { generation } => Some(*generation),
            _ => None,
        })
        .unwrap();
    let tgen = transcript_gen(&effects);
    app.on_synced(
        sgen,
        Ok((vec![session(1, "a", SessionStatus::Idle)], vec![])),
    );
    assert!(!app.ready(), "transcript still loading");
    app.on_transcript(tgen, Ok(vec![]));
    assert!(app.ready());

    // A reset event forces another full resync.
    app.on_event(Event::Reset);
    assert!(!app.ready());
    let effects = app.take_effects();
    assert!(effects.iter().any(|e| matches!(e, Effect::Resync { .. })));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::LoadTranscript { .. }))
    );
}

#[test]
fn sessions_are_newest_first_and_follow_events() {
    let mut app = ready_app(
        vec![
            session(1, "old", SessionStatus::Idle),
            session(3, "new", SessionStatus::Idle),
        ],
        false,
    );
    let titles = |a: &App| {
        a.sessions()
            .iter()
            .map(|s| s.title.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(titles(&app), ["new", "old"]);
    app.on_event(Event::SessionCreated {
        session: session(5, "newest", SessionStatus::Idle),
    });
    app.on_event(Event::SessionDeleted { session_id: sid(1) });
    assert_eq!(titles(&app), ["newest", "new"]);
    // The selection stays on the same session when another is added above it.
    assert_eq!(app.sessions()[app.selected_index().unwrap()].title, "new");
}

#[test]
fn events_during_a_sync_are_replayed_after_it() {
    let mut app = App::new("/p", None);
    app.on_stream_connected();
    let generation = resync_gen(&mut app);
    app.on_event(Event::SessionCreated {
        session: session(9, "created while loading", SessionStatus::Idle),
    });
    app.on_synced(
        generation,
        Ok((vec![session(1, "a", SessionStatus::Idle)], vec![])),
    );
    assert_eq!(app.sessions().len(), 2);
}

#[test]
fn parts_stream_into_the_open_transcript() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0001",
            1,
            Role::User,
            vec![Part::Text { text: "ls".into() }],
        )],
    );
    assert_eq!(app.transcript().line_count(), 2);
    app.on_event(Event::MessageCreated {
        message: message("msg_0123456789abABCDEFGHIJ0002", 1, Role::Assistant, vec![]),
    });
    app.on_event(Event::MessagePart {
        session_id: sid(1),
        message_id: "msg_0123456789abABCDEFGHIJ0002".parse().unwrap(),
        index: 0,
        part: out("a.txt\nb.txt\n"),
    });
    // Another session's parts are not ours.
    app.on_event(Event::MessagePart {
        session_id: sid(2),
        message_id: "msg_0123456789abABCDEFGHIJ0002".parse().unwrap(),
        index: 1,
        part: out("nope\n"),
    });
    let rows: Vec<_> = app
        .transcript()
        .visible(10, 0)
        .into_iter()
        .map(|(_, s)| s.to_owned())
        .collect();
    assert_eq!(rows, ["you", "ls", "", "agent", "a.txt", "b.txt"]);
    // A gap asks for a reload.
    app.take_effects();
    app.on_event(Event::MessagePart {
        session_id: sid(1),
        message_id: "msg_0123456789abABCDEFGHIJ0002".parse().unwrap(),
        index: 5,
        part: out("x"),
    });
    assert!(matches!(
        app.take_effects().as_slice(),
        [Effect::LoadTranscript { .. }]
    ));
}

#[test]
fn submitting_clears_on_success_and_keeps_on_failure() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    typed(&mut app, "/attach a.txt");
    app.handle_input(key(KeyCode::Enter));
    // The file is checked at once (the chip shows meanwhile).
    assert!(matches!(
        app.take_effects().as_slice(),
        [Effect::CheckAttachment { path, .. }] if path == "a.txt"
    ));
    app.on_attachment_checked("a.txt", Ok(()));
    typed(&mut app, "echo hi");
    app.handle_input(Input::Key(ax_tui::input::Key {
        code: KeyCode::Enter,
        mods: Modifiers::ALT,
    }));
    typed(&mut app, "pwd");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [
        Effect::Submit {
            session: None,
            parts,
            generation,
            queue: false,
        },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    assert_eq!(
        parts,
        &[
            PromptPart::Text {
                text: "echo hi\npwd".into()
            },
            PromptPart::File {
                path: "a.txt".into()
            }
        ]
    );
    app.on_submitted(*generation, Err("409 busy".into()));
    assert_eq!(app.composer().draft(), "echo hi\npwd");
    assert_eq!(app.composer().attachments(), ["a.txt"]);
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Error);
    assert!(app.notice().unwrap().text.contains("409 busy"));

    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::Submit { generation, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_submitted(*generation, Ok(sid(7)));
    assert_eq!(app.composer().draft(), "");
    assert!(app.composer().attachments().is_empty());
    assert_eq!(
        app.route(),
        &Route::Session(sid(7)),
        "the new session opens"
    );
}

#[test]
fn approval_dialog_replies() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Pending)], false);
    app.on_event(Event::PermissionAsked {
        permission: permission("per_0123456789abABCDEFGHIJ0009", 1, "make"),
    });
    open_loaded(&mut app, 1, vec![]);
    app.handle_input(key(KeyCode::Right));
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(
        app.take_effects(),
        [Effect::ReplyPermission {
            session: sid(1),
            permission_id: "per_0123456789abABCDEFGHIJ0009".parse().unwrap(),
            reply: PermissionReply::AllowAlways,
            option_id: "always".into(),
        }]
    );
    assert!(app.pending_approval().is_none());
    app.on_reply_failed(
        &"per_0123456789abABCDEFGHIJ0009".parse().unwrap(),
        "network".into(),
    );
    assert!(app.pending_approval().is_some(), "the dialog comes back");
}

#[test]
fn mouse_selects_opens_and_revokes() {
    let mut app = ready_app(
        vec![
            session(1, "one", SessionStatus::Idle),
            session(2, "two", SessionStatus::Idle),
        ],
        true,
    );
    let layout = app.layout();
    let inner = layout.main.inner();
    // Second row of the list is session 1 (newest first).
    app.handle_input(click(inner.x + 3, inner.y + 1));
    assert_eq!(app.route(), &Route::Session(sid(1)));
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.route(), &Route::Home);

    let revoke = layout.revoke.unwrap();
    let main_before = app.layout().main.height;
    app.take_effects();
    app.handle_input(click(revoke.x + 2, revoke.y));
    assert!(app.take_effects().contains(&Effect::RevokeSharing));
    assert!(app.sharing().is_none());
    assert_eq!(app.layout().bar, None);
    assert_eq!(
        app.layout().main.height,
        main_before + 1,
        "the row is given back"
    );
    // Revocation is final: the command is gone too.
    typed(&mut app, "/tui-mcp-revoke");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.take_effects().is_empty());
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Error);
}

#[test]
fn printable_keys_go_to_the_composer_on_home() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    typed(&mut app, "jk q");
    assert_eq!(app.composer().draft(), "jk q");
    assert_eq!(app.route(), &Route::Home);
    app.handle_input(Input::Paste("x\r\ny".into()));
    assert_eq!(app.composer().draft(), "jk qx\ny");
    app.handle_input(ctrl('c'));
    assert_eq!(app.composer().draft(), "", "Ctrl+C clears a draft first");
    assert_eq!(app.overlay(), None);
}

#[test]
fn palette_runs_commands() {
    let mut app = ready_app(vec![], true);
    app.handle_input(ctrl('p'));
    typed(&mut app, "tui-mcp-revoke");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.modal().is_none());
    assert!(app.sharing().is_none());
    assert!(app.take_effects().contains(&Effect::RevokeSharing));
    app.handle_input(ctrl('p'));
    typed(&mut app, "new");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::ListAgents { generation }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_agents(*generation, Err("down".into()));
    let effects = app.take_effects();
    let [
        Effect::CreateSession {
            generation,
            agent: None,
        },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    app.on_created(*generation, Ok(session(4, "", SessionStatus::Idle)));
    assert_eq!(app.route(), &Route::Session(sid(4)));
}

#[test]
fn agent_navigation_shows_the_notice() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], true);
    app.navigate_by_agent(sid(1));
    assert_eq!(app.route(), &Route::Session(sid(1)));
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Agent);
    assert_eq!(app.notice().unwrap().text, "Navigated by agent via TUIMCP");
    assert!(!app.ready(), "loading the session");
    let at = app.notice().unwrap().at;
    app.tick(at + Duration::from_secs(10));
    assert!(app.notice().is_none());
}

#[test]
fn wheel_scrolls_the_transcript() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0000",
            1,
            Role::Assistant,
            vec![out(&text)],
        )],
    );
    let main = app.layout().main;
    app.handle_input(Input::Mouse(Mouse {
        kind: MouseKind::ScrollUp,
        col: main.x + 2,
        row: main.y + 2,
    }));
    let h = main.inner().height as usize;
    assert_eq!(app.scroll(), 3);
    let rows = app.transcript().visible(h, app.scroll());
    assert_eq!(rows.last().unwrap().1, "line 96");
}

/// Every blocked input and readiness change reaches a real TUIMCP controller as the owner
/// loop feeds it (observe after every mutation).
#[test]
fn the_controller_sees_every_blocker_and_readiness() {
    use ax_tuimcp::{Controller, Identity};
    use std::time::Instant;

    let mut app = App::new("/p", None);
    let mut ctl = Controller::new(Identity::random(), app.guard_inputs());
    // Far from any human input: only the blockers count.
    let now = Instant::now();
    assert!(ctl.view(now).blocked, "startup overlay");
    let mut last_rev = ctl.revision();
    let mut step = |app: &mut App, f: &dyn Fn(&mut App), ready: bool, blocked: bool| {
        f(app);
        ctl.observe(app.guard_inputs());
        let view = ctl.view(now);
        assert_eq!(
            (view.ready, view.blocked),
            (ready, blocked),
            "{:?}",
            app.guard_inputs()
        );
        assert_ne!(view.revision, last_rev, "revision must change");
        last_rev = view.revision;
    };
    step(&mut app, &|a| a.on_stream_connected(), false, true);
    step(
        &mut app,
        &|a| {
            let g = resync_gen(a);
            a.on_synced(g, Ok((vec![session(1, "a", SessionStatus::Idle)], vec![])));
        },
        true,
        false,
    );
    step(&mut app, &|a| typed(a, " "), true, true);
    step(
        &mut app,
        &|a| a.handle_input(key(KeyCode::Backspace)),
        true,
        false,
    );
    step(
        &mut app,
        &|a| {
            typed(a, "/attach x");
            a.handle_input(key(KeyCode::Enter));
        },
        true,
        true,
    );
    step(
        &mut app,
        &|a| a.handle_input(key(KeyCode::Backspace)),
        true,
        false,
    );
    step(&mut app, &|a| a.handle_input(ctrl('p')), true, true);
    step(
        &mut app,
        &|a| a.handle_input(key(KeyCode::Esc)),
        true,
        false,
    );
    let busy = |status| {
        move |a: &mut App| {
            a.on_event(Event::SessionStatus {
                session_id: sid(1),
                status,
            })
        }
    };
    step(&mut app, &busy(SessionStatus::Busy), true, true);
    step(&mut app, &busy(SessionStatus::Idle), true, false);
    step(&mut app, &busy(SessionStatus::Pending), true, true);
    step(&mut app, &busy(SessionStatus::Idle), true, false);
    step(
        &mut app,
        &|a| a.on_stream_down(Duration::from_secs(1)),
        false,
        false,
    );
    step(&mut app, &|a| a.on_stream_connected(), false, false);
    step(
        &mut app,
        &|a| {
            let g = resync_gen(a);
            a.on_synced(g, Ok((vec![session(1, "a", SessionStatus::Idle)], vec![])));
        },
        true,
        false,
    );
    // The session route is ready only once the session loaded.
    step(
        &mut app,
        &|a| a.handle_input(key(KeyCode::Enter)),
        false,
        false,
    );
    step(
        &mut app,
        &|a| {
            let g = transcript_gen(&a.take_effects());
            a.on_transcript(g, Ok(vec![]));
        },
        true,
        false,
    );
    step(&mut app, &|a| a.handle_input(ctrl('c')), true, true);
}

/// The router the controller calls: opens the session and returns the re-read inputs.
#[test]
fn navigator_opens_the_session_and_rereads() {
    use ax_tuimcp::{Location, Navigator};
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], true);
    let target = sid(1);
    let inputs = app.navigate(&target).unwrap();
    assert_eq!(inputs.location, Location::Session(target));
    assert!(!inputs.route_loaded);
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Agent);
}

fn with_mods(code: KeyCode, mods: Modifiers) -> Input {
    Input::Key(ax_tui::input::Key { code, mods })
}

fn after_cursor(app: &App) -> &str {
    let c = app.composer();
    &c.draft()[c.cursor()..]
}

#[test]
fn composer_cursor_keys() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    typed(&mut app, "echo héllo wörld");
    app.handle_input(key(KeyCode::Left));
    app.handle_input(key(KeyCode::Left));
    assert_eq!(after_cursor(&app), "ld");
    app.handle_input(with_mods(KeyCode::Left, Modifiers::CTRL));
    assert_eq!(after_cursor(&app), "wörld");
    app.handle_input(with_mods(KeyCode::Char('b'), Modifiers::ALT));
    assert_eq!(after_cursor(&app), "héllo wörld");
    app.handle_input(with_mods(KeyCode::Char('f'), Modifiers::ALT));
    assert_eq!(after_cursor(&app), " wörld");
    app.handle_input(with_mods(KeyCode::Right, Modifiers::CTRL));
    assert_eq!(after_cursor(&app), "");
    app.handle_input(key(KeyCode::Home));
    assert_eq!(app.composer().cursor(), 0);
    app.handle_input(key(KeyCode::End));
    assert_eq!(after_cursor(&app), "");
    app.handle_input(ctrl('a'));
    assert_eq!(app.composer().cursor(), 0);
    app.handle_input(ctrl('e'));
    assert_eq!(after_cursor(&app), "");
    app.handle_input(key(KeyCode::Right));
    assert_eq!(after_cursor(&app), "", "Right at the end stays");
    assert_eq!(app.route(), &Route::Home);
}

#[test]
fn composer_edit_keys_work_at_the_cursor() {
    let mut app = ready_app(vec![], false);
    typed(&mut app, "ls src target");
    app.handle_input(with_mods(KeyCode::Left, Modifiers::CTRL));
    app.handle_input(key(KeyCode::Backspace));
    assert_eq!(app.composer().draft(), "ls srctarget");
    app.handle_input(key(KeyCode::Delete));
    assert_eq!(app.composer().draft(), "ls srcarget");
    typed(&mut app, " -la t");
    assert_eq!(app.composer().draft(), "ls src -la target");
    app.handle_input(Input::Paste("x\ny ".into()));
    assert_eq!(app.composer().draft(), "ls src -la tx\ny arget");
    app.handle_input(ctrl('w'));
    assert_eq!(app.composer().draft(), "ls src -la tx\narget");
    app.handle_input(key(KeyCode::Up));
    app.handle_input(key(KeyCode::End));
    app.handle_input(ctrl('u'));
    assert_eq!(
        app.composer().draft(),
        "\narget",
        "Ctrl+U erases to the line start only"
    );
    assert!(app.blocked_inputs().draft);
    app.handle_input(key(KeyCode::Delete));
    assert_eq!(app.composer().draft(), "arget");
    app.handle_input(ctrl('u'));
    assert_eq!(app.composer().draft(), "arget");
    app.handle_input(ctrl('e'));
    app.handle_input(ctrl('u'));
    assert_eq!(app.composer().draft(), "");
    assert!(
        !app.blocked_inputs().draft,
        "an emptied draft blocks nothing"
    );
}

#[test]
fn up_down_move_in_a_multiline_draft_and_keep_their_route_meaning_otherwise() {
    let sessions = vec![
        session(1, "a", SessionStatus::Idle),
        session(2, "b", SessionStatus::Idle),
        session(3, "c", SessionStatus::Idle),
    ];
    let mut app = ready_app(sessions, false);
    let start = app.selected_index();
    // Empty draft: Up/Down and Home/End move the session selection.
    app.handle_input(key(KeyCode::Down));
    let moved = app.selected_index();
    assert_ne!(moved, start);
    app.handle_input(key(KeyCode::End));
    assert_eq!(app.selected_index(), Some(2));
    app.handle_input(key(KeyCode::Home));
    assert_eq!(app.selected_index(), Some(0));
    // A single-line draft: Up/Down still select; Home/End edit the draft.
    typed(&mut app, "ab");
    app.handle_input(key(KeyCode::Down));
    assert_eq!(app.selected_index(), Some(1));
    app.handle_input(key(KeyCode::Home));
    assert_eq!(app.selected_index(), Some(1));
    assert_eq!(app.composer().cursor(), 0);
    // Several lines: Up/Down move between them and leave the selection alone.
    app.handle_input(key(KeyCode::End));
    app.handle_input(with_mods(KeyCode::Enter, Modifiers::ALT));
    typed(&mut app, "cd");
    app.handle_input(key(KeyCode::Left));
    app.handle_input(key(KeyCode::Up));
    assert_eq!(after_cursor(&app), "b\ncd");
    app.handle_input(key(KeyCode::Down));
    assert_eq!(after_cursor(&app), "d");
    assert_eq!(app.selected_index(), Some(1));
    assert_eq!(app.route(), &Route::Home);
}

#[test]
fn up_down_scroll_the_transcript_with_a_one_line_draft() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    let text: String = (1..=60).map(|i| format!("line {i}\n")).collect();
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
    typed(&mut app, "pwd");
    app.handle_input(key(KeyCode::Up));
    assert_eq!(app.scroll(), 1);
    app.handle_input(key(KeyCode::Left));
    assert_eq!(app.scroll(), 1, "Left moves the cursor, not the transcript");
    assert_eq!(after_cursor(&app), "d");
    app.handle_input(Input::Paste("\n".into()));
    app.handle_input(key(KeyCode::Up));
    assert_eq!(app.scroll(), 1, "a multi-line draft takes Up");
    assert_eq!(app.composer().cursor(), 0);
}

/// Feeds a select_session for `target` through the real TUIMCP controller with this app as
/// its router; returns the answer.
fn agent_selects(app: &mut App, target: u32) -> (ax_tuimcp::Response, u64, u64) {
    use ax_tuimcp::{Controller, Identity, Request, SelectSession, WireUuid};
    let now = std::time::Instant::now();
    let mut controller = Controller::new(Identity::random(), app.guard_inputs());
    let view = controller.view(now);
    let before = controller.revision();
    let args = SelectSession {
        request_id: WireUuid::random(),
        instance_id: view.instance_id,
        generation: view.generation,
        expected_revision: view.revision,
        session_id: sid(target),
    };
    let (reply, mut answer) = tokio::sync::oneshot::channel();
    if let Some(v) = controller.handle(Request::SelectSession(args), reply, now) {
        controller.validation_finished(v.ticket, ax_tuimcp::ValidationOutcome::Valid, now, app);
    }
    (answer.try_recv().unwrap(), before, controller.revision())
}

#[test]
fn an_agent_selecting_the_open_session_leaves_the_screen_alone() {
    let mut app = ready_app(
        vec![
            session(1, "a", SessionStatus::Idle),
            session(2, "b", SessionStatus::Idle),
        ],
        true,
    );
    let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0000",
            1,
            Role::Assistant,
            vec![out(&text)],
        )],
    );
    let main = app.layout().main;
    app.handle_input(Input::Mouse(Mouse {
        kind: MouseKind::ScrollUp,
        col: main.x + 2,
        row: main.y + 2,
    }));
    assert_eq!(app.scroll(), 3);
    app.take_effects();
    let (answer, before, after) = agent_selects(&mut app, 1);
    let ax_tuimcp::Response::Applied(view) = answer else {
        panic!("applied expected, got {answer:?}")
    };
    assert_eq!(view.session_id.unwrap().as_str(), sid(1).as_str());
    assert_eq!(after, before, "the same revision: nothing changed");
    assert_eq!(app.scroll(), 3, "the person's scroll position is kept");
    assert!(app.notice().is_none(), "no agent notice");
    assert!(app.take_effects().is_empty(), "no transcript reload");
    assert!(app.ready());
    // Another session still navigates, with the notice.
    let (answer, _, _) = agent_selects(&mut app, 2);
    assert!(
        matches!(answer, ax_tuimcp::Response::Applied(_)),
        "{answer:?}"
    );
    assert_eq!(app.route(), &Route::Session(sid(2)));
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Agent);
}

#[test]
fn after_a_revoke_the_sharing_commands_say_it_was_revoked() {
    let mut app = ready_app(vec![], true);
    typed(&mut app, "/tui-mcp-revoke");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.take_effects().contains(&Effect::RevokeSharing));
    for command in ["/tui-mcp-revoke", "/tui-mcp-config"] {
        typed(&mut app, command);
        app.handle_input(key(KeyCode::Enter));
        let notice = app.notice().unwrap();
        assert_eq!(notice.kind, NoticeKind::Error);
        assert!(notice.text.contains("was revoked"), "{}", notice.text);
        assert!(!notice.text.contains("not shared"), "{}", notice.text);
        app.handle_input(ctrl('c'));
    }
    let mut never = ready_app(vec![], false);
    typed(&mut never, "/tui-mcp-revoke");
    never.handle_input(key(KeyCode::Enter));
    assert!(never.notice().unwrap().text.contains("not shared"));
}

#[test]
fn the_bar_and_tui_mcp_config_copy_the_mcp_client_config() {
    let mut app = ready_app(vec![], true);
    let copied = |effects: Vec<Effect>| -> Vec<String> {
        effects
            .into_iter()
            .filter_map(|e| match e {
                Effect::CopyToClipboard { text } => Some(text),
                _ => None,
            })
            .collect()
    };
    // A click on the path copies the config; [Revoke] still revokes only.
    let path = app.layout().bar_path.unwrap();
    app.handle_input(click(path.x + 1, path.y));
    let texts = copied(app.take_effects());
    assert_eq!(texts.len(), 1);
    let config: serde_json::Value = serde_json::from_str(&texts[0]).unwrap();
    assert_eq!(
        config["mcpServers"]["ax-code-tui"]["args"],
        serde_json::json!(["mcp", "tui", "--endpoint", ENDPOINT])
    );
    assert!(app.sharing().is_some());
    let copy = app.layout().copy.unwrap();
    app.handle_input(click(copy.x + 1, copy.y));
    assert_eq!(copied(app.take_effects()), texts);
    // /tui-mcp-config shows it in a modal (which blocks agent navigation); c copies it.
    typed(&mut app, "/tui-mcp-config");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.modal(), Some(&Modal::McpConfig));
    assert!(app.blocked_inputs().modal);
    assert_eq!(app.mcp_config().as_deref(), Some(texts[0].as_str()));
    app.handle_input(key(KeyCode::Char('c')));
    assert_eq!(copied(app.take_effects()), texts);
    assert!(app.modal().is_none());
}
