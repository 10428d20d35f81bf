//! Daily habits in the real TUI under a pseudo-terminal, with the built-in `shell` agent
//! (docs/tui.md §2b, §2c, §3a–§3c): ↑/↓ recall the session's prompts and Ctrl+R finds one;
//! Ctrl+F finds in the transcript with a count; /copy copies the reply by OSC 52; F2 turns
//! mouse reporting off and on; a turn that ends out of sight rings the terminal with an
//! OSC 777 notification (and the bell when asked) and marks the session unread.

mod support;

use support::*;

const UP: &str = "\x1b[A";
const DOWN: &str = "\x1b[B";
const F2: &str = "\x1bOQ";

/// The composer's first text row (the row under its top border), trimmed.
fn composer_row(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines
        .iter()
        .rposition(|l| {
            l.starts_with("┌ Prompt")
                || l.starts_with("┌ History search")
                || l.starts_with("┌ Find")
        })
        .expect("the composer's box");
    lines[top + 1]
        .trim_matches(|c| c == '│' || c == ' ')
        .to_owned()
}

fn wait_composer(tui: &Pty, want: &str) -> String {
    tui.wait_for(&format!("the composer showing {want:?}"), |s| {
        composer_row(s) == want
    })
}

/// Sends `command` to the shell agent, approves it once and waits for `done` in the output.
fn run(tui: &Pty, command: &str, done: impl Fn(&str) -> bool) {
    tui.paste(command);
    tui.send("\r");
    tui.wait_text("Approval needed");
    tui.send("y");
    tui.wait_for(&format!("{command:?} to finish"), |s| {
        !s.contains("Approval needed") && done(s)
    });
}

#[test]
fn history_find_copy_mouse_and_a_notification_reach_the_terminal() {
    let env = Env::new();
    let tui = Pty::spawn_with(
        &env,
        &[],
        None,
        ROWS,
        COLS,
        &[("AX_CODE_NOTIFY", std::ffi::OsStr::new("osc777"))],
    );
    tui.wait_text("● connected");
    run(&tui, "echo alpha-one", |s| {
        s.contains("idle · last turn") && s.contains("exit 0")
    });
    run(&tui, "echo beta-two", |s| {
        s.matches("exit 0").count() >= 2 && s.contains("idle · last turn")
    });

    // ↑/↓ walk the prompts and give the draft back.
    tui.send("draft");
    wait_composer(&tui, "draft");
    tui.send(UP);
    wait_composer(&tui, "echo beta-two");
    tui.send(UP);
    wait_composer(&tui, "echo alpha-one");
    tui.send(DOWN);
    tui.send(DOWN);
    wait_composer(&tui, "draft");

    // Ctrl+R finds a prompt by a word of it; Enter takes it without sending.
    tui.send("\x12");
    tui.wait_text("History search");
    tui.send("alpha");
    wait_composer(&tui, "search: alpha → echo alpha-one");
    tui.send("\r");
    wait_composer(&tui, "echo alpha-one");
    tui.send("\x03");
    tui.wait_for("an empty composer", |s| {
        composer_row(s).starts_with("Type a shell")
    });

    // Ctrl+F: matches counted in the bar, Enter steps to the next.
    tui.send("\x06");
    tui.wait_text("type to find in the transcript");
    tui.send("beta-two");
    let found = tui.wait_for("a match count", |s| {
        composer_row(s).starts_with("find: beta-two  ") && composer_row(s).contains('/')
    });
    let status = composer_row(&found);
    let total: usize = status.rsplit('/').next().unwrap().parse().unwrap();
    assert!(total >= 2, "the prompt and its output at least: {status}");
    let first: usize = status
        .trim_start_matches("find: beta-two  ")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // The highlights are drawn by the terminal: every match on yellow, the current one on
    // bright magenta.
    let current = tui.text_on(vt100::Color::Idx(13));
    assert_eq!(current, ["beta-two"], "one current match");
    let others = tui.text_on(vt100::Color::Idx(3));
    assert!(
        !others.is_empty() && others.iter().all(|r| r.contains("beta-two")),
        "{others:?}"
    );
    tui.send("\r");
    let next = format!("{}/{total}", first % total + 1);
    tui.wait_for(&format!("the next match {next}"), |s| {
        composer_row(s).ends_with(&next)
    });
    tui.send("\x1b");
    tui.wait_for("the find bar closed", |s| {
        composer_row(s).starts_with("Type a shell")
    });

    // /copy copies the newest reply through OSC 52.
    let before = tui.clipboard().len();
    tui.send("/copy\r");
    eventually("an OSC 52 copy", || tui.clipboard().len() > before);
    let copied = String::from_utf8(unbase64(&tui.clipboard()[before])).unwrap();
    assert!(copied.starts_with("beta-two"), "{copied:?}");
    assert!(
        !copied.contains("alpha-one"),
        "only the newest reply: {copied:?}"
    );

    // F2 hands the mouse to the terminal, and back.
    assert!(tui.mouse_reporting());
    tui.send(F2);
    tui.wait_text("mouse off · F2");
    eventually("mouse reporting off", || !tui.mouse_reporting());
    tui.send(F2);
    tui.wait_for("the mouse back", |s| !s.contains("mouse off · F2"));
    eventually("mouse reporting on", || tui.mouse_reporting());

    // A turn that ends while the person is home rings with OSC 777 and marks the session.
    assert!(
        tui.oscs().iter().all(|o| !o.starts_with("777;")),
        "nothing rang while the person looked: {:?}",
        tui.oscs()
    );
    tui.paste("sleep 3; echo late-done");
    tui.send("\r");
    tui.wait_text("Approval needed");
    tui.send("y");
    tui.wait_text("Esc abort");
    tui.send("/sessions\r");
    tui.wait_text("┌ Sessions (1)");
    eventually("an OSC 777 notification", || {
        tui.oscs()
            .iter()
            .any(|o| o.starts_with("777;notify;ax-code;"))
    });
    let note = tui
        .oscs()
        .into_iter()
        .find(|o| o.starts_with("777;notify;"))
        .unwrap();
    assert!(note.contains("finished in"), "{note}");
    assert_eq!(tui.bells(), 0, "osc777 asked: no bell");
    let home = tui.wait_text("1 unread");
    assert!(
        home.lines().any(|l| l.contains("✓ unread")),
        "the row is marked:\n{home}"
    );
    // Opening it reads it.
    tui.send("\r");
    tui.wait_text("late-done");
    tui.send("/sessions\r");
    tui.wait_for("the mark gone", |s| {
        s.contains("┌ Sessions (1)") && !s.contains("✓ unread")
    });

    // /notify bell switches to the bell for the next one.
    tui.send("/notify bell\r");
    tui.wait_text("rings with the bell");
    tui.send("\r");
    tui.wait_text("late-done");
    tui.paste("sleep 3; echo gamma-three");
    tui.send("\r");
    tui.wait_text("Approval needed");
    tui.send("y");
    tui.wait_text("Esc abort");
    tui.send("/sessions\r");
    eventually("a bell", || tui.bells() == 1);
}
