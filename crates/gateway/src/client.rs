//! A typed gateway client: the handshake (`connect.challenge` → `connect` → `hello-ok`),
//! requests answered by id, and events by subscription.
//!
//! One task reads the socket: it answers pings (so the gateway's keepalive sees a live
//! peer), hands each response to the request waiting for its id and broadcasts events.
//! Requests may be sent from several tasks at once.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ax_gateway::ClientError> {
//! use ax_gateway::{ConnectOptions, GatewayClient, Method, Scope};
//! let options = ConnectOptions::new("token", ax_gateway::ClientMode::Agent, vec![Scope::Write]);
//! let client = GatewayClient::connect("ws://127.0.0.1:4096/gateway", options).await?;
//! let pong = client.request(Method::Ping, serde_json::json!({})).await?;
//! # let _ = pong; Ok(()) }
//! ```

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use ax_core::Secret;
use futures_util::{
    SinkExt, StreamExt,
    stream::{SplitSink, SplitStream},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tokio::{
    net::TcpStream,
    sync::{broadcast, oneshot},
};
use tokio_tungstenite::{
    MaybeTlsStream, WebSocketStream,
    tungstenite::{self, Message, client::IntoClientRequest},
};

use crate::{
    frame::{ErrorCode, ErrorShape, EventFrame, PROTOCOL, RequestFrame, ServerFrame},
    handshake::{ClientInfo, ClientMode, ConnectAuth, ConnectParams, HelloOk, Role},
    method::{Event, Method},
    scope::Scope,
    ui_command::{UiCommandParams, UiCommandResponse},
    ui_layout::{UiLayout, UiLayoutParams},
};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Events kept for a subscriber that is behind; past this it sees `Lagged`.
const EVENT_BUFFER: usize = 256;

/// Why a gateway call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not a `ws://`/`wss://` (or `http://`/`https://` base) URL.
    #[error("invalid gateway URL: {0}")]
    Url(String),
    /// The WebSocket could not be opened or broke.
    #[error("cannot reach the gateway: {0}")]
    Transport(#[source] Box<tungstenite::Error>),
    /// The gateway answered with an error response.
    #[error("{0}")]
    Gateway(ErrorShape),
    /// The connection ended; the close frame's code and reason when there was one.
    #[error("the gateway closed the connection{}", close_suffix(*.code, .reason))]
    Closed {
        /// The close frame's code, if one came.
        code: Option<u16>,
        /// The close frame's reason; empty if none.
        reason: String,
    },
    /// A frame that is not what the protocol promises.
    #[error("unexpected gateway frame: {0}")]
    Protocol(String),
    /// No answer in time.
    #[error("the gateway did not answer in time")]
    Timeout,
}

fn close_suffix(code: Option<u16>, reason: &str) -> String {
    match (code, reason.is_empty()) {
        (Some(c), false) => format!(" ({c}: {reason})"),
        (Some(c), true) => format!(" ({c})"),
        (None, _) => String::new(),
    }
}

impl ClientError {
    /// The error vocabulary of the gateway, also for local causes: a gateway that cannot be
    /// reached or went away is `UNAVAILABLE`, a bad URL `INVALID_REQUEST`.
    pub fn code(&self) -> ErrorCode {
        match self {
            ClientError::Gateway(e) => e.code,
            ClientError::Url(_) => ErrorCode::InvalidRequest,
            ClientError::Transport(_) | ClientError::Closed { .. } | ClientError::Timeout => {
                ErrorCode::Unavailable
            }
            ClientError::Protocol(_) => ErrorCode::Internal,
        }
    }

    /// The gateway's error response, if that is what this is.
    pub fn gateway_error(&self) -> Option<&ErrorShape> {
        match self {
            ClientError::Gateway(e) => Some(e),
            _ => None,
        }
    }
}

impl From<tungstenite::Error> for ClientError {
    fn from(e: tungstenite::Error) -> Self {
        ClientError::Transport(Box::new(e))
    }
}

/// What the client says about itself in `connect`. `Debug` never shows the token.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The backend credential or the screen credential; `Debug` hides it.
    pub token: Secret,
    /// Who is connecting (sent in `connect.client`).
    pub client: ClientInfo,
    /// Capabilities to advertise, e.g. `ui-commands`.
    pub caps: Vec<String>,
    /// The scopes to ask for; the gateway grants at most what the credential allows.
    pub scopes: Vec<Scope>,
    /// Bound on the whole handshake.
    pub handshake_timeout: Duration,
}

