//! Machines (a real backend in its own data directory and project, joined over a real
//! nats-server), hubs, and a small reader of the hub's server-sent events.

#![allow(dead_code)]

pub mod terminal;
pub mod ui;

use std::{future::Future, net::SocketAddr, time::Duration};

use ax_client::Client;
use ax_core::Secret;
use ax_hub::{
    MachineName,
    hub::{HubConfig, MachineSessions, MachineView, RunningHub},
    join::{Join, JoinConfig},
    testing::NatsServer,
    wire::MachineEvent,
};
use ax_server::{RunningServer, ServerConfig};
use futures_util::StreamExt;
use tempfile::TempDir;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(30);
/// The machines' heartbeat: a hub shows one offline after three are missed.
pub const HEARTBEAT: Duration = Duration::from_millis(300);
/// The hubs' bearer credential.
pub const HUB_TOKEN: &str = "hub-test-credential-0123456789";

/// Runs `f` with the test-wide timeout.
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for: {what}"))
}

/// Logs to the test's output when `RUST_LOG` is set (for a failing test's story).
pub fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// One machine: a backend and its join.
pub struct Machine {
    pub name: MachineName,
    pub project: TempDir,
    pub data: TempDir,
    pub server: Option<RunningServer>,
    pub client: Client,
    pub join: Option<Join>,
    nats_url: String,
    credentials: Option<(String, Secret)>,
}

impl Machine {
    /// A backend on a fresh project and data directory, joined as `name`.
    pub async fn start(nats: &NatsServer, name: &str) -> Machine {
        Machine::start_with(nats, name, None, |_| {}).await
    }

    /// Like [`Machine::start`], joining with a NATS user and password.
    pub async fn start_as(
        nats: &NatsServer,
        name: &str,
        credentials: Option<(String, Secret)>,
    ) -> Machine {
        Machine::start_with(nats, name, credentials, |_| {}).await
    }

    /// The general form: NATS credentials, and `configure` applied to the backend's config
    /// (its agents).
    pub async fn start_with(
        nats: &NatsServer,
        name: &str,
        credentials: Option<(String, Secret)>,
        configure: impl FnOnce(&mut ServerConfig),
    ) -> Machine {
        logs();
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let (server, client) = start_backend(&project, &data, configure).await;
        let mut machine = Machine {
            name: MachineName::new(name).unwrap(),
            project,
            data,
            server: Some(server),
            client,
            join: None,
            nats_url: nats.url(),
            credentials,
        };
        machine.join().await;
        machine
    }

    async fn join(&mut self) {
        self.join_with(|_| {}).await;
    }

    /// Joins again (the same backend), with `tweak` applied to the join's config: a test's
    /// sharing of `ui.command`s, a shorter terminal lease.
    pub async fn rejoin(&mut self, tweak: impl FnOnce(&mut JoinConfig)) {
        drop(self.join.take());
        self.join_with(tweak).await;
    }

    async fn join_with(&mut self, tweak: impl FnOnce(&mut JoinConfig)) {
        let server = self.server.as_ref().expect("a running backend");
        let mut config = JoinConfig::new(
            self.nats_url.clone(),
            self.name.clone(),
            server.url(),
            server.token().clone(),
            server.project_dir().display().to_string(),
        );
        config.heartbeat = HEARTBEAT;
        config.nats.credentials = self.credentials.clone();
        tweak(&mut config);
        self.join = Some(ax_hub::join::start(config).await.expect("the join starts"));
    }

    /// The backend and its join stop as a crash would (no goodbye on NATS).
    pub async fn crash(&mut self) {
        drop(self.join.take());
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }

    /// A new backend process on the same data directory and project, joined again.
    pub async fn restart(&mut self) {
        let (server, client) = start_backend(&self.project, &self.data, |_| {}).await;
        self.server = Some(server);
        self.client = client;
        self.join().await;
    }

    pub fn project_dir(&self) -> String {
        self.server
            .as_ref()
            .expect("a running backend")
            .project_dir()
            .display()
            .to_string()
    }
}

async fn start_backend(
    project: &TempDir,
    data: &TempDir,
    configure: impl FnOnce(&mut ServerConfig),
) -> (RunningServer, Client) {
    let mut config = ServerConfig::new(project.path(), data.path());
    config.register = false;
    configure(&mut config);
    let server = ax_server::start(config).await.expect("backend starts");
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    (server, client)
}

/// A hub on a free loopback port.
pub async fn start_hub(nats: &NatsServer) -> RunningHub {
    start_hub_as(nats, None).await
}

