//! The Control UI served by `ax-code hub`, end to end in headless Chromium (docs/hub.md §5):
//! a real nats-server started here, two `ax-code serve --join` and one `ax-code hub` started by
//! tests/python/control_ui_hub.py, which does the checking (sign-in with the hub's one-time
//! code, both machines in the sidebar, a prompt and its approval on machine 2 from the hub's
//! page, the output streaming; the operator terminal on machine 2 from the hub's page, through
//! the hub's gateway, kept across a reload, machine 1's picked and machine 2's back, ended by
//! the hub when machine 2 dies; machine 2 SIGKILLed mid-turn and started again, the turn shown
//! ended without a reload; machine 1's shared `ui.command`s applied by the page under its
//! rules, from its Control UI connection to machine 1's gateway on the hub, and acknowledged
//! there: the waiting agent gets the page's outcome; a new session on the machine picked with one of that machine's agents, renamed and
//! deleted through the hub; machine 2 stopped and shown offline and read-only).
//!
//! This test binary is also the mock ACP agent machine 2's config names: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (set through the agent's configured `env`) it serves ACP instead
//! of running the test. Hence its own `main` (`harness = false` in Cargo.toml).

mod support;

use std::time::Duration;

use ax_hub::testing::NatsServer;
use support::*;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let name = "the_hub_control_ui_signs_in_shows_both_machines_and_drives_a_session_on_the_second";
    println!("test {name} ...");
    python();
    require_browser();
    let nats = NatsServer::start();
    let url = nats.url();
    let exe = std::env::current_exe().unwrap();
    let status = run_script(
        "control_ui_hub.py",
        &[AX.as_ref(), url.as_ref(), exe.as_os_str()],
        Duration::from_secs(240),
    );
    assert!(
        status.success(),
        "control_ui_hub.py failed ({status}); its checks are printed above"
    );
    println!("test {name} ... ok");
}
