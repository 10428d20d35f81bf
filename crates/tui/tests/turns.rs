//! Agent turns in the TUI, driven without a terminal: Markdown and ANSI rendering, the honest
//! approval dialog, interrupt and quit, progress, the composer; and the TUIMCP rule that
//! everything new taking the person's attention blocks agent navigation.

mod util;

use std::time::Duration;

use ax_protocol::{Event, Part, PermissionState, Role, SessionStatus, Stream};
use ax_tui::app::{App, Effect, Modal, NoticeKind, Overlay, Route};
use ax_tui::input::{Input, KeyCode, Mouse, MouseKind};
use ax_tui::layout::COMPOSER_MAX_ROWS;
use ax_tui::render::draw;
use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use util::*;

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term.backend().to_string()
}

/// A style in a few letters, for snapshots: `fg=…`, `bg=…`, `B` bold, `D` dim, `I` italic,
/// `U` underlined, `S` crossed out, `R` reversed.
fn style_tag(s: Style) -> String {
    let mut t = Vec::new();
    if let Some(c) = s.fg {
        t.push(format!("fg={c}"));
    }
    if let Some(c) = s.bg {
        t.push(format!("bg={c}"));
    }
    let m = s.add_modifier;
    for (flag, l) in [
        (Modifier::BOLD, "B"),
        (Modifier::DIM, "D"),
        (Modifier::ITALIC, "I"),
        (Modifier::UNDERLINED, "U"),
        (Modifier::CROSSED_OUT, "S"),
        (Modifier::REVERSED, "R"),
    ] {
        if m.contains(flag) {
            t.push(l.into());
        }
    }
    t.join(",")
}

/// Lines with every styled span marked `«text»{style}`.
fn annotated(lines: &[Line]) -> String {
    let mut out = String::new();
    for l in lines {
        for s in &l.spans {
            let tag = style_tag(s.style);
            if tag.is_empty() {
                out.push_str(&s.content);
            } else {
                out.push_str(&format!("«{}»{{{tag}}}", s.content));
            }
        }
        out.push('\n');
    }
    out
}

const SAMPLE_MD: &str = "# Plan for the fix

