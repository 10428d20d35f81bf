//! No variable of ours reaches the agent or its terminals; its configured `env` does.
//! (Its own test binary: it runs itself again with variables set in its environment.)

mod support;

use support::*;

/// The parent's variables: three credentials that must stay behind, one allowed locale name.
const PARENT_ENV: [(&str, &str); 4] = [
    ("AX_CODE_SERVER_PASSWORD", "backend-credential"),
    ("ANTHROPIC_API_KEY", "parent-key"),
    ("GITHUB_TOKEN", "ghp_parent"),
    ("LC_TESTING_ALLOWED", "1"),
];

/// Marks the copy of this binary that runs the check with `PARENT_ENV` in its environment.
const CHILD: &str = "AX_TEST_ENV_CHILD";

const NAME: &str = "no_credential_of_the_parent_reaches_the_agent_or_its_terminals";

/// Changing this process's environment is unsafe once threads run, so the test runs this
/// binary again with the parent's variables set and takes the child's verdict.
#[test]
fn no_credential_of_the_parent_reaches_the_agent_or_its_terminals() {
    if std::env::var_os(CHILD).is_some() {
        for (name, value) in PARENT_ENV {
            assert_eq!(std::env::var(name).as_deref(), Ok(value), "{name} not set");
        }
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(check());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([NAME, "--exact", "--nocapture"])
        .env(CHILD, "1")
        .envs(PARENT_ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "child run failed:\n{stdout}\n{stderr}"
    );
}

async fn check() {
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
