//! Agent turns in the real TUI under a pseudo-terminal (the built-in `shell` agent): the
//! approval dialog shows a request of many lines, one longer than the screen is wide, all of it
//! by scrolling, and the answer runs it; Esc aborts a running turn; Ctrl+C never quits past an
//! open approval.

mod support;

use std::time::Duration;

use support::*;

const DOWN: &str = "\x1b[B";

#[test]
fn a_long_request_is_readable_in_full_before_approving() {
    let env = Env::new();
    let tui = Pty::spawn(&env, &[], None);
    tui.wait_text("● connected");

    // 40 lines (taller than the 36-row screen) and a last line of ~180 columns (wider than
    // the 120-column screen) that ends in the part a cut-off dialog used to hide.
    let mut cmd = String::from("echo first-line\n");
    for i in 0..40 {
        cmd.push_str(&format!("echo line-{i:02}\n"));
    }
    cmd.push_str(&format!("echo {}; touch approved-marker", "x".repeat(150)));
    // The rows as the dialog lays them out for this screen; every one of them must show up.
    let g = ax_tui::approval::geometry(&cmd, &[], COLS, ROWS);
    assert!(g.scrolls());
    let last_row = g.body_rows.last().unwrap().trim_end().to_owned();
    assert!(
        last_row.ends_with("; touch approved-marker"),
        "{last_row:?}"
    );
    tui.paste(&cmd);
    tui.send("\r");
    // The dialog, with the draft sent (the composer shows its placeholder again, the start of
    // which is left of the dialog).
    let first = tui.wait_for("the dialog and an empty composer", |s| {
        s.contains("Approval needed") && s.contains("│Type a sh")
    });
    assert!(first.contains("$ echo first-line"), "{first}");
    assert!(first.contains("more rows below"), "{first}");
    assert!(!first.contains(&last_row), "the end is below:\n{first}");

    let handle = tui.handle();
    let mut presses = 0;
    for row in &g.body_rows {
        let row = row.trim_end();
        while handle
            .poll_for(Duration::from_millis(400), |s| s.contains(row))
            .is_none()
        {
            tui.send(DOWN);
            presses += 1;
            assert!(
                presses <= g.body_rows.len() + 5,
                "{row:?} never came into view; the screen:\n{}",
                tui.screen()
            );
        }
    }
    let end = tui.wait_text(&last_row);
    assert!(end.contains("end of the request"), "{end}");
    assert!(!env.project.join("approved-marker").exists());

    // Ctrl+C with the approval open does not quit: it says what to do instead.
    tui.send("\x03");
    tui.wait_text("an approval is open");
    assert!(tui.screen().contains("Approval needed"));

    tui.send("y");
    tui.wait_for("the dialog closed", |s| !s.contains("Approval needed"));
    eventually("the approved command ran to its end", || {
        env.project.join("approved-marker").exists()
    });
    tui.wait_text("exit 0");
}

#[test]
fn esc_aborts_a_running_turn() {
    let env = Env::new();
    let tui = Pty::spawn(&env, &[], None);
    tui.wait_text("● connected");
    tui.paste("echo started; sleep 30; touch never-made");
    tui.send("\r");
    tui.wait_text("Approval needed");
    tui.send("y");
    tui.wait_for("the turn running", |s| {
        s.contains("started") && s.contains("Esc abort")
    });
    tui.send("\x1b");
    tui.wait_text("[aborted]");
    tui.wait_for("the session idle again", |s| s.contains("idle · last turn"));
    assert!(!env.project.join("never-made").exists());
}