impl ConnectOptions {
    /// A client of `mode` asking for `scopes`, named after this crate.
    pub fn new(token: impl Into<Secret>, mode: ClientMode, scopes: Vec<Scope>) -> Self {
        ConnectOptions {
            token: token.into(),
            client: ClientInfo {
                id: "ax-gateway-client".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                platform: std::env::consts::OS.into(),
                mode,
            },
            caps: Vec::new(),
            scopes,
            handshake_timeout: Duration::from_secs(10),
        }
    }

    /// Sets `client.id` (shown in the gateway's logs and outcomes).
    pub fn with_client_id(mut self, id: impl Into<String>) -> Self {
        self.client.id = id.into();
        self
    }

    /// Replaces the advertised capabilities.
    pub fn with_caps<I: IntoIterator<Item = S>, S: Into<String>>(mut self, caps: I) -> Self {
        self.caps = caps.into_iter().map(Into::into).collect();
        self
    }

    fn params(&self) -> ConnectParams {
        ConnectParams {
            min_protocol: PROTOCOL,
            max_protocol: PROTOCOL,
            client: self.client.clone(),
            caps: self.caps.clone(),
            role: Role::Operator,
            scopes: self.scopes.clone(),
            auth: ConnectAuth {
                token: self.token.clone(),
            },
        }
    }
}

/// The gateway URL for a backend's base URL (`http://host:port` → `ws://host:port/gateway`).
/// A `ws://`/`wss://` URL is taken as it is.
pub fn gateway_url(base: &str) -> Result<String, ClientError> {
    if base.starts_with("ws://") || base.starts_with("wss://") {
        return Ok(base.to_string());
    }
    let base = base.trim_end_matches('/');
    let rest = if let Some(r) = base.strip_prefix("http://") {
        format!("ws://{r}")
    } else if let Some(r) = base.strip_prefix("https://") {
        format!("wss://{r}")
    } else {
        return Err(ClientError::Url(format!(
            "expected http://, https://, ws:// or wss://, got {base}"
        )));
    };
    Ok(format!("{rest}/gateway"))
}

type Waiters = HashMap<String, oneshot::Sender<Result<Value, ErrorShape>>>;

