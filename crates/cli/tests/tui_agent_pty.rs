//! An ACP agent's turns in the real TUI under a pseudo-terminal, with the mock agent (scripted
//! by its prompt, see `crates/mock-agent`): Ctrl+N asks which agent (the default
//! preselected); a turn with every part kind renders; a tool call opens to its diff by a click;
//! Esc aborts a running turn; `/mode` switches the agent's mode; `/agent` shows it.
//!
//! A text capture of the screen showing the full turn is saved as
//! `target/test-artifacts/tui-agent-turn.txt` (plain) and `.ansi` (with its colours: `cat` it
//! in a terminal).
//!
//! This test binary is also the mock ACP agent its configuration names: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (through the agent's configured `env`) it serves ACP instead of
//! running the tests. Hence its own `main` (`harness = false` in Cargo.toml).

mod support;

use std::path::{Path, PathBuf};

use support::*;

fn main() {
    run_pty_tests(&[
        (
            "a_full_agent_turn_renders_and_a_card_opens_to_its_diff",
            full_turn,
        ),
        ("esc_aborts_a_running_agent_turn", esc_aborts),
        ("mode_switches_the_agents_mode", mode_switches),
        (
            "a_codex_exec_approval_fits_and_its_feedback_option_opens_the_composer",
            codex_exec,
        ),
    ]);
}

/// Ctrl+N, the picker with the default agent preselected, Enter: a new session with it.
fn new_mock_session(t: &AgentTui) {
    t.tui.send("\x0e");
    let s = t.tui.wait_text("New session: which agent?");
    let row = s
        .lines()
        .find(|l| l.contains("mock") && l.contains("(default)"))
        .unwrap_or_else(|| panic!("the default agent is listed:\n{s}"));
    assert!(row.contains("acp"), "{row}");
    assert!(
        s.contains("shell"),
        "the built-in agent is listed too:\n{s}"
    );
    t.tui.send("\r");
    t.tui
        .wait_for("the new session", |s| s.contains("(untitled) ses_"));
}

fn artifacts_dir() -> PathBuf {
    let dir = workspace_root().join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The (column, row) of the first cell of `text` on the screen.
fn cell_of(screen: &str, text: &str) -> (u16, u16) {
    for (y, line) in screen.lines().enumerate() {
        if let Some(x) = line.find(text) {
            return (line[..x].chars().count() as u16, y as u16);
        }
    }
    panic!("{text:?} not on the screen:\n{screen}");
}

fn full_turn() {
    let t = AgentTui::start();
    new_mock_session(&t);
    let prompt = "thought Considering where the last line goes\n\
                  plan Read the parser|Fix the last line|Run the tests\n\
                  text The **parser** drops the *last* line; see `lib.rs`.\n\
                  permission p1 claude\n\
                  diff src/lib.rs old_line new_line\n\
                  term 1000 printf 'term-ok\\n'\n\
                  usage\n\
                  text Done: **fixed**.";
    t.tui.paste(prompt);
    t.tui.send("\r");
    // The permission: the dialog shows the agent's whole request; Claude sends "always"
    // first, yet allow once is highlighted and Enter allows once.
    let s = t.tui.wait_text("[n] Reject");
    assert!(s.contains("run step p1"), "{s}");
    let (once, always) = (
        s.find("[y] Allow").unwrap(),
        s.find("[a] Always Allow").unwrap(),
    );
    assert!(once < always, "allow once comes first:\n{s}");
    t.tui.send("\r");
    let s = t.tui.wait_for("the whole turn", |s| {
        s.contains("Done: fixed.") && s.contains("idle")
    });
    for want in [
        "✻ Thought (1 line) ▸",
        "Plan",
        "[~] Read the parser",
        "[ ] Run the tests",
        "The parser drops the last line; see lib.rs.",
        "✓ permission: run step p1 ↵ with a second line — allowed once",
        "allowed once (“Allow”)",
        "✓ [run] run step p1",
        "permission p1: allow",
        "✓ [edit] Edit src/lib.rs ▸",
        "✓ [run] printf 'term-ok\\n'",
        "term: exit=0",
        "ctx 100/1k 10%",
        "── turn took",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    let reply = &s[s.find("│agent").expect("the agent's message")..];
    assert!(!reply.contains("old_line"), "cards start collapsed:\n{s}");
    assert!(
        !s.contains("always allowed") && !s.contains("│ usage:"),
        "{s}"
    );
    let dir = artifacts_dir();
    std::fs::write(dir.join("tui-agent-turn.txt"), &s).unwrap();
    std::fs::write(dir.join("tui-agent-turn.ansi"), t.tui.screen_ansi()).unwrap();

    // A click on the edit card opens it to its coloured diff; another closes it.
    let (x, y) = cell_of(&s, "[edit] Edit src/lib.rs");
    t.tui.click(x, y);
    let s = t.tui.wait_text("+new_line");
    assert!(
        s.contains("-old_line") && s.contains("--- src/lib.rs"),
        "{s}"
    );
    assert!(s.contains("@ src/lib.rs:1"), "{s}");
    std::fs::write(dir.join("tui-agent-turn-diff.txt"), &s).unwrap();
    std::fs::write(dir.join("tui-agent-turn-diff.ansi"), t.tui.screen_ansi()).unwrap();
    let (x, y) = cell_of(&s, "[edit] Edit src/lib.rs");
    t.tui.click(x, y);
    t.tui
        .wait_for("the card closed", |s| !s.contains("+new_line"));

    // A click focuses the part; Esc (the turn is over) clears the focus.
    t.tui.send("\x1b");
    t.tui.wait_for("unfocused", |s| !s.contains("▶"));
    // By keyboard: Shift+Tab focuses the newest part (the terminal call), again the edit,
    // Enter opens it.
    t.tui.send("\x1b[Z");
    t.tui.wait_text("▶✓ [run] printf");
    t.tui.send("\x1b[Z");
    t.tui.wait_text("▶✓ [edit] Edit src/lib.rs");
    t.tui.send("\r");
    t.tui.wait_text("+new_line");
    t.tui.send("\r");
    t.tui.wait_for("closed again", |s| !s.contains("+new_line"));

    // The same turn after a reload of the TUI reads the same (stored = shown).
    t.tui.send("\x1b");
    t.tui.wait_for("unfocused", |s| !s.contains("▶"));
    let before = t.tui.screen();
    let transcript = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with('│') && !l.contains("Type a prompt"))
            .map(str::to_owned)
            .collect()
    };
    t.tui.send("\x1b");
    t.tui.wait_text("Sessions (1)");
    t.tui.send("\r");
    // The turn end line (duration, time) is kept while this TUI runs.
    let after = t.tui.wait_for("the session again", |s| {
        s.contains("Done: fixed.") && s.contains("── turn took")
    });
    assert_eq!(transcript(&after), transcript(&before));
    drop(t);
}