The **parser** drops the *last* line; see `lib.rs` and [the issue](https://example.test/i/1).

1. Read the input
2. Split it:
   - by lines
   - by `\\r`
     1. nested numbered
10. Third item: CommonMark numbers on from the first

- [x] done task
- [ ] open task

> A quoted line that is long enough to wrap at the narrow width used here.

```rust
fn main() {
    // say hello
    let n = 42; println!(\"hi {n}\");
}
```

| name | size |
| --- | ---: |
| a.rs | 10 |

---
Raw <b>html</b> stays text, and so does \u{1b}[31mthis escape\u{7}.
";

#[test]
fn markdown_snapshot() {
    let lines = ax_tui::render::theme::markdown_lines(SAMPLE_MD, 48);
    for l in &lines {
        let w: usize = l.spans.iter().map(|s| s.width()).sum();
        assert!(w <= 48, "a line wider than the width: {l:?}");
        for s in &l.spans {
            assert!(!s.content.chars().any(|c| c.is_control()), "{s:?}");
        }
    }
    insta::assert_snapshot!(annotated(&lines));
}

#[test]
fn markdown_links_show_their_target_and_autolinks_once() {
    let plain = |md: &str| -> String {
        ax_tui::render::theme::markdown_lines(md, 80)
            .iter()
            .flat_map(|l| l.spans.iter().map(|s| s.content.to_string()))
            .collect()
    };
    assert_eq!(plain("[docs](https://d.test/x)"), "docs (https://d.test/x)");
    assert_eq!(plain("<https://d.test/x>"), "https://d.test/x");
    assert_eq!(plain("![logo](l.png)"), "[image: logo] (l.png)");
}

fn coloured_session() -> App {
    let mut app = ready_app(vec![session(1, "colours", SessionStatus::Idle)], false);
    open_loaded(
        &mut app,
        1,
        vec![message(
            "msg_0123456789abABCDEFGHIJ0001",
            1,
            Role::Assistant,
            vec![],
        )],
    );
    let chunks = [
        "\u{1b}[1;32m   Compiling\u{1b}[0m ax v0.1\n",
        "\u{1b}[31merror\u{1b}",
        "[0m: \u{1b}[38;5;208mwarn\u{1b}[38;2;10;20;30mrgb\u{1b}[m\n",
        "downloading 10%\rdownloading 55%",
        "\rdownloading 100%\n",
        "\u{1b}]0;window title\u{7}\u{1b}[2J\u{1b}[Hclean\n",
    ];
    for (i, c) in chunks.iter().enumerate() {
        app.on_event(Event::MessagePart {
            session_id: sid(1),
            message_id: "msg_0123456789abABCDEFGHIJ0001".parse().unwrap(),
            index: i as u32,
            part: out(c),
        });
    }
    app
}

#[test]
fn ansi_output_is_styled_and_progress_overwrites() {
    let app = coloured_session();
    let rows = ax_tui::render::theme::visible_spans(app.transcript(), 20, 0);
    let text: Vec<String> = rows
        .iter()
        .map(|(_, pieces)| pieces.iter().map(|(t, _)| *t).collect())
        .collect();
    assert_eq!(
        text,
        [
            "agent",
            "   Compiling ax v0.1",
            "error: warnrgb",
            "downloading 100%",
            "clean"
        ]
    );
    assert_eq!(
        rows[1].1[0],
        ("   Compiling", Style::new().fg(Color::Green).bold())
    );
    assert_eq!(rows[2].1[0], ("error", Style::new().fg(Color::Red)));
    assert_eq!(rows[2].1[2].1, Style::new().fg(Color::Indexed(208)));
    assert_eq!(rows[2].1[3].1, Style::new().fg(Color::Rgb(10, 20, 30)));
    let dump: String = rows
        .iter()
        .map(|(_, pieces)| {
            let mut l = String::new();
            for (t, s) in pieces {
                let tag = style_tag(*s);
                if tag.is_empty() {
                    l.push_str(t);
                } else {
                    l.push_str(&format!("«{t}»{{{tag}}}"));
                }
            }
            l + "\n"
        })
        .collect();
    insta::assert_snapshot!(format!("{dump}\n{}", screen(&app)));
}

proptest! {
    /// Whatever bytes a command prints, in whatever chunks, no escape or other control
    /// character reaches a drawn span.
    #[test]
    fn no_escape_ever_reaches_a_span(
        pieces in prop::collection::vec(
            prop::sample::select(vec![
                "\u{1b}", "[", "]", "0", "1", "3", "8", ";", ":", "m", "K", "?", "\u{7}",
                "\\", "\r", "\n", "\u{8}", "\t", "a", "é", "日", "\u{9b}", "\u{9d}", "\u{9c}",
                "P", "\u{0}", "\u{7f}", "38;5;1m", "\u{1b}[31m", "\u{1b}]8;;x\u{1b}\\",
            ]),
            0..200,
        ),
        cuts in prop::collection::vec(0usize..200, 0..8),
    ) {
        let text: String = pieces.concat();
        let mut bounds: Vec<usize> = cuts
            .into_iter()
            .map(|c| c.min(text.len()))
            .filter(|c| text.is_char_boundary(*c))
            .collect();
        bounds.push(0);
        bounds.push(text.len());
        bounds.sort_unstable();
        bounds.dedup();
        let mut t = ax_tui::transcript::Transcript::new(7);
        t.add_message(&message("msg_0123456789abABCDEFGHIJ0000", 1, Role::Assistant, vec![]));
        let mut lines = ax_tui::ansi::AnsiLines::new();
        for (i, w) in bounds.windows(2).enumerate() {
            let chunk = &text[w[0]..w[1]];
            let stream = if i % 3 == 2 { Stream::Stderr } else { Stream::Stdout };
            t.apply_part("msg_0123456789abABCDEFGHIJ0000", i as u32, &Part::Output { stream, text: chunk.into() });
            lines.feed(chunk);
        }
        for (_, pieces) in t.visible_spans(10_000, 0) {
            for (s, _) in pieces {
                prop_assert!(!s.chars().any(|c| c.is_control()), "{:?}", s);
            }
        }
        for l in ax_tui::render::theme::ansi_lines(&lines) {
            for s in l.spans {
                prop_assert!(!s.content.chars().any(|c| c.is_control()), "{:?}", s.content);
            }
        }
    }
}

// ---- the approval dialog -----------------------------------------------------------------

fn long_command() -> String {
    let mut cmd = String::from("echo first\n");
    for i in 0..40 {
        cmd.push_str(&format!("echo line {i}\n"));
    }
    cmd.push_str(&format!(
        "echo {}; touch /tmp/hidden-marker",
        "x".repeat(150)
    ));
    cmd
}

fn with_approval(cmd: &str) -> App {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Pending)], true);
    app.on_event(Event::PermissionAsked {
        permission: permission("per_0123456789abABCDEFGHIJ0001", 1, cmd),
    });
    open_loaded(&mut app, 1, vec![]);
    assert!(app.pending_approval().is_some());
    app
}

