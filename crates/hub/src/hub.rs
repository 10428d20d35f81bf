//! The hub side: `ax-code hub --nats nats://HOST:PORT [--port 4096]` (docs/hub.md §4).
//!
//! An HTTP API over every joined backend. Its only state is a cache of the `AX_STATE` stream
//! (each machine's last record and session snapshot), kept by one ordered consumer, so any
//! number of hubs can serve at once and a hub that restarts rebuilds it from JetStream.
//! Besides, a bounded cache of the transcripts it served (`transcripts.rs`), for when their
//! machine is away. Everything else is a NATS request to the machine, or a replay of
//! `AX_EVENTS`.
//!
//! The Control UI, `/health` with its proof and the sign-in routes are `web.rs`.
//!
//! Routes (bearer credential on all but `/health`, `/`, `/assets/*`, `POST /signin` and
//! `/machine/{m}/gateway`, whose `connect` asks for it): `GET /machine`, `GET /session` (every
//! machine's sessions), `GET|POST /machine/{m}/session`, `PATCH|DELETE
//! /machine/{m}/session/{id}` (rename, delete), `GET /machine/{m}/session/{id}/message`
//! (kept for when the machine is away: `transcripts.rs`),
//! `POST /machine/{m}/session/{id}/prompt|abort|mode`, `GET /machine/{m}/permission`,
//! `POST /machine/{m}/session/{id}/permission/{pid}`, `GET /event` (SSE; `id:` is the
//! JetStream sequence, `Last-Event-ID` or `?after=N` resumes after it, `?machine=m` filters),
//! `POST /machine/{m}/screen/layout|command` (`relay.rs`), `GET /ui-command` (`ui.rs`),
//! `GET /machine/{m}/gateway` (the gateway's WebSocket for the machine's terminal, its
//! credential checked in the gateway's `connect`; `terminal.rs`),
//! `GET /machine/{m}/agent`, `POST /markdown` (`page.rs`), the prompt queue's
//! `/machine/{m}/session/{id}/queue…` (`queue.rs`).

use std::{
    collections::BTreeMap,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, RwLock},
    time::Duration,
};

use async_nats::jetstream::{self, consumer::DeliverPolicy};
use ax_core::Secret;
use ax_protocol::{PermissionAnswer, Prompt, Session, SessionId};
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, Path, Query, Request as HttpRequest, State},
    http::{HeaderMap, StatusCode, header},
    middleware::{self, Next},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
    routing::{get, post},
};
use futures_util::{StreamExt, future::join_all};
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod image;
mod page;
mod queue;
mod relay;
mod terminal;
pub mod transcripts;
mod ui;

use crate::{
    MachineName,
    api_error::ApiError,
    nats::{NatsConfig, ensure_streams, now_ms},
    subject::{EVENTS_STREAM, STATE_STREAM, STATE_SUBJECTS, machine_of},
    web::Access,
    wire::{MAX_MESSAGE, MachineEvent, MachineRecord, Reply, Request, SessionsSnapshot, decode},
};

/// How a hub runs.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The NATS server.
    pub nats: NatsConfig,
    /// Where the HTTP API listens.
    pub bind: SocketAddr,
    /// The bearer credential the API asks for.
    pub token: Secret,
    /// How long a request to a machine may take.
    pub request_timeout: Duration,
    /// How long a one-time sign-in code stays valid (docs/hub.md §4).
    pub sign_in_ttl: Duration,
}

impl HubConfig {
    /// A config with a 30 s request timeout.
    pub fn new(nats_url: impl Into<String>, bind: SocketAddr, token: Secret) -> HubConfig {
        HubConfig {
            nats: NatsConfig::new(nats_url),
            bind,
            token,
            request_timeout: Duration::from_secs(30),
            sign_in_ttl: Duration::from_secs(60),
        }
    }
}

