//! The ax-code backend: the session store (SQLite), the agent runner, the HTTP API with its
//! event stream, credential and exposure checks, the gateway mount and the Control UI.
//!
//! A backend serves one project directory. Embed it with [`start`]; it listens until
//! [`RunningServer::shutdown`] (or until the handle is dropped, which stops it less politely).
//!
//! ```no_run
//! # async fn demo() -> Result<(), ax_server::StartError> {
//! let mut config = ax_server::ServerConfig::new("/path/to/project", "/tmp/ax-data");
//! config.bind = "127.0.0.1:0".parse().unwrap(); // any free loopback port
//! let server = ax_server::start(config).await?;
//! println!("{} (token from server.token())", server.url());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! API notes beyond the route table of docs/backend.md §3 (wire types in `ax_protocol`):
//! - `GET /health?proof=<64 hex>` (no credential) adds `proof`, HMAC-SHA256 keyed by the
//!   credential over `ax-code-server-proof-v2:<nonce>@<address>`, where the address is the
//!   server's own on the accepted socket: the backend proves it holds the credential before a
//!   client sends it, so a process squatting a dead backend's port, or relaying the check to
//!   the real backend from another address, never receives it (`ax_client` checks this against
//!   the address it connected to; see its docs for the residual window).
//!   It also adds `screenProof`, the same HMAC keyed by the screen credential
//!   ([`RunningServer::screen_token`], gateway only, at most `operator.write`), which is what
//!   `ax-code mcp screen` holds and checks.
//! - `POST /signin/code` (credential) mints a one-time Control UI sign-in code; `POST /signin`
//!   `{"code"}` (no credential) exchanges it once, within [`ServerConfig::sign_in_ttl`], for
//!   `{"token"}` (see `signin`).
//! - `POST /session` answers 201 with the `Session`; `GET /session?limit=N` gives a page,
//!   most recent activity (`updated`) first. `PATCH /session/{id}` with `{"title"}` renames
//!   (strict body, 1 to 200 characters) and publishes `session.updated`. An untitled session
//!   takes a title from the first line of its first accepted prompt.
//! - One backend per project: [`start`] takes the project's lock ([`project::ProjectLock`])
//!   and fails with [`StartError::Lock`] naming the running backend.
//! - `POST /session/{id}/prompt` answers 202 with `PromptAccepted` (the stored user message,
//!   the reply message ID, the pending `Permission` unless the session said `always`). The
//!   text parts, joined with newlines, are the command line. File parts name files inside the
//!   project (relative, or absolute inside it; no `..`; symlinks must resolve inside); the
//!   command gets them as `"$1"`, `"$2"`, … and in `AX_ATTACHMENTS` (one path per line;
//!   paths with control characters are refused). They are checked again when the command
//!   starts: one that resolves elsewhere by then (e.g. swapped for a symlink) stops the run.
//!   A prompt while the session waits for approval or runs is 409 (no queue).
//! - `POST /session/{id}/permission/{pid}` answers with the `Permission` in its new state once
//!   the run took the reply; `POST /session/{id}/abort` answers `{"aborted":bool}` after the
//!   run has ended (process group killed), or 409 if the run has not ended within
//!   [`Limits::abort_wait`] (it was told to stop; `DELETE` of its session is then refused too).
//! - `/event`: `id: N` and `data: <EventEnvelope JSON>` per event, no `event:` line; comment
//!   heartbeats (`: heartbeat`); `Last-Event-ID` resumes from a ring of the last
//!   [`ServerConfig::event_ring`] events, or the first event is `{"type":"reset"}`.
//! - Errors are `{"error":{"code","message"}}`: 400 `bad_request`/`bad_attachment`, 401
//!   `unauthorized`, 403 `forbidden` (Host/Origin), 404 `not_found`, 409 `conflict`, 413
//!   `too_large`.
//!
//! Tour: [`store`] (schema, migrations, queries) · `turn` (a prompt's turn: the one
//! lifecycle and the ACP agents' turns, the `shell` agent's too; the agents and the one process
//! module are in `ax_agents`) · `turn_slots` (the run and agent slots the app state holds) ·
//! `operator_terminal` (the gateway's operator terminal) · `api` (routes) · `sse` (`/event`) ·
//! `events` (ID'd ring + fan-out) · `auth` (Host/Origin, bearer) · the accept loop is the
//! `ax_listen` crate's (sibling loopback binds, timeouts, the connection cap; the hub's too) ·
//! [`registry`] (`servers/`, `screen/`) ·
//! [`project`] (project root, one backend per project).