#[test]
fn the_whole_request_is_shown_by_scrolling() {
    let cmd = long_command();
    let mut app = with_approval(&cmd);
    let g = app.approval_geometry().unwrap();
    assert!(g.scrolls());
    let first = screen(&app);
    assert!(first.contains("$ echo first") && first.contains("> echo line 0"));
    assert!(first.contains("more rows below"));
    assert!(first.contains("[y] Allow once") && first.contains("[a] Allow always in this session"));
    assert!(first.contains("every later command in this session"));
    insta::assert_snapshot!("approval_top", first);

    // Every row of the request appears on screen at some scroll position.
    let mut seen = String::new();
    for _ in 0..g.body_rows.len() {
        seen.push_str(&screen(&app));
        app.handle_input(key(KeyCode::Down));
    }
    for row in &g.body_rows {
        assert!(seen.contains(row.as_str()), "never shown: {row:?}");
    }
    assert_eq!(app.approval_scroll(), g.max_scroll(), "stops at the end");
    let end = screen(&app);
    assert!(end.contains("touch /tmp/hidden-marker"), "{end}");
    insta::assert_snapshot!("approval_end", end);
    app.handle_input(key(KeyCode::Home));
    assert_eq!(app.approval_scroll(), 0);
    app.handle_input(key(KeyCode::PageDown));
    assert_eq!(app.approval_scroll(), g.body_height - 1);
    app.handle_input(Input::Mouse(Mouse {
        kind: MouseKind::ScrollDown,
        col: 40,
        row: 12,
    }));
    assert_eq!(app.approval_scroll(), g.body_height + 2);
    // The answer still goes to the same request.
    app.handle_input(key(KeyCode::Char('n')));
    assert!(matches!(
        app.take_effects().as_slice(),
        [Effect::ReplyPermission { permission_id, .. }] if permission_id.as_str() == "per_0123456789abABCDEFGHIJ0001"
    ));
}

#[test]
fn newlines_and_control_characters_are_shown() {
    let app = with_approval("echo a\necho b\necho c\rrm -rf ~");
    let s = screen(&app);
    assert!(s.contains("$ echo a") && s.contains("> echo b") && s.contains("> echo c^Mrm -rf ~"));
    assert!(!s.contains("more rows below"));
}

// ---- interrupt and quit ------------------------------------------------------------------

fn busy_open() -> App {
    let mut app = ready_app(
        vec![
            session(1, "a", SessionStatus::Idle),
            session(2, "b", SessionStatus::Idle),
        ],
        true,
    );
    open_loaded(&mut app, 1, vec![]);
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Busy,
    });
    app.take_effects();
    app
}

#[test]
fn esc_aborts_a_running_turn_and_a_second_esc_goes_home() {
    let mut app = busy_open();
    let s = screen(&app);
    assert!(s.contains("Esc abort"), "footer hint:\n{s}");
    app.handle_input(key(KeyCode::Esc));
    assert_eq!(app.take_effects(), [Effect::Abort { session: sid(1) }]);
    assert_eq!(app.route(), &Route::Session(sid(1)));
    app.handle_input(key(KeyCode::Esc));
    assert!(app.take_effects().is_empty(), "one abort is enough");
    assert_eq!(app.route(), &Route::Home);
}

#[test]
fn abort_command() {
    let mut app = busy_open();
    typed(&mut app, "/abort");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.take_effects(), [Effect::Abort { session: sid(1) }]);
    app.on_aborted(&sid(1), Err("503".into()));
    assert_eq!(app.notice().unwrap().kind, NoticeKind::Error);
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    typed(&mut app, "/abort");
    app.handle_input(key(KeyCode::Enter));
    assert!(app.take_effects().is_empty());
    assert!(app.notice().unwrap().text.contains("nothing is running"));
}