/// Why a hub could not start.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// NATS options refused.
    #[error(transparent)]
    Connect(#[from] crate::nats::ConnectError),
    /// The HTTP port.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// What the hub knows of one machine.
#[derive(Debug, Clone, Default)]
struct Cached {
    record: Option<MachineRecord>,
    /// When NATS stored the last record (ms since the epoch, the NATS server's clock).
    seen_ms: u64,
    sessions: Option<Vec<Session>>,
    /// The last live listing answer it sent that read as sessions (a copy, with its
    /// sessions' slice): an answer equal to it byte for byte is known good without a second
    /// read. Only a shortcut: the answer itself is always asked for.
    checked: Option<(bytes::Bytes, bytes::Bytes)>,
}

pub(crate) struct Shared {
    nats: async_nats::Client,
    js: jetstream::Context,
    /// The hub's credential (the bearer check's too), address, host names and sign-in codes:
    /// the page's routes and the Host check (`web.rs`) take it as their own state.
    access: Arc<Access>,
    timeout: Duration,
    machines: RwLock<BTreeMap<MachineName, Cached>>,
    /// The machines' `ui.command`s, for `GET /ui-command` (`ui.rs`).
    ui: tokio::sync::broadcast::Sender<Arc<crate::ui::MachineUiCommand>>,
    /// A gateway per machine for its operator terminal (`terminal.rs`).
    gateways: terminal::Gateways,
    /// The transcripts served, kept for when their machine is away (`transcripts.rs`).
    transcripts: transcripts::Kept,
}

/// One machine as `GET /machine` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachineView {
    /// Its name.
    pub name: MachineName,
    /// Its project directory.
    pub project: String,
    /// The boot of its backend's join process (random per start, as in its events): a new
    /// one means the machine restarted.
    pub boot: String,
    /// Whether it answered its last heartbeat in time.
    pub online: bool,
    /// When it was last heard of (ms since the epoch).
    pub last_seen_ms: u64,
}

/// One machine's sessions, as `GET /session` and `GET /machine/{m}/session` show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachineSessions {
    /// The machine.
    pub machine: MachineName,
    /// Whether it is online.
    pub online: bool,
    /// True when these are the sessions as last seen (the machine did not answer).
    pub last_seen: bool,
    /// The sessions, most recent activity first.
    pub sessions: Vec<Session>,
}

/// A running hub.
pub struct RunningHub {
    addr: SocketAddr,
    codes: Arc<ax_core::signin::Codes>,
    /// Stops accepting; connections are told to finish their exchange.
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    transcripts: transcripts::Kept,
}

impl RunningHub {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A fresh one-time sign-in code for the Control UI (what `ax-code hub` prints in a link).
    pub fn sign_in_code(&self) -> Result<Secret, ax_core::RandomError> {
        self.codes.mint(std::time::Instant::now())
    }

    /// The transcript of `machine`'s `session` the hub keeps for when the machine is away
    /// (`transcripts.rs`), if it keeps one.
    pub fn kept_transcript(&self, machine: &str, session: &SessionId) -> Option<serde_json::Value> {
        let kept = self.transcripts.lock().unwrap_or_else(|p| p.into_inner());
        kept.peek(machine, session)
    }

    /// Stops serving.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
    }
}

