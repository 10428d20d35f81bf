//! What needs the person, in the Control UI (docs/control-ui.md §7, §8, §9), in headless
//! Chromium against `ax-code serve` with the mock ACP agent
//! (tests/python/control_ui_attention.py does the checking): the session list's attention
//! states and order, the tab title's count, desktop notifications (asked for on a click, never
//! on load) and the approvals inbox answering an approval with the session view's card.
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
    let name = "the_control_ui_shows_what_needs_the_person";
    println!("test {name} ...");
    python();
    require_browser();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_attention.py",
        &[AX.as_ref(), exe.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_attention.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
