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
//! Operator terminals a hub opens are the backend's own gateway terminals, relayed by
//! `join/terminal.rs` (docs/hub.md §3).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use async_nats::jetstream;
use ax_client::{Client, ClientError, Secret};
use futures_util::StreamExt;
use tokio::{sync::Semaphore, task::JoinHandle};

mod terminal;

use crate::{
    MachineName,
    nats::{NatsConfig, ensure_streams, now_ms, publish_acked},
    wire::{
        IMAGE_PIECE_BYTES, ImagePiece, MAX_MESSAGE, MAX_SNAPSHOT_SESSIONS, MachineEvent,
        MachineRecord, Reply, ReplyError, Request, SessionsSnapshot, decode,
    },
};

/// How a backend joins.
#[derive(Debug, Clone)]
pub struct JoinConfig {
    /// The NATS server.
    pub nats: NatsConfig,
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
    /// Whether the `ui.command`s this machine's agents send also go to the hub's Control UIs
    /// (opt-in, off by default; `crate::ui`).
    pub share_ui_commands: bool,
    /// How long a terminal opened by a hub is kept without the hub renewing it
    /// (docs/hub.md §3; default [`crate::terminal::DEFAULT_LEASE`]).
    pub terminal_lease: Duration,
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
            nats: NatsConfig::new(nats_url),
            name,
            backend_url: backend_url.into(),
            backend_token,
            project: project.into(),
            heartbeat: Duration::from_secs(2),
            share_ui_commands: false,
            terminal_lease: crate::terminal::DEFAULT_LEASE,
        }
    }
}

/// The `Last-Event-ID` that asks a backend's `/event` for every event since its process
/// started (docs/backend.md §1). A join starts with its backend (`serve --join`), so
/// that is what no boot published yet.
const FROM_BACKEND_START: u64 = 0;

/// Why joining could not start (a NATS server that is down is not one: the join retries).
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The URL or options were refused.
    #[error(transparent)]
    Connect(#[from] crate::nats::ConnectError),
    /// The backend's own URL is bad.
    #[error("cannot reach the backend: {0}")]
    Backend(String),
}

/// A running join; [`Join::leave`] says goodbye, dropping it stops it like a crash would.
pub struct Join {
    nats: async_nats::Client,
    record: MachineRecord,
    tasks: Vec<JoinHandle<()>>,
    /// The terminals it runs for hubs (`join/terminal.rs`).
    terminals: Arc<terminal::JoinTerminals>,
}

impl Drop for Join {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        self.terminals.stop();
    }
}

