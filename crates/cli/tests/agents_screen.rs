//! The `screen` tool of the agent inside a session (docs/agents.md §8) with the real
//! `ax-code serve`, the mock ACP agent and the Control UI in headless Chromium
//! (tests/python/agent_screen_browser.py does the checking), and `ax-code session create
//! --agent`.
//!
//! This test binary is also the mock ACP agent the script configures: started with
//! `AX_TEST_BE_MOCK_AGENT=1` (the agent's configured `env`) it serves ACP instead of running
//! the test. Hence its own `main` (`harness = false`).

mod support;

use std::time::Duration;

use support::*;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    println!("test the_in_session_screen_tool_follows_the_client_of_the_turn ...");
    python();
    require_browser();
    let mock = std::env::current_exe().unwrap();
    let status = run_script(
        "agent_screen_browser.py",
        &[AX.as_ref(), mock.as_os_str()],
        Duration::from_secs(240),
    );
    assert!(
        status.success(),
        "agent_screen_browser.py failed ({status}); its checks are printed above"
    );
    println!("test the_in_session_screen_tool_follows_the_client_of_the_turn ... ok");
    println!("test target_requester_reaches_the_tab_that_started_the_turn ...");
    let status = run_script(
        "agent_screen_requester.py",
        &[AX.as_ref(), mock.as_os_str()],
        Duration::from_secs(240),
    );
    assert!(
        status.success(),
        "agent_screen_requester.py failed ({status}); its checks are printed above"
    );
    println!("test target_requester_reaches_the_tab_that_started_the_turn ... ok");
    println!("test the_screen_server_lists_the_tool_and_checks_the_gate_per_call ...");
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(the_screen_server_lists_the_tool_and_checks_the_gate_per_call());
    println!("test the_screen_server_lists_the_tool_and_checks_the_gate_per_call ... ok");
}

/// `ax-code mcp screen --from-env` over stdio, by hand (one JSON-RPC message per line).
struct Mcp {
    /// Killed when dropped.
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    next: u64,
    /// Notifications read while waiting for responses.
    notes: Vec<String>,
}

impl Mcp {
    async fn send(&mut self, v: serde_json::Value) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn line(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the screen server answers in time")
            .unwrap()
            .expect("the screen server is running");
        serde_json::from_str(&line).unwrap()
    }

