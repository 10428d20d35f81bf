//! A real `nats-server` for tests (feature `test-support`, never in a release build): started
//! on a free loopback port with JetStream in a temporary directory, stopped on drop, and
//! restartable on the same port and store (docs/hub.md §5).
//!
//! The binary is `$AX_NATS_SERVER`, else `nats-server` on `PATH` or in `/usr/sbin` (Debian's
//! package `nats-server`, which `scripts/setup-test-env.sh` installs). A test that needs it
//! fails with that advice when it is absent, never skips.

use std::{
    io::Read,
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// How long the server may take to accept connections.
const START_WAIT: Duration = Duration::from_secs(20);

/// The `nats-server` binary, or a panic that says how to install it.
pub fn nats_server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("AX_NATS_SERVER").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/usr/local/bin"].map(PathBuf::from));
    for dir in dirs {
        let candidate = dir.join("nats-server");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "nats-server not found (looked at $AX_NATS_SERVER, PATH and /usr/sbin): these tests \
         need a real NATS server; run `bash scripts/setup-test-env.sh` (it installs Debian's \
         package `nats-server`) or set AX_NATS_SERVER to its path"
    );
}

/// A running `nats-server` with JetStream; killed when dropped.
pub struct NatsServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    starts: u32,
}

impl NatsServer {
    /// Starts one on a free loopback port and waits until it accepts connections.
    pub fn start() -> NatsServer {
        let dir = tempfile::tempdir().expect("a temporary directory for JetStream");
        let port = free_port();
        let mut server = NatsServer {
            port,
            dir,
            child: None,
            starts: 0,
        };
        server.spawn();
        server
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where JetStream keeps its streams (kept across restarts).
    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("js")
    }

    /// Kills it (SIGKILL: what a crash looks like to the clients) and waits for it to end.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops it if it runs, then starts it again on the same port with the same store.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let log_path = self.dir.path().join(format!("nats-{}.log", self.starts));
        let log = std::fs::File::create(&log_path).expect("the nats-server log file");
        let child = Command::new(nats_server_binary())
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.store_dir())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nats-server ({e}): run `bash scripts/setup-test-env.sh` (it \
                     installs Debian's package `nats-server`) or set AX_NATS_SERVER to its path"
                )
            });
        self.child = Some(child);
        self.wait_ready(&log_path);
    }

    /// Waits until a connection gets the server's `INFO` line.
    fn wait_ready(&mut self, log: &Path) {
        let deadline = Instant::now() + START_WAIT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                panic!("nats-server exited ({status}) before accepting connections:\n{text}");
            }
            if let Ok(mut conn) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = [0u8; 5];
                if conn.read_exact(&mut head).is_ok() && &head == b"INFO " {
                    return;
                }
            }
            if Instant::now() > deadline {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                panic!("nats-server did not accept connections within {START_WAIT:?}:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
