//! The agent's own offers in the Control UI, in headless Chromium against `ax-code serve` with
//! the mock ACP agent (tests/python/control_ui_agent_options.py does the checking): the `/`
//! list of the agent's commands, filtered, completed with Tab or Enter, following the agent's
//! updates, and a `/name args` prompt reaching the agent as its command; the config option
//! pickers of the pane header changing the agent's options end to end.
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
    let name = "the_control_ui_offers_the_agents_commands_and_options";
    println!("test {name} ...");
    python();
    require_browser();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_agent_options.py",
        &[AX.as_ref(), exe.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_agent_options.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
