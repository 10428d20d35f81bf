//! The real TUI in a real pseudo-terminal: `ax-code --tui-mcp` and `ax-code attach URL
//! --tui-mcp`, driven by keystrokes and SGR mouse sequences, read back through a vt100
//! emulator, and shared with an agent that uses the official MCP SDK
//! (tests/python/tui_agent.py, driven step by step over its stdin/stdout).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

/// tests/python/tui_agent.py: one command per line, one JSON answer per line.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Agent {
    fn spawn(env: &Env, endpoint: &Path) -> Agent {
        let script = script("tui_agent.py");
        let mut child = Command::new(python())
            .arg(script)
            .arg("--ax-code")
            .arg(AX)
            .arg("--endpoint")
            .arg(endpoint)
            .arg("--project")
            .arg(&env.project)
            .envs(env.vars())
            .env_remove("AX_CODE_SERVER_PASSWORD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut agent = Agent {
            child,
            stdin,
            lines,
        };
        assert_eq!(agent.answer()["ready"], true);
        agent
    }

    fn answer(&mut self) -> Value {
        match self.lines.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => serde_json::from_str(&line).unwrap(),
            Err(_) => panic!("the agent script did not answer (see its stderr above)"),
        }
    }

    fn cmd(&mut self, line: &str) -> Value {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        self.answer()
    }

    fn select(&mut self, id: &str) -> Value {
        self.cmd(&format!("select {id}"))
    }

    /// A select that must be refused with `user_active`. A `stale_revision` only means the UI
    /// changed between reading the context and selecting (e.g. a status event), so it re-reads.
    fn assert_user_active(&mut self, id: &str) {
        for _ in 0..5 {
            let v = self.select(id);
            match code(&v) {
                "user_active" => return,
                "stale_revision" => continue,
                _ => panic!("expected user_active, got {v}"),
            }
        }
        panic!("the revision never settled");
    }

    /// Reads the context until `pred` holds (bounded).
    fn wait_context(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let v = self.cmd("context");
            if pred(&v) {
                return v;
            }
            if start.elapsed() > Duration::from_secs(15) {
                panic!("timed out waiting for context {what}: last {v}");
            }
            thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_applied(v: &Value, id: &str) {
    assert_eq!(v["status"], "applied", "{v}");
    assert_eq!(v["isError"], false, "{v}");
    assert_eq!(v["context"]["sessionId"], id, "{v}");
}

#[test]
fn embedded_tui_is_shared_navigated_blocked_and_revoked() {
    let env = Env::new();
    let tui = Pty::spawn(&env, &["--tui-mcp"], None);
    let endpoint = tui.endpoint_path();
    assert!(
        endpoint.is_absolute() && endpoint.exists(),
        "{}",
        endpoint.display()
    );
    tui.wait_text("● connected");

    // Sessions through the ordinary interface (the embedded backend registered itself).
    let target = env.ax(&["session", "create", "--title", "pty-target"], None);
    let target = target.trim().to_owned();
    let other = env.ax(&["session", "create", "--title", "pty-other"], None);
    let other = other.trim().to_owned();
    tui.wait_text("pty-other");

    let mut agent = Agent::spawn(&env, &endpoint);
    let listed = agent.cmd("sessions");
    let ids: Vec<&str> = listed["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&target.as_str()) && ids.contains(&other.as_str()),
        "{listed}"
    );
    let ctx = agent.wait_context("ready on home", unblocked);
    assert_eq!(ctx["context"]["route"], "home");

    // The agent selects a session: the screen shows it and the notice.
    assert_applied(&agent.select(&target), &target);
    tui.wait_for("the target session and the notice", |s| {
        s.contains("pty-target ses_") && s.contains("Navigated by agent via TUIMCP")
    });

    // A draft blocks navigation.
    tui.send("abc");
    tui.wait_text("│abc");
    agent.assert_user_active(&other);
    // Cleared and quiet again: navigation works.
    tui.send("\x7f\x7f\x7f");
    tui.wait_for("the draft cleared", |s| !s.contains("│abc"));
    agent.wait_context("unblocked after the quiet period", unblocked);
    assert_applied(&agent.select(&other), &other);
    tui.wait_text("pty-other ses_");

    // The command palette is a modal.
    tui.send("\x10");
    tui.wait_text("Commands");
    agent.assert_user_active(&target);
    tui.send("\x1b");
    tui.wait_for("the palette closed", |s| !s.contains("┌ Commands"));
    agent.wait_context("unblocked after the palette", unblocked);

    // Mouse movement alone is human activity: it blocks, and nothing else changed.
    let jiggle = tui.jiggle_mouse();
    // One revision bump when the activity episode starts; none while it goes on.
    agent.wait_context("blocked by the mouse", |v| v["context"]["blocked"] == true);
    agent.assert_user_active(&target);
    drop(jiggle);
    agent.wait_context("unblocked after the mouse stopped", unblocked);

    // A command waiting for approval blocks navigation.
    tui.send("echo approve-me\r");
    tui.wait_text("Approval needed");
    agent.assert_user_active(&target);
    tui.send("n");
    tui.wait_for("the dialog closed", |s| !s.contains("Approval needed"));

    // [Revoke] by mouse: the bar goes, the endpoint goes, the adapter cannot reach it.
    let s = tui.screen();
    let bar_row = s.lines().position(|l| l.contains("TUIMCP on:")).unwrap() as u16;
    let bar = s.lines().nth(bar_row as usize).unwrap();
    let revoke = bar.find("[Revoke]").unwrap();
    let col = bar[..revoke].chars().count() as u16 + 2;
    let before = s.lines().filter(|l| l.starts_with('│')).count();
    tui.click(col, bar_row);
    let after = tui.wait_for("the bar gone", |s| !s.contains("TUIMCP on:"));
    assert_eq!(
        after.lines().filter(|l| l.starts_with('│')).count(),
        before + 1,
        "the layout gives the row back:\n{after}"
    );
    let dir = endpoint.parent().unwrap().to_owned();
    eventually(
        &format!("endpoint directory {} removed", dir.display()),
        || !dir.exists(),
    );
    let v = agent.cmd("context");
    assert_eq!(code(&v), "target_unavailable", "{v}");
    assert_eq!(v["isError"], true);
}

#[test]
fn quit_removes_the_endpoint_and_restores_the_terminal() {
    let env = Env::new();
    let mut tui = Pty::spawn(&env, &["--tui-mcp"], None);
    let endpoint = tui.endpoint_path();
    tui.wait_text("● connected");
    assert!(tui.alternate_screen());
    tui.send("/quit\r");
    let status = tui.wait_exit();
    assert!(status.success(), "exit status {status}");
    assert!(
        !endpoint.parent().unwrap().exists(),
        "endpoint directory left behind"
    );
    assert!(!tui.alternate_screen(), "the alternate screen was not left");
    // The embedded backend unregistered itself.
    let servers = env.data.join("servers");
    let left = std::fs::read_dir(&servers).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "a servers/ record was left behind");
}

