//! End to end: the `screen` tool's layout read-back, pane IDs, revisions, targeting,
//! apply_layout and annotations, with two Control UI tabs in headless Chromium and
//! `ax-code mcp screen` driven by the official MCP Python SDK
//! (tests/python/screen_layout_browser.py does the checking).

mod support;

use std::time::Duration;

use support::*;

#[test]
fn layout_targeting_presets_and_annotations_in_two_real_tabs() {
    python();
    require_browser();
    let artifacts = workspace_root().join("test-artifacts");
    let status = run_script(
        "screen_layout_browser.py",
        &[AX.as_ref(), artifacts.as_os_str()],
        Duration::from_secs(240),
    );
    assert!(
        status.success(),
        "screen_layout_browser.py failed ({status}); its checks are printed above"
    );
    assert!(artifacts.join("screen-layout-grid.png").exists());
}