/// What the reader task shares with the handle.
struct Inbox {
    waiters: Mutex<Option<Waiters>>,
    /// Set once the connection ended: what ended it.
    ended: Mutex<Option<(Option<u16>, String)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection past `hello-ok`. Dropping it closes the socket.
pub struct GatewayClient {
    sink: tokio::sync::Mutex<SplitSink<Socket, Message>>,
    inbox: Arc<Inbox>,
    events: broadcast::Sender<EventFrame>,
    next_id: AtomicU64,
    hello: HelloOk,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for GatewayClient {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl GatewayClient {
    /// Open `url` (see [`gateway_url`]) and complete the handshake. A refused `connect` is
    /// [`ClientError::Gateway`] with the gateway's code (`FORBIDDEN` for a wrong token).
    pub async fn connect(url: &str, options: ConnectOptions) -> Result<Self, ClientError> {
        let request = gateway_url(url)?
            .into_client_request()
            .map_err(|e| ClientError::Url(e.to_string()))?;
        let limit = options.handshake_timeout;
        tokio::time::timeout(limit, async {
            let (ws, _) = tokio_tungstenite::connect_async(request).await?;
            Self::handshake(ws, &options).await
        })
        .await
        .map_err(|_| ClientError::Timeout)?
    }

    /// Complete the handshake on an already opened WebSocket (e.g. one with special socket
    /// options).
    pub async fn handshake(mut ws: Socket, options: &ConnectOptions) -> Result<Self, ClientError> {
        match next_frame(&mut ws).await? {
            ServerFrame::Event(e) if e.event == Event::ConnectChallenge.as_str() => {}
            _ => return Err(ClientError::Protocol("expected connect.challenge".into())),
        }
        let connect = encode(&RequestFrame::new(
            "connect",
            Method::Connect.as_str(),
            to_value(&options.params())?,
        ))?;
        ws.send(Message::text(connect)).await?;
        let hello = loop {
            match next_frame(&mut ws).await? {
                ServerFrame::Response(res) if res.id == "connect" => break res,
                ServerFrame::Response(res) => {
                    return Err(ClientError::Protocol(format!(
                        "response to {:?} before hello-ok",
                        res.id
                    )));
                }
                ServerFrame::Event(_) => continue,
            }
        };
        if let Some(error) = hello.error {
            return Err(ClientError::Gateway(error));
        }
        let hello: HelloOk = serde_json::from_value(hello.payload.unwrap_or(Value::Null))
            .map_err(|e| ClientError::Protocol(format!("hello-ok: {e}")))?;
        let (sink, stream) = ws.split();
        let inbox = Arc::new(Inbox {
            waiters: Mutex::new(Some(HashMap::new())),
            ended: Mutex::new(None),
        });
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let reader = tokio::spawn(read_loop(stream, inbox.clone(), events.clone()));
        Ok(GatewayClient {
            sink: tokio::sync::Mutex::new(sink),
            inbox,
            events,
            next_id: AtomicU64::new(1),
            hello,
            reader,
        })
    }

    /// The gateway's `hello-ok`: connection id, granted scopes, methods, limits.
    pub fn hello(&self) -> &HelloOk {
        &self.hello
    }

    /// Events from now on, in the order the gateway sent them. A subscriber that falls more
    /// than 256 events behind sees `RecvError::Lagged`; the stream ends with the connection.
    pub fn subscribe(&self) -> broadcast::Receiver<EventFrame> {
        self.events.subscribe()
    }

    /// Send a request and wait for its response payload.
    pub async fn request(&self, method: Method, params: Value) -> Result<Value, ClientError> {
        self.send(method, params).await?.response().await
    }

    /// Send a request without waiting for its answer (pipelining: send several, then await
    /// each [`Pending::response`]).
    pub async fn send(&self, method: Method, params: Value) -> Result<Pending, ClientError> {
        let id = format!("r{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        match lock(&self.inbox.waiters).as_mut() {
            Some(waiters) => waiters.insert(id.clone(), tx),
            None => return Err(closed(&self.inbox)),
        };
        let frame = encode(&RequestFrame::new(id.clone(), method.as_str(), params))?;
        let sent = self.sink.lock().await.send(Message::text(frame)).await;
        if let Err(e) = sent {
            if let Some(w) = lock(&self.inbox.waiters).as_mut() {
                w.remove(&id);
            }
            return Err(e.into());
        }
        Ok(Pending {
            rx,
            inbox: self.inbox.clone(),
        })
    }

    /// [`request`](Self::request) with typed params and answer.
    pub async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: Method,
        params: &P,
    ) -> Result<R, ClientError> {
        let payload = self.request(method, to_value(params)?).await?;
        serde_json::from_value(payload)
            .map_err(|e| ClientError::Protocol(format!("{method} response: {e}")))
    }

    /// `ui.layout`: the layouts the targeted Control UIs reported.
    pub async fn ui_layout(&self, params: &UiLayoutParams) -> Result<Vec<UiLayout>, ClientError> {
        #[derive(serde::Deserialize)]
        struct Answer {
            uis: Vec<UiLayout>,
        }
        let a: Answer = self.call(Method::UiLayout, params).await?;
        Ok(a.uis)
    }

    /// `ui.command`: what the Control UIs were sent (and, with `wait`, what they did).
    pub async fn ui_command(
        &self,
        params: &UiCommandParams,
    ) -> Result<UiCommandResponse, ClientError> {
        self.call(Method::UiCommand, params).await
    }

    /// Whether `session_key` is a session of the served project (`session.check`).
    pub async fn session_exists(&self, session_key: &str) -> Result<bool, ClientError> {
        let params = crate::handshake::SessionCheckParams {
            session_key: session_key.to_string(),
        };
        let res: crate::handshake::SessionCheckResponse =
            self.call(Method::SessionCheck, &params).await?;
        Ok(res.exists)
    }

    /// Send a close frame and wait (bounded) for the connection to end.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            let _ = self.sink.lock().await.close().await;
        })
        .await;
    }
}

/// A sent request whose answer has not been read yet.
pub struct Pending {
    rx: oneshot::Receiver<Result<Value, ErrorShape>>,
    inbox: Arc<Inbox>,
}

impl Pending {
    /// The response payload, or the gateway's error.
    pub async fn response(self) -> Result<Value, ClientError> {
        match self.rx.await {
            Ok(Ok(payload)) => Ok(payload),
            Ok(Err(error)) => Err(ClientError::Gateway(error)),
            Err(_) => Err(closed(&self.inbox)),
        }
    }
}