#[test]
fn ctrl_c_rules() {
    // Busy open session, empty composer: Ctrl+C aborts, it does not quit.
    let mut app = busy_open();
    app.handle_input(ctrl('c'));
    assert_eq!(app.take_effects(), [Effect::Abort { session: sid(1) }]);
    assert_eq!(app.overlay(), None);
    // Still busy (the abort is on its way): Ctrl+C asks before quitting.
    app.handle_input(ctrl('c'));
    assert_eq!(app.modal(), Some(&Modal::ConfirmQuit));
    assert!(screen(&app).contains("still working"));
    app.handle_input(key(KeyCode::Char('n')));
    assert_eq!(app.modal(), None);
    assert_eq!(app.overlay(), None);
    app.handle_input(ctrl('c'));
    app.handle_input(key(KeyCode::Char('y')));
    assert_eq!(app.overlay(), Some(Overlay::Exit));

    // A busy session elsewhere, on home: Ctrl+C asks too.
    let mut app = ready_app(vec![session(2, "b", SessionStatus::Busy)], false);
    app.handle_input(ctrl('c'));
    assert_eq!(app.modal(), Some(&Modal::ConfirmQuit));
    app.handle_input(ctrl('c'));
    assert_eq!(app.modal(), None, "Ctrl+C again closes the question");
    assert_eq!(app.overlay(), None);

    // An approval open: Ctrl+C never quits, however often.
    let mut app = with_approval("rm -rf build");
    for _ in 0..3 {
        app.handle_input(ctrl('c'));
    }
    assert_eq!(app.overlay(), None);
    assert!(app.pending_approval().is_some());
    assert!(app.take_effects().is_empty());

    // Nothing working: Ctrl+C quits at once.
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    app.handle_input(ctrl('c'));
    assert_eq!(app.overlay(), Some(Overlay::Exit));
}

/// Everything new that takes the person's attention blocks agent navigation: the quit
/// question and a scrolled approval, fed to a real TUIMCP controller.
#[test]
fn the_quit_question_and_a_scrolled_approval_block_the_agent() {
    use ax_tuimcp::{Controller, Identity};
    use std::time::Instant;

    let mut app = busy_open();
    let mut ctl = Controller::new(Identity::random(), app.guard_inputs());
    let now = Instant::now() + Duration::from_secs(60);
    let mut check = |app: &App, blocked: bool, modal: bool| {
        ctl.observe(app.guard_inputs());
        assert_eq!(ctl.view(now).blocked, blocked, "{:?}", app.guard_inputs());
        assert_eq!(app.blocked_inputs().modal, modal);
    };
    // A busy session blocks by itself; the question is a modal on top.
    check(&app, true, false);
    app.handle_input(ctrl('c'));
    app.handle_input(ctrl('c'));
    assert_eq!(app.modal(), Some(&Modal::ConfirmQuit));
    check(&app, true, true);
    app.handle_input(key(KeyCode::Esc));
    check(&app, true, false);
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    check(&app, false, false);

    // A request long enough to scroll, scrolled to its end, then answered.
    app.on_event(Event::PermissionAsked {
        permission: permission("per_0123456789abABCDEFGHIJ0002", 1, &long_command()),
    });
    check(&app, true, true);
    app.handle_input(key(KeyCode::End));
    assert!(app.approval_scroll() > 0);
    check(&app, true, true);
    app.handle_input(key(KeyCode::Char('y')));
    app.on_event(Event::PermissionReplied {
        session_id: sid(1),
        permission_id: "per_0123456789abABCDEFGHIJ0002".parse().unwrap(),
        state: PermissionState::Approved,
    });
    check(&app, false, false);
}

// ---- progress ----------------------------------------------------------------------------

#[test]
fn spinner_elapsed_and_turn_duration() {
    let mut app = busy_open();
    let t0 = app.now();
    app.tick(t0 + Duration::from_millis(12_300));
    let s = screen(&app);
    let spin = ax_tui::progress::spinner(Duration::from_millis(12_300));
    assert!(s.contains(&format!("busy {spin} 12s · Esc abort")), "{s}");
    assert!(app.animating());
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    assert!(!app.animating());
    assert!(screen(&app).contains("idle · last turn 12s"));
}

