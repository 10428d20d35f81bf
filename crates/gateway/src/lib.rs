//! The ax-code gateway: one WebSocket per client, a typed request/response/event protocol with
//! operator scopes, and the fan-out of `ui.command` to every connected Control UI.
//!
//! The backend owns the HTTP side (the `/gateway` route, Host and Origin checks, the upgrade
//! with small buffers) and hands each upgraded socket to [`Gateway::serve_socket`]:
//!
//! ```no_run
//! use std::sync::Arc;
//! use axum::{Router, extract::{State, ws::WebSocketUpgrade}, routing::get};
//! use ax_gateway::{Gateway, GatewayConfig, SessionDirectory};
//!
//! struct NoSessions;
//! impl SessionDirectory for NoSessions {
//!     fn contains(&self, _: &str) -> bool { false }
//! }
//!
//! let gateway = Gateway::new(GatewayConfig {
//!     token: "secret".into(),
//!     server_version: "0.1.0".into(),
//!     sessions: Arc::new(NoSessions),
//!     terminal: None,
//! });
//! let app: Router = Router::new()
//!     .route("/gateway", get(|State(g): State<Gateway>, ws: WebSocketUpgrade| async move {
//!         g.configure_upgrade(ws).on_upgrade(move |socket| g.serve_socket(socket))
//!     }))
//!     .with_state(gateway);
//! ```
//!
//! The other side is [`client::GatewayClient`] (handshake, requests by id, events), and on it
//! [`screen::ScreenServer`], the `screen` MCP tool.
//!
//! Module map: [`frame`] (wire frames, error codes), [`method`] (method and event names),
//! [`handshake`] (`connect`, `hello-ok`), [`scope`], [`ui_command`] (command types and
//! acknowledgements), [`ui_layout`] (layout reports, `ui.layout`, targets), `hub` (registry,
//! fan-out and the latest layouts), `outbound` (bounded per-connection queues),
//! `connection` (reader and writer tasks), `terminal` (the operator terminal's wire side; the backend
//! runs the commands through a [`TerminalHost`]), [`client`], [`screen`] and its arguments
//! [`screen_args`].

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use ax_core::Secret;
use axum::extract::ws::{WebSocket, WebSocketUpgrade};

pub mod client;
mod connection;
pub mod frame;
pub mod handshake;
mod hub;
pub mod method;
mod outbound;
mod pty;
pub mod scope;
pub mod screen;
pub mod screen_args;
mod screen_error;
mod terminal;
pub mod ui_command;
pub mod ui_layout;

pub use client::{ClientError, ConnectOptions, GatewayClient, Pending};
pub use connection::{MAX_PREHANDSHAKE_FRAME, parse_request};
pub use frame::{
    ErrorCode, ErrorShape, EventFrame, PROTOCOL, RequestFrame, ResponseFrame, ServerFrame,
};
pub use handshake::{
    CAP_UI_COMMANDS, ClientInfo, ClientMode, ConnectAuth, ConnectParams, HelloOk, Role,
    SessionCheckParams, SessionCheckResponse,
};
pub use method::{Event, Method};
pub use pty::{
    MAX_COLS as TERMINAL_MAX_COLS, MAX_INPUT as TERMINAL_MAX_INPUT, MAX_ROWS as TERMINAL_MAX_ROWS,
    MAX_TERMINALS, SCROLLBACK as TERMINAL_SCROLLBACK,
};
pub use scope::{Scope, Scopes};
pub use terminal::{
    MAX_COMMAND as TERMINAL_MAX_COMMAND, MAX_OUTPUT as TERMINAL_MAX_OUTPUT, OpenedPty, PtyControl,
    PtyOutput, TerminalEvent, TerminalHost, TerminalSize, TerminalStartError, TerminalStream,
};
pub use ui_command::{
    AckOutcome, Annotation, Dock, NotApplied, Outcome, PanelKind, Preset, SplitDirection,
    UiCommand, UiCommandEvent, UiCommandParams, UiCommandResponse, UiCommandResultParams,
    UiOutcome,
};
pub use ui_layout::{LayoutReport, Target, UiLayout, UiLayoutParams};

/// Largest frame accepted after the handshake (the default [`Tuning::max_payload`]). The
/// upgrade should pass it as `max_message_size`, so a larger frame is refused before it is
/// buffered whole.
pub const MAX_PAYLOAD: usize = 256 * 1024;

