//! No variable of ours reaches the agent or its terminals; its configured `env` does.
//! (Its own test binary: it sets variables in this process's environment.)

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credential_of_the_parent_reaches_the_agent_or_its_terminals() {
    // SAFETY: set before any other thread of this test binary reads the environment.
    unsafe {
        std::env::set_var("AX_CODE_SERVER_PASSWORD", "backend-credential");
        std::env::set_var("ANTHROPIC_API_KEY", "parent-key");
        std::env::set_var("GITHUB_TOKEN", "ghp_parent");
        std::env::set_var("LC_TESTING_ALLOWED", "1");
    }
    let mut fx = start(&[("MOCK_CONFIGURED_KEY", "from-config")]).await;
    let turn = run(&mut fx, "env").await;
    let names: Vec<&str> = turn
        .text()
        .strip_prefix("env: ")
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect::<Vec<_>>()
        .leak()
        .iter()
        .map(String::as_str)
        .collect();
    for banned in [
        "AX_CODE_SERVER_PASSWORD",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
    ] {
        assert!(!names.contains(&banned), "{banned} leaked: {names:?}");
    }
    assert!(names.contains(&"MOCK_CONFIGURED_KEY"), "{names:?}");
    assert!(names.contains(&"LC_TESTING_ALLOWED"), "{names:?}");
    assert!(names.contains(&"PATH"), "{names:?}");

    let turn = run(&mut fx, "term 100000 env").await;
    let out = turn.text();
    for banned in [
        "AX_CODE_SERVER_PASSWORD",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "MOCK_CONFIGURED_KEY",
    ] {
        assert!(!out.contains(banned), "{banned} reached a terminal: {out}");
    }
    assert!(out.contains("PATH="), "{out}");
    fx.agent.stop().await;
}