fn esc_aborts() {
    let t = AgentTui::start();
    new_mock_session(&t);
    t.tui
        .paste("text started the long part\nwait-cancel\ntext never said");
    t.tui.send("\r");
    t.tui.wait_for("the turn running", |s| {
        s.contains("started the long part") && s.contains("Esc abort")
    });
    t.tui.send("\x1b");
    let s = t.tui.wait_for("the turn ended", |s| {
        s.contains("idle · last turn") && s.contains("── turn took")
    });
    let reply = &s[s.find("│agent").expect("the agent's message")..];
    assert!(!reply.contains("never said"), "{s}");
    let _ = &t.env;
}

/// Esc, then waits until `marker` is gone (a key right after a lone Esc would read as Alt+key).
fn close_modal(tui: &Pty, marker: &str) {
    tui.send("\x1b");
    tui.wait_for("the modal closed", |s| !s.contains(marker));
}

fn mode_switches() {
    let t = AgentTui::start();
    new_mock_session(&t);
    t.tui.send("mode\r");
    t.tui.wait_for("the first turn", |s| {
        s.contains("mode: default") && s.contains("idle")
    });
    t.tui.send("/agent\r");
    let s = t.tui.wait_text("agent: mock");
    assert!(s.contains("● default — Default"), "{s}");
    close_modal(&t.tui, "agent: mock");
    t.tui.send("/mode\r");
    let s = t.tui.wait_text("default — Default (current)");
    assert!(s.contains("acceptEdits — Accept Edits"), "{s}");
    t.tui.send("\x1b[B");
    t.tui.send("\r");
    t.tui
        .wait_for("the mode modal closed", |s| !s.contains("(current)"));
    // The agent itself now reports the new mode.
    t.tui.send("/agent\r");
    t.tui.wait_text("● acceptEdits — Accept Edits");
    close_modal(&t.tui, "agent: mock");
    t.tui.send("mode\r");
    t.tui.wait_text("mode: acceptEdits");
    let _: &Path = &t.env.project;
}

/// Codex's exec approval (the mock sends Codex's shape and options): at 120 columns every
/// button shows with the agent's own names, the whole input (the command array, cwd) is
/// there, and "No, and tell Codex what to do differently" sends that option and leaves the
/// composer asking for the feedback.
fn codex_exec() {
    let t = AgentTui::start();
    new_mock_session(&t);
    t.tui.paste("exec e1 python3 -m pytest -q");
    t.tui.send("\r");
    // The last row of the dialog: the whole dialog is drawn.
    let s = t
        .tui
        .wait_text("[n] No, and tell Codex what to do differently");
    for want in [
        "$ bash -lc 'python3 -m pytest -q'",
        "cwd: ",
        "[y] Yes",
        "[a] Yes, for this session",
        "[n] No, and tell Codex what to do differently",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    assert!(!s.contains("approved-for-session"), "no option ids:\n{s}");
    t.tui.send("n");
    let s = t.tui.wait_for("the turn ended", |s| {
        s.contains("idle") && !s.contains("Approval needed")
    });
    assert!(s.contains("Tell mock what to do differently"), "{s}");
    t.tui.send("use -x");
    t.tui.wait_text("use -x");
}