use std::{
    fmt,
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use axum::{Router, middleware, routing::get};
use tokio::task::JoinHandle;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

mod agent_config;
mod agent_screen;
mod api;
mod attachments;
mod auth;
mod control_ui;
mod error;
mod events;
mod files;
mod gateway_mount;
mod ids;
pub mod kept;
mod markdown;
mod operator_terminal;
pub mod project;
mod queue;
mod queue_api;
mod queue_gate;
mod recovered;
pub mod registry;
mod request;
mod secure;
mod sessions;
mod signin;
mod sse;
mod state;
pub mod store;
mod turn;
mod turn_error;
mod turn_outcome;
mod turn_slots;

pub use ax_core::Secret;
pub use ax_listen::BindError;
pub use ax_protocol::local::data_dir as default_data_dir;
pub use project::project_root;
pub use state::Limits;

/// How to run a backend.
#[derive(Clone)]
pub struct ServerConfig {
    /// The project directory served (canonicalized at start; must exist).
    pub project_dir: PathBuf,
    /// The data directory (database, `servers/` registry); created 0700.
    pub data_dir: PathBuf,
    /// Where to listen; port 0 picks a free one. Loopback unless `allow_remote`.
    pub bind: SocketAddr,
    /// The bearer credential; `None` generates a fresh random one.
    pub token: Option<Secret>,
    /// Write a `servers/` record (project, URL, token, pid) while running.
    pub register: bool,
    /// Allow binding a non-loopback address. The Host check stays on: the bound address, the
    /// loopback names and [`ServerConfig::allowed_hosts`].
    pub allow_remote: bool,
    /// Further names accepted in the Host header (`--allow-host`), e.g. the name a
    /// TLS-terminating proxy forwards; each is accepted alone and with the port.
    pub allowed_hosts: Vec<String>,
    /// How many recent events `/event` keeps for `Last-Event-ID` resumption.
    pub event_ring: usize,
    /// Interval of SSE heartbeat comments.
    pub heartbeat: Duration,
    /// Request bounds.
    pub limits: Limits,
    /// The named agents sessions can be created with (`POST /session {"agent"}`), and the
    /// default one. The presets alone unless the caller loads the user's config file.
    pub agents: ax_acp::AgentsConfig,
    /// How long a one-time Control UI sign-in code stays valid (`POST /signin/code`).
    pub sign_in_ttl: Duration,
    /// The `ax-code` binary each ACP session runs as its agent's session-scoped `screen` MCP
    /// server (`mcp screen --from-env`, docs/agents.md §8); `None` hands agents no screen
    /// server. Default: this process's own executable.
    pub screen_exe: Option<PathBuf>,
}

impl ServerConfig {
    /// Defaults: `127.0.0.1:0`, generated token, registered, 4096 events kept, 10 s heartbeats,
    /// the `shell` agent.
    pub fn new(project_dir: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            project_dir: project_dir.into(),
            data_dir: data_dir.into(),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            register: true,
            allow_remote: false,
            allowed_hosts: Vec::new(),
            event_ring: 4096,
            heartbeat: Duration::from_secs(10),
            limits: Limits::default(),
            agents: ax_acp::AgentsConfig::builtin(),
            sign_in_ttl: Duration::from_secs(60),
            screen_exe: std::env::current_exe().ok(),
        }
    }
}

/// Written out only because the `shell` agent is a trait object without `Debug` (shown by its
/// name); the token is a [`Secret`] and prints redacted like everywhere else.
impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("project_dir", &self.project_dir)
            .field("data_dir", &self.data_dir)
            .field("bind", &self.bind)
            .field("token", &self.token)
            .field("register", &self.register)
            .field("allow_remote", &self.allow_remote)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("event_ring", &self.event_ring)
            .field("heartbeat", &self.heartbeat)
            .field("limits", &self.limits)
            .field("agents", &self.agents)
            .field("sign_in_ttl", &self.sign_in_ttl)
            .finish()
    }
}

