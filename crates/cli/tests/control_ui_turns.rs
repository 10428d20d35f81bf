//! Agent turns in the Control UI, in headless Chromium against `ax-code serve` with the mock
//! ACP agent (tests/python/control_ui_turns.py does the checking): every part kind renders
//! (Markdown through `POST /markdown`, thoughts, tool-call cards with a diff, the plan, notices,
//! permissions); hostile Markdown and HTML in agent text and tool output stay text (no element
//! made, no script run); the approval card shows a command of several lines whole and answers
//! with the agent's own option; abort; the agent picker of a new session; modes; a reload in
//! the middle of a turn shows each chunk once. Screenshots of a full turn go to
//! target/test-artifacts/.
//!
//! This test binary is also the mock ACP agent the test's config names: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (set through the agent's configured `env`) it serves ACP instead
//! of running the test. Hence its own `main` (`harness = false` in Cargo.toml).

mod support;

use std::time::Duration;

use support::*;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let name = "the_control_ui_renders_agent_turns_safely_and_answers_approvals";
    println!("test {name} ...");
    python();
    require_browser();
    let artifacts = workspace_root().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_turns.py",
        &[AX.as_ref(), exe.as_os_str(), artifacts.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_turns.py failed ({status}); its checks are printed above"
    );
    for shot in ["control-ui-agent-turn.png", "control-ui-agent-approval.png"] {
        assert!(artifacts.join(shot).exists(), "{shot} was saved");
    }
    println!("test {name} ... ok");
}
