//! `ax-code agents` and `ax-code agents check NAME`, as a user runs them, with agents
//! configured through a temporary `XDG_CONFIG_HOME`.
//!
//! This test binary is also the mock ACP agent those configs name: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (set through the agent's configured `env`, which is how a
//! user passes keys to an agent) it serves ACP instead of running the tests. Hence its own
//! `main` (`harness = false` in Cargo.toml).

mod support;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

const AX: &str = env!("CARGO_BIN_EXE_ax-code");

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let tests: [(&str, fn()); 6] = [
        ("agents_lists_presets_and_configured_agents", lists),
        ("agents_check_prints_what_the_agent_says", check),
        ("agents_check_explains_failures", check_failures),
        ("a_bad_config_names_the_file_and_line", bad_config),
        (
            "a_crashed_backends_detached_agent_command_is_killed_at_the_next_start",
            crash_cleanup,
        ),
        (
            "a_crashed_backends_agent_terminal_command_is_killed_at_the_next_start",
            crash_cleanup_of_terminals,
        ),
    ];
    for (name, test) in tests {
        println!("test {name} ...");
        test();
        println!("test {name} ... ok");
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    config_home: PathBuf,
    project: PathBuf,
}

fn setup(config: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let config_home = dir.path().join("config");
    std::fs::create_dir_all(config_home.join("ax-code")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let text = config.replace("@EXE@", exe.to_str().unwrap());
    std::fs::write(config_home.join("ax-code/config.toml"), text).unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    Setup {
        _dir: dir,
        config_home,
        project,
    }
}

fn ax(setup: &Setup, args: &[&str]) -> Output {
    Command::new(AX)
        .args(args)
        .current_dir(&setup.project)
        .env("XDG_CONFIG_HOME", &setup.config_home)
        .env("HOME", setup.project.parent().unwrap())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const CONFIG: &str = r#"
default_agent = "mock"

[agents.mock]
command = "@EXE@"
env = { AX_TEST_BE_MOCK_AGENT = "1" }

[agents.mockauth]
command = "@EXE@"
env = { AX_TEST_BE_MOCK_AGENT = "1", AX_MOCK_REQUIRE_AUTH = "1", AX_MOCK_LOAD = "1" }

[agents.oldproto]
command = "@EXE@"
env = { AX_TEST_BE_MOCK_AGENT = "1", AX_MOCK_PROTOCOL_VERSION = "2" }

[agents.ghost]
command = "no-such-agent-command-xyz"
args = ["--acp"]
"#;

fn line_of<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| {
            l.get(2..)
                .is_some_and(|l| l.starts_with(&format!("{name} ")))
        })
        .unwrap_or_else(|| panic!("no line for {name} in:\n{out}"))
}

