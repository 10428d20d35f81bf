//! The composer's agent features in the real TUI under a pseudo-terminal, against a real
//! backend with the mock agent (docs/tui.md §3e–§3g): `/` lists the agent's commands beside
//! ax-code's and Tab completes one, which runs as a prompt; `/model ID` before the first
//! prompt starts the agent and sets it; the `/config` picker switches an option; `@` picks a
//! project file from the backend's file search and it goes with the prompt.
//!
//! This test binary is also the mock ACP agent its configuration names (started with
//! `AX_TEST_BE_MOCK_AGENT=1` through the agent's `env`), hence its own `main`.

mod support;

use support::*;

fn main() {
    run_pty_tests(&[
        (
            "slash_lists_the_agents_commands_and_tab_completes_one",
            agent_commands,
        ),
        (
            "model_is_set_before_the_first_prompt_and_config_switches_an_option",
            config_options,
        ),
        (
            "an_at_word_picks_a_project_file_that_goes_with_the_prompt",
            at_picker,
        ),
    ]);
}

fn agent_commands() {
    let t = AgentTui::start_in_session();
    // The agent says its commands once it runs (after `session/new`).
    t.tui.send("text hello\r");
    t.tui
        .wait_for("the first turn", |s| s.contains("idle · last turn"));
    t.tui.send("/rev");
    let s = t.tui.wait_text("[what to review]");
    let row = s.lines().find(|l| l.contains("/review")).unwrap();
    assert!(row.contains("agent"), "{s}");
    assert!(s.contains("/revoke"), "ax-code's own are listed too:\n{s}");
    // ↓ to the agent's (after /revoke), Tab completes it, the arguments follow.
    t.tui.send("\x1b[B");
    t.tui.send("\t");
    t.tui.wait_for("completed", |s| {
        s.contains("│/review ") && !s.contains("[what to review]")
    });
    t.tui.send("the diff\r");
    t.tui.wait_text("command review: the diff");
}

fn config_options() {
    let t = AgentTui::start_in_session();
    // Before any prompt the session has no options; by name the agent starts for it.
    t.tui.send("/model mock-small\r");
    t.tui.wait_text("Model is now Mock Small");
    t.tui.send("/config\r");
    let s = t.tui.wait_text("Agent options");
    assert!(s.contains("Model: Mock Small"), "{s}");
    assert!(s.contains("Fast replies: off"), "{s}");
    // Down to the switch (mode, model, reasoning effort, fast) and flip it.
    for _ in 0..3 {
        t.tui.send("\x1b[B");
    }
    t.tui.send("\r");
    t.tui.wait_text("Fast replies: on");
    t.tui.send("\x1b");
    t.tui
        .wait_for("the picker closed", |s| !s.contains("Agent options"));
    t.tui.send("config\r");
    let s = t.tui.wait_text("config: mode=");
    let row = s.lines().find(|l| l.contains("config: mode=")).unwrap();
    assert!(
        row.contains("model=mock-small") && row.contains("fast=true"),
        "{s}"
    );
}

fn at_picker() {
    let t = AgentTui::start_in_session();
    let dir = t.env.project.join("src");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes-picked.txt"), "picked text").unwrap();
    std::fs::write(dir.join("other.rs"), "fn main() {}").unwrap();
    t.tui.send("blocks @notpick");
    let s = t.tui.wait_text("@ src/notes-picked.txt");
    assert!(!s.contains("other.rs"), "{s}");
    t.tui.send("\t");
    t.tui.wait_for("the chip", |s| {
        s.contains("notes-picked.txt ×") && !s.contains("@ src/notes-picked.txt")
    });
    t.tui.send("\r");
    // The mock agent reports the blocks it got: the file, embedded or as a link.
    let s = t.tui.wait_text("blocks: ");
    let row = s.lines().find(|l| l.contains("blocks: ")).unwrap();
    assert!(row.contains("notes-picked.txt"), "{s}");
}
