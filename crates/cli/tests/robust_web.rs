//! The Control UI's sidebar renames and deletes sessions, in headless Chromium against a real
//! `ax-code serve` (tests/python/robust_web.py does the checking).

mod support;

use std::time::Duration;

use support::*;

#[test]
fn the_sidebar_renames_and_deletes_sessions() {
    python();
    require_browser();
    let status = run_script("robust_web.py", &[AX.as_ref()], Duration::from_secs(120));
    assert!(
        status.success(),
        "robust_web.py failed ({status}); its checks are printed above"
    );
}
