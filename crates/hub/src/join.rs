//! The backend side: `ax-code serve --join nats://HOST:PORT` (docs/hub.md §3).
//!
//! Three tasks share one NATS connection, made *out* from the backend (so it works behind NAT
//! and firewalls): the event pump reads the backend's own `/event` stream and publishes each
//! event into JetStream with a message ID of `<boot>-<event id>`, waiting for the stream's
//! acknowledgement and retrying the same event until it comes, so a NATS outage delays events
//! but loses none, and a retry whose first try did land is dropped by JetStream's duplicate
//! window instead of shown twice. While it waits, later events wait in the backend's event
//! ring (`Last-Event-ID`), bounded there. The heartbeat publishes the machine record and,
//! when something changed, the session snapshot. The request server answers the hub's
//! requests by calling the backend's own HTTP API on loopback, so every rule the backend
//! applies (approvals, human priority, limits) applies to requests from the hub unchanged.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use async_nats::{HeaderMap, jetstream};
use ax_client::{Client, ClientError, Secret};
use futures_util::StreamExt;
use tokio::{sync::Semaphore, task::JoinHandle};

use crate::{
    MachineName,
    subject::{EVENTS_STREAM, STATE_STREAM},
    wire::{
        MAX_SNAPSHOT_SESSIONS, MachineEvent, MachineRecord, Reply, ReplyError, Request,
        SessionsSnapshot, decode,
    },
};

/// How a backend joins.
#[derive(Debug, Clone)]
pub struct JoinConfig {
    /// `nats://HOST:PORT`.
    pub nats_url: String,
    /// NATS user and password, when the server asks for them (docs/hub.md §5).
    pub credentials: Option<(String, Secret)>,
    /// This machine's name.
    pub name: MachineName,
    /// The backend's own base URL (loopback) and credential.
    pub backend_url: String,
    /// The backend's credential.
    pub backend_token: Secret,
    /// The project directory, shown on the hub.
    pub project: String,
    /// How often the machine record is sent.
    pub heartbeat: Duration,
}

impl JoinConfig {
    /// A config with the default heartbeat (2 s).
    pub fn new(
        nats_url: impl Into<String>,
        name: MachineName,
        backend_url: impl Into<String>,
        backend_token: Secret,
        project: impl Into<String>,
    ) -> JoinConfig {
        JoinConfig {
            nats_url: nats_url.into(),
            credentials: None,
            name,
            backend_url: backend_url.into(),
            backend_token,
            project: project.into(),
            heartbeat: Duration::from_secs(2),
        }
    }
}

/// Why joining could not start (a NATS server that is down is not one: the join retries).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The URL or options were refused.
    #[error("cannot join {url}: {reason}")]
    Connect {
        /// The NATS URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The backend's own URL is bad.
    #[error("cannot reach the backend: {0}")]
    Backend(String),
}

/// A running join; [`Join::leave`] says goodbye, dropping it stops it like a crash would.
pub struct Join {
    nats: async_nats::Client,
    record: MachineRecord,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Join {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Connect options shared by both sides: retry forever, the initial connect included.
pub(crate) fn connect_options(
    credentials: &Option<(String, Secret)>,
    inbox_prefix: Option<String>,
) -> async_nats::ConnectOptions {
    let mut opts = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(3))
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis((100u64 << attempts.min(5) as u32).min(2000))
        });
    if let Some((user, password)) = credentials {
        opts = opts.user_and_password(user.clone(), password.expose().to_owned());
    }
    if let Some(prefix) = inbox_prefix {
        opts = opts.custom_inbox_prefix(prefix);
    }
    opts
}

