//! The real TUI in a real pseudo-terminal: `ax-code --tui-mcp` and `ax-code attach URL
//! --tui-mcp`, driven by keystrokes and SGR mouse sequences, read back through a vt100
//! emulator, and shared with an agent that uses the official MCP SDK
//! (tests/python/tui_agent.py, driven step by step over its stdin/stdout).

use std::io::{BufRead, BufReader, Read, Write};
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::Value;

const AX: &str = env!("CARGO_BIN_EXE_ax-code");
const COLS: u16 = 120;
const ROWS: u16 = 36;
const WAIT: Duration = Duration::from_secs(10);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let p = std::env::var_os("AX_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-test/bin/python"));
    assert!(
        p.exists(),
        "no test Python at {}: run `bash scripts/setup-test-env.sh` (or set AX_TEST_PYTHON)",
        p.display()
    );
    p
}

/// Private directories for one test: project, data dir, HOME and TMPDIR.
struct Env {
    _root: tempfile::TempDir,
    project: PathBuf,
    data: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
}

impl Env {
    fn new() -> Env {
        let root = tempfile::Builder::new()
            .prefix("axt")
            .tempdir_in("/tmp")
            .unwrap();
        let make = |name: &str| {
            let p = root.path().join(name);
            std::fs::create_dir(&p).unwrap();
            std::fs::canonicalize(p).unwrap()
        };
        Env {
            project: make("project"),
            data: make("data"),
            home: make("home"),
            tmp: make("t"),
            _root: root,
        }
    }

