//! The Control UI's layout in headless Chromium against `ax-code serve`
//! (tests/python/control_ui_layout.py does the checking): draggable splitters whose weights
//! persist, "balance panes", keyboard shortcuts and their help overlay, a layout per browser
//! tab, an 800x600 window where every control is on screen (screenshots under
//! test-artifacts/), the browser panel's address field and hidden frame, the toast's place,
//! one connection indicator, and WCAG AA contrast in light and dark mode.

mod support;

use std::time::Duration;

use support::*;

#[test]
fn the_control_ui_layout_resizes_balances_and_fits_narrow_windows() {
    python();
    require_browser();
    let artifacts = workspace_root().join("test-artifacts");
    let status = run_script(
        "control_ui_layout.py",
        &[AX.as_ref(), artifacts.as_os_str()],
        Duration::from_secs(180),
    );
    assert!(
        status.success(),
        "control_ui_layout.py failed ({status}); its checks are printed above"
    );
    for shot in [
        "control-ui-narrow-800x600.png",
        "control-ui-narrow-800x600-sidebar.png",
        "control-ui-narrow-800x600-terminal.png",
    ] {
        assert!(artifacts.join(shot).exists(), "{shot} was saved");
    }
}