/// Creates the two streams if missing. Backends try too, in case they reach NATS first; with
/// subject permissions only the hub may (docs/hub.md §5), and a refusal is not an error here.
pub(crate) async fn ensure_streams(js: &jetstream::Context) -> Result<(), String> {
    use crate::subject::{EVENTS_SUBJECTS, STATE_SUBJECTS};
    js.get_or_create_stream(jetstream::stream::Config {
        name: EVENTS_STREAM.to_owned(),
        subjects: vec![EVENTS_SUBJECTS.to_owned()],
        // Kept a week, at most 1 GiB: the replay a hub or a reloaded UI can ask for.
        max_age: Duration::from_secs(7 * 24 * 3600),
        max_bytes: 1 << 30,
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    js.get_or_create_stream(jetstream::stream::Config {
        name: STATE_STREAM.to_owned(),
        subjects: STATE_SUBJECTS.iter().map(|s| (*s).to_owned()).collect(),
        max_messages_per_subject: 1,
        max_bytes: 256 << 20,
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Publishes into JetStream until the stream acknowledges (retrying the same message, with
/// the same ID, every 500 ms).
async fn publish_acked(
    js: &jetstream::Context,
    subject: String,
    msg_id: Option<String>,
    payload: bytes::Bytes,
) {
    loop {
        let mut headers = HeaderMap::new();
        if let Some(id) = &msg_id {
            headers.insert("Nats-Msg-Id", id.as_str());
        }
        let sent = js
            .publish_with_headers(subject.clone(), headers, payload.clone())
            .await;
        match sent {
            Ok(ack) => match ack.await {
                Ok(_) => return,
                Err(e) => tracing::debug!(%subject, error = %e, "no ack yet; retrying"),
            },
            Err(e) => tracing::debug!(%subject, error = %e, "cannot publish yet; retrying"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Starts joining. It returns once the connection is configured; NATS may still be away.
pub async fn start(config: JoinConfig) -> Result<Join, JoinError> {
    let backend = Client::new(config.backend_url.clone(), config.backend_token.clone())
        .map_err(|e| JoinError::Backend(e.to_string()))?;
    let opts = connect_options(&config.credentials, Some(config.name.inbox_prefix()));
    let nats = opts
        .connect(config.nats_url.as_str())
        .await
        .map_err(|e| JoinError::Connect {
            url: config.nats_url.clone(),
            reason: e.to_string(),
        })?;
    let js = jetstream::new(nats.clone());
    let boot = uuid::Uuid::new_v4().simple().to_string();
    let record = MachineRecord {
        name: config.name.clone(),
        project: config.project.clone(),
        boot: boot.clone(),
        online: true,
        sent_ms: 0,
        heartbeat_ms: config.heartbeat.as_millis() as u64,
    };
    let dirty = Arc::new(AtomicBool::new(true));

    // Subscribe first, then let the heartbeat's first acknowledged publish be the round trip
    // that makes the server hold the subscription before the hub is told we are here.
    let requests = nats
        .subscribe(config.name.request_subject())
        .await
        .map_err(|e| JoinError::Connect {
            url: config.nats_url.clone(),
            reason: e.to_string(),
        })?;
    let tasks = vec![
        tokio::spawn(serve_requests(nats.clone(), requests, backend.clone())),
        tokio::spawn(heartbeat(
            js.clone(),
            record.clone(),
            config.heartbeat,
            backend.clone(),
            dirty.clone(),
        )),
        tokio::spawn(pump_events(js, config.name.clone(), boot, backend, dirty)),
    ];
    Ok(Join {
        nats,
        record,
        tasks,
    })
}

impl Join {
    /// The machine record this join announces.
    pub fn record(&self) -> &MachineRecord {
        &self.record
    }

    /// Stops and tells the hubs this machine left (waits at most 2 s for NATS).
    pub async fn leave(mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        let mut record = self.record.clone();
        record.online = false;
        record.sent_ms = now_ms();
        let js = jetstream::new(self.nats.clone());
        if let Ok(payload) = serde_json::to_vec(&record) {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                publish_acked(&js, record.name.machine_subject(), None, payload.into()),
            )
            .await;
        }
    }
}

async fn heartbeat(
    js: jetstream::Context,
    mut record: MachineRecord,
    every: Duration,
    backend: Client,
    dirty: Arc<AtomicBool>,
) {
    let mut streams_ready = false;
    loop {
        if !streams_ready {
            streams_ready = ensure_streams(&js).await.is_ok();
        }
        if dirty.swap(false, Ordering::AcqRel) {
            match backend.list_sessions_limit(MAX_SNAPSHOT_SESSIONS).await {
                Ok(sessions) => {
                    let snapshot = SessionsSnapshot {
                        machine: record.name.clone(),
                        sessions,
                    };
                    if let Ok(payload) = serde_json::to_vec(&snapshot) {
                        publish_acked(&js, record.name.sessions_subject(), None, payload.into())
                            .await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "hub: cannot list the backend's sessions");
                    dirty.store(true, Ordering::Release);
                }
            }
        }
        record.sent_ms = now_ms();
        if let Ok(payload) = serde_json::to_vec(&record) {
            publish_acked(&js, record.name.machine_subject(), None, payload.into()).await;
        }
        tokio::time::sleep(every).await;
    }
}

async fn pump_events(
    js: jetstream::Context,
    name: MachineName,
    boot: String,
    backend: Client,
    dirty: Arc<AtomicBool>,
) {
    let subject = name.event_subject();
    let mut events = backend.events(None);
    while let Some(next) = events.next().await {
        let envelope = match next {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(error = %e, "hub: the backend's event stream ended");
                return;
            }
        };
        let msg_id = format!("{boot}-{}", envelope.id);
        let event = MachineEvent {
            machine: name.clone(),
            boot: boot.clone(),
            event: envelope,
        };
        let Ok(payload) = serde_json::to_vec(&event) else {
            continue;
        };
        publish_acked(&js, subject.clone(), Some(msg_id), payload.into()).await;
        dirty.store(true, Ordering::Release);
    }
}

/// At most this many requests run at once; more wait for their turn.
const CONCURRENT_REQUESTS: usize = 32;

async fn serve_requests(
    nats: async_nats::Client,
    mut requests: async_nats::Subscriber,
    backend: Client,
) {
    let permits = Arc::new(Semaphore::new(CONCURRENT_REQUESTS));
    while let Some(msg) = requests.next().await {
        let Some(reply_to) = msg.reply.clone() else {
            continue;
        };
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let nats = nats.clone();
        let backend = backend.clone();
        tokio::spawn(async move {
            let reply = match decode::<Request>(&msg.payload) {
                Ok(request) => answer(&backend, request).await,
                Err(message) => Reply::Error(ReplyError {
                    status: 400,
                    code: "bad_request".to_owned(),
                    message,
                }),
            };
            if let Ok(payload) = serde_json::to_vec(&reply) {
                let _ = nats.publish(reply_to, payload.into()).await;
            }
            drop(permit);
        });
    }
}

fn to_reply<T: serde::Serialize>(result: Result<T, ClientError>) -> Reply {
    match result {
        Ok(value) => match serde_json::to_value(value) {
            Ok(v) => Reply::Ok(v),
            Err(e) => Reply::Error(ReplyError {
                status: 500,
                code: "internal".to_owned(),
                message: e.to_string(),
            }),
        },
        Err(ClientError::Api { status, error }) => Reply::Error(ReplyError {
            status,
            code: error.code,
            message: error.message,
        }),
        Err(e) => Reply::Error(ReplyError {
            status: 502,
            code: "backend_unreachable".to_owned(),
            message: e.to_string(),
        }),
    }
}

/// One request, through the backend's own API.
async fn answer(backend: &Client, request: Request) -> Reply {
    match request {
        Request::ListSessions {} => to_reply(backend.list_sessions().await),
        Request::CreateSession { title, agent } => to_reply(
            backend
                .create_session_with(title.as_deref(), agent.as_deref())
                .await,
        ),
        Request::Messages { session } => to_reply(backend.messages(&session).await),
        Request::Prompt { session, prompt } => to_reply(backend.prompt(&session, &prompt).await),
        Request::Abort { session } => to_reply(backend.abort(&session).await),
        Request::Permissions {} => to_reply(backend.permissions().await),
        Request::ReplyPermission {
            session,
            permission,
            reply,
            option_id,
        } => to_reply(match option_id {
            Some(option) => {
                backend
                    .reply_permission_option(&session, &permission, reply, &option)
                    .await
            }
            None => backend.reply_permission(&session, &permission, reply).await,
        }),
        Request::SetMode { session, mode_id } => {
            to_reply(backend.set_mode(&session, &mode_id).await)
        }
    }
}
