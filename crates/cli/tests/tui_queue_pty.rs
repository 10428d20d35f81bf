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
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let tests: [(&str, fn()); 2] = [
        (
            "queued_prompts_wait_one_is_cancelled_and_the_other_sent_when_the_turn_ends",
            queue_and_cancel,
        ),
        (
            "send_now_steers_and_an_abort_pauses_until_resumed",
            steer_and_resume,
        ),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        println!("test {name} ...");
        test();
        println!("test {name} ... ok");
    }
}

struct AgentTui {
    _env: Env,
    _config: tempfile::TempDir,
    tui: Pty,
}

/// A TUI on a fresh project whose default agent is the mock, in a new session with it.
fn start() -> AgentTui {
    let env = Env::new();
    let config = tempfile::Builder::new()
        .prefix("axcfg")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::create_dir_all(config.path().join("ax-code")).unwrap();
    let exe = std::env::current_exe().unwrap();
    std::fs::write(
        config.path().join("ax-code/config.toml"),
        format!(
            "default_agent = \"mock\"\n\n[agents.mock]\ncommand = {:?}\n\
             env = {{ AX_TEST_BE_MOCK_AGENT = \"1\" }}\n",
            exe.to_str().unwrap()
        ),
    )
    .unwrap();
    let tui = Pty::spawn_with(
        &env,
        &[],
        None,
        ROWS,
        COLS,
        &[("XDG_CONFIG_HOME", config.path().as_os_str())],
    );
    tui.wait_text("● connected");
    tui.send("\x0e");
    tui.wait_text("New session: which agent?");
    tui.send("\r");
    tui.wait_for("the new session", |s| s.contains("(untitled) ses_"));
    AgentTui {
        _env: env,
        _config: config,
        tui,
    }
}

/// Types `text` as one bracketed paste (newlines kept), as a terminal does for a paste.
fn paste(tui: &Pty, text: &str) {
    tui.send(&format!("\x1b[200~{text}\x1b[201~"));
}

/// The screen's rows that hold `text`.
fn rows_with<'a>(screen: &'a str, text: &str) -> Vec<&'a str> {
    screen.lines().filter(|l| l.contains(text)).collect()
}

fn queue_and_cancel() {
    let t = start();
    // A turn that waits for the person: it runs until the approval is answered.
    paste(
        &t.tui,
        "text first turn\npermission p1 full\ntext first done",
    );
    t.tui.send("\r");
    t.tui.wait_text("Approval needed");
    t.tui.send("\x1b");
    t.tui.wait_for("the approval left for later", |s| {
        !s.contains("Approval needed") && s.contains("Enter queues it")
    });

    t.tui.send("text queued-alpha\r");
    let s = t.tui.wait_text("queued 1  text queued-alpha");
    assert!(s.contains("queued as prompt 1"), "{s}");
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
    let t = start();
    paste(&t.tui, "text long turn\nwait-cancel\ntext never said");
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
    paste(&t.tui, "text second long\nwait-cancel");
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
