//! Shared helpers for the end-to-end tests of the `ax-code` binary (crates/cli/tests/*.rs):
//! one copy of each, by concept.
//!
//! - [`fs`]: private directories for one test ([`Env`]) and private temp roots;
//! - [`serve`]: `ax-code serve` with a known credential ([`Serve`]) or a generated one read
//!   from its credential file ([`ControlServe`]);
//! - [`pty`]: the TUI in a pseudo-terminal read back through vt100 ([`Pty`], [`PtyHandle`]);
//! - [`agent_tui`]: that TUI with the mock ACP agent as its default ([`AgentTui`]), and the
//!   `main` of the PTY test binaries that are also the mock agent;
//! - [`mcp`]: `ax-code mcp tui` driven over stdio JSON-RPC ([`Adapter`]) and checks of its
//!   answers;
//! - [`python`]: the test venv's interpreter and the Python scripts in tests/python;
//! - [`hub`]: several machines as processes: what `serve --join` and `hub` print, a hub
//!   started, its listings and server-sent events;
//! - [`shell`]: what a `shell` session's reply holds: its command's `execute` call and
//!   terminal;
//! - here: the binary, the common wait bound, processes (signals, watchdogs, /proc figures),
//!   polling, random ids and schedules.
//!
//! Everything is synchronous (threads and channels) unless a test brings its own runtime, so
//! several processes, a simulated person and a screen sampler can run side by side. Each test
//! binary uses only part of this module, hence `dead_code` is allowed.

#![allow(dead_code)]

pub mod agent_tui;
pub mod fs;
pub mod hub;
pub mod mcp;
pub mod pty;
pub mod python;
pub mod serve;
pub mod shell;

#[allow(unused_imports)]
pub use agent_tui::*;
#[allow(unused_imports)]
pub use fs::*;
#[allow(unused_imports)]
pub use hub::*;
#[allow(unused_imports)]
pub use mcp::*;
#[allow(unused_imports)]
pub use pty::*;
#[allow(unused_imports)]
pub use python::*;
#[allow(unused_imports)]
pub use serve::*;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// The `ax-code` binary under test.
pub const AX: &str = env!("CARGO_BIN_EXE_ax-code");
/// Every wait in these tests is bounded by this unless it says otherwise.
pub const WAIT: Duration = Duration::from_secs(15);

/// The workspace root (canonical).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Kills a process with SIGKILL if it is still there when the watchdog is dropped late.
pub struct Watchdog {
    done: mpsc::Sender<()>,
}

impl Watchdog {
    /// Arms a watchdog: `pid` gets SIGKILL unless this is dropped within `limit`.
    pub fn new(pid: u32, limit: Duration) -> Watchdog {
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

/// Kills and reaps a child on drop.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends a signal by name (`STOP`, `CONT`, `KILL`, `TERM`) to one process.
/// Sends signal `name` to `pid`. For `STOP`, also waits (bounded by [`WAIT`]) until every
/// thread of the process is stopped: `kill` returns when the signal is queued, and on a
/// loaded machine a thread can still answer a request for a moment after that.
pub fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
    if name == "STOP" {
        let deadline = Instant::now() + WAIT;
        while !all_threads_stopped(pid) {
            assert!(Instant::now() < deadline, "process {pid} did not stop");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether every thread of `pid` is in state `T` (stopped) per `/proc`; a process that is
/// gone counts as stopped (nothing of it can answer).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.filter_map(Result::ok).all(|task| {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            return true;
        };
        // The state follows the command name, which is in parentheses and may hold spaces.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_none_or(|state| matches!(state, 'T' | 't' | 'Z' | 'X'))
    })
}

/// Waits (bounded by [`WAIT`]) for a child to exit.
pub fn wait_child(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "process did not exit");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a prepared command to its end, killed after `limit`; stdout and stderr are collected
/// concurrently (so neither pipe can fill up).
pub fn output_bounded(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watchdog = Watchdog::new(child.id(), limit);
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let out = thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let err = thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let status = child.wait().unwrap();
    drop(watchdog);
    std::process::Output {
        status,
        stdout: out.join().unwrap().into_bytes(),
        stderr: err.join().unwrap().into_bytes(),
    }
}

/// Reads a stream line by line on a thread; the lines arrive on the returned channel (the
/// stream is drained to its end, so the writer never blocks on a full pipe).
pub fn line_channel(stream: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
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
