//! The `screen` tool of the agent inside a session (docs/agents.md §8) with the real
//! `ax-code serve`, the mock ACP agent and the Control UI in headless Chromium
//! (tests/python/agent_screen_browser.py does the checking), and `ax-code session create
//! --agent`.
//!
//! This test binary is also the mock ACP agent the script configures: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (the agent's configured `env`) it serves ACP instead of running
//! the test. Hence its own `main` (`harness = false`).

mod support;

use std::time::Duration;

use support::*;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    println!("test the_in_session_screen_tool_follows_the_client_of_the_turn ...");
    python();
    require_browser();
    let mock = std::env::current_exe().unwrap();
    let status = run_script(
        "agent_screen_browser.py",
        &[AX.as_ref(), mock.as_os_str()],
        Duration::from_secs(240),
    );
    assert!(
        status.success(),
        "agent_screen_browser.py failed ({status}); its checks are printed above"
    );
    println!("test the_in_session_screen_tool_follows_the_client_of_the_turn ... ok");
}
