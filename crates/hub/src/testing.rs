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
    /// The address it listens on (`-a`).
    bind: &'static str,
    dir: tempfile::TempDir,
    child: Option<Child>,
    starts: u32,
    config: Option<PathBuf>,
    /// Whether it asks for TLS (its URL is then `tls://`).
    tls: bool,
}

/// A user in the server's `authorization` block, with its permissions.
pub struct NatsUser {
    /// The user name.
    pub user: String,
    /// Its password (plain text: a test's throwaway); empty for a user a client certificate
    /// names (no password line is written then).
    pub password: String,
    /// What it may do.
    pub permissions: crate::nats::Permissions,
}

/// The `nats-server` config (2.9 syntax) for `users`: the `authorization` block a person can
/// copy (docs/hub.md §1).
pub fn auth_config(users: &[NatsUser]) -> String {
    let list = |items: &[String]| {
        items
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::from("authorization {\n  users = [\n");
    for u in users {
        let p = &u.permissions;
        out.push_str(&format!(
            "    {{ user: {:?}, {}permissions: {{\n      publish: {{ allow: [{}] }}\n      subscribe: {{ allow: [{}] }}\n{}    }} }}\n",
            u.user,
            if u.password.is_empty() {
                String::new()
            } else {
                format!("password: {:?}, ", u.password)
            },
            list(&p.publish),
            list(&p.subscribe),
            if p.allow_responses { "      allow_responses: true\n" } else { "" },
        ));
    }
    out.push_str("  ]\n}\n");
    out
}

impl NatsServer {
    /// Starts one on a free loopback port and waits until it accepts connections.
    pub fn start() -> NatsServer {
        Self::start_on("127.0.0.1")
    }

    /// Starts one listening on every interface (its [`NatsServer::url`] is still the loopback
    /// one). Only for a test that runs in a network namespace of its own, where "every
    /// interface" is the links the test made to its other namespaces.
    pub fn start_on_all_interfaces() -> NatsServer {
        Self::start_on("0.0.0.0")
    }

    fn start_on(bind: &'static str) -> NatsServer {
        let dir = tempfile::tempdir().expect("a temporary directory for JetStream");
        let port = free_port();
        let mut server = NatsServer {
            port,
            bind,
            dir,
            child: None,
            starts: 0,
            config: None,
            tls: false,
        };
        server.spawn();
        server
    }

    /// Starts one that asks for a user and password and applies each user's permissions.
    pub fn start_with_users(users: &[NatsUser]) -> NatsServer {
        Self::start_with_config(auth_config(users), false)
    }

    /// Like [`NatsServer::start_with_users`], and it asks every client for TLS, showing the
    /// server certificate `ca` signed (its [`NatsServer::url`] is then `tls://`).
    pub fn start_tls_with_users(users: &[NatsUser], ca: &TestCa) -> NatsServer {
        let config = format!(
            "{}tls {{\n  cert_file: {:?}\n  key_file: {:?}\n  timeout: 5\n}}\n",
            auth_config(users),
            ca.server_cert().display().to_string(),
            ca.server_key().display().to_string(),
        );
        Self::start_with_config(config, true)
    }

    /// Mutual TLS: like [`NatsServer::start_tls_with_users`], and every client must show a
    /// certificate `ca` signed, whose subject names its user (`verify_and_map`; the users
    /// have no password, see [`TestCa::client_cert`]).
    pub fn start_mtls_with_users(users: &[NatsUser], ca: &TestCa) -> NatsServer {
        let config = format!(
            "{}tls {{\n  cert_file: {:?}\n  key_file: {:?}\n  ca_file: {:?}\n  verify_and_map: true\n  timeout: 5\n}}\n",
            auth_config(users),
            ca.server_cert().display().to_string(),
            ca.server_key().display().to_string(),
            ca.ca_pem().display().to_string(),
        );
        Self::start_with_config(config, true)
    }

    fn start_with_config(config: String, tls: bool) -> NatsServer {
        let dir = tempfile::tempdir().expect("a temporary directory for JetStream");
        let port = free_port();
        let path = dir.path().join("nats.conf");
        std::fs::write(&path, config).expect("the nats-server config");
        let mut server = NatsServer {
            port,
            bind: "127.0.0.1",
            dir,
            child: None,
            starts: 0,
            config: Some(path),
            tls,
        };
        server.spawn();
        server
    }

    /// `nats://127.0.0.1:PORT`, or `tls://127.0.0.1:PORT` for a server that asks for TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "tls" } else { "nats" };
        format!("{scheme}://127.0.0.1:{}", self.port)
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
        let mut command = Command::new(nats_server_binary());
        if let Some(config) = &self.config {
            command.arg("-c").arg(config);
        }
        let child = command
            .args(["-a", self.bind, "-p", &self.port.to_string(), "-js", "-sd"])
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

/// A throwaway certificate authority and a server certificate it signed for `127.0.0.1` and
/// `localhost` (ECDSA P-256, valid two days), made with the `openssl` command line in a
/// temporary directory removed on drop. No network: `openssl` only writes files.
pub struct TestCa {
    dir: tempfile::TempDir,
}

impl TestCa {
    /// Makes the CA and the server certificate, or panics saying what failed (with how to
    /// install `openssl` when it is missing).
    pub fn new() -> TestCa {
        let dir = tempfile::tempdir().expect("a temporary directory for the test CA");
        let config = dir.path().join("openssl.cnf");
        // Our own config, so the system's defaults never add or duplicate an extension.
        std::fs::write(
            &config,
            "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = ax-code test\n\
             [ca]\nbasicConstraints = critical, CA:TRUE\n\
             keyUsage = critical, keyCertSign, cRLSign\nsubjectKeyIdentifier = hash\n\
             [server]\nbasicConstraints = critical, CA:FALSE\n\
             keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n\
             subjectAltName = IP:127.0.0.1, DNS:localhost\n\
             subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n",
        )
        .expect("the openssl config");
        let ca = TestCa { dir };
        let path = |name: &str| ca.dir.path().join(name).display().to_string();
        let key = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509", "-config", &path("openssl.cnf")][..],
                &key,
                &["-keyout", &path("ca.key"), "-out", &path("ca.pem")],
                &[
                    "-days",
                    "2",
                    "-subj",
                    "/CN=ax-code test CA",
                    "-extensions",
                    "ca",
                ],
            ]
            .concat(),
        );
        openssl(
            &[
                &["req", "-new", "-config", &path("openssl.cnf")][..],
                &key,
                &["-keyout", &path("server.key"), "-out", &path("server.csr")],
                &["-subj", "/CN=localhost"],
            ]
            .concat(),
        );
        openssl(&[
            "x509",
            "-req",
            "-in",
            &path("server.csr"),
            "-CA",
            &path("ca.pem"),
            "-CAkey",
            &path("ca.key"),
            "-set_serial",
            "2",
            "-days",
            "2",
            "-extfile",
            &path("openssl.cnf"),
            "-extensions",
            "server",
            "-out",
            &path("server.pem"),
        ]);
        ca
    }

    /// A client certificate the CA signs for NATS user `user` (its subject alternative name
    /// `DNS:<user>`, which a `verify_and_map` server takes as the user; extended key usage
    /// client authentication), made once per user: what a client passes with `--nats-cert`
    /// and `--nats-key`.
    pub fn client_cert(&self, user: &str) -> crate::nats::ClientCert {
        let path = |name: &str| self.dir.path().join(name).display().to_string();
        let cert = self.dir.path().join(format!("client-{user}.pem"));
        let key = self.dir.path().join(format!("client-{user}.key"));
        if !cert.exists() {
            let ext = path(&format!("client-{user}.cnf"));
            std::fs::write(
                &ext,
                format!(
                    "[client]\nbasicConstraints = critical, CA:FALSE\n\
                     keyUsage = critical, digitalSignature\nextendedKeyUsage = clientAuth\n\
                     subjectAltName = DNS:{user}\nsubjectKeyIdentifier = hash\n\
                     authorityKeyIdentifier = keyid\n"
                ),
            )
            .expect("the client certificate's extensions");
            let csr = path(&format!("client-{user}.csr"));
            openssl(&[
                "req",
                "-new",
                "-config",
                &path("openssl.cnf"),
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &key.display().to_string(),
                "-out",
                &csr,
                "-subj",
                &format!("/CN={user}"),
            ]);
            openssl(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &path("ca.pem"),
                "-CAkey",
                &path("ca.key"),
                "-days",
                "2",
                "-extfile",
                &ext,
                "-extensions",
                "client",
                "-out",
                &cert.display().to_string(),
            ]);
        }
        crate::nats::ClientCert { cert, key }
    }

    /// The CA's certificate (PEM): what a client passes with `--nats-ca`.
    pub fn ca_pem(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server certificate the CA signed (PEM).
    pub fn server_cert(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The server certificate's private key (PEM).
    pub fn server_key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }
}

impl Default for TestCa {
    fn default() -> TestCa {
        TestCa::new()
    }
}

/// Runs `openssl args`, or panics with its output (and how to install it when missing).
fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run openssl ({e}): run `bash scripts/setup-test-env.sh` (it installs \
                 Debian's package `openssl`)"
            )
        });
    assert!(
        out.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
