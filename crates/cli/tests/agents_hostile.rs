//! A hostile ACP agent against the real `ax-code` binary (docs/SECURITY.md, "The agent hosted
//! in a session"): what it says about itself and what it sends must not reach the person's
//! terminal as escapes, neither through `ax-code agents check` nor through the `serve` log.
//!
//! This test binary is also the mock ACP agent the configs name: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (the agent's configured `env`) it serves ACP instead of running
//! the tests. Hence its own `main` (`harness = false`).

mod support;

use std::{process::Stdio, time::Duration};

use support::*;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let tests: [(&str, fn()); 2] = [
        (
            "agents_check_escapes_everything_the_agent_says",
            agents_check_escapes_everything_the_agent_says,
        ),
        (
            "the_serve_log_escapes_what_an_agent_sends",
            the_serve_log_escapes_what_an_agent_sends,
        ),
    ];
    for (name, test) in tests {
        println!("test {name} ...");
        test();
        println!("test {name} ... ok");
    }
}

/// Writes a config naming this binary as the agents `hostile` (well-behaved but for its
/// strings) and `hostile-v2` (also fails the handshake, so its error output is printed).
fn configure(env: &Env) -> std::path::PathBuf {
    let config_home = env.home.join(".config");
    std::fs::create_dir_all(config_home.join("ax-code")).unwrap();
    let exe = std::env::current_exe().unwrap();
    std::fs::write(
        config_home.join("ax-code/config.toml"),
        format!(
            "[agents.hostile]\ncommand = {exe:?}\n\
             env = {{ AX_TEST_BE_MOCK_AGENT = \"1\", AX_MOCK_HOSTILE = \"1\" }}\n\
             [agents.hostile-v2]\ncommand = {exe:?}\n\
             env = {{ AX_TEST_BE_MOCK_AGENT = \"1\", AX_MOCK_HOSTILE = \"1\", \
             AX_MOCK_PROTOCOL_VERSION = \"2\" }}\n"
        ),
    )
    .unwrap();
    config_home
}

/// Every character of `text` that a terminal would act on (line breaks aside).
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| c != '\n' && ax_core::text::is_unsafe_char(c))
        .collect()
}

fn agents_check_escapes_everything_the_agent_says() {
    let env = Env::new();
    let config_home = configure(&env);
    for (agent, ok) in [("hostile", true), ("hostile-v2", false)] {
        let out = output_bounded(
            env.command(&["agents", "check", agent])
                .env("XDG_CONFIG_HOME", &config_home)
                .env("PATH", "/usr/bin:/bin"),
            WAIT,
        );
        assert_eq!(out.status.success(), ok, "{agent}: {out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        for (stream, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            assert_eq!(
                raw_controls(text),
                Vec::<char>::new(),
                "{agent}: raw control or bidi characters on {stream}:\n{text:?}"
            );
        }
        if ok {
            // Shown, escaped: name, title, version and the authentication method.
            for what in ["name:", "version:", "  - Key"] {
                let line = stdout
                    .lines()
                    .find(|l| l.starts_with(what))
                    .unwrap_or_else(|| panic!("{what} in {stdout}"));
                assert!(
                    line.contains("\\x1b]52;c;cHduZWQ=\\x07") && line.contains("\\u{202e}"),
                    "{line}"
                );
            }
        } else {
            assert!(
                stderr.contains("mock-agent: starting \\x1b]52;c;"),
                "the error output is shown, escaped: {stderr}"
            );
        }
    }
}

fn the_serve_log_escapes_what_an_agent_sends() {
    let env = Env::new();
    let config_home = configure(&env);
    let password = format!("pw-{}", uuid());
    let log_path = env.tmp.join("serve.log");
    let mut child = env
        .command(&["serve", "--port", "0"])
        .env("XDG_CONFIG_HOME", &config_home)
        .env("AX_CODE_SERVER_PASSWORD", &password)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let lines = line_channel(child.stdout.take().unwrap());
    let url = lines
        .recv_timeout(WAIT)
        .expect("serve prints its address")
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("a URL")
        .trim_end_matches('/')
        .to_owned();
    runtime().block_on(async {
        let client = ax_client::Client::new(url.as_str(), password.clone()).unwrap();
        let id = client
            .create_session_with(Some("t"), Some("hostile"))
            .await
            .unwrap()
            .id;
        client
            .prompt_text(&id, "hostile-log\nsleep 300\ntext done")
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        while client.get_session(&id).await.unwrap().status != ax_protocol::SessionStatus::Idle {
            assert!(std::time::Instant::now() < deadline, "the turn ends");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    signal(child.id(), "TERM");
    wait_child(&mut child);
    let log = String::from_utf8_lossy(&std::fs::read(&log_path).unwrap()).into_owned();
    // Nothing a terminal would act on reached the log ...
    assert_eq!(
        raw_controls(&log),
        Vec::<char>::new(),
        "raw control or bidi characters in the serve log:\n{log:?}"
    );
    // ... though the agent's strings did, escaped.
    assert!(
        log.contains("kind\\x1b]52;c;cHduZWQ=\\x07"),
        "the unknown update kind is logged:\n{log}"
    );
}