/// Why a backend could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The project directory does not exist, cannot be resolved, or is not a directory.
    // The cause is in the message, not also a `source`, so a chain prints it once.
    #[error("project directory {path}: {error}")]
    Project {
        /// The directory as given.
        path: PathBuf,
        /// Why it cannot be used.
        error: std::io::Error,
    },
    /// Another backend serves the project (one backend per project).
    #[error(transparent)]
    Lock(#[from] project::LockError),
    /// A non-loopback listen address without the explicit remote flag.
    #[error(
        "refusing to listen on {0}: not a loopback address; pass the explicit remote flag \
         (and keep the credential secret) to expose the backend"
    )]
    NotLoopback(SocketAddr),
    /// The given credential is too short, too long, or has unusable characters.
    #[error("the credential must be 16 to 512 printable ASCII characters without spaces")]
    BadToken,
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The listeners could not be set up.
    #[error(transparent)]
    Bind(#[from] ax_listen::BindError),
    /// An `--allow-host` value that is not a host name or address.
    #[error("--allow-host {0:?}: expected a host name or address, optionally with :PORT")]
    BadHostName(String),
    /// The server or screen record could not be written.
    #[error("cannot register the backend in the data directory: {0}")]
    Register(std::io::Error),
    /// No credential was given and none can be generated.
    #[error("cannot generate a credential: {0}")]
    Random(#[from] ax_core::RandomError),
}

/// A fresh random credential (43 characters of `[0-9A-Za-z]`, about 256 bits); an error when
/// the OS random source fails, never a guessable value.
pub fn generate_token() -> Result<Secret, ax_core::RandomError> {
    ax_core::random::random_alnum(43).map(Secret::new)
}

/// The screen credential for the backend credential `token`: lowercase hex of
/// HMAC-SHA256(key = `token`, message = `"ax-code-screen-credential-v1"`). The gateway accepts
/// it granting at most `operator.read` and `operator.write`; the HTTP API refuses it.
pub fn screen_credential(token: &str) -> Secret {
    ax_protocol::proof::screen_credential(token)
}

/// The Control UI link for a one-time sign-in `code` of the backend at `url`. For a backend on
/// this machine (`127.0.0.1`, `[::1]` or `localhost`) the link opens a fresh origin,
/// `http://<label>.localhost:PORT/` with a random 64-bit label: the browser's cache, service
/// workers and storage are per origin, so nothing another OS user served while holding the
/// port (a script cached for a year, a service worker) can run in the page the link opens
/// (docs/SECURITY.md). Any other URL (a proxy name) keeps its origin.
pub fn sign_in_link(url: &str, code: &str) -> Result<String, ax_core::RandomError> {
    let url = url.trim_end_matches('/');
    let port = ["http://127.0.0.1:", "http://[::1]:", "http://localhost:"]
        .iter()
        .find_map(|prefix| url.strip_prefix(prefix))
        .filter(|port| port.parse::<u16>().is_ok());
    Ok(match port {
        Some(port) => {
            let label = ax_core::random::random_hex(8)?;
            format!("http://{label}.localhost:{port}/#code={code}")
        }
        None => format!("{url}/#code={code}"),
    })
}

fn token_ok(token: &str) -> bool {
    (16..=512).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_graphic())
}

/// The base URL clients on this machine use for `addr`.
fn local_url(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => format!("http://127.0.0.1:{}", addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => format!("http://[::1]:{}", addr.port()),
        IpAddr::V4(ip) => format!("http://{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("http://[{ip}]:{}", addr.port()),
    }
}

/// Whether `name` can be a Host header value: letters, digits, `.-_:[]`, bounded.
fn host_name_ok(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:[]".contains(&b))
}

/// Each allowed name alone and with the port, lowercase.
fn named_hosts(port: u16, names: &[String]) -> Vec<String> {
    names
        .iter()
        .flat_map(|name| {
            let name = name.to_ascii_lowercase();
            [format!("{name}:{port}"), name]
        })
        .collect()
}

/// The Host values served: the loopback names (when reachable over loopback), the bound address
/// (when it is a specific one) and each allowed name, alone and with the port; lowercase.
fn served_hosts(addr: SocketAddr, extra: &[String]) -> Vec<String> {
    let port = addr.port();
    let mut hosts = Vec::new();
    if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(|h| format!("{h}:{port}")));
    }
    if !addr.ip().is_unspecified() {
        let bound = local_url(addr);
        hosts.push(bound.trim_start_matches("http://").to_owned());
    }
    hosts.extend(named_hosts(port, extra));
    hosts.sort();
    hosts.dedup();
    hosts
}

/// A running backend. Its `Debug` shows the credential redacted.
#[derive(Debug)]
pub struct RunningServer {
    url: String,
    token: Secret,
    addr: SocketAddr,
    project_dir: PathBuf,
    stop: CancellationToken,
    tasks: TaskTracker,
    server: Option<JoinHandle<std::io::Result<()>>>,
    registration: Option<registry::Registration>,
    sign_in: Arc<signin::Codes>,
    /// Checkpointed at a clean stop, after everything else stopped.
    store: store::Store,
    /// Dropped last: the project is served until the rest has stopped.
    _lock: project::ProjectLock,
}