/// Starts joining. It returns once the connection is configured; NATS may still be away.
pub async fn start(config: JoinConfig) -> Result<Join, JoinError> {
    let backend = Client::new(config.backend_url.clone(), config.backend_token.clone())
        .map_err(|e| JoinError::Backend(e.to_string()))?;
    let nats = config.nats.connect(&config.name.inbox_prefix()).await?;
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
        .map_err(|e| crate::nats::ConnectError {
            url: config.nats.url.clone(),
            reason: e.to_string(),
        })?;
    // The backend's event stream is connected before the heartbeat announces the machine, so
    // every event after the hub first sees it online reaches JetStream. It is read from the
    // backend process's first event: what a backend restarted after a crash published before
    // anyone could connect (the turns its recovery ended) reaches the hub too.
    let events = backend.events(Some(FROM_BACKEND_START));
    let connected = tokio::time::timeout(Duration::from_secs(10), async {
        while !events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    if connected.is_err() {
        tracing::warn!("hub: the backend's event stream is not connected yet; joining anyway");
    }
    let terminals = Arc::new(terminal::JoinTerminals::new(
        nats.clone(),
        config.name.clone(),
        config.backend_url.clone(),
        config.backend_token.clone(),
        config.terminal_lease,
    ));
    // Where a hub's acknowledgement of a shared `ui.command` goes (`crate::ui`).
    let relay_link = config.share_ui_commands.then(crate::ui::RelayLink::default);
    let mut tasks = vec![
        tokio::spawn(serve_requests(
            nats.clone(),
            requests,
            backend.clone(),
            Arc::new((config.backend_url.clone(), config.backend_token.clone())),
            terminals.clone(),
            relay_link.clone(),
        )),
        tokio::spawn(heartbeat(
            js.clone(),
            record.clone(),
            config.heartbeat,
            backend.clone(),
            dirty.clone(),
        )),
        tokio::spawn(pump_events(js, config.name.clone(), boot, events, dirty)),
    ];
    if let Some(link) = relay_link {
        tasks.push(tokio::spawn(crate::ui::relay(
            nats.clone(),
            config.name.clone(),
            config.backend_url.clone(),
            config.backend_token.clone(),
            link,
        )));
    }
    Ok(Join {
        nats,
        record,
        tasks,
        terminals,
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
                publish_acked(&js, &record.name.machine_subject(), None, payload.into()),
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
                        publish_acked(&js, &record.name.sessions_subject(), None, payload.into())
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
            publish_acked(&js, &record.name.machine_subject(), None, payload.into()).await;
        }
        tokio::time::sleep(every).await;
    }
}

async fn pump_events(
    js: jetstream::Context,
    name: MachineName,
    boot: String,
    mut events: ax_client::EventStream,
    dirty: Arc<AtomicBool>,
) {
    let subject = name.event_subject();
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
        publish_acked(&js, &subject, Some(&msg_id), payload.into()).await;
        dirty.store(true, Ordering::Release);
    }
}

/// At most this many requests run at once; more wait for their turn.
const CONCURRENT_REQUESTS: usize = 32;

async fn serve_requests(
    nats: async_nats::Client,
    mut requests: async_nats::Subscriber,
    backend: Client,
    own: Arc<(String, Secret)>,
    terminals: Arc<terminal::JoinTerminals>,
    relay_link: Option<crate::ui::RelayLink>,
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
        let own = own.clone();
        let terminals = terminals.clone();
        let relay_link = relay_link.clone();
        tokio::spawn(async move {
            let payload = match decode::<Request>(&msg.payload) {
                Ok(Request::Terminal { terminal, action }) => {
                    encode(&terminals.answer(terminal, action).await)
                }
                Ok(Request::UiCommandResult { params }) => {
                    encode(&crate::ui::acknowledge(relay_link.as_ref(), params).await)
                }
                Ok(request) => answer(&backend, &own, request).await,
                Err(message) => encode(&Reply::<()>::Error(ReplyError {
                    status: 400,
                    code: "bad_request".to_owned(),
                    message,
                })),
            };
            let limit = MAX_MESSAGE.min(nats.server_info().max_payload.max(1024));
            let _ = nats.publish(reply_to, fit(payload, limit).into()).await;
            drop(permit);
        });
    }
}

/// The backend's answer, encoded as a [`Reply`] straight from its typed value (no
/// intermediate JSON tree: a listing of 1,000 sessions is the hub's biggest reply).
fn to_reply<T: serde::Serialize>(result: Result<T, ClientError>) -> Vec<u8> {
    match result {
        Ok(value) => encode(&Reply::Ok(value)),
        Err(ClientError::Api { status, error }) => encode(&Reply::<()>::Error(ReplyError {
            status,
            code: error.code,
            message: error.message,
        })),
        Err(e) => encode(&Reply::<()>::Error(ReplyError {
            status: 502,
            code: "backend_unreachable".to_owned(),
            message: e.to_string(),
        })),
    }
}

fn encode<T: serde::Serialize>(reply: &Reply<T>) -> Vec<u8> {
    serde_json::to_vec(reply).unwrap_or_else(|e| {
        let failed = Reply::<()>::Error(ReplyError {
            status: 500,
            code: "internal".to_owned(),
            message: format!("the answer could not be encoded: {e}"),
        });
        serde_json::to_vec(&failed).unwrap_or_default()
    })
}

/// `payload`, or when it is over `limit` (what the hub reads and NATS carries) an error reply
/// that says so: unsent, the hub would wait out its timeout and call the machine offline.
fn fit(payload: Vec<u8>, limit: usize) -> Vec<u8> {
    if payload.len() <= limit {
        return payload;
    }
    encode(&Reply::<()>::Error(ReplyError {
        status: 502,
        code: "too_large".to_owned(),
        message: format!(
            "the machine's answer is {} bytes, over the {limit} bytes a hub relays",
            payload.len()
        ),
    }))
}