    async fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next += 1;
        let id = self.next;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
        loop {
            let v = self.line().await;
            if v["id"] == id {
                return v["result"].clone();
            }
            if let Some(m) = v["method"].as_str() {
                self.notes.push(m.to_owned());
            }
        }
    }

    async fn tools(&mut self) -> Vec<String> {
        let r = self.call("tools/list", serde_json::json!({})).await;
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// The session-scoped screen server always lists `screen` (the real agents list an MCP
/// server's tools once, docs/agents.md §10) and checks its session's gate at each call: a call
/// between turns is refused, one during a Control UI turn reaches the Control UI, one after
/// the turn is refused again; no `notifications/tools/list_changed` is ever sent. Its
/// credential and URL come from the environment the backend gave the agent (here recorded by
/// a stand-in screen server).
async fn the_screen_server_lists_the_tool_and_checks_the_gate_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let recorded = dir.path().join("screen-env");
    let stand_in = dir.path().join("screen-env.sh");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\nenv > {:?}.tmp && mv {:?}.tmp {:?}\n",
            recorded, recorded, recorded
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &stand_in,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut config = ax_server::ServerConfig::new(&project, dir.path().join("data"));
    config.register = false;
    config.screen_exe = Some(stand_in);
    let exe = std::env::current_exe().unwrap();
    config.agents = ax_acp::AgentsConfig::parse(
        std::path::Path::new("test.toml"),
        &format!(
            "[agents.mock]\ncommand = {:?}\nenv = {{ AX_TEST_BE_MOCK_AGENT = \"1\" }}\n",
            exe.to_string_lossy()
        ),
    )
    .unwrap();
    let server = ax_server::start(config).await.unwrap();
    let client = ax_client::Client::new(server.url(), server.token()).unwrap();
    let id = client
        .create_session_with(Some("t"), Some("mock"))
        .await
        .unwrap()
        .id;
    let idle = async |client: &ax_client::Client| {
        let deadline = std::time::Instant::now() + WAIT;
        while client.get_session(&id).await.unwrap().status != ax_protocol::SessionStatus::Idle {
            assert!(std::time::Instant::now() < deadline, "the turn ends");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    client.prompt_text(&id, "mcp screen {}").await.unwrap();
    idle(&client).await;
    let env = std::fs::read_to_string(&recorded).expect("the agent started its screen server");
    let var = |name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} in the screen server's environment"))
            .to_owned()
    };
    assert_eq!(var("AX_CODE_SCREEN_SESSION"), id.as_str());
    let mut child = tokio::process::Command::new(AX)
        .args(["mcp", "screen", "--from-env"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("AX_CODE_SCREEN_URL", var("AX_CODE_SCREEN_URL"))
        .env("AX_CODE_SCREEN_SESSION", var("AX_CODE_SCREEN_SESSION"))
        .env("AX_CODE_SCREEN_TOKEN", var("AX_CODE_SCREEN_TOKEN"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut mcp = Mcp {
        stdin: child.stdin.take().unwrap(),
        lines: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            child.stdout.take().unwrap(),
        )),
        _child: child,
        next: 0,
        notes: Vec::new(),
    };
    let init = mcp
        .call(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await;
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert_ne!(
        init["capabilities"]["tools"]["listChanged"], true,
        "the list never changes: {init}"
    );
    mcp.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert_eq!(mcp.tools().await, ["screen"], "listed between turns too");
    let sidebar_hide =
        serde_json::json!({"name": "screen", "arguments": {"action": "sidebar_hide"}});
    let refused = |call: &serde_json::Value| {
        call["isError"] == true && call.to_string().contains("not enabled for this turn")
    };
    let call = mcp.call("tools/call", sidebar_hide.clone()).await;
    assert!(refused(&call), "refused between turns: {call}");

    // A Control UI (the backend credential, mode ui, the cap) starts a turn.
    let ui = ax_gateway::GatewayClient::connect(
        server.url(),
        ax_gateway::ConnectOptions::new(
            server.token(),
            ax_gateway::ClientMode::Ui,
            vec![ax_gateway::Scope::Write],
        )
        .with_caps(["ui-commands"]),
    )
    .await
    .unwrap();
    let mut commands = ui.subscribe();
    let conn = ui.hello().server.conn_id.clone();
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{}/session/{id}/prompt", server.url()))
        .bearer_auth(server.token().expose())
        .json(&serde_json::json!({"parts": [{"type": "text", "text": "wait-cancel"}], "client": conn}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let deadline = std::time::Instant::now() + WAIT;
    while client.get_session(&id).await.unwrap().status != ax_protocol::SessionStatus::Busy {
        assert!(std::time::Instant::now() < deadline, "the turn starts");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        mcp.tools().await,
        ["screen"],
        "listed during the Control UI turn"
    );
    let call = mcp.call("tools/call", sidebar_hide.clone()).await;
    assert!(
        !refused(&call),
        "the gate is open during the Control UI turn: {call}"
    );
    let delivered = tokio::time::timeout(WAIT, async {
        loop {
            match commands.recv().await {
                Ok(e) if e.event == "ui.command" => return e,
                Ok(_) => {}
                Err(e) => panic!("the Control UI's events end: {e}"),
            }
        }
    })
    .await
    .expect("the Control UI receives the command");
    assert!(
        delivered
            .payload
            .as_ref()
            .unwrap()
            .to_string()
            .contains("sidebar"),
        "{delivered:?}"
    );
    assert!(client.abort(&id).await.unwrap().aborted);
    assert_eq!(mcp.tools().await, ["screen"], "still listed after the turn");
    let call = mcp.call("tools/call", sidebar_hide).await;
    assert!(refused(&call), "refused again after the turn: {call}");
    assert!(
        !mcp.notes
            .iter()
            .any(|n| n == "notifications/tools/list_changed"),
        "no list_changed was sent: {:?}",
        mcp.notes
    );
    drop(mcp);
    ui.close().await;
    server.shutdown().await;
}
