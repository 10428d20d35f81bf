//! End to end: `ax-code serve` + the Control UI in headless Chromium + `ax-code mcp screen`
//! driven by the official MCP Python SDK (tests/python/screen_browser.py does the checking).

mod support;

use std::time::Duration;

use support::*;

#[test]
fn the_screen_tool_arranges_the_control_ui_in_a_real_browser() {
    python();
    require_browser();
    let artifacts = workspace_root().join("test-artifacts");
    let status = run_script(
        "screen_browser.py",
        &[AX.as_ref(), artifacts.as_os_str()],
        Duration::from_secs(150),
    );
    assert!(
        status.success(),
        "screen_browser.py failed ({status}); its checks are printed above"
    );
    assert!(artifacts.join("screen-split-panels.png").exists());
}