/// How far past [`Tuning::max_payload`] the WebSocket layer still reads a message whole, so
/// the gateway itself refuses it (an error response, then 1009 with a reason) and the peer
/// gets both: when the layer's cap cuts a frame mid-way, the unread rest makes the close a
/// reset that can swallow them.
const WS_CAP_HEADROOM: usize = 64 * 1024;

/// `tracing` filter directives that every subscriber of a process hosting or using the
/// gateway adds: the WebSocket library prints whole frames at trace level, and the first
/// frame of a connection carries its credential.
pub const LOG_DIRECTIVES: &[&str] = &["tungstenite=debug", "tokio_tungstenite=debug"];

/// Tells the gateway whether a session exists in the served project.
pub trait SessionDirectory: Send + Sync + 'static {
    /// Whether `session_id` names a session of the served project.
    fn contains(&self, session_id: &str) -> bool;
}

/// Per-session screen credentials: the `screen` MCP server a session hands its agent
/// (docs/agents.md §8) connects with one. It grants at most `operator.read` and
/// `operator.write`, never connects as a `ui` client, and `ui.command` works with it only while
/// [`SessionScreens::enabled`] says so for its session and only as that session (the source
/// `sessionKey` of its commands). Such a connection can ask `screen.gate` and hears the
/// `screen.gate` event when its session's gate changes ([`Gateway::screen_gate_changed`]).
pub trait SessionScreens: Send + Sync + 'static {
    /// The session whose credential `token` is, if any. Implementations compare every
    /// credential in constant time.
    fn session_of(&self, token: &Secret) -> Option<String>;
    /// Whether the session's current turn may arrange the screen (it came from a Control UI).
    fn enabled(&self, session: &str) -> bool;
    /// The connection of the Control UI that started the session's current turn, if one
    /// did and the turn runs (what `target: "requester"` means).
    fn requester(&self, _session: &str) -> Option<String> {
        None
    }
}

/// What the backend gives the gateway.
pub struct GatewayConfig {
    /// The backend credential; a client proves it in its `connect` frame.
    pub token: Secret,
    /// Reported in `hello-ok.server.version`.
    pub server_version: String,
    /// Resolves session keys of `ui.command`.
    pub sessions: Arc<dyn SessionDirectory>,
    /// Runs `terminal.run` commands; `None` answers them `UNAVAILABLE`.
    pub terminal: Option<Arc<dyn TerminalHost>>,
}

/// A credential besides [`GatewayConfig::token`] that grants at most `scopes` (the backend's
/// screen credential: read and write, never admin), and never connects as a `ui` client: an
/// agent holding it could otherwise acknowledge its own commands as if a page were open.
/// Compared in constant time; its `Debug` never shows the token.
#[derive(Debug, Clone)]
pub struct LimitedToken {
    /// The credential; `Debug` hides it.
    pub token: Secret,
    /// The most it grants.
    pub scopes: Scopes,
}

/// Limits and timers. The defaults suit a local backend; tests shorten the timers.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// A `tick` event (and a WebSocket ping) goes out this often.
    pub tick_interval: Duration,
    /// A peer silent for this long (not even a pong) is dropped.
    pub dead_after: Duration,
    /// Time allowed from the upgrade to a sent `hello-ok`.
    pub handshake_timeout: Duration,
    /// Frames a connection may have queued before it counts as a slow consumer.
    pub queue_frames: usize,
    /// Bytes a connection may have queued before it counts as a slow consumer.
    pub queue_bytes: usize,
    /// How long `ui.command` with `wait: true` collects answers.
    pub wait_timeout: Duration,
    /// Largest frame accepted after the handshake.
    pub max_payload: usize,
    /// How long a connection cut by the gateway (slow consumer, dead peer) may take to accept
    /// its close frame before the socket is dropped.
    pub close_grace: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            tick_interval: Duration::from_secs(15),
            dead_after: Duration::from_secs(40),
            handshake_timeout: Duration::from_secs(10),
            queue_frames: 1024,
            queue_bytes: 1 << 20,
            wait_timeout: Duration::from_secs(2),
            max_payload: MAX_PAYLOAD,
            close_grace: Duration::from_secs(10),
        }
    }
}