/// A hub connecting to NATS with a user and password.
pub async fn start_hub_as(nats: &NatsServer, credentials: Option<(String, Secret)>) -> RunningHub {
    let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut config = HubConfig::new(nats.url(), bind, Secret::new(HUB_TOKEN.to_owned()));
    config.nats.credentials = credentials;
    ax_hub::hub::start(config).await.expect("the hub starts")
}

/// Talks to a hub's HTTP API.
#[derive(Clone)]
pub struct HubClient {
    pub base: String,
    pub http: reqwest::Client,
}

impl HubClient {
    pub fn new(base: impl Into<String>) -> HubClient {
        HubClient {
            base: base.into(),
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
        }
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(HUB_TOKEN)
            .send()
            .await
            .expect("the hub answers")
    }

    pub async fn post(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(HUB_TOKEN)
            .json(&body)
            .send()
            .await
            .expect("the hub answers")
    }

    /// `GET path` that must answer `200` with JSON.
    pub async fn json<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        let response = self.get(path).await;
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "GET {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
    }

    pub async fn machines(&self) -> Vec<MachineView> {
        self.json("/machine").await
    }

    pub async fn sessions(&self) -> Vec<MachineSessions> {
        self.json("/session").await
    }

    /// Polls `GET /machine` until `check` holds for the machine named `name`.
    pub async fn wait_machine(&self, name: &str, check: impl Fn(&MachineView) -> bool) {
        within(&format!("machine {name} as expected on the hub"), async {
            loop {
                if self
                    .machines()
                    .await
                    .iter()
                    .any(|m| m.name.as_str() == name && check(m))
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
    }

    /// The hub's live events, from after `after` (a JetStream sequence) when given.
    pub async fn events(&self, query: &str, last_event_id: Option<u64>) -> HubEvents {
        let mut request = self
            .http
            .get(format!("{}/event{query}", self.base))
            .bearer_auth(HUB_TOKEN);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.expect("the hub answers /event");
        assert_eq!(response.status(), 200, "GET /event{query}");
        HubEvents::from_response(response)
    }
}

type Body = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static>,
>;

/// Server-sent events from a hub: `(id, event)`, the id being the JetStream sequence.
pub struct HubEvents {
    body: Body,
    buffer: String,
}

impl HubEvents {
    /// Reads the events of a `GET /event` answer.
    pub fn from_response(response: reqwest::Response) -> HubEvents {
        HubEvents {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next event (keep-alive comments skipped), within the test-wide timeout.
    pub async fn next(&mut self) -> (u64, MachineEvent) {
        self.try_next()
            .await
            .expect("the hub's event stream stays open")
    }

    /// The next event, or `None` when the hub ended the stream.
    pub async fn try_next(&mut self) -> Option<(u64, MachineEvent)> {
        within("the next event from the hub", async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let mut id = None;
                    let mut data = String::new();
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("id:") {
                            id = Some(v.trim().parse::<u64>().expect("a numeric id"));
                        } else if let Some(v) = line.strip_prefix("data:") {
                            data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        }
                    }
                    if let Some(id) = id {
                        let event: MachineEvent = serde_json::from_str(&data)
                            .unwrap_or_else(|e| panic!("bad event {data}: {e}"));
                        return Some((id, event));
                    }
                    continue;
                }
                match self.body.next().await {
                    Some(Ok(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                    Some(Err(_)) | None => return None,
                }
            }
        })
        .await
    }

    /// The next event matching `pred`, skipping others.
    pub async fn next_matching(
        &mut self,
        mut pred: impl FnMut(&MachineEvent) -> bool,
    ) -> (u64, MachineEvent) {
        loop {
            let (id, event) = self.next().await;
            if pred(&event) {
                return (id, event);
            }
        }
    }
}

/// The title of a `session.created` event, if it is one.
pub fn created_title(event: &MachineEvent) -> Option<String> {
    match &event.event.event {
        ax_protocol::Event::SessionCreated { session } => Some(session.title.clone()),
        _ => None,
    }
}

/// The next `ui.command` event of a hub's `GET /ui-command` answer.
pub async fn next_ui_command(
    body: &mut (impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    buffer: &mut String,
) -> serde_json::Value {
    use futures_util::StreamExt;
    within("a ui.command from the hub", async {
        loop {
            if let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                if block.lines().any(|l| l == "event: ui.command") {
                    let data: String = block
                        .lines()
                        .filter_map(|l| l.strip_prefix("data: "))
                        .collect();
                    return serde_json::from_str(&data).unwrap();
                }
                continue;
            }
            let chunk = body.next().await.expect("the stream stays open").unwrap();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
}