fn closed(inbox: &Inbox) -> ClientError {
    match lock(&inbox.ended).clone() {
        Some((code, reason)) => ClientError::Closed { code, reason },
        None => ClientError::Closed {
            code: None,
            reason: String::new(),
        },
    }
}

fn to_value<T: Serialize>(v: &T) -> Result<Value, ClientError> {
    serde_json::to_value(v).map_err(|e| ClientError::Protocol(format!("encode: {e}")))
}

fn encode<T: Serialize>(v: &T) -> Result<String, ClientError> {
    serde_json::to_string(v).map_err(|e| ClientError::Protocol(format!("encode: {e}")))
}

fn parse(text: &str) -> Result<ServerFrame, ClientError> {
    serde_json::from_str(text).map_err(|e| ClientError::Protocol(format!("not a frame: {e}")))
}

/// The next frame during the handshake (before the reader task exists).
async fn next_frame(ws: &mut Socket) -> Result<ServerFrame, ClientError> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => return parse(&t),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            Some(Ok(Message::Binary(_))) => {
                return Err(ClientError::Protocol("binary frame".into()));
            }
            Some(Ok(Message::Close(f))) => {
                return Err(ClientError::Closed {
                    code: f.as_ref().map(|f| u16::from(f.code)),
                    reason: f.map(|f| f.reason.to_string()).unwrap_or_default(),
                });
            }
            Some(Err(e)) => return Err(e.into()),
            None => {
                return Err(ClientError::Closed {
                    code: None,
                    reason: String::new(),
                });
            }
        }
    }
}

async fn read_loop(
    mut stream: SplitStream<Socket>,
    inbox: Arc<Inbox>,
    events: broadcast::Sender<EventFrame>,
) {
    let ended = loop {
        match stream.next().await {
            Some(Ok(Message::Text(t))) => match parse(&t) {
                Ok(ServerFrame::Response(res)) => {
                    let waiter = lock(&inbox.waiters)
                        .as_mut()
                        .and_then(|w| w.remove(&res.id));
                    if let Some(waiter) = waiter {
                        let answer = match res.error {
                            Some(e) => Err(e),
                            None => Ok(res.payload.unwrap_or(Value::Null)),
                        };
                        let _ = waiter.send(answer);
                    }
                }
                Ok(ServerFrame::Event(e)) => {
                    // No subscriber is not an error.
                    let _ = events.send(e);
                }
                Err(_) => break (None, "unparsable frame from the gateway".to_string()),
            },
            Some(Ok(Message::Close(f))) => {
                break (
                    f.as_ref().map(|f| u16::from(f.code)),
                    f.map(|f| f.reason.to_string()).unwrap_or_default(),
                );
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => break (None, e.to_string()),
            None => break (None, String::new()),
        }
    };
    *lock(&inbox.ended) = Some(ended);
    // Waiters see the end through their dropped senders.
    lock(&inbox.waiters).take();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_url_from_base() {
        assert_eq!(
            gateway_url("http://127.0.0.1:4096/").unwrap(),
            "ws://127.0.0.1:4096/gateway"
        );
        assert_eq!(
            gateway_url("https://h:1").unwrap(),
            "wss://h:1/gateway".to_string()
        );
        assert_eq!(gateway_url("ws://h:1/gateway").unwrap(), "ws://h:1/gateway");
        assert!(matches!(gateway_url("ftp://x"), Err(ClientError::Url(_))));
    }

    #[test]
    fn options_debug_hides_the_token() {
        let o = ConnectOptions::new("secret-token-value", ClientMode::Agent, vec![Scope::Write]);
        assert!(!format!("{o:?}").contains("secret-token-value"));
    }

    #[test]
    fn error_codes_for_local_causes() {
        assert_eq!(ClientError::Timeout.code(), ErrorCode::Unavailable);
        assert_eq!(
            ClientError::Url("x".into()).code(),
            ErrorCode::InvalidRequest
        );
        let e = ClientError::Gateway(ErrorShape::new(ErrorCode::Forbidden, "no"));
        assert_eq!(e.code(), ErrorCode::Forbidden);
        assert_eq!(e.to_string(), "FORBIDDEN: no");
        let closed = ClientError::Closed {
            code: Some(1009),
            reason: "frame too large".into(),
        };
        assert_eq!(
            closed.to_string(),
            "the gateway closed the connection (1009: frame too large)"
        );
    }
}
