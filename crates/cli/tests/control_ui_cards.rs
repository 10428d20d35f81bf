//! How the Control UI words approvals, tool cards, usage and sessions, in headless Chromium
//! against `ax-code serve` (tests/python/control_ui_cards.py does the checking): permission
//! options in one order by kind with allow once primary; every field of a tool call's input,
//! bounded, control and bidi characters visible; Codex's option names and feedback option,
//! buttons that wrap at narrow widths; fenced output once, ✗ for a failed run, answered
//! approvals with their answer, edit approvals with their diff and hunk numbers; the usage
//! meter; agent names and readable titles in the session list; the deleting state of a row;
//! close_pane refused only by a draft in the pane it closes.

mod support;

use std::time::Duration;

use support::*;

#[test]
fn the_control_ui_words_approvals_cards_usage_and_sessions() {
    python();
    require_browser();
    let status = run_script(
        "control_ui_cards.py",
        &[AX.as_ref()],
        Duration::from_secs(180),
    );
    assert!(
        status.success(),
        "control_ui_cards.py failed ({status}); its checks are printed above"
    );
}