impl Drop for RunningHub {
    fn drop(&mut self) {
        self.stop.cancel();
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// How long a starting hub waits for NATS before it serves anyway (see [`start`]).
const FIRST_CONNECT: Duration = Duration::from_secs(2);

/// Starts a hub; NATS may still be away (it connects and creates the streams when it can).
/// When NATS answers within [`FIRST_CONNECT`], the hub serves only once its `ui.command`
/// subscription is held by the server and its streams exist: the NATS client connects in
/// the background, so a hub that served at once would miss what machines send meanwhile
/// (core NATS `ui.command`s are never replayed).
pub async fn start(config: HubConfig) -> Result<RunningHub, HubError> {
    // Upper case: no machine name can have this inbox prefix.
    let nats = config.nats.connect("_INBOX_HUB").await?;
    let js = jetstream::new(nats.clone());
    let ui_sub = ui::subscribe(&nats).await?;
    // A request round trip on the same connection, after the subscription: once answered,
    // the server holds the subscription (a flush alone does not wait for the server).
    if tokio::time::timeout(FIRST_CONNECT, ensure_streams(&js))
        .await
        .is_err()
    {
        tracing::warn!("hub: NATS does not answer yet; serving, and connecting in the background");
    }
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|source| HubError::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| HubError::Bind {
        addr: config.bind,
        source,
    })?;
    let codes = Arc::new(ax_core::signin::Codes::new(config.sign_in_ttl));
    let kept = transcripts::Kept::default();
    let shared = Arc::new(Shared {
        nats,
        js,
        access: Arc::new(Access::new(config.token, addr, codes.clone())),
        timeout: config.request_timeout,
        machines: RwLock::new(BTreeMap::new()),
        ui: tokio::sync::broadcast::channel(ui::UI_BUFFER).0,
        gateways: terminal::Gateways::default(),
        transcripts: kept.clone(),
    });
    let fresh = tokio::spawn(transcripts::keep_fresh(shared.clone()));
    let ui_follow = tokio::spawn(ui::follow(shared.clone(), ui_sub));
    let cache = tokio::spawn(follow_state(shared.clone()));
    let app = router(shared);
    // The backend's accept loop (`ax-listen`): head and idle timeouts, a cap on connections
    // without the credential, the descriptor limit raised and its exhaustion survived, so a
    // flood of idle connections from any local user cannot lock the person out (docs/SECURITY.md).
    let stop = CancellationToken::new();
    let serving = stop.clone();
    let server = tokio::spawn(async move {
        let limits = ax_listen::Limits::default();
        if let Err(e) = ax_listen::serve(vec![listener], app, limits, serving).await {
            tracing::error!(error = %e, "hub: the HTTP server stopped");
        }
    });
    Ok(RunningHub {
        addr,
        codes,
        stop,
        tasks: vec![cache, ui_follow, server, fresh],
        transcripts: kept,
    })
}

/// Keeps the machine cache: every machine's last record and snapshot, then each new one.
async fn follow_state(shared: Arc<Shared>) {
    loop {
        if let Err(e) = follow_state_once(&shared).await {
            tracing::debug!(error = %e, "hub: following the state stream; again shortly");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn follow_state_once(shared: &Shared) -> Result<(), String> {
    ensure_streams(&shared.js).await?;
    let stream = shared
        .js
        .get_stream(STATE_STREAM)
        .await
        .map_err(|e| e.to_string())?;
    // "Last per subject" needs a filter subject (nats-server 2.9): one consumer per kind.
    let mut kinds = Vec::new();
    for filter in STATE_SUBJECTS {
        let consumer = stream
            .create_consumer(jetstream::consumer::pull::OrderedConfig {
                deliver_policy: DeliverPolicy::LastPerSubject,
                filter_subject: filter.to_owned(),
                ..Default::default()
            })
            .await
            .map_err(|e| e.to_string())?;
        kinds.push(consumer.messages().await.map_err(|e| e.to_string())?);
    }
    let mut messages = futures_util::stream::select_all(kinds);
    while let Some(msg) = messages.next().await {
        let msg = msg.map_err(|e| e.to_string())?;
        let Some(machine) = machine_of(&msg.subject) else {
            continue;
        };
        let published = msg
            .info()
            .map(|i| (i.published.unix_timestamp_nanos() / 1_000_000) as u64)
            .unwrap_or_else(|_| now_ms());
        let mut machines = shared.machines.write().unwrap_or_else(|p| p.into_inner());
        if msg.subject.ends_with(".machine") {
            match decode::<MachineRecord>(&msg.payload) {
                Ok(record) if record.name == machine => {
                    let entry = machines.entry(machine).or_default();
                    entry.record = Some(record);
                    entry.seen_ms = published;
                }
                _ => tracing::warn!(subject = %msg.subject, "hub: ignored a bad machine record"),
            }
        } else {
            match decode::<SessionsSnapshot>(&msg.payload) {
                Ok(snapshot) if snapshot.machine == machine => {
                    machines.entry(machine).or_default().sessions = Some(snapshot.sessions);
                }
                _ => tracing::warn!(subject = %msg.subject, "hub: ignored a bad snapshot"),
            }
        }
    }
    Err("the state stream ended".to_owned())
}

impl Shared {
    fn view(&self, name: &MachineName, c: &Cached) -> Option<MachineView> {
        let record = c.record.as_ref()?;
        // Three missed heartbeats (plus a second for the clocks of NATS and the hub).
        let late = now_ms().saturating_sub(c.seen_ms) > record.heartbeat_ms * 3 + 1000;
        Some(MachineView {
            name: name.clone(),
            project: record.project.clone(),
            boot: record.boot.clone(),
            online: record.online && !late,
            last_seen_ms: c.seen_ms,
        })
    }

    fn views(&self) -> Vec<MachineView> {
        let machines = self.machines.read().unwrap_or_else(|p| p.into_inner());
        machines
            .iter()
            .filter_map(|(n, c)| self.view(n, c))
            .collect()
    }

    async fn request<T: serde::de::DeserializeOwned>(
        &self,
        machine: &MachineName,
        request: &Request,
    ) -> Result<Reply<T>, ApiError> {
        let answer = self.request_bytes(machine, request).await?;
        decode::<Reply<T>>(&answer).map_err(|m| ApiError::new(502, "bad_reply", m))
    }

    /// The machine's answer to `request`, unparsed.
    async fn request_bytes(
        &self,
        machine: &MachineName,
        request: &Request,
    ) -> Result<bytes::Bytes, ApiError> {
        let payload = serde_json::to_vec(request).map_err(|e| ApiError::internal(&e))?;
        let sent = tokio::time::timeout(
            self.timeout,
            self.nats.request(machine.request_subject(), payload.into()),
        )
        .await;
        let msg = match sent {
            Err(_) => return Err(ApiError::offline(machine, "did not answer in time")),
            Ok(Err(e)) => {
                return Err(match e.kind() {
                    async_nats::RequestErrorKind::NoResponders => {
                        ApiError::offline(machine, "is not connected")
                    }
                    _ => ApiError::offline(machine, "did not answer"),
                });
            }
            Ok(Ok(msg)) => msg,
        };
        Ok(msg.payload)
    }

    async fn call(&self, machine: &str, request: Request) -> Response {
        let machine = match MachineName::new(machine) {
            Ok(m) => m,
            Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
        };
        match self.request::<serde_json::Value>(&machine, &request).await {
            Ok(Reply::Ok(value)) => Json(value).into_response(),
            Ok(Reply::Error(e)) => ApiError::new(e.status, &e.code, e.message).into_response(),
            Err(e) => e.into_response(),
        }
    }

    /// The machine's sessions: live when it is online and answers with a listing that reads
    /// as sessions, else as last seen (the cache).
    async fn sessions_of(&self, view: MachineView) -> Listing {
        if view.online
            && let Ok(answer) = self
                .request_bytes(&view.name, &Request::ListSessions {})
                .await
            && let Some(sessions) = self.live_listing(&view.name, &answer)
        {
            return Listing {
                machine: view.name,
                sessions: Listed::Live(sessions),
            };
        }
        let machines = self.machines.read().unwrap_or_else(|p| p.into_inner());
        let sessions = machines
            .get(&view.name)
            .and_then(|c| c.sessions.clone())
            .unwrap_or_default();
        Listing {
            machine: view.name,
            sessions: Listed::LastSeen(sessions),
        }
    }
}

impl Shared {
    /// The sessions of `machine`'s live listing `answer`, when it reads as sessions: known
    /// good when it is byte for byte the last answer that did, else read
    /// ([`checked_listing`]) and remembered.
    fn live_listing(&self, machine: &MachineName, answer: &bytes::Bytes) -> Option<bytes::Bytes> {
        let known = {
            let machines = self.machines.read().unwrap_or_else(|p| p.into_inner());
            machines
                .get(machine)
                .and_then(|c| c.checked.as_ref())
                .filter(|(checked, _)| checked == answer)
                .map(|(_, sessions)| sessions.clone())
        };
        if known.is_some() {
            return known;
        }
        // A copy, so the cache holds this answer only, not the buffer NATS read it into.
        let answer = bytes::Bytes::copy_from_slice(answer);
        let Ok(Reply::Ok(sessions)) = checked_listing(&answer) else {
            return None;
        };
        let mut machines = self.machines.write().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = machines.get_mut(machine) {
            cached.checked = Some((answer, sessions.clone()));
        }
        Some(sessions)
    }
}

/// One machine's sessions as `GET /session` and `GET /machine/{m}/session` write them: the
/// JSON of [`MachineSessions`], a live listing passed on as the machine wrote it.
struct Listing {
    machine: MachineName,
    sessions: Listed,
}

enum Listed {
    /// The machine's answer (its `ok` array), checked to read as sessions; online.
    Live(bytes::Bytes),
    /// The sessions as last seen; offline.
    LastSeen(Vec<Session>),
}

impl Listing {
    /// Appends the [`MachineSessions`] JSON (same fields, same order) to `out`.
    fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(br#"{"machine":"#);
        serde_json::to_writer(&mut *out, &self.machine)?;
        match &self.sessions {
            Listed::Live(sessions) => {
                out.extend_from_slice(br#","online":true,"lastSeen":false,"sessions":"#);
                out.extend_from_slice(sessions);
            }
            Listed::LastSeen(sessions) => {
                out.extend_from_slice(br#","online":false,"lastSeen":true,"sessions":"#);
                serde_json::to_writer(&mut *out, sessions)?;
            }
        }
        out.push(b'}');
        Ok(())
    }

    fn len_hint(&self) -> usize {
        match &self.sessions {
            Listed::Live(sessions) => sessions.len() + 128,
            Listed::LastSeen(sessions) => sessions.len() * 256 + 128,
        }
    }
}

/// A machine's answer to `listSessions`, read as strictly as any reply (unknown fields
/// refused, at most [`MAX_MESSAGE`]), its `ok` array checked to be sessions and kept as the
/// bytes the machine sent (a slice of `answer`, no copy): the hub passes a listing on
/// without writing 1,000 sessions again. An answer as the join writes it, `{"ok":[…]}`, is
/// parsed once (the array as sessions); any other spelling takes the general way (the reply
/// parsed, then its `ok` value as sessions).
fn checked_listing(answer: &bytes::Bytes) -> Result<Reply<bytes::Bytes>, String> {
    if answer.len() > MAX_MESSAGE {
        // `decode` refuses it by its size alone, with the reason.
        return Err(decode::<Reply>(answer).err().unwrap_or_default());
    }
    let listing = |raw: &[u8]| {
        serde_json::from_slice::<Vec<Session>>(raw).map_err(|e| format!("bad listing: {e}"))
    };
    if let Some(raw) = answer
        .strip_prefix(br#"{"ok":"#)
        .and_then(|rest| rest.strip_suffix(b"}"))
        && raw.first() == Some(&b'[')
        && listing(raw).is_ok()
    {
        return Ok(Reply::Ok(answer.slice_ref(raw)));
    }
    let reply: Reply<&serde_json::value::RawValue> =
        serde_json::from_slice(answer).map_err(|e| format!("bad message: {e}"))?;
    match reply {
        Reply::Ok(raw) => {
            listing(raw.get().as_bytes())?;
            Ok(Reply::Ok(answer.slice_ref(raw.get().as_bytes())))
        }
        Reply::Error(e) => Ok(Reply::Error(e)),
    }
}

/// `listings` as one JSON array.
fn listings_response(listings: &[Listing]) -> Response {
    let mut body = Vec::with_capacity(listings.iter().map(Listing::len_hint).sum::<usize>() + 2);
    body.push(b'[');
    for (i, listing) in listings.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        if let Err(e) = listing.write(&mut body) {
            return ApiError::internal(&e).into_response();
        }
    }
    body.push(b']');
    json_response(body)
}

fn json_response(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn router(shared: Arc<Shared>) -> Router {
    let api = Router::new()
        .route("/machine", get(machines))
        .route("/session", get(all_sessions))
        .route("/machine/{m}/session", get(machine_sessions).post(create))
        .route(
            "/machine/{m}/session/{id}",
            axum::routing::patch(rename).delete(delete),
        )
        .route(
            "/machine/{m}/session/{id}/message",
            get(transcripts::messages),
        )
        .route(
            "/machine/{m}/session/{id}/message/{mid}/image/{index}",
            get(image::image),
        )
        .route("/machine/{m}/session/{id}/prompt", post(prompt))
        .route("/machine/{m}/session/{id}/abort", post(abort))
        .route("/machine/{m}/session/{id}/mode", post(mode))
        .route("/machine/{m}/permission", get(permissions))
        .route("/machine/{m}/session/{id}/permission/{pid}", post(answer))
        .route("/event", get(events))
        .route("/machine/{m}/screen/layout", post(relay::layout))
        .route("/machine/{m}/screen/command", post(relay::command))
        .route("/ui-command", get(ui::stream))
        // The Control UI page's own needs (`page.rs`).
        .route("/machine/{m}/agent", get(page::agents))
        .route("/markdown", post(page::markdown))
        .route(
            "/machine/{m}/session/{id}/queue",
            get(queue::list).post(queue::submit),
        )
        .route(
            "/machine/{m}/session/{id}/queue/resume",
            post(queue::resume),
        )
        .route(
            "/machine/{m}/session/{id}/queue/{qid}",
            axum::routing::patch(queue::edit).delete(queue::cancel),
        )
        .route(
            "/machine/{m}/session/{id}/queue/{qid}/send",
            post(queue::send_now),
        )
        .merge(crate::web::minting(shared.access.clone()))
        .route_layer(middleware::from_fn_with_state(
            shared.clone(),
            require_token,
        ));
    Router::new()
        .merge(api)
        .layer(DefaultBodyLimit::max(MAX_MESSAGE))
        .with_state(shared.clone())
        .merge(crate::web::public(shared.access.clone()))
        .merge(terminal::router(shared.clone()))
        .layer(middleware::from_fn_with_state(
            shared.access.clone(),
            crate::web::host_origin,
        ))
}

async fn require_token(
    State(shared): State<Arc<Shared>>,
    request: HttpRequest,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(token) if shared.access.token.ct_eq_str(token) => {
            // The person's connection: the cap on unauthenticated ones no longer counts it.
            if let Some(conn) = request.extensions().get::<ax_listen::Conn>() {
                conn.authenticated();
            }
            next.run(request).await
        }
        _ => ApiError::new(
            401,
            "unauthorized",
            "missing or wrong credential".to_owned(),
        )
        .into_response(),
    }
}

type S = State<Arc<Shared>>;

async fn machines(State(shared): S) -> Json<Vec<MachineView>> {
    Json(shared.views())
}

/// Every machine's sessions, asked of all machines at once. Each answer is read on a task of
/// its own, so the big replies are decoded on every core rather than one after the other.
async fn all_sessions(State(shared): S) -> Response {
    let asked = shared.views().into_iter().map(|view| {
        let shared = shared.clone();
        tokio::spawn(async move { shared.sessions_of(view).await })
    });
    let mut all = Vec::new();
    for answer in join_all(asked).await {
        match answer {
            Ok(sessions) => all.push(sessions),
            Err(e) => return ApiError::internal(&e).into_response(),
        }
    }
    listings_response(&all)
}

async fn machine_sessions(State(shared): S, Path(m): Path<String>) -> Response {
    let view = MachineName::new(&m).ok().and_then(|name| {
        let machines = shared.machines.read().unwrap_or_else(|p| p.into_inner());
        machines.get(&name).and_then(|c| shared.view(&name, c))
    });
    match view {
        Some(view) => {
            let listing = shared.sessions_of(view).await;
            let mut body = Vec::with_capacity(listing.len_hint());
            match listing.write(&mut body) {
                Ok(()) => json_response(body),
                Err(e) => ApiError::internal(&e).into_response(),
            }
        }
        None => ApiError::new(404, "not_found", format!("no machine {m:?} joined")).into_response(),
    }
}

async fn create(
    State(shared): S,
    Path(m): Path<String>,
    Json(body): Json<ax_protocol::CreateSession>,
) -> Response {
    let request = Request::CreateSession {
        title: body.title,
        agent: body.agent,
    };
    let mut response = shared.call(&m, request).await;
    if response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::CREATED;
    }
    response
}

async fn rename(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
    Json(body): Json<ax_protocol::RenameSession>,
) -> Response {
    let request = Request::RenameSession {
        session,
        title: body.title,
    };
    shared.call(&m, request).await
}

async fn delete(State(shared): S, Path((m, session)): Path<(String, SessionId)>) -> Response {
    shared.call(&m, Request::DeleteSession { session }).await
}

async fn prompt(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
    Json(prompt): Json<Prompt>,
) -> Response {
    let mut response = shared.call(&m, Request::Prompt { session, prompt }).await;
    if response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::ACCEPTED;
    }
    response
}

async fn abort(State(shared): S, Path((m, session)): Path<(String, SessionId)>) -> Response {
    shared.call(&m, Request::Abort { session }).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ModeBody {
    mode_id: String,
}

async fn mode(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
    Json(body): Json<ModeBody>,
) -> Response {
    let request = Request::SetMode {
        session,
        mode_id: body.mode_id,
    };
    shared.call(&m, request).await
}

async fn permissions(State(shared): S, Path(m): Path<String>) -> Response {
    shared.call(&m, Request::Permissions {}).await
}

async fn answer(
    State(shared): S,
    Path((m, session, permission)): Path<(String, SessionId, ax_protocol::PermissionId)>,
    Json(body): Json<PermissionAnswer>,
) -> Response {
    let request = Request::ReplyPermission {
        session,
        permission,
        reply: body.reply,
        option_id: body.option_id,
    };
    shared.call(&m, request).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventQuery {
    machine: Option<String>,
    after: Option<u64>,
}

async fn events(State(shared): S, headers: HeaderMap, Query(q): Query<EventQuery>) -> Response {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(q.after);
    let filter = match q.machine.as_deref().map(MachineName::new).transpose() {
        Ok(m) => m.map(|m| m.event_subject()).unwrap_or_default(),
        Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
    };
    let deliver_policy = match after {
        Some(seq) => DeliverPolicy::ByStartSequence {
            start_sequence: seq + 1,
        },
        None => DeliverPolicy::New,
    };
    let stream = match shared.js.get_stream(EVENTS_STREAM).await {
        Ok(s) => s,
        Err(e) => return ApiError::new(503, "unavailable", e.to_string()).into_response(),
    };
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            deliver_policy,
            filter_subject: filter,
            ..Default::default()
        })
        .await;
    let messages = match consumer {
        Ok(c) => c.messages().await,
        Err(e) => return ApiError::new(503, "unavailable", e.to_string()).into_response(),
    };
    let messages = match messages {
        Ok(m) => m,
        Err(e) => return ApiError::new(503, "unavailable", e.to_string()).into_response(),
    };
    // An error of the consumer (NATS went away, the consumer was lost) ends the stream: the
    // client reconnects with `Last-Event-ID` and resumes after the last sequence it got,
    // which a consumer that quietly recovers could not promise.
    let messages = messages
        .take_while(|msg| {
            let ok = msg.is_ok();
            if let Err(e) = msg {
                tracing::debug!(error = %e, "hub: event consumer failed; ending the stream");
            }
            futures_util::future::ready(ok)
        })
        .filter_map(|msg| futures_util::future::ready(msg.ok()));
    let stream = messages.filter_map(|msg| async move {
        let seq = msg.info().ok()?.stream_sequence;
        // Re-encoded after a strict parse: a bad message in the stream reaches no UI.
        let event = decode::<MachineEvent>(&msg.payload).ok()?;
        // A backend can publish only on its own subjects; what it claims inside must agree.
        if machine_of(&msg.subject).as_ref() != Some(&event.machine) {
            return None;
        }
        let data = serde_json::to_string(&event).ok()?;
        Some(Ok::<_, Infallible>(
            SseEvent::default().id(seq.to_string()).data(data),
        ))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().text("heartbeat"))
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(n: u32) -> Session {
        Session {
            id: format!("ses_0123456789ab{n:014}").parse().unwrap(),
            title: format!("t \"{n}\" é"),
            created: 1,
            updated: 2,
            status: ax_protocol::SessionStatus::Idle,
            agent: "shell".into(),
            agent_state: None,
            standing: Vec::new(),
        }
    }

    fn listing_of(answer: &[u8]) -> Result<Reply<bytes::Bytes>, String> {
        checked_listing(&bytes::Bytes::copy_from_slice(answer))
    }

    #[test]
    fn a_listing_is_passed_on_as_sent_only_when_it_reads_as_sessions() {
        let sessions = vec![session(1), session(2)];
        let array = serde_json::to_string(&sessions).unwrap();
        // As the join writes it, and spelled otherwise: the array as the machine sent it.
        for answer in [
            format!(r#"{{"ok":{array}}}"#),
            format!(" {{ \"ok\" :\n{array} }} "),
        ] {
            match listing_of(answer.as_bytes()).unwrap() {
                Reply::Ok(raw) => assert_eq!(&raw[..], array.as_bytes()),
                Reply::Error(e) => panic!("{e:?}"),
            }
        }
        assert!(matches!(
            listing_of(br#"{"error":{"status":500,"code":"internal","message":"m"}}"#),
            Ok(Reply::Error(e)) if e.code == "internal"
        ));
        let unknown = array.replacen(r#""title""#, r#""x":1,"title""#, 1);
        for bad in [
            format!(r#"{{"ok":{unknown}}}"#),
            format!(r#"{{"ok":{array},"x":1}}"#),
            format!(r#"{{"ok":{array}}}{{}}"#),
            format!(r#"{{"ok":{array}]}}"#),
            r#"{"ok":{}}"#.to_owned(),
            r#"{"ok":[{}]}"#.to_owned(),
            r#"{"ok":[1]}"#.to_owned(),
            format!(r#"{{"ok":{}}}"#, array.replace("ses_", "xyz_")),
        ] {
            assert!(listing_of(bad.as_bytes()).is_err(), "{bad}");
        }
        let huge = format!(r#"{{"ok":[{}]}}"#, " ".repeat(MAX_MESSAGE));
        assert!(listing_of(huge.as_bytes()).is_err());
    }

    #[test]
    fn a_spliced_listing_is_the_json_of_machine_sessions() {
        let machine = MachineName::new("m-1").unwrap();
        let sessions = vec![session(1), session(2)];
        let array = serde_json::to_vec(&sessions).unwrap();
        let listings = [
            Listing {
                machine: machine.clone(),
                sessions: Listed::Live(array.into()),
            },
            Listing {
                machine: machine.clone(),
                sessions: Listed::LastSeen(sessions.clone()),
            },
        ];
        let mut written = Vec::new();
        for listing in &listings {
            written.push(Vec::new());
            listing.write(written.last_mut().unwrap()).unwrap();
        }
        let expected = |online: bool| MachineSessions {
            machine: machine.clone(),
            online,
            last_seen: !online,
            sessions: sessions.clone(),
        };
        assert_eq!(written[0], serde_json::to_vec(&expected(true)).unwrap());
        assert_eq!(written[1], serde_json::to_vec(&expected(false)).unwrap());
        let parsed: MachineSessions = serde_json::from_slice(&written[0]).unwrap();
        assert_eq!(parsed, expected(true));
    }
}