pub(crate) struct Shared {
    pub(crate) config: GatewayConfig,
    /// Credentials that grant fewer scopes than the full token.
    pub(crate) limited: Vec<LimitedToken>,
    pub(crate) tuning: Tuning,
    pub(crate) hub: hub::Hub,
    /// The operator's interactive terminals; they outlive connections.
    pub(crate) terminals: pty::Terminals,
    /// Session-scoped screen credentials, when the backend hands agents a screen server.
    pub(crate) session_screens: std::sync::OnceLock<Arc<dyn SessionScreens>>,
    pub(crate) next_conn: AtomicU64,
    /// The gateway's clock for keepalive bookkeeping.
    epoch: Instant,
    ticker: AtomicBool,
}

impl Shared {
    pub(crate) fn clock_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// One task for the whole gateway queues every connection's tick and drops dead peers,
    /// so writers wait on nothing but their queue. Started from the first connection (inside
    /// the runtime); it ends when the gateway is dropped.
    pub(crate) fn ensure_ticker(self: &Arc<Self>) {
        if self.ticker.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let every = self.tuning.tick_interval;
        tokio::spawn(async move {
            let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let Some(shared) = weak.upgrade() else { break };
                let dead = shared.tuning.dead_after.as_millis() as u64;
                shared.hub.tick(shared.clock_ms(), dead);
            }
        });
    }
}

/// A cheap, cloneable handle to the gateway's shared state.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl Gateway {
    /// A gateway with the default [`Tuning`].
    pub fn new(config: GatewayConfig) -> Self {
        Gateway::with_tuning(config, Tuning::default())
    }

    /// A gateway with its limits and timings set (tests shorten them).
    pub fn with_tuning(config: GatewayConfig, tuning: Tuning) -> Self {
        Gateway::with_limited_tokens(config, tuning, Vec::new())
    }

    /// Like [`Gateway::with_tuning`], also accepting each of `limited` in `connect.auth.token`,
    /// granting what the client asked for intersected with that token's scopes.
    pub fn with_limited_tokens(
        config: GatewayConfig,
        tuning: Tuning,
        limited: Vec<LimitedToken>,
    ) -> Self {
        Gateway {
            shared: Arc::new(Shared {
                config,
                limited,
                tuning,
                hub: hub::Hub::default(),
                terminals: pty::Terminals::default(),
                session_screens: std::sync::OnceLock::new(),
                next_conn: AtomicU64::new(1),
                epoch: Instant::now(),
                ticker: AtomicBool::new(false),
            }),
        }
    }

    /// Serve one upgraded WebSocket until it closes. Returns the future instead of being an
    /// `async fn`, so the socket is not kept in it twice: pass the socket straight in, e.g.
    /// `on_upgrade(move |socket| gateway.serve_socket(socket))`.
    pub fn serve_socket(&self, socket: WebSocket) -> impl Future<Output = ()> + Send + use<> {
        connection::serve(self.shared.clone(), socket, None)
    }

    /// [`Gateway::serve_socket`], calling `on_open` once the handshake succeeded (a valid
    /// `connect`, `hello-ok` sent): a host that caps connections without a credential counts
    /// the socket as authenticated from then on.
    pub fn serve_socket_then(
        &self,
        socket: WebSocket,
        on_open: Box<dyn FnOnce() + Send>,
    ) -> impl Future<Output = ()> + Send + use<> {
        connection::serve(self.shared.clone(), socket, Some(on_open))
    }

    /// The upgrade settings the gateway expects: 4 KiB buffers (an idle connection costs a
    /// few KiB, not 134) and a message cap a little above [`Tuning::max_payload`], so that
    /// the gateway's own size check answers an oversized frame.
    pub fn configure_upgrade(&self, ws: WebSocketUpgrade) -> WebSocketUpgrade {
        let cap = self.shared.tuning.max_payload.max(MAX_PREHANDSHAKE_FRAME) + WS_CAP_HEADROOM;
        ws.read_buffer_size(4096)
            .write_buffer_size(4096)
            .max_message_size(cap)
            .max_frame_size(cap)
    }

    /// Connections past the handshake.
    pub fn connection_count(&self) -> usize {
        self.shared.hub.len()
    }

    /// Connections that receive `ui.command` events.
    pub fn ui_client_count(&self) -> usize {
        self.shared.hub.ui_targets()
    }

    /// Accepts the session-scoped screen credentials `screens` knows from now on (set once;
    /// a second call is ignored and answers `false`).
    pub fn set_session_screens(&self, screens: Arc<dyn SessionScreens>) -> bool {
        self.shared.session_screens.set(screens).is_ok()
    }

    /// Whether `conn_id` names a live connection that receives `ui.command`: a `ui` client
    /// that advertised `ui-commands`, authenticated with the backend credential (a limited or
    /// session credential cannot be a `ui` client) and granted at least `operator.read`.
    pub fn is_ui_client(&self, conn_id: &str) -> bool {
        self.shared.hub.is_ui_target(conn_id)
    }

    /// Sends `event`, a `ui.command` another gateway accepted and delivered (a hub relays a
    /// machine's, docs/hub.md §4), to every UI client of this gateway, keeping its
    /// `commandId`, and collects their acknowledgements as for a waited `ui.command`
    /// (docs/gateway.md §3): a UI may answer only a command it was sent, once, within
    /// [`Tuning::wait_timeout`]; any other `ui.command.result` is answered `accepted: false`.
    /// Each accepted answer comes out of [`RelayedCommand::answers`] as it is recorded; the
    /// receiver ends when the wait is over. The event's shape is checked again (sessions are
    /// not: this gateway may know none); a `commandId` already waited for here is
    /// `INVALID_REQUEST`, no UI client `UNAVAILABLE`.
    pub fn relay_ui_command(&self, event: &UiCommandEvent) -> Result<RelayedCommand, ErrorShape> {
        event
            .check_relayed()
            .map_err(|m| ErrorShape::invalid(format!("invalid ui.command event: {m}")))?;
        let delivery = self.shared.hub.relay_ui_command(event)?;
        let (Some(done), Some(answers)) = (delivery.wait, delivery.answers) else {
            return Err(ErrorShape::new(
                frame::ErrorCode::Internal,
                "a relayed command is not waited for",
            ));
        };
        // The wait's end forgets the command (the answers' sender with it).
        let shared = self.shared.clone();
        let id = event.command_id.clone();
        tokio::spawn(async move {
            shared
                .hub
                .collect(&id, done, shared.tuning.wait_timeout)
                .await;
        });
        Ok(RelayedCommand {
            delivered: delivery.delivered,
            answers,
        })
    }

    /// Tells the screen servers of `session` that its gate is now `enabled` (event
    /// `screen.gate {enabled}`), so they can announce the changed tool list.
    pub fn screen_gate_changed(&self, session: &str, enabled: bool) {
        self.shared.hub.screen_gate_changed(session, enabled);
    }
}

