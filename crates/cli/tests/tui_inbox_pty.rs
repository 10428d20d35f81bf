//! The approvals inbox in the real TUI under a pseudo-terminal, against a real backend with
//! the mock agent (docs/tui.md §3h): two sessions each wait on an approval; `/approvals`
//! lists both, newest first; Enter on one opens its session with the approval dialog, and
//! once it is answered the inbox lists only the other.
//!
//! This test binary is also the mock ACP agent its configuration names (started with
//! `AX_TEST_BE_MOCK_AGENT=1` through the agent's `env`), hence its own `main`.

mod support;

use support::*;

fn main() {
    run_pty_tests(&[(
        "approvals_lists_both_sessions_and_enter_opens_the_dialog",
        inbox,
    )]);
}

/// A new session with the mock agent, titled `title`, whose turn waits on an approval the
/// person leaves for later.
fn waiting_session(tui: &Pty, title: &str) {
    tui.send("\x0e");
    tui.wait_text("New session: which agent?");
    tui.send("\r");
    tui.wait_for("the new session", |s| s.contains("(untitled) ses_"));
    tui.send(&format!("/rename {title}\r"));
    tui.wait_text(title);
    tui.paste(&format!("text {title} turn\npermission p1 full\ntext done"));
    tui.send("\r");
    tui.wait_text("Approval needed");
    tui.send("\x1b");
    tui.wait_for("the approval left for later", |s| {
        !s.contains("Approval needed")
    });
}

fn inbox() {
    let t = AgentTui::start();
    let tui = &t.tui;
    waiting_session(tui, "alpha-task");
    waiting_session(tui, "beta-task");

    tui.send("/approvals\r");
    let s = tui.wait_for("both approvals listed", |s| {
        s.contains("Approvals waiting")
            && s.contains("alpha-task · mock · The agent wants to")
            && s.contains("beta-task · mock · The agent wants to")
    });
    let beta = s.find("beta-task · mock").unwrap();
    let alpha = s.find("alpha-task · mock").unwrap();
    assert!(beta < alpha, "newest first:\n{s}");

    // Enter on alpha's row opens alpha, where the approval dialog asks.
    tui.send("\x1b[B");
    tui.send("\r");
    let s = tui.wait_for("alpha's approval dialog", |s| {
        s.contains("Approval needed") && !s.contains("Approvals waiting")
    });
    assert!(s.contains("alpha-task"), "{s}");
    tui.send("y");
    tui.wait_for("alpha's turn ended", |s| {
        !s.contains("Approval needed") && s.contains("idle · last turn")
    });

    tui.send("/approvals\r");
    tui.wait_for("only beta's approval left", |s| {
        s.contains("Approvals waiting")
            && s.contains("beta-task · mock")
            && !s.contains("alpha-task · mock")
    });
    tui.send("\x1b");
    tui.wait_for("the inbox closed", |s| !s.contains("Approvals waiting"));
}