/// One request, through the backend's own API, or for `screen` through its own gateway with
/// `own` (its URL and credential), so the gateway's rules apply (docs/hub.md §3).
async fn answer(backend: &Client, own: &(String, Secret), request: Request) -> Vec<u8> {
    match request {
        Request::ListSessions {} => to_reply(backend.list_sessions_json().await),
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
        Request::RenameSession { session, title } => {
            to_reply(backend.rename_session(&session, &title).await)
        }
        Request::DeleteSession { session } => to_reply(backend.delete_session(&session).await),
        Request::SetMode { session, mode_id } => {
            to_reply(backend.set_mode(&session, &mode_id).await)
        }
        Request::Screen { method, params } => {
            encode(&crate::screen::answer(&own.0, &own.1, method, params).await)
        }
        // Answered by `serve_requests` through `join/terminal.rs` and `crate::ui`.
        Request::Terminal { .. } | Request::UiCommandResult { .. } => {
            encode(&Reply::<()>::Error(ReplyError {
                status: 500,
                code: "internal".to_owned(),
                message: "a terminal or ui.command.result request reached the HTTP relay"
                    .to_owned(),
            }))
        }

        // What the hub's Control UI page asks (docs/hub.md §4).
        Request::Agents {} => to_reply(backend.agents().await),
        Request::QueuePrompt { session, prompt } => {
            to_reply(backend.queue_prompt(&session, &prompt).await)
        }
        Request::Queue { session } => to_reply(backend.prompt_queue(&session).await),
        Request::EditQueued {
            session,
            queued,
            prompt,
        } => to_reply(backend.edit_queued(&session, &queued, &prompt).await),
        Request::CancelQueued { session, queued } => {
            to_reply(backend.cancel_queued(&session, &queued).await)
        }
        Request::SendQueuedNow { session, queued } => {
            to_reply(backend.send_queued_now(&session, &queued).await)
        }
        Request::ResumeQueue { session } => to_reply(backend.resume_queue(&session).await),
        Request::ImagePiece {
            session,
            message,
            index,
            offset,
            length,
        } => {
            if length > IMAGE_PIECE_BYTES {
                return encode(&Reply::<()>::Error(ReplyError {
                    status: 400,
                    code: "bad_request".to_owned(),
                    message: format!("an image piece is at most {IMAGE_PIECE_BYTES} bytes"),
                }));
            }
            let image = backend.image(&session, &message, index).await;
            to_reply(image.map(|(mime_type, bytes)| cut_piece(mime_type, &bytes, offset, length)))
        }
    }
}

/// `length` bytes of `bytes` from `offset` (none past the end). The join reads the whole
/// image from its backend for each piece, as the backend's API serves it, and keeps no copy:
/// a 5 MiB image is ten reads on loopback.
fn cut_piece(mime_type: String, bytes: &[u8], offset: u64, length: u32) -> ImagePiece {
    use base64::Engine as _;
    let start = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
    let end = start.saturating_add(length as usize).min(bytes.len());
    ImagePiece {
        mime_type,
        total: bytes.len() as u64,
        data: base64::engine::general_purpose::STANDARD.encode(&bytes[start..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pieces_are_cut_within_the_image() {
        let bytes: Vec<u8> = (0..10).collect();
        let piece = |offset, length| {
            let p = cut_piece("image/png".into(), &bytes, offset, length);
            assert_eq!((p.mime_type.as_str(), p.total), ("image/png", 10));
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(p.data)
                .unwrap()
        };
        assert_eq!(piece(0, 4), [0, 1, 2, 3]);
        assert_eq!(piece(8, 4), [8, 9]);
        assert!(piece(10, 4).is_empty());
        assert!(piece(u64::MAX, u32::MAX).is_empty());
    }

    #[test]
    fn an_answer_over_the_limit_becomes_an_error_that_says_so() {
        let small = encode(&Reply::Ok(vec!["a"; 10]));
        assert_eq!(fit(small.clone(), 1024), small);
        let big = encode(&Reply::Ok("x".repeat(5000)));
        let replaced = fit(big.clone(), 1024);
        assert!(replaced.len() < 1024);
        match decode::<Reply>(&replaced).unwrap() {
            Reply::Error(e) => {
                assert_eq!((e.status, e.code.as_str()), (502, "too_large"));
                assert!(e.message.contains(&big.len().to_string()), "{}", e.message);
            }
            Reply::Ok(v) => panic!("an oversize answer was relayed: {v}"),
        }
    }
}
