//! The TUI with the mock ACP agent as its default agent, for the PTY tests of agent sessions,
//! and the small `main` those test binaries share (each is also the mock agent its config
//! names, so each has its own `main`, `harness = false`).

use super::{COLS, Env, Pty, ROWS};

/// Serves ACP when this binary was started as the mock agent, else runs `tests` (a name
/// filter from the command line, like libtest's, keeps those whose name holds it).
pub fn run_pty_tests(tests: &[(&str, fn())]) {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        println!("test {name} ...");
        test();
        println!("test {name} ... ok");
    }
}

/// A TUI on a fresh project whose config makes the mock agent (this test binary) the default.
pub struct AgentTui {
    pub env: Env,
    _config: tempfile::TempDir,
    pub tui: Pty,
}

impl AgentTui {
    /// The TUI, connected to its embedded backend, at home.
    pub fn start() -> AgentTui {
        let env = Env::new();
        let config = tempfile::Builder::new()
            .prefix("axcfg")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::create_dir_all(config.path().join("ax-code")).unwrap();
        let exe = std::env::current_exe().unwrap();
        std::fs::write(
            config.path().join("ax-code/config.toml"),
            format!(
                "default_agent = \"mock\"\n\n[agents.mock]\ncommand = {:?}\n\
                 env = {{ AX_TEST_BE_MOCK_AGENT = \"1\" }}\n",
                exe.to_str().unwrap()
            ),
        )
        .unwrap();
        let tui = Pty::spawn_with(
            &env,
            &[],
            None,
            ROWS,
            COLS,
            &[("XDG_CONFIG_HOME", config.path().as_os_str())],
        );
        tui.wait_text("● connected");
        AgentTui {
            env,
            _config: config,
            tui,
        }
    }

    /// The TUI in a new session with the mock agent (Ctrl+N, the preselected default, Enter).
    pub fn start_in_session() -> AgentTui {
        let t = AgentTui::start();
        t.tui.send("\x0e");
        t.tui.wait_text("New session: which agent?");
        t.tui.send("\r");
        t.tui
            .wait_for("the new session", |s| s.contains("(untitled) ses_"));
        t
    }
}