#[test]
fn attached_tui_follows_the_backend_down_and_back() {
    let env = Env::new();
    let password = "pty-test-credential-0123456789";
    let mut server = Serve::start(&env, 0, Some(password));
    let (url, port) = (server.url.clone(), server.port());
    let a = env.ax(
        &["session", "create", "--title", "att-a", "--url", &url],
        Some(password),
    );
    let b = env.ax(
        &["session", "create", "--title", "att-b", "--url", &url],
        Some(password),
    );
    let (a, b) = (a.trim().to_owned(), b.trim().to_owned());

    let mut tui = Pty::spawn(&env, &["attach", &url, "--tui-mcp"], Some(password));
    let endpoint = tui.endpoint_path();
    tui.wait_text("att-b");
    let mut agent = Agent::spawn(&env, &endpoint);
    agent.wait_context("ready", unblocked);
    assert_applied(&agent.select(&a), &a);
    tui.wait_for("session a and the notice", |s| {
        s.contains("att-a ses_") && s.contains("Navigated by agent via TUIMCP")
    });

    // The backend dies: not ready, navigation refused.
    server.kill();
    agent.wait_context("not ready", |v| v["context"]["ready"] == false);
    assert_eq!(code(&agent.select(&b)), "not_ready");
    tui.wait_text("reconnecting");

    // Back on the same port: the TUI reconnects, resyncs, and navigation works again.
    let _server = Serve::start(&env, port, Some(password));
    agent.wait_context("ready again", unblocked);
    assert_applied(&agent.select(&b), &b);
    tui.wait_text("att-b ses_");
    tui.wait_text("● connected");

    // Revoking by command works the same as the button.
    tui.send("/tui-mcp-revoke\r");
    tui.wait_for("the bar gone", |s| !s.contains("TUIMCP on:"));
    let dir = endpoint.parent().unwrap().to_owned();
    eventually(
        &format!("endpoint directory {} removed", dir.display()),
        || !dir.exists(),
    );
    assert_eq!(code(&agent.cmd("context")), "target_unavailable");
    drop(agent);
    tui.send("/quit\r");
    assert!(tui.wait_exit().success());
}