#[test]
fn a_session_off_screen_tells_when_it_finishes_or_asks() {
    let mut app = busy_open();
    let t0 = app.now();
    app.on_event(Event::SessionStatus {
        session_id: sid(2),
        status: SessionStatus::Busy,
    });
    app.tick(t0 + Duration::from_secs(3));
    app.on_event(Event::SessionStatus {
        session_id: sid(2),
        status: SessionStatus::Pending,
    });
    assert_eq!(app.notice().unwrap().text, "“b” asks for approval");
    app.on_event(Event::SessionStatus {
        session_id: sid(2),
        status: SessionStatus::Idle,
    });
    assert_eq!(app.notice().unwrap().text, "“b” finished in 3.0s");
    // The open session finishing is on screen already: no notice.
    app.tick(t0 + Duration::from_secs(20));
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    assert!(app.notice().is_none(), "{:?}", app.notice());
}

/// The clock the app is given is its only time: elapsed times, turn durations and the wall
/// time a turn ended all follow the ticks from the instant and wall time it started at.
#[test]
fn the_clock_the_app_is_given_is_its_only_time() {
    use ax_tui::clock::Clock;
    use std::time::Instant;

    // Any instant will do; the wall clock reads 2026-01-02 03:04:00 UTC at it.
    let t0 = Instant::now() + Duration::from_secs(3600);
    let mut app = App::with_clock("/p", None, Clock::starting_at(t0, 1_767_323_040_000));
    assert_eq!(app.now(), t0);
    app.resize(80, 24);
    app.on_stream_connected();
    let generation = resync_gen(&mut app);
    app.on_synced(
        generation,
        Ok((vec![session(1, "a", SessionStatus::Idle)], Vec::new())),
    );
    let reply = message("msg_0123456789abABCDEFGHIJ0001", 1, Role::Assistant, vec![]);
    open_loaded(&mut app, 1, vec![reply]);
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Busy,
    });
    app.tick(t0 + Duration::from_secs(95));
    assert_eq!(
        app.progress().elapsed(&sid(1), app.now()),
        Some(Duration::from_secs(95))
    );
    app.on_event(Event::SessionStatus {
        session_id: sid(1),
        status: SessionStatus::Idle,
    });
    let rows = app.transcript().all_rows();
    assert!(
        rows.iter()
            .any(|r| r == "── turn took 1m 35s · ended 2026-01-02 03:05 UTC"),
        "{rows:?}"
    );
}

// ---- composer ----------------------------------------------------------------------------

#[test]
fn the_composer_grows_up_to_its_bound() {
    let mut app = ready_app(vec![], false);
    let one = app.layout().composer.height;
    typed(&mut app, &"y".repeat(78 * 3));
    assert_eq!(
        app.layout().composer.height,
        one + 3,
        "3 full rows + the cursor row"
    );
    typed(&mut app, &"z".repeat(78 * 20));
    assert_eq!(
        app.layout().composer.height as usize,
        COMPOSER_MAX_ROWS + 2,
        "bounded"
    );
}

#[test]
fn attach_is_checked_at_once() {
    let mut app = ready_app(vec![], false);
    typed(&mut app, "/attach missing.txt");
    app.handle_input(key(KeyCode::Enter));
    assert_eq!(app.composer().attachments(), ["missing.txt"]);
    assert_eq!(
        app.take_effects(),
        [Effect::CheckAttachment {
            workspace: "/home/me/project".into(),
            path: "missing.txt".into()
        }]
    );
    app.on_attachment_checked("missing.txt", Err("no such file".into()));
    assert!(app.composer().attachments().is_empty());
    let n = app.notice().unwrap();
    assert_eq!(n.kind, NoticeKind::Error);
    assert_eq!(n.text, "cannot attach missing.txt: no such file");
    typed(&mut app, "/attach ok.txt");
    app.handle_input(key(KeyCode::Enter));
    app.on_attachment_checked("ok.txt", Ok(()));
    assert_eq!(app.composer().attachments(), ["ok.txt"]);
}

#[test]
fn up_on_an_empty_composer_recalls_the_prompt_just_sent() {
    let mut app = ready_app(vec![session(1, "a", SessionStatus::Idle)], false);
    open_loaded(&mut app, 1, vec![]);
    typed(&mut app, "cargo test -p ax-tui");
    app.handle_input(key(KeyCode::Enter));
    let effects = app.take_effects();
    let [Effect::Submit { generation, .. }] = effects.as_slice() else {
        panic!("{effects:?}")
    };
    app.on_submitted(*generation, Ok(sid(1)));
    assert_eq!(app.composer().draft(), "");
    app.handle_input(key(KeyCode::Up));
    assert_eq!(app.composer().draft(), "cargo test -p ax-tui");
}
