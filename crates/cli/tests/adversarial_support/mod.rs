//! Shared helpers for the adversarial tests (adversarial_faults.rs, adversarial_chaos.rs):
//! private directories, `ax-code serve`, the TUI in a pseudo-terminal read back through
//! vt100, `ax-code mcp tui` adapters driven over stdio JSON-RPC, the backend credential from
//! the data directory's `servers/` registry, signals and /proc figures.
//!
//! Everything here is synchronous (threads and channels), so several adapters, a simulated
//! person and a screen sampler can run side by side without sharing a runtime.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::{Value, json};

pub const AX: &str = env!("CARGO_BIN_EXE_ax-code");
pub const COLS: u16 = 120;
pub const ROWS: u16 = 36;
/// Every wait in these tests is bounded by this unless it says otherwise.
pub const WAIT: Duration = Duration::from_secs(15);

/// Private directories for one test: project, data dir, HOME and TMPDIR.
pub struct Env {
    _root: tempfile::TempDir,
    pub project: PathBuf,
    pub data: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let root = tempfile::Builder::new()
            .prefix("axv")
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

    pub fn vars(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.home.clone()),
            ("AX_CODE_DATA_DIR", self.data.clone()),
            ("TMPDIR", self.tmp.clone()),
        ]
    }

    /// Runs `ax-code ARGS` in the project (bounded) and returns its stdout.
    pub fn ax(&self, args: &[&str], password: Option<&str>) -> String {
        let mut cmd = Command::new(AX);
        cmd.args(args).current_dir(&self.project);
        cmd.envs(self.vars()).env_remove("AX_CODE_SERVER_PASSWORD");
        if let Some(p) = password {
            cmd.env("AX_CODE_SERVER_PASSWORD", p);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let watchdog = Watchdog::new(child.id(), WAIT);
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        drop(watchdog);
        assert!(status.success(), "ax-code {args:?} failed: {err}");
        out
    }

    /// The backend this project registered in `servers/`: (URL, credential).
    pub fn registered_backend(&self) -> (String, String) {
        let dir = self.data.join("servers");
        let start = Instant::now();
        loop {
            let found = std::fs::read_dir(&dir).ok().and_then(|entries| {
                entries.flatten().find_map(|e| {
                    let v: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                    Some((
                        v["url"].as_str()?.to_owned(),
                        v["token"].as_str()?.to_owned(),
                    ))
                })
            });
            if let Some(found) = found {
                return found;
            }
            assert!(start.elapsed() < WAIT, "no backend registered in {dir:?}");
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Kills a process with SIGKILL if it is still there when the watchdog is dropped late.
struct Watchdog {
    done: mpsc::Sender<()>,
}

impl Watchdog {
    fn new(pid: u32, limit: Duration) -> Watchdog {
        let (done, rx) = mpsc::channel::<()>();
        thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                signal(pid, "KILL");
            }
        });
        Watchdog { done }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.done.send(());
    }
}

/// Sends a signal by name (`STOP`, `CONT`, `KILL`, `TERM`) to one process.
pub fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

/// Open file descriptors of a process.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Resident set size of a process, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Whether a process is gone (or only a zombie left for its reaper).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Polls `check` until it holds; panics with `what` after [`WAIT`].
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < WAIT, "timed out waiting for: {what}");
        thread::sleep(Duration::from_millis(25));
    }
}

/// `ax-code serve` on a port with a known credential; its URL from the first stdout line.
pub struct Serve {
    pub child: Child,
    pub url: String,
    reaped: bool,
}