impl RunningServer {
    /// Base URL, e.g. `http://127.0.0.1:4096` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bearer credential.
    pub fn token(&self) -> &Secret {
        &self.token
    }

    /// The screen credential: lowercase hex of HMAC-SHA256(key = [`RunningServer::token`],
    /// message = `"ax-code-screen-credential-v1"`). The gateway accepts it granting at most
    /// `operator.read` and `operator.write`; the HTTP API answers it 401.
    pub fn screen_token(&self) -> Secret {
        crate::screen_credential(self.token.expose())
    }

    /// The address the backend listens on (the port is real even when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The canonical project directory served.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// A fresh one-time code for the Control UI link `URL/#code=CODE`: the page exchanges it
    /// once, within [`ServerConfig::sign_in_ttl`], for the credential (`POST /signin`), so the
    /// credential itself never appears in a URL or the browser's history.
    pub fn sign_in_code(&self) -> Result<Secret, ax_core::RandomError> {
        self.sign_in.mint(std::time::Instant::now())
    }

    /// A fresh one-time sign-in link with a code of [`RunningServer::sign_in_code`], on an
    /// origin of its own ([`sign_in_link`]).
    pub fn sign_in_link(&self) -> Result<String, ax_core::RandomError> {
        let code = self.sign_in_code()?;
        sign_in_link(&self.url, code.expose())
    }

    /// The `servers/` record, when registered.
    pub fn registration_path(&self) -> Option<&Path> {
        self.registration.as_ref().map(|r| r.path())
    }

    /// The `screen/` record (screen credential only), when registered.
    pub fn screen_record_path(&self) -> Option<&Path> {
        self.registration.as_ref().map(|r| r.screen_path())
    }

