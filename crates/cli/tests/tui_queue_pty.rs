//! The prompt queue in the real TUI under a pseudo-terminal, against a real backend with the
//! mock agent (docs/tui.md §3d): prompts typed while a turn runs are queued and shown above
//! the composer; one is cancelled and the other is sent when the turn ends; "send now" stops
//! a running turn and sends the queued prompt; an abort pauses the queue and `/queue resume`
//! lets it flow.
//!
//! This test binary is also the mock ACP agent its configuration names (started with
//! `AX_TEST_BE_MOCK_AGENT=1` through the agent's `env`), hence its own `main`.

mod support;

use support::*;

fn main() {
    run_pty_tests(&[
        (
            "queued_prompts_wait_one_is_cancelled_and_the_other_sent_when_the_turn_ends",
            queue_and_cancel,
        ),
        (
            "send_now_steers_and_an_abort_pauses_until_resumed",
            steer_and_resume,
        ),
    ]);
}

/// The screen's rows that hold `text`.
fn rows_with<'a>(screen: &'a str, text: &str) -> Vec<&'a str> {
    screen.lines().filter(|l| l.contains(text)).collect()
}

fn queue_and_cancel() {
    let t = AgentTui::start_in_session();
    // A turn that waits for the person: it runs until the approval is answered.
    t.tui
        .paste("text first turn\npermission p1 full\ntext first done");
    t.tui.send("\r");
    t.tui.wait_text("Approval needed");
    t.tui.send("\x1b");
    t.tui.wait_for("the approval left for later", |s| {
        !s.contains("Approval needed") && s.contains("Enter queues it")
    });

    t.tui.send("text queued-alpha\r");
    // The queue's row comes with `queue.updated`, the status line with the answer to the
    // request: either may come first, so both are waited for.
    t.tui.wait_for("alpha queued and said so", |s| {
        s.contains("queued 1  text queued-alpha") && s.contains("queued as prompt 1")
    });
    t.tui.send("text queued-beta\r");
    t.tui.wait_text("queued 2  text queued-beta");

    t.tui.send("/queue cancel 1\r");
    let s = t.tui.wait_for("alpha cancelled", |s| {
        s.contains("queued 1  text queued-beta") && !s.contains("queued-alpha")
    });
    assert!(!s.contains("queued 2"), "{s}");

    // Enter on the empty prompt brings the approval back; allowing it ends the turn, and
    // the queue sends beta.
    t.tui.send("\r");
    t.tui.wait_text("Approval needed");
    t.tui.send("y");
    let s = t.tui.wait_for("beta sent after the turn", |s| {
        !s.contains("queued 1")
            && rows_with(s, "queued-beta").len() >= 2
            && s.contains("idle · last turn")
    });
    assert!(s.contains("first done"), "{s}");
    assert!(
        !s.contains("queued-alpha"),
        "the cancelled prompt never ran:\n{s}"
    );
}

fn steer_and_resume() {
    let t = AgentTui::start_in_session();
    t.tui.paste("text long turn\nwait-cancel\ntext never said");
    t.tui.send("\r");
    t.tui.wait_for("the turn running", |s| {
        s.contains("long turn") && s.contains("Esc abort")
    });
    t.tui.send("text steered-now\r");
    t.tui.wait_text("queued 1  text steered-now");
    t.tui.send("/queue send 1\r");
    let s = t.tui.wait_for("the turn stopped and the prompt sent", |s| {
        !s.contains("queued 1")
            && rows_with(s, "steered-now").len() >= 2
            && s.contains("idle · last turn")
    });
    // The stopped turn's reply ends before its last line (which the prompt row shows).
    let reply = &s[s.find("│agent").expect("the agent's message")..];
    let first_reply = &reply[..reply.find("steered-now").unwrap_or(reply.len())];
    assert!(!first_reply.contains("never said"), "{s}");

    // An abort with prompts queued pauses the queue; resume sends them.
    t.tui.paste("text second long\nwait-cancel");
    t.tui.send("\r");
    t.tui.wait_for("the second turn running", |s| {
        s.contains("second long") && s.contains("Esc abort")
    });
    t.tui.send("text after-resume\r");
    t.tui.wait_text("queued 1  text after-resume");
    t.tui.send("/abort\r");
    let s = t.tui.wait_text("queue paused:");
    assert!(s.contains("queued 1  text after-resume"), "{s}");
    t.tui.wait_text("idle · last turn");
    t.tui.send("/queue resume\r");
    t.tui.wait_for("the queue flowed", |s| {
        !s.contains("queue paused")
            && !s.contains("queued 1")
            && rows_with(s, "after-resume").len() >= 2
    });
}