/// A `ui.command` sent on by [`Gateway::relay_ui_command`].
#[derive(Debug)]
pub struct RelayedCommand {
    /// How many UI clients it was written to.
    pub delivered: usize,
    /// Each UI's acknowledgement (never `no_answer`), in the order they came; ends when the
    /// wait is over.
    pub answers: tokio::sync::mpsc::Receiver<UiOutcome>,
}

/// `bytes` random bytes as hex, for the handshake nonce and connection-scoped ids. A failure of
/// the OS random source is an `INTERNAL` error: a guessable nonce is worse than a refusal.
pub(crate) fn random_hex(bytes: usize) -> Result<String, frame::ErrorShape> {
    hex_or_refusal(ax_core::random::random_hex(bytes))
}

/// The error shape a request or handshake fails with when randomness is unavailable.
fn hex_or_refusal(
    drawn: Result<String, ax_core::RandomError>,
) -> Result<String, frame::ErrorShape> {
    drawn.map_err(|e| {
        tracing::error!(error = %e, "no randomness for a nonce or id");
        frame::ErrorShape::new(
            frame::ErrorCode::Internal,
            "the server cannot get random bytes from the operating system",
        )
    })
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_randomness_is_an_internal_error_never_a_guess() {
        let refused = hex_or_refusal(Err(ax_core::RandomError::unavailable())).unwrap_err();
        assert_eq!(refused.code, frame::ErrorCode::Internal);
        assert!(refused.message.contains("random"), "{}", refused.message);
        let hex = random_hex(16).unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
