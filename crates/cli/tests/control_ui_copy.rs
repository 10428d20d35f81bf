//! Copy buttons in the Control UI (docs/control-ui.md §10), in headless Chromium against
//! `ax-code serve` with the mock ACP agent (tests/python/control_ui_copy.py does the checking):
//! a code block and a message put their text on the clipboard, also where the clipboard API
//! refuses (the browser's copy command).
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
    let name = "the_control_ui_copies_messages_and_code_blocks";
    println!("test {name} ...");
    python();
    require_browser();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_copy.py",
        &[AX.as_ref(), exe.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_copy.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
