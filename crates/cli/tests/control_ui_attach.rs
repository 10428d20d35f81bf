//! Files and images in the Control UI's composer, in headless Chromium against `ax-code serve`
//! with the mock ACP agent (tests/python/control_ui_attach.py does the checking): the `@`
//! picker over the project's files (`.gitignore` respected) making a chip that the prompt
//! sends and the transcript shows, and a pasted image sent as an image block and shown as a
//! thumbnail loaded from the backend.
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
    let name = "the_control_ui_attaches_files_and_images";
    println!("test {name} ...");
    python();
    require_browser();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_attach.py",
        &[AX.as_ref(), exe.as_os_str()],
        Duration::from_secs(300),
    );
    assert!(
        status.success(),
        "control_ui_attach.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