fn lists() {
    let s = setup(CONFIG);
    let out = ax(&s, &["agents"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let exe = std::env::current_exe().unwrap();
    let mock = line_of(&stdout, "mock");
    assert!(mock.starts_with("* mock"), "the default is marked: {mock}");
    assert!(
        mock.contains(&format!("found: {}", exe.display())),
        "{mock}"
    );
    let ghost = line_of(&stdout, "ghost");
    assert!(ghost.contains("no-such-agent-command-xyz --acp"), "{ghost}");
    assert!(ghost.ends_with("not found"), "{ghost}");
    let claude = line_of(&stdout, "claude");
    assert!(
        claude.contains("not found (install: npm install -g @zed-industries/claude-agent-acp)"),
        "{claude}"
    );
    assert!(line_of(&stdout, "gemini").contains("gemini --acp"));
    assert!(line_of(&stdout, "shell").contains("ready"));
    let config_path = s.config_home.join("ax-code/config.toml");
    assert!(
        stdout.contains(&format!("config: {}", config_path.display())),
        "{stdout}"
    );
}

fn check() {
    let s = setup(CONFIG);
    let out = ax(&s, &["agents", "check", "mock"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{}", stdout, text(&out.stderr));
    assert!(
        stdout.contains("name:         ax-mock-agent (ax-code mock agent)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("version:      {}", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("protocol:     ACP 1"), "{stdout}");
    assert!(stdout.contains("load session: no"), "{stdout}");
    assert!(stdout.contains("capabilities: {"), "{stdout}");
    assert!(stdout.contains("auth methods: none"), "{stdout}");

    let out = ax(&s, &["agents", "check", "mockauth"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("load session: yes"), "{stdout}");
    assert!(
        stdout.contains("  - Mock API key (mock-key): set MOCK_API_KEY in the agent's env"),
        "{stdout}"
    );
    // The agent was stopped: nothing of it outlives the command.
    assert_no_agent_left(&s.project);
}

/// No process runs with the project as its working directory any more.
fn assert_no_agent_left(project: &Path) {
    let project = project.canonicalize().unwrap();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cwd) = std::fs::read_link(entry.path().join("cwd"))
            && cwd == project
        {
            panic!("process {:?} still runs in the project", entry.file_name());
        }
    }
}

fn check_failures() {
    let s = setup(CONFIG);
    let out = ax(&s, &["agents", "check", "ghost"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("\"no-such-agent-command-xyz\" not found"),
        "{err}"
    );

    let out = ax(&s, &["agents", "check", "claude"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("npm install -g @zed-industries/claude-agent-acp"),
        "{err}"
    );

    let out = ax(&s, &["agents", "check", "oldproto"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("does not speak ACP protocol version 1"),
        "{err}"
    );

    let out = ax(&s, &["agents", "check", "nobody"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("no agent named \"nobody\""), "{err}");
    assert!(err.contains("mock"), "{err}");

    let out = ax(&s, &["agents", "check", "shell"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("built in"));
    assert_no_agent_left(&s.project);
}

fn bad_config() {
    let s = setup("default_agent = \"mock\"\n[agents.mock]\ncommand = \"x\"\ncolour = \"red\"\n");
    let out = ax(&s, &["agents"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let path = s.config_home.join("ax-code/config.toml");
    assert!(err.contains(&format!("{}:4:", path.display())), "{err}");
    assert!(err.contains("colour"), "{err}");
}

/// docs/agents.md §2: a backend killed with SIGKILL cannot stop what its agents started; a
/// command that left the agent's process group (`setsid`) survives it, and the next backend
/// on the same data kills it at start.
fn crash_cleanup() {
    left_running_after_a_crash("detach 600", "detached ");
}

/// docs/agents.md §2: a command an agent runs through `terminal/create` is the backend's child
/// in a process group of its own, so it survives a backend killed with SIGKILL; it carries
/// its agent's tag, so the next backend on the same data kills it at start.
fn crash_cleanup_of_terminals() {
    left_running_after_a_crash("term 100000 echo pid=$$; exec sleep 600", "pid=");
}

/// Prompts a mock agent with `prompt`, reads the pid printed after `marker` from the
/// transcript, kills the backend with SIGKILL, checks the process outlived it, and that the
/// next backend on the same data kills it.
fn left_running_after_a_crash(prompt: &str, marker: &str) {
    use support::{Env, Serve, WAIT, process_gone};
    const PASSWORD: &str = "agents-cli-crash-cleanup-credential-0123456789";
    let env = Env::new();
    let config = env.home.join(".config/ax-code");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[agents.mock]\ncommand = {:?}\nenv = {{ AX_TEST_BE_MOCK_AGENT = \"1\" }}\n",
            std::env::current_exe().unwrap()
        ),
    )
    .unwrap();
    let mut serve = Serve::start(&env, 0, Some(PASSWORD));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = ax_client::Client::new(&serve.url, PASSWORD).unwrap();
    let pid: u32 = rt.block_on(async {
        let id = client
            .create_session_with(Some("t"), Some("mock"))
            .await
            .unwrap()
            .id;
        client.prompt_text(&id, prompt).await.unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            assert!(std::time::Instant::now() < deadline, "the turn ends");
            let messages = client.messages(&id).await.unwrap();
            let text = serde_json::to_string(&messages).unwrap();
            // The first place the marker is followed by a number (the prompt may hold it too).
            if let Some(pid) = text.split(marker).skip(1).find_map(|rest| {
                rest.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|p| p.parse().ok())
            }) {
                break pid;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    serve.kill();
    assert!(
        !process_gone(pid),
        "the agent's command outlived the killed backend"
    );
    let _serve = Serve::start(&env, 0, Some(PASSWORD));
    let deadline = std::time::Instant::now() + WAIT;
    while !process_gone(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the next backend killed the command its dead predecessor's agent left"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