    /// Stops accepting, ends event streams, interrupts running commands (their messages get
    /// an `interrupted` part), waits for all of it, and removes the registry record.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        self.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(15), self.tasks.wait()).await;
        if let Some(server) = self.server.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
        }
        // Everything stored goes into the database file, so that file alone is the whole
        // store even when a client's idle connection still holds the backend's state (and
        // with it the store's connections) past this point.
        if let Err(e) = self.store.checkpoint().await {
            tracing::debug!(error = %e, "the final WAL checkpoint did not run");
        }
        self.registration.take();
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Opens the store, recovers interrupted runs, binds, and serves in the background.
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    let project_dir =
        std::fs::canonicalize(&config.project_dir).map_err(|error| StartError::Project {
            path: config.project_dir.clone(),
            error,
        })?;
    if !project_dir.is_dir() {
        return Err(StartError::Project {
            path: project_dir,
            error: std::io::Error::other("not a directory"),
        });
    }
    if !config.bind.ip().is_loopback() && !config.allow_remote {
        return Err(StartError::NotLoopback(config.bind));
    }
    if let Some(bad) = config.allowed_hosts.iter().find(|h| !host_name_ok(h)) {
        return Err(StartError::BadHostName(bad.clone()));
    }
    let token = match config.token {
        Some(t) if token_ok(t.expose()) => t,
        Some(_) => return Err(StartError::BadToken),
        None => generate_token()?,
    };

    // One backend per project, held until this one is gone.
    let lock = project::ProjectLock::acquire(&config.data_dir, &project_dir)?;

    let data_dir = config.data_dir.clone();
    let directory = project_dir.to_string_lossy().into_owned();
    let agent_tag_scope = turn::acp::tag_scope(&config.data_dir, &project_dir);
    let left_scope = agent_tag_scope.clone();
    let (store, project_id, recovery_events) = tokio::task::spawn_blocking(move || {
        let store = store::Store::open(&data_dir)?;
        let (project_id, recovery_events) = store.write_blocking(|c| {
            let id = store::project_id(c, &directory)?;
            let recovered =
                store::recover_interrupted(c, id, ids::now_ms(), ax_agents::process::owner_alive)?;
            let mut told = recovered::events(c, id, &recovered)?;
            let paused = store::pause_waiting_queues(c, id, queue::RESTART_REASON)?;
            if !paused.is_empty() {
                tracing::warn!(
                    queues = paused.len(),
                    "prompt queues wait for the person after a restart"
                );
            }
            told.extend(recovered::paused_queues(c, &paused)?);
            if recovered.runs > 0 {
                tracing::warn!(
                    runs = recovered.runs,
                    "marked runs cut short by a restart as interrupted"
                );
            }
            let terminals =
                store::take_orphaned_process_groups(c, ax_agents::process::owner_alive)?;
            for (pgid, start) in recovered.process_groups.into_iter().chain(terminals) {
                if ax_agents::process::kill_orphaned_group(pgid, start) {
                    tracing::warn!(pgid, "killed a command a crashed backend left running");
                }
            }
            turn::acp::kill_left_behind(&left_scope);
            Ok((id, told))
        })?;
        Ok::<_, store::StoreError>((store, project_id, recovery_events))
    })
    .await
    .map_err(|e| store::StoreError::Task(e.to_string()))??;

    let listeners = ax_listen::bind(config.bind).await?;
    let addr = listeners[0]
        .local_addr()
        .map_err(|source| ax_listen::BindError::Bind {
            addr: config.bind,
            source,
        })?;
    let url = local_url(addr);
    // Best effort: only the refusal message of a second backend reads it.
    let _ = lock.record(&project::LockHolder {
        pid: std::process::id(),
        url: url.clone(),
    });
    let allowed_hosts = served_hosts(addr, &config.allowed_hosts);

    let stop = CancellationToken::new();
    let tasks = TaskTracker::new();
    let app = Arc::new(state::App {
        store,
        project_id,
        project_dir: project_dir.clone(),
        bus: events::EventBus::new(config.event_ring),
        agents: config.agents,
        agent_tag_scope,
        agent_slots: Default::default(),
        screens: Arc::new(agent_screen::AgentScreens::new(
            config.screen_exe,
            url.clone(),
        )),
        token: token.clone(),
        screen_token: crate::screen_credential(token.expose()),
        allowed_hosts,
        proxied_hosts: named_hosts(addr.port(), &config.allowed_hosts),
        limits: config.limits,
        heartbeat: config.heartbeat,
        runs: Default::default(),
        queue_gates: Default::default(),
        after_turn: queue::after_turn,
        tasks: tasks.clone(),
        shutdown: stop.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    });
    let kept_store = app.store.clone();

    // What the recovery ended, told before anything is served: the first events of this
    // process, which a client reading from its start (the hub's join) forwards.
    for event in recovery_events {
        app.bus.publish(event);
    }
    {
        // Agent processes stop with the backend (their sessions reopen at the next prompt).
        let app = app.clone();
        let stopping = stop.clone();
        tasks.spawn(async move {
            stopping.cancelled().await;
            turn::acp::stop_all(&app).await;
        });
    }
    let sign_in = Arc::new(signin::Codes::new(config.sign_in_ttl));
    let gateway = gateway_mount::gateway(&app)?;
    app.screens.attach(&gateway);
    let router = Router::new()
        .route("/health", get(api::health))
        .merge(api::protected(app.clone()))
        .merge(gateway_mount::router(app.clone(), gateway))
        .merge(control_ui::router())
        .merge(signin::router(app.clone(), sign_in.clone()))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(middleware::from_fn_with_state(
            app.clone(),
            auth::host_origin,
        ))
        .layer(middleware::from_fn(api::log_request))
        .with_state(app);
    let accepting = ax_listen::Limits {
        header_read_timeout: config.limits.header_read_timeout,
        unauthenticated_connections: config.limits.unauthenticated_connections,
    };
    let server = tokio::spawn(ax_listen::serve(listeners, router, accepting, stop.clone()));

    let registration = if config.register {
        let record = ax_protocol::local::ServerRecord {
            project: project_dir.to_string_lossy().into_owned(),
            url: url.clone(),
            token: token.clone(),
            pid: std::process::id(),
        };
        match registry::Registration::create(&config.data_dir, &record, addr.port()) {
            Ok(r) => Some(r),
            Err(e) => {
                stop.cancel();
                return Err(StartError::Register(e));
            }
        }
    } else {
        None
    };

    Ok(RunningServer {
        url,
        token,
        addr,
        project_dir,
        stop,
        tasks,
        server: Some(server),
        registration,
        sign_in,
        store: kept_store,
        _lock: lock,
    })
}

/// Sessions of `project_dir` read straight from the store, read-only, most recently active
/// first (for `ax-code session list` when no backend runs). An empty list when nothing was
/// stored.
pub fn list_sessions_offline(
    data_dir: &Path,
    project_dir: &Path,
) -> Result<Vec<ax_protocol::Session>, store::StoreError> {
    let Some(store) = store::Store::open_read_only(data_dir)? else {
        return Ok(Vec::new());
    };
    let canonical = std::fs::canonicalize(project_dir).unwrap_or_else(|_| project_dir.to_owned());
    let directory = canonical.to_string_lossy().into_owned();
    store.read_blocking(|c| match store::find_project(c, &directory)? {
        Some(project) => store::list_sessions(c, project, None),
        None => Ok(Vec::new()),
    })
}