    fn vars(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.home.clone()),
            ("AX_CODE_DATA_DIR", self.data.clone()),
            ("TMPDIR", self.tmp.clone()),
        ]
    }

    /// Runs `ax-code ARGS` in the project and returns its stdout.
    fn ax(&self, args: &[&str], password: Option<&str>) -> String {
        let mut cmd = Command::new(AX);
        cmd.args(args).current_dir(&self.project);
        cmd.envs(self.vars()).env_remove("AX_CODE_SERVER_PASSWORD");
        if let Some(p) = password {
            cmd.env("AX_CODE_SERVER_PASSWORD", p);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "ax-code {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// A process in a pseudo-terminal, its screen emulated by vt100.
struct Pty {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<vt100::Parser>>,
    reader: Option<thread::JoinHandle<()>>,
}

impl Pty {
    fn spawn(env: &Env, args: &[&str], password: Option<&str>) -> Pty {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(AX);
        cmd.args(args);
        cmd.cwd(&env.project);
        for (k, v) in env.vars() {
            cmd.env(k, v);
        }
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("AX_CODE_SERVER_PASSWORD");
        if let Some(p) = password {
            cmd.env("AX_CODE_SERVER_PASSWORD", p);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            NonZeroU16::new(ROWS).unwrap(),
            NonZeroU16::new(COLS).unwrap(),
            0,
        )));
        let p = parser.clone();
        let reader = thread::spawn(move || {
            // Keep the master open as long as we read.
            let _master = pair.master;
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => p.lock().unwrap().process(&buf[..n]),
                }
            }
        });
        Pty {
            child,
            writer: Arc::new(Mutex::new(writer)),
            parser,
            reader: Some(reader),
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn alternate_screen(&self) -> bool {
        self.parser.lock().unwrap().screen().alternate_screen()
    }

    /// Polls the emulated screen until `pred` holds; panics with the screen on timeout.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if start.elapsed() > WAIT {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    fn send(&mut self, bytes: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// Moves the mouse (no button) every 100 ms until the returned guard drops: continuous
    /// human activity that changes nothing on screen.
    fn jiggle_mouse(&self) -> Jiggle {
        let writer = self.writer.clone();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::spawn(move || {
            let mut col = 10;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                col = if col == 10 { 11 } else { 10 };
                let mut w = writer.lock().unwrap();
                let _ = w.write_all(format!("\x1b[<35;{col};10M").as_bytes());
                let _ = w.flush();
                drop(w);
                thread::sleep(Duration::from_millis(100));
            }
        });
        Jiggle {
            stop,
            thread: Some(thread),
        }
    }

    /// A left click at a zero-based cell, as an SGR mouse press and release.
    fn click(&mut self, col: u16, row: u16) {
        let (c, r) = (col + 1, row + 1);
        self.send(&format!("\x1b[<0;{c};{r}M"));
        self.send(&format!("\x1b[<0;{c};{r}m"));
    }

    /// The absolute endpoint.json path shown in the TUIMCP bar.
    fn endpoint_path(&self) -> PathBuf {
        let s = self.wait_text("TUIMCP on: ");
        let line = s.lines().find(|l| l.contains("TUIMCP on: ")).unwrap();
        let after = &line[line.find("TUIMCP on: ").unwrap() + "TUIMCP on: ".len()..];
        let end = after.find("endpoint.json").expect("a full path in the bar") + 13;
        PathBuf::from(&after[..end])
    }

    /// Waits for the process to end (bounded) and then for the last output.
    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return status;
            }
            if start.elapsed() > WAIT {
                panic!("the TUI did not exit; the screen:\n{}", self.screen());
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Jiggle {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Jiggle {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// tests/python/tui_agent.py: one command per line, one JSON answer per line.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Agent {
    fn spawn(env: &Env, endpoint: &Path) -> Agent {
        let script = workspace_root().join("tests/python/tui_agent.py");
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

fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

fn assert_applied(v: &Value, id: &str) {
    assert_eq!(v["status"], "applied", "{v}");
    assert_eq!(v["isError"], false, "{v}");
    assert_eq!(v["context"]["sessionId"], id, "{v}");
}

fn unblocked(v: &Value) -> bool {
    v["status"] == "context" && v["context"]["blocked"] == false && v["context"]["ready"] == true
}

#[test]
fn embedded_tui_is_shared_navigated_blocked_and_revoked() {
    let env = Env::new();
    let mut tui = Pty::spawn(&env, &["--tui-mcp"], None);
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
    let col = bar.chars().position(|c| c == '[').unwrap() as u16 + 2;
    let before = s.lines().filter(|l| l.starts_with('│')).count();
    tui.click(col, bar_row);
    let after = tui.wait_for("the bar gone", |s| !s.contains("TUIMCP on:"));
    assert_eq!(
        after.lines().filter(|l| l.starts_with('│')).count(),
        before + 1,
        "the layout gives the row back:\n{after}"
    );
    let dir = endpoint.parent().unwrap().to_owned();
    let start = Instant::now();
    while dir.exists() && start.elapsed() < WAIT {
        thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !dir.exists(),
        "endpoint directory {} still there",
        dir.display()
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

/// `ax-code serve` on a port; its URL from the first stdout line.
fn serve(env: &Env, port: u16, password: Option<&str>) -> (Child, String) {
    let mut child = Command::new(AX)
        .args(["serve", "--port", &port.to_string()])
        .current_dir(&env.project)
        .envs(env.vars())
        .env_remove("AX_CODE_SERVER_PASSWORD")
        .envs(password.map(|p| ("AX_CODE_SERVER_PASSWORD", p)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        // Keep draining so the server never blocks on a full pipe.
        for _ in lines {}
    });
    let line = rx
        .recv_timeout(WAIT)
        .expect("ax-code serve printed no address");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (child, url)
}

#[test]
fn attached_tui_follows_the_backend_down_and_back() {
    let env = Env::new();
    let password = "pty-test-credential-0123456789";
    let (mut server, url) = serve(&env, 0, Some(password));
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
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
    server.kill().unwrap();
    server.wait().unwrap();
    agent.wait_context("not ready", |v| v["context"]["ready"] == false);
    assert_eq!(code(&agent.select(&b)), "not_ready");
    tui.wait_text("reconnecting");

    // Back on the same port: the TUI reconnects, resyncs, and navigation works again.
    let (mut server, _) = serve(&env, port, Some(password));
    agent.wait_context("ready again", unblocked);
    assert_applied(&agent.select(&b), &b);
    tui.wait_text("att-b ses_");
    tui.wait_text("● connected");

    // Revoking by command works the same as the button.
    tui.send("/tui-mcp-revoke\r");
    tui.wait_for("the bar gone", |s| !s.contains("TUIMCP on:"));
    let dir = endpoint.parent().unwrap().to_owned();
    let start = Instant::now();
    while dir.exists() && start.elapsed() < WAIT {
        thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !dir.exists(),
        "endpoint directory {} still there",
        dir.display()
    );
    assert_eq!(code(&agent.cmd("context")), "target_unavailable");
    drop(agent);
    tui.send("/quit\r");
    assert!(tui.wait_exit().success());
    let _ = server.kill();
    let _ = server.wait();
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
    let (mut server, url) = serve(&env, 0, None);
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
    let _ = server.kill();
    let _ = server.wait();
}
