//! The prompt queue in the Control UI (docs/control-ui.md §6), in headless Chromium against
//! `ax-code serve` with the mock ACP agent (tests/python/control_ui_queue.py does the
//! checking): prompts typed while a turn runs are queued and shown in order, one edited and one
//! cancelled, the edited one sent when the turn ends; "send now" stops the turn and sends its
//! prompt; Stop pauses the queue, and Resume sends what waits.
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
    let name = "the_control_ui_queues_edits_cancels_and_steers";
    println!("test {name} ...");
    python();
    require_browser();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_queue.py",
        &[AX.as_ref(), exe.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_queue.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
