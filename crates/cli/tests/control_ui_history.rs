//! Prompt history in the Control UI (docs/control-ui.md §11), in headless Chromium against
//! `ax-code serve` with the mock ACP agent (tests/python/control_ui_history.py does the checking):
//! ↑/↓ walk the session's stored prompts and give the draft back, Ctrl+R searches them.
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
    let name = "the_control_ui_walks_and_searches_the_prompt_history";
    println!("test {name} ...");
    python();
    require_browser();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_history.py",
        &[AX.as_ref(), exe.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_history.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