#[test]
fn sigterm_exits_cleanly_too() {
    let env = Env::new();
    let mut tui = Pty::spawn(&env, &["--tui-mcp"], None);
    let endpoint = tui.endpoint_path();
    tui.wait_text("● connected");
    let pid = tui.child.process_id().unwrap();
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    tui.wait_exit();
    assert!(
        !endpoint.parent().unwrap().exists(),
        "endpoint directory left behind"
    );
    assert!(!tui.alternate_screen(), "the alternate screen was not left");
}

#[test]
fn attach_finds_the_local_credential_file() {
    let env = Env::new();
    // No AX_CODE_SERVER_PASSWORD anywhere: serve writes its generated credential to the data
    // directory and attach reads it from there.
    let server = Serve::start(&env, 0, None);
    let url = server.url.clone();
    env.ax(
        &["session", "create", "--title", "cred-file", "--url", &url],
        None,
    );
    let mut tui = Pty::spawn(&env, &["attach", &url], None);
    tui.wait_text("cred-file");
    tui.wait_text("● connected");
    assert!(
        !tui.screen().contains("TUIMCP on:"),
        "no sharing without --tui-mcp"
    );
    tui.send("/quit\r");
    assert!(tui.wait_exit().success());
}

#[test]
fn a_long_endpoint_path_is_whole_and_copyable_at_80_columns() {
    let mut env = Env::new();
    // A temp root as long as macOS's: the path no longer fits beside the label at 80 columns.
    let long = env
        .tmp
        .join("a-private-temp-root-with-a-long-name-0123456789");
    std::fs::create_dir(&long).unwrap();
    chmod(&long, 0o700);
    env.tmp = long.canonicalize().unwrap();
    let tui = Pty::spawn_sized(&env, &["--tui-mcp"], None, 24, 80);
    let s = tui.wait_text("TUIMCP on:");
    let dir = std::fs::read_dir(&env.tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("ax-tui-")
        })
        .expect("the endpoint directory");
    let expected = dir.join("endpoint.json").to_string_lossy().into_owned();
    assert!(expected.len() > 80, "{expected}");
    tui.wait_text("● connected");

    // The label row holds the buttons; the rows below it hold the whole path.
    let lines: Vec<&str> = s.lines().collect();
    let bar = lines.iter().position(|l| l.contains("TUIMCP on:")).unwrap();
    assert!(lines[bar].contains("[Revoke]"), "{s}");
    let mut shown = String::new();
    for line in &lines[bar + 1..] {
        if shown.len() >= expected.len() {
            break;
        }
        shown.push_str(line.trim_end());
    }
    assert_eq!(shown, expected, "the whole path, readable:\n{s}");

    // A click on the path copies the MCP client configuration (OSC 52) with the real path.
    tui.click(3, bar as u16 + 1);
    eventually("an OSC 52 copy", || !tui.clipboard().is_empty());
    let copied = unbase64(&tui.clipboard()[0]);
    let config: Value = serde_json::from_slice(&copied).unwrap();
    assert_eq!(
        config["mcpServers"]["ax-code-tui"],
        serde_json::json!({"command": "ax-code", "args": ["mcp", "tui", "--endpoint", expected]})
    );
    assert!(
        tui.screen().contains("TUIMCP on:"),
        "copying does not revoke"
    );

    // /tui-mcp-config shows it; after a revoke the command says it was revoked.
    tui.send("/tui-mcp-config\r");
    tui.wait_text("\"mcpServers\"");
    tui.send("\x1b");
    tui.wait_for("the config closed", |s| !s.contains("\"mcpServers\""));
    tui.send("/tui-mcp-revoke\r");
    tui.wait_for("the bar gone", |s| !s.contains("TUIMCP on:"));
    tui.send("/tui-mcp-revoke\r");
    tui.wait_text("was revoked");
}
