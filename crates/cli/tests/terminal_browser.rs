//! The Control UI's operator terminal in headless Chromium against `ax-code serve`
//! (tests/python/terminal_browser.py does the checking): a shell under a PTY that takes what
//! is typed and draws colours under the page's policy, a running command that survives a
//! page reload with its scrollback shown again, and the terminal's buttons on screen at
//! 800x600 (screenshot under target/test-artifacts/).

mod support;

use std::time::Duration;

use support::*;

#[test]
fn the_terminal_keeps_its_command_and_scrollback_across_a_reload() {
    python();
    require_browser();
    let artifacts = workspace_root().join("target").join("test-artifacts");
    let status = run_script(
        "terminal_browser.py",
        &[AX.as_ref(), artifacts.as_os_str()],
        Duration::from_secs(180),
    );
    assert!(
        status.success(),
        "terminal_browser.py failed ({status}); its checks are printed above"
    );
    assert!(
        artifacts.join("terminal-800x600.png").exists(),
        "the 800x600 screenshot was saved"
    );
}