impl Serve {
    pub fn start(env: &Env, port: u16, password: &str) -> Serve {
        let mut child = Command::new(AX)
            .args(["serve", "--port", &port.to_string()])
            .current_dir(&env.project)
            .envs(env.vars())
            .env("AX_CODE_SERVER_PASSWORD", password)
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
        let Ok(line) = rx.recv_timeout(WAIT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ax-code serve printed no address");
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .trim_end_matches('/')
            .to_owned();
        Serve {
            child,
            url,
            reaped: false,
        }
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        signal(self.pid(), "KILL");
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // A stopped process still dies of SIGKILL; SIGCONT is for good measure.
        signal(self.pid(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the screen is, as the main pane's title row shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShownRoute {
    Home,
    Session(String),
    Unknown,
}

/// Reads the route from a screen: the first box title (`┌ Sessions (N)` on home,
/// `┌ <title> ses_… ` on a session).
pub fn shown_route(screen: &str) -> ShownRoute {
    let Some(line) = screen.lines().find(|l| l.starts_with('┌')) else {
        return ShownRoute::Unknown;
    };
    if line.starts_with("┌ Sessions") {
        return ShownRoute::Home;
    }
    match line.find("ses_") {
        Some(i) => {
            let id: String = line[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            ShownRoute::Session(id)
        }
        None => ShownRoute::Unknown,
    }
}

/// A process in a pseudo-terminal, its screen emulated by vt100.
pub struct Pty {
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<vt100::Parser>>,
    reader: Option<thread::JoinHandle<()>>,
}

impl Pty {
    pub fn spawn(env: &Env, args: &[&str], password: Option<&str>) -> Pty {
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

    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("the TUI's pid")
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// A cheap handle for other threads: reads the screen and writes input.
    pub fn handle(&self) -> PtyHandle {
        PtyHandle {
            writer: self.writer.clone(),
            parser: self.parser.clone(),
        }
    }

    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.handle().wait_for(what, pred)
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    pub fn send(&self, bytes: &str) {
        self.handle().send(bytes)
    }

    /// The absolute endpoint.json path shown in the TUIMCP bar.
    pub fn endpoint_path(&self) -> PathBuf {
        let s = self.wait_text("TUIMCP on: ");
        let line = s.lines().find(|l| l.contains("TUIMCP on: ")).unwrap();
        let after = &line[line.find("TUIMCP on: ").unwrap() + "TUIMCP on: ".len()..];
        let end = after.find("endpoint.json").expect("a full path in the bar") + 13;
        PathBuf::from(&after[..end])
    }

    /// Waits for the process to end (bounded) and then for the last output.
    pub fn wait_exit(&mut self) -> portable_pty::ExitStatus {
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

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            if let Some(pid) = self.child.process_id() {
                signal(pid, "CONT");
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Screen and keyboard of a [`Pty`], shareable between threads.
#[derive(Clone)]
pub struct PtyHandle {
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<vt100::Parser>>,
}

impl PtyHandle {
    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    pub fn send(&self, bytes: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// A left click at a zero-based cell, as an SGR mouse press and release.
    pub fn click(&self, col: u16, row: u16) {
        let (c, r) = (col + 1, row + 1);
        self.send(&format!("\x1b[<0;{c};{r}M\x1b[<0;{c};{r}m"));
    }

    /// Mouse movement without a button at a zero-based cell.
    pub fn hover(&self, col: u16, row: u16) {
        self.send(&format!("\x1b[<35;{};{}M", col + 1, row + 1));
    }

    /// Polls the emulated screen until `pred` holds; panics with the screen on timeout.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        match self.poll_for(WAIT, &pred) {
            Some(s) => s,
            None => panic!(
                "timed out waiting for {what}; the screen:\n{}",
                self.screen()
            ),
        }
    }

    /// Polls the screen until `pred` holds or `limit` passes.
    pub fn poll_for(&self, limit: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return Some(s);
            }
            if start.elapsed() > limit {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `ax-code mcp tui --endpoint PATH`, driven over stdio JSON-RPC.
pub struct Adapter {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Answers read while waiting for another id.
    early: Vec<Value>,
    next_id: i64,
}

impl Adapter {
    pub fn spawn(env: &Env, endpoint: &Path) -> Adapter {
        let mut child = Command::new(AX)
            .args(["mcp", "tui", "--endpoint"])
            .arg(endpoint)
            .envs(env.vars())
            .env_remove("AX_CODE_SERVER_PASSWORD")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value =
                    serde_json::from_str(&line).unwrap_or_else(|_| json!({"notJsonRpc": line}));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut adapter = Adapter {
            child,
            stdin,
            lines,
            early: Vec::new(),
            next_id: 0,
        };
        let init = adapter.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ax-adversarial", "version": "0"}
            }),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "ax-code-tuimcp",
            "{init}"
        );
        adapter.notify(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        adapter
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn notify(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request without waiting; returns its id.
    pub fn send(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.notify(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The answer to `id`, or `None` after `limit`. Every stdout line must be JSON-RPC.
    pub fn try_answer(&mut self, id: i64, limit: Duration) -> Option<Value> {
        if let Some(i) = self.early.iter().position(|m| m["id"] == json!(id)) {
            return Some(self.early.remove(i));
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.lines.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => panic!("the adapter's stdout closed"),
            };
            assert_eq!(
                message["jsonrpc"], "2.0",
                "stdout carries JSON-RPC only: {message}"
            );
            if message["id"] == json!(id) {
                return Some(message);
            }
            if message.get("id").is_some() {
                self.early.push(message);
            }
        }
    }

    pub fn answer(&mut self, id: i64) -> Value {
        self.try_answer(id, WAIT)
            .unwrap_or_else(|| panic!("the adapter did not answer request {id} within {WAIT:?}"))
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.answer(id)
    }

    /// Starts a tool call; returns its JSON-RPC id.
    pub fn start_call(&mut self, tool: &str, arguments: Value) -> i64 {
        self.send("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Waits for a tool call started with [`Adapter::start_call`]; returns its checked
    /// `structuredContent`.
    pub fn finish_call(&mut self, id: i64) -> Value {
        let answer = self.answer(id);
        structured(&answer["result"])
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let id = self.start_call(tool, arguments);
        self.finish_call(id)
    }

    pub fn context(&mut self) -> Value {
        self.call("get_view_context", json!({}))
    }

    /// Reads the context until `pred` holds (bounded).
    pub fn wait_context(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let v = self.context();
            if pred(&v) {
                return v;
            }
            assert!(
                start.elapsed() < WAIT,
                "timed out waiting for context {what}: last {v}"
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Closes stdin and waits (bounded) for a clean exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < WAIT, "the adapter did not exit on EOF");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        drop(self.stdin.take());
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// structuredContent, checked against the text content and isError.
pub fn structured(result: &Value) -> Value {
    let content = result["structuredContent"].clone();
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("text content in {result}"));
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), content);
    let rejected = content["status"] == "rejected";
    assert_eq!(
        result["isError"],
        json!(rejected),
        "isError exactly for rejected: {result}"
    );
    content
}

pub fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

/// The context is ready and unblocked.
pub fn unblocked(v: &Value) -> bool {
    v["status"] == "context" && v["context"]["blocked"] == false && v["context"]["ready"] == true
}

/// A fresh random RFC 9562 UUID (v4) from /dev/urandom.
pub fn uuid() -> String {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// select_session arguments for `session` against the identity and revision of `view`
/// (a `get_view_context` answer).
pub fn select_args(view: &Value, request_id: &str, session: &str) -> Value {
    json!({
        "requestId": request_id,
        "instanceId": view["context"]["instanceId"],
        "generation": view["context"]["generation"],
        "expectedRevision": view["context"]["revision"],
        "sessionId": session,
    })
}

/// A small deterministic-per-seed pseudo-random generator (xorshift), for schedules.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn from_entropy() -> Rng {
        let mut b = [0u8; 8];
        std::fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut b)
            .unwrap();
        Rng::new(u64::from_le_bytes(b))
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A duration uniform in `lo..hi` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo))
    }
}

/// A tokio runtime for the typed backend client.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}
