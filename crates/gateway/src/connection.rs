//! One client connection: the handshake, then a reader (this task) and a writer task.
//!
//! The writer owns the socket's sink and the connection's `seq` counter, so `seq` numbers
//! follow the order frames really leave. Everything else only pushes into the bounded
//! [`Outbound`] queue.

use std::{
    collections::VecDeque,
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::{
    SinkExt, StreamExt,
    stream::{SplitSink, SplitStream},
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{
    Shared,
    frame::{
        ErrorCode, ErrorShape, EventPrefix, MAX_ID_LEN, MAX_METHOD_LEN, PROTOCOL, RequestFrame,
        ResponseFrame,
    },
    handshake::{
        CAP_UI_COMMANDS, ClientMode, ConnectParams, Features, HelloAuth, HelloOk, Policy, Role,
        ServerInfo, SessionCheckParams, SessionCheckResponse,
    },
    hub::ConnEntry,
    method::{Event, Method},
    outbound::{Out, Outbound},
    pty,
    scope::{Scope, Scopes},
    terminal::{self, KillParams, RunParams, TerminalSlot},
    ui_command::{UiCommandEvent, UiCommandParams, UiCommandResponse, UiCommandResultParams},
    ui_layout::{LayoutReport, Target, UiLayoutParams, UiLayoutResponse, check_target},
};

/// Largest frame before the handshake completes.
pub const MAX_PREHANDSHAKE_FRAME: usize = 64 * 1024;
/// Waited `ui.command` requests one connection may have open.
const MAX_WAITS_PER_CONN: usize = 8;

/// Close codes (RFC 6455 §7.4.1).
const CLOSE_NORMAL: u16 = 1000;
const CLOSE_INVALID_DATA: u16 = 1007;
const CLOSE_POLICY: u16 = 1008;
const CLOSE_TOO_BIG: u16 = 1009;
/// RFC 6455 "internal error": the server cannot continue this connection.
const CLOSE_INTERNAL: u16 = 1011;

/// Params of a method that takes none.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

struct Rejection {
    id: String,
    error: ErrorShape,
    close_code: u16,
}

struct Accepted {
    params: ConnectParams,
    scopes: Scopes,
    request_id: String,
    /// The session of a session-scoped screen credential.
    screen_session: Option<String>,
}

/// Why reading the socket failed, when the WebSocket layer says so: a frame over its cap or
/// a text frame that is not UTF-8 get the close code the standard names, with a reason.
fn read_failure(e: &axum::Error) -> Option<(u16, &'static str)> {
    use tokio_tungstenite::tungstenite::Error as WsError;
    match std::error::Error::source(e)?.downcast_ref::<WsError>()? {
        WsError::Capacity(_) => Some((CLOSE_TOO_BIG, "frame too large")),
        WsError::Utf8(_) => Some((CLOSE_INVALID_DATA, "text frame is not valid UTF-8")),
        _ => None,
    }
}

/// A connection past `hello-ok`: only what the connection keeps. The `connect` params (with
/// the client's strings and its token) stay behind in the boxed handshake and are freed.
struct Opened {
    socket: WebSocket,
    scopes: Scopes,
    ui_target: bool,
    screen_session: Option<String>,
    key: u64,
    conn_id: String,
}

/// Closes a connection the server cannot serve (no randomness), with the reason in the frame.
async fn refuse(socket: &mut WebSocket, reason: &str) {
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        socket.send(close_message(CLOSE_INTERNAL, reason)),
    )
    .await;
}

/// Challenge, `connect`, `hello-ok`. Boxed by the caller: its state is large and only
/// needed once, so an idle connection does not keep it.
async fn open(shared: Arc<Shared>, mut socket: WebSocket) -> Option<Opened> {
    let shared = &*shared;
    let tuning = &shared.tuning;
    // Without randomness the nonce could be guessed and a proof replayed: refuse the connection.
    let nonce = match crate::random_hex(16) {
        Ok(nonce) => nonce,
        Err(refusal) => {
            refuse(&mut socket, &refusal.message).await;
            return None;
        }
    };
    let handshake = tokio::time::timeout(tuning.handshake_timeout, async {
        let challenge = json!({"nonce": nonce, "ts": crate::now_ms()});
        let frame = EventPrefix::new(Event::ConnectChallenge.as_str(), &challenge).finish(1);
        socket
            .send(Message::Text(frame.into()))
            .await
            .map_err(|_| None)?;
        handshake(shared, &mut socket).await.map_err(Some)
    })
    .await;
    let accepted = match handshake {
        Ok(Ok(a)) => a,
        Ok(Err(Some(rejection))) => {
            let reason = rejection.error.message.clone();
            let res = ResponseFrame::failure(rejection.id, rejection.error).to_json();
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                let _ = socket.send(Message::Text(res.into())).await;
                let _ = socket
                    .send(close_message(rejection.close_code, &reason))
                    .await;
            })
            .await;
            return None;
        }
        Ok(Err(None)) => return None,
        Err(_) => {
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                socket.send(close_message(CLOSE_POLICY, "handshake timeout")),
            )
            .await;
            return None;
        }
    };

    let conn_id = match crate::random_hex(8) {
        Ok(hex) => format!("conn_{hex}"),
        Err(refusal) => {
            refuse(&mut socket, &refusal.message).await;
            return None;
        }
    };
    let key = shared.next_conn.fetch_add(1, Ordering::Relaxed);
    let hello = HelloOk {
        protocol: PROTOCOL,
        server: ServerInfo {
            version: shared.config.server_version.clone(),
            conn_id: conn_id.clone(),
        },
        features: Features {
            methods: Method::advertised().map(|m| m.as_str().into()).collect(),
            events: Event::ALL.iter().map(|e| e.as_str().into()).collect(),
        },
        auth: HelloAuth {
            role: Role::Operator,
            scopes: accepted.scopes.to_vec(),
        },
        policy: Policy {
            max_payload: tuning.max_payload,
            tick_interval_ms: tuning.tick_interval.as_millis() as u64,
        },
    };
    let hello = ResponseFrame::success(
        accepted.request_id.clone(),
        serde_json::to_value(&hello).unwrap_or(Value::Null),
    )
    .to_json();
    let sent = tokio::time::timeout(
        tuning.handshake_timeout,
        socket.send(Message::Text(hello.into())),
    )
    .await;
    if !matches!(sent, Ok(Ok(()))) {
        return None;
    }
    // Receiving `ui.command` (what the page shows) needs at least read.
    let ui_target = accepted.params.client.mode == ClientMode::Ui
        && accepted.params.caps.iter().any(|c| c == CAP_UI_COMMANDS)
        && accepted.scopes.satisfies(Scope::Read);
    Some(Opened {
        socket,
        scopes: accepted.scopes,
        ui_target,
        screen_session: accepted.screen_session,
        key,
        conn_id,
    })
}

/// Serves one upgraded socket. Not an `async fn`: the socket goes straight into the boxed
/// handshake, so the long-lived future never holds a (moved-out) copy of it.
pub(crate) fn serve(
    shared: Arc<Shared>,
    socket: WebSocket,
    on_open: Option<Box<dyn FnOnce() + Send>>,
) -> impl Future<Output = ()> + Send + 'static {
    let handshake = Box::pin(open(shared.clone(), socket));
    async move {
        shared.ensure_ticker();
        if let Some(opened) = handshake.await {
            if let Some(on_open) = on_open {
                on_open();
            }
            run(shared, opened).await;
        }
    }
}

/// Registers the connection and starts its writer, then returns the reader's future. Not an
/// `async fn`, for the same reason as [`serve`]: the future keeps only what the reader needs.
fn run(shared: Arc<Shared>, opened: Opened) -> impl Future<Output = ()> + Send + 'static {
    let Opened {
        socket,
        scopes,
        ui_target,
        screen_session,
        key,
        conn_id,
    } = opened;
    let tuning = &shared.tuning;

    let out = Arc::new(Outbound::new(tuning.queue_frames, tuning.queue_bytes));
    let entry = Arc::new(ConnEntry {
        key,
        conn_id,
        ui_target,
        screen_session,
        out: out.clone(),
        last_seen: AtomicU64::new(shared.clock_ms()),
        layout: std::sync::Mutex::new(None),
    });
    shared.hub.register(entry.clone());
    let terminal = Arc::new(TerminalSlot::default());
    // Runs however the returned future ends, also when the backend drops it at shutdown.
    let cleanup = Cleanup {
        shared: shared.clone(),
        key,
        out: out.clone(),
        terminal: terminal.clone(),
    };

    let (sink, stream) = socket.split();
    let writer = tokio::spawn(write_loop(
        sink,
        out.clone(),
        entry.conn_id.clone(),
        tuning.close_grace,
    ));

    let conn = Conn {
        shared: shared.clone(),
        entry,
        scopes,
        terminal,
        waits: Arc::new(AtomicUsize::new(0)),
    };
    async move {
        let _cleanup = cleanup;
        let mut stream = stream;
        let graceful = conn.read_loop(&mut stream).await;
        shared.hub.unregister(key);
        // Boxed: the timers of the shutdown need no room in an idle connection's task.
        let grace = shared.tuning.close_grace;
        Box::pin(finish(writer, &out, graceful, stream, grace)).await;
    }
}

/// Lets the writer send what was queued up to the close frame (`graceful`), or stops it, and
/// reads (and drops) what the peer still sends until it closes too: a socket closed with
/// unread data is reset, and the reset discards the close frame that is still on its way (the
/// one that tells the peer why). All of it within `grace`.
async fn finish(
    mut writer: tokio::task::JoinHandle<()>,
    out: &Outbound,
    graceful: bool,
    mut stream: SplitStream<WebSocket>,
    grace: Duration,
) {
    if !graceful {
        out.kill(CLOSE_NORMAL, "closing");
    }
    let drain = async { while let Some(Ok(_)) = stream.next().await {} };
    let both = async {
        let _ = (&mut writer).await;
        drain.await;
    };
    if tokio::time::timeout(grace, both).await.is_err() {
        out.kill(CLOSE_NORMAL, "closing");
        writer.abort();
    }
}

/// Unregisters the connection, stops its writer and kills its terminal command.
struct Cleanup {
    shared: Arc<Shared>,
    key: u64,
    out: Arc<Outbound>,
    terminal: Arc<TerminalSlot>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.shared.hub.unregister(self.key);
        self.terminal.kill();
        self.out.kill(CLOSE_NORMAL, "closing");
    }
}

async fn handshake(shared: &Shared, socket: &mut WebSocket) -> Result<Accepted, Rejection> {
    let text = loop {
        match socket.recv().await {
            Some(Ok(Message::Text(t))) => break t,
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Binary(_))) => {
                return Err(reject("", "first frame must be a connect request (text)"));
            }
            Some(Err(e)) if let Some((code, reason)) = read_failure(&e) => {
                return Err(Rejection {
                    id: String::new(),
                    error: ErrorShape::invalid(format!("invalid frame before connect: {reason}")),
                    close_code: code,
                });
            }
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                return Err(Rejection {
                    id: String::new(),
                    error: ErrorShape::invalid("connection closed before connect"),
                    close_code: CLOSE_NORMAL,
                });
            }
        }
    };
    if text.len() > MAX_PREHANDSHAKE_FRAME {
        return Err(Rejection {
            id: String::new(),
            error: ErrorShape::invalid(format!(
                "frame too large: {} bytes before the handshake (limit {MAX_PREHANDSHAKE_FRAME})",
                text.len()
            )),
            close_code: CLOSE_TOO_BIG,
        });
    }
    let req = parse_request(&text).map_err(|(id, e)| Rejection {
        id,
        error: e,
        close_code: CLOSE_POLICY,
    })?;
    if Method::from_name(&req.method) != Some(Method::Connect) {
        return Err(reject(&req.id, "first request must be connect"));
    }
    let params: ConnectParams = parse_params(req.params, Method::Connect)
        .and_then(|p: ConnectParams| {
            p.check_bounds()
                .map_err(|m| ErrorShape::invalid(format!("invalid connect params: {m}")))?;
            Ok(p)
        })
        .map_err(|error| Rejection {
            id: req.id.clone(),
            error,
            close_code: CLOSE_POLICY,
        })?;
    if params.min_protocol > PROTOCOL || params.max_protocol < PROTOCOL {
        return Err(Rejection {
            id: req.id,
            error: ErrorShape::invalid(format!(
                "unsupported protocol range {}..={}: this gateway speaks protocol {PROTOCOL}",
                params.min_protocol, params.max_protocol
            ))
            .with_details(json!({"code": "PROTOCOL_MISMATCH", "protocol": PROTOCOL})),
            close_code: CLOSE_POLICY,
        });
    }
    let given = &params.auth.token;
    // The backend token grants every scope, a limited token its own; every candidate is
    // compared in constant time (no early exit on a match).
    let mut allowed: Option<(Scopes, bool)> = None;
    if !shared.config.token.is_empty() && shared.config.token == *given {
        allowed = Some((Scopes::all(), false));
    }
    for limited in &shared.limited {
        if !limited.token.is_empty() && limited.token == *given && allowed.is_none() {
            allowed = Some((limited.scopes, true));
        }
    }
    // A session's screen credential (the screen server a session hands its agent): read and
    // write at most, bound to its session.
    let mut screen_session = None;
    if allowed.is_none()
        && let Some(screens) = shared.session_screens.get()
        && let Some(session) = screens.session_of(&params.auth.token)
    {
        allowed = Some(([Scope::Read, Scope::Write].into_iter().collect(), true));
        screen_session = Some(session);
    }
    let Some((allowed, is_limited)) = allowed else {
        return Err(Rejection {
            id: req.id,
            error: ErrorShape::new(ErrorCode::Forbidden, "authentication failed")
                .with_details(json!({"code": "AUTH_FAILED"})),
            close_code: CLOSE_POLICY,
        });
    };
    // A limited credential (the agent's screen credential) sends commands; were it a UI it
    // could acknowledge its own commands and pass for a person's open page.
    if is_limited && params.client.mode == ClientMode::Ui {
        return Err(Rejection {
            id: req.id,
            error: ErrorShape::new(
                ErrorCode::Forbidden,
                "this credential cannot connect as a ui client",
            )
            .with_details(json!({"code": "UI_NOT_ALLOWED"})),
            close_code: CLOSE_POLICY,
        });
    }
    // A client gets what it asked for, no more, and no more than its token allows.
    let asked: Scopes = params.scopes.iter().copied().collect();
    let scopes = asked.intersect(allowed);
    Ok(Accepted {
        params,
        scopes,
        request_id: req.id,
        screen_session,
    })
}

fn reject(id: &str, message: &str) -> Rejection {
    Rejection {
        id: id.to_string(),
        error: ErrorShape::invalid(message),
        close_code: CLOSE_POLICY,
    }
}

/// Parse a request frame; on failure return the best-known id with the error. Public for the
/// fuzz target (`fuzz/fuzz_targets/gateway_frame.rs`).
// The error is built once per malformed frame (a cold path) and answered at once; its size
// grows when a dependency turns on serde_json's `preserve_order`, which is no reason to box it.
#[allow(clippy::result_large_err)]
pub fn parse_request(text: &str) -> Result<RequestFrame, (String, ErrorShape)> {
    match serde_json::from_str::<RequestFrame>(text) {
        Ok(req) => {
            if req.id.is_empty() || req.id.len() > MAX_ID_LEN {
                return Err((
                    String::new(),
                    ErrorShape::invalid(format!(
                        "invalid frame: id must be 1..={MAX_ID_LEN} bytes"
                    )),
                ));
            }
            if req.method.is_empty() || req.method.len() > MAX_METHOD_LEN {
                return Err((
                    req.id,
                    ErrorShape::invalid("invalid frame: method name too long or empty"),
                ));
            }
            Ok(req)
        }
        Err(e) => {
            let id = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
                .filter(|id| id.len() <= MAX_ID_LEN)
                .unwrap_or_default();
            Err((id, ErrorShape::invalid(format!("invalid frame: {e}"))))
        }
    }
}

fn parse_params<T: DeserializeOwned>(
    params: Option<Value>,
    method: impl std::fmt::Display,
) -> Result<T, ErrorShape> {
    serde_json::from_value(params.unwrap_or_else(|| json!({})))
        .map_err(|e| ErrorShape::invalid(format!("invalid {method} params: {e}")))
}

fn close_message(code: u16, reason: &str) -> Message {
    // A close reason is at most 123 bytes.
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from(&reason[..end]),
    }))
}

fn missing_scope(need: Scope) -> ErrorShape {
    ErrorShape::new(
        ErrorCode::Forbidden,
        format!("missing scope: {}", need.as_str()),
    )
    .with_details(json!({
        "code": "MISSING_SCOPE",
        "missingScope": need.as_str(),
        "requiredScopes": [need.as_str()],
    }))
}

struct Conn {
    shared: Arc<Shared>,
    entry: Arc<ConnEntry>,
    scopes: Scopes,
    terminal: Arc<TerminalSlot>,
    waits: Arc<AtomicUsize>,
}

impl Conn {
    /// Returns `true` when the server queued a close (the writer should finish the queue).
    async fn read_loop(&self, stream: &mut SplitStream<WebSocket>) -> bool {
        let cancel = self.entry.out.cancel_token().clone();
        // One registration for the connection's life, not one per frame.
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        loop {
            let msg = tokio::select! {
                _ = &mut cancelled => return false,
                m = stream.next() => m,
            };
            // Any frame, pongs included, proves the peer alive (the ticker checks this).
            self.entry
                .last_seen
                .store(self.shared.clock_ms(), Ordering::Relaxed);
            match msg {
                Some(Ok(Message::Text(text))) => {
                    if !self.handle_text(&text) {
                        return true;
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    self.respond_err("", ErrorShape::invalid("binary frames are not supported"));
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Err(e)) if let Some((code, reason)) = read_failure(&e) => {
                    if code == CLOSE_TOO_BIG {
                        self.respond_err("", self.too_large(None));
                    }
                    self.entry.out.push(Out::Close(code, reason.into()));
                    return true;
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return false,
            }
        }
    }

    fn too_large(&self, len: Option<usize>) -> ErrorShape {
        let max = self.shared.tuning.max_payload;
        match len {
            Some(len) => ErrorShape::invalid(format!("frame too large: {len} bytes (limit {max})")),
            None => ErrorShape::invalid(format!("frame too large (limit {max} bytes)")),
        }
    }

    fn respond(&self, id: &str, payload: Value) {
        let res = ResponseFrame::success(id, payload).to_json();
        self.entry.out.push(Out::Text(res));
    }

    /// Answers `terminal.open` or `terminal.attach`, then starts the viewer, so the scrollback
    /// follows the response.
    fn respond_attached(&self, id: &str, (payload, view): pty::Attached) {
        self.respond(id, payload);
        tokio::spawn(view);
    }

    fn respond_err(&self, id: &str, error: ErrorShape) {
        let res = ResponseFrame::failure(id, error).to_json();
        self.entry.out.push(Out::Text(res));
    }

    /// Handle one text frame; `false` means stop reading (a close is queued).
    fn handle_text(&self, text: &str) -> bool {
        if text.len() > self.shared.tuning.max_payload {
            self.respond_err("", self.too_large(Some(text.len())));
            self.entry
                .out
                .push(Out::Close(CLOSE_TOO_BIG, "frame too large".into()));
            return false;
        }
        let req = match parse_request(text) {
            Ok(r) => r,
            Err((id, e)) => {
                self.respond_err(&id, e);
                return true;
            }
        };
        if let Err(e) = self.dispatch(&req) {
            self.respond_err(&req.id, e);
        }
        true
    }

    fn need(&self, scope: Scope) -> Result<(), ErrorShape> {
        if self.scopes.satisfies(scope) {
            Ok(())
        } else {
            Err(missing_scope(scope))
        }
    }

    fn dispatch(&self, req: &RequestFrame) -> Result<(), ErrorShape> {
        let params = req.params.clone();
        let Some(method) = Method::from_name(&req.method) else {
            return Err(ErrorShape::new(
                ErrorCode::NotFound,
                format!("unknown method: {}", req.method),
            ));
        };
        match method {
            Method::Connect => Err(ErrorShape::invalid("already connected")),
            Method::Ping => {
                self.need(Scope::Read)?;
                self.respond(&req.id, json!({"ts": crate::now_ms()}));
                Ok(())
            }
            Method::SessionCheck => {
                self.need(Scope::Read)?;
                let p: SessionCheckParams = parse_params(params, method)?;
                let exists =
                    p.is_well_formed() && self.shared.config.sessions.contains(&p.session_key);
                let payload =
                    serde_json::to_value(SessionCheckResponse { exists }).unwrap_or(Value::Null);
                self.respond(&req.id, payload);
                Ok(())
            }
            Method::UiCommand => self.ui_command(req, params),
            Method::UiCommandResult => {
                self.need_ui_target(method)?;
                let p: UiCommandResultParams = parse_params(params, method)?;
                if !p.is_bounded() {
                    return Err(ErrorShape::invalid(
                        "invalid ui.command.result params: commandId, reason or notApplied too long",
                    ));
                }
                let accepted = self.shared.hub.record_outcome(self.entry.key, p);
                self.respond(&req.id, json!({"accepted": accepted}));
                Ok(())
            }
            Method::UiLayoutReport => {
                self.need_ui_target(method)?;
                let p: LayoutReport = parse_params(params, method)?;
                p.validate()
                    .map_err(|m| ErrorShape::invalid(format!("invalid {method} params: {m}")))?;
                self.shared.hub.set_layout(&self.entry, p);
                self.respond(&req.id, json!({"ok": true}));
                Ok(())
            }
            Method::UiLayout => {
                self.need(Scope::Read)?;
                // A session's screen credential reads the screen only while it may arrange it.
                if let Some(session) = &self.entry.screen_session
                    && !self.screen_enabled(session)
                {
                    return Err(ErrorShape::new(
                        ErrorCode::Forbidden,
                        "the screen tool is not enabled for this turn",
                    )
                    .with_details(json!({"code": "SCREEN_DISABLED"})));
                }
                let p: UiLayoutParams = parse_params(params, method)?;
                check_target(p.target, p.ui_id.as_deref())
                    .map_err(|m| ErrorShape::invalid(format!("invalid {method} params: {m}")))?;
                let only = self.resolve_target(p.target, p.ui_id, p.session_key.as_deref())?;
                let uis = self.shared.hub.layouts(only.as_deref())?;
                let payload = serde_json::to_value(UiLayoutResponse { uis }).unwrap_or(Value::Null);
                self.respond(&req.id, payload);
                Ok(())
            }
            Method::TerminalRun => {
                self.need(Scope::Admin)?;
                let p: RunParams = parse_params(params, method)?;
                let run_id = format!("run_{}", crate::random_hex(6)?);
                let forward = terminal::run(
                    self.terminal.clone(),
                    self.entry.out.clone(),
                    self.shared.config.terminal.as_ref(),
                    &p.command,
                    run_id.clone(),
                )?;
                self.respond(&req.id, json!({"ok": true, "runId": run_id}));
                tokio::spawn(forward);
                Ok(())
            }
            Method::TerminalKill => {
                self.need(Scope::Admin)?;
                let _: KillParams = parse_params(params, method)?;
                let killed = self.terminal.kill();
                self.respond(&req.id, json!({"ok": true, "killed": killed}));
                Ok(())
            }
            Method::TerminalOpen => {
                self.need(Scope::Admin)?;
                let p: pty::OpenParams = parse_params(params, method)?;
                let attached = self.shared.terminals.open(
                    self.shared.config.terminal.as_ref(),
                    &p,
                    self.entry.key,
                    &self.entry.out,
                )?;
                self.respond_attached(&req.id, attached);
                Ok(())
            }
            Method::TerminalAttach => {
                self.need(Scope::Admin)?;
                let p: pty::TerminalRef = parse_params(params, method)?;
                let attached = self.shared.terminals.attach(
                    &p.terminal_id,
                    self.entry.key,
                    &self.entry.out,
                )?;
                self.respond_attached(&req.id, attached);
                Ok(())
            }
            Method::TerminalInput => {
                self.need(Scope::Admin)?;
                let p: pty::InputParams = parse_params(params, method)?;
                self.shared.terminals.input(p, self.entry.key)?;
                self.respond(&req.id, json!({"ok": true}));
                Ok(())
            }
            Method::TerminalResize => {
                self.need(Scope::Admin)?;
                let p: pty::ResizeParams = parse_params(params, method)?;
                self.shared.terminals.resize(&p, self.entry.key)?;
                self.respond(&req.id, json!({"ok": true}));
                Ok(())
            }
            Method::TerminalClose => {
                self.need(Scope::Admin)?;
                let p: pty::TerminalRef = parse_params(params, method)?;
                self.shared.terminals.close(&p.terminal_id)?;
                self.respond(&req.id, json!({"ok": true}));
                Ok(())
            }
            Method::TerminalList => {
                self.need(Scope::Admin)?;
                let _: pty::ListParams = parse_params(params, method)?;
                self.respond(&req.id, self.shared.terminals.list());
                Ok(())
            }
            Method::ScreenGate => {
                let Some(session) = &self.entry.screen_session else {
                    return Err(ErrorShape::new(
                        ErrorCode::Forbidden,
                        "screen.gate is only for a session's screen credential",
                    ));
                };
                let _: NoParams = parse_params(params, method)?;
                let enabled = self.screen_enabled(session);
                self.respond(&req.id, json!({ "enabled": enabled }));
                Ok(())
            }
        }
    }

    fn need_ui_target(&self, method: Method) -> Result<(), ErrorShape> {
        if self.entry.ui_target {
            Ok(())
        } else {
            Err(ErrorShape::new(
                ErrorCode::Forbidden,
                format!("{method} is only for ui clients with the ui-commands cap"),
            ))
        }
    }

    /// The one UI a request is for (`None`: every UI). `requester` is the Control UI that
    /// started the current turn of the connection's own session (a session's screen
    /// credential) or else of `session`; none is `UNAVAILABLE`, never everyone instead.
    fn resolve_target(
        &self,
        target: Option<Target>,
        ui_id: Option<String>,
        session: Option<&str>,
    ) -> Result<Option<String>, ErrorShape> {
        if ui_id.is_some() {
            return Ok(ui_id);
        }
        if target != Some(Target::Requester) {
            return Ok(None);
        }
        let session = self.entry.screen_session.as_deref().or(session);
        let requester = session.and_then(|s| {
            self.shared
                .session_screens
                .get()
                .and_then(|screens| screens.requester(s))
        });
        match requester {
            Some(id) => Ok(Some(id)),
            None => Err(ErrorShape::new(
                ErrorCode::Unavailable,
                "no requester: no Control UI started a turn of this session that is running now",
            )),
        }
    }

    fn screen_enabled(&self, session: &str) -> bool {
        self.shared
            .session_screens
            .get()
            .is_some_and(|s| s.enabled(session))
    }

    /// A session's screen credential sends commands only while its session's turn came from
    /// a Control UI, and only as that session.
    fn check_screen_session(&self, p: &UiCommandParams) -> Result<(), ErrorShape> {
        let Some(session) = &self.entry.screen_session else {
            return Ok(());
        };
        if p.session_key.as_ref().is_some_and(|k| k != session) {
            return Err(ErrorShape::new(
                ErrorCode::Forbidden,
                "a session's screen credential acts only as its own session",
            )
            .with_details(json!({"code": "OTHER_SESSION"})));
        }
        if !self.screen_enabled(session) {
            return Err(ErrorShape::new(
                ErrorCode::Forbidden,
                "the screen tool is not enabled for this turn: only a turn started from a \
                 Control UI (a client that advertises ui-commands) may arrange the screen",
            )
            .with_details(json!({"code": "SCREEN_DISABLED"})));
        }
        Ok(())
    }

    fn ui_command(&self, req: &RequestFrame, params: Option<Value>) -> Result<(), ErrorShape> {
        self.need(Scope::Write)?;
        let p: UiCommandParams = parse_params(params, Method::UiCommand)?;
        self.check_screen_session(&p)?;
        p.validate(self.shared.config.sessions.as_ref())
            .map_err(|m| ErrorShape::invalid(format!("invalid ui.command params: {m}")))?;
        let wait = p.wait == Some(true);
        if wait && self.waits.load(Ordering::Acquire) >= MAX_WAITS_PER_CONN {
            return Err(ErrorShape::new(
                ErrorCode::Unavailable,
                "too many ui.command requests waiting on this connection",
            ));
        }
        let only = self.resolve_target(p.target, p.ui_id, p.session_key.as_deref())?;
        let event = UiCommandEvent {
            command: p.command,
            session_key: p.session_key,
            command_id: format!("cmd_{}", crate::random_hex(8)?),
            expected_revision: p.expected_revision,
        };
        let delivery = self
            .shared
            .hub
            .fan_out_ui_command(&event, wait, only.as_deref())?;
        let Some(done) = delivery.wait else {
            let payload = UiCommandResponse {
                ok: true,
                delivered: delivery.delivered,
                outcomes: None,
            };
            self.respond(
                &req.id,
                serde_json::to_value(payload).unwrap_or(Value::Null),
            );
            return Ok(());
        };
        // Collect answers off the reader task: the reader must keep reading meanwhile.
        self.waits.fetch_add(1, Ordering::AcqRel);
        let shared = self.shared.clone();
        let out = self.entry.out.clone();
        let waits = self.waits.clone();
        let id = req.id.clone();
        tokio::spawn(async move {
            let outcomes = shared
                .hub
                .collect(&event.command_id, done, shared.tuning.wait_timeout)
                .await;
            let payload = UiCommandResponse {
                ok: true,
                delivered: delivery.delivered,
                outcomes: Some(outcomes),
            };
            let res =
                ResponseFrame::success(id, serde_json::to_value(payload).unwrap_or(Value::Null))
                    .to_json();
            out.push(Out::Text(res));
            waits.fetch_sub(1, Ordering::AcqRel);
        });
        Ok(())
    }
}

/// `close_grace`: how long a connection cut from the server side may take to accept its close
/// frame. A slow consumer's socket is full when it is cut; waiting lets the frame with the
/// reason follow the data once the peer reads again, instead of an unexplained 1006.
async fn write_loop(
    mut sink: SplitSink<WebSocket, Message>,
    out: Arc<Outbound>,
    conn_id: String,
    close_grace: Duration,
) {
    // The challenge was seq 1.
    let mut seq: u64 = 1;
    let cancel = out.cancel_token().clone();
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let mut closed_by_queue = false;
    let mut batch = VecDeque::new();
    loop {
        out.take_all(&mut batch);
        if batch.is_empty() {
            // `kill` also wakes this wait; the token's own check costs a lock, so it is only
            // consulted while a write is stuck.
            out.pushed().await;
            if out.is_closed() {
                break;
            }
            continue;
        }
        let write = async {
            // Everything queued goes out with one flush.
            while let Some(item) = batch.pop_front() {
                match item {
                    Out::Text(s) => sink.feed(Message::Text(s.into())).await?,
                    Out::Event(p) => {
                        seq += 1;
                        sink.feed(Message::Text(p.finish(seq).into())).await?;
                    }
                    Out::Tick => {
                        seq += 1;
                        let t =
                            EventPrefix::new(Event::Tick.as_str(), &json!({"ts": crate::now_ms()}));
                        sink.feed(Message::Text(t.finish(seq).into())).await?;
                        // Answered by any live WebSocket peer, browsers included.
                        sink.feed(Message::Ping(Default::default())).await?;
                    }
                    Out::Close(code, reason) => {
                        sink.feed(close_message(code, &reason)).await?;
                        sink.flush().await?;
                        return Ok::<bool, axum::Error>(true);
                    }
                }
            }
            sink.flush().await?;
            Ok(false)
        };
        let result = tokio::select! {
            biased;
            r = write => r,
            _ = &mut cancelled => break,
        };
        match result {
            Ok(false) => {}
            Ok(true) => {
                closed_by_queue = true;
                break;
            }
            Err(_) => {
                out.kill(CLOSE_NORMAL, "write failed");
                break;
            }
        }
    }
    if !closed_by_queue && let Some(kill) = out.kill_reason() {
        if kill.code == CLOSE_POLICY {
            tracing::warn!(conn_id = %conn_id, reason = %kill.reason, "gateway connection cut");
        }
        // Bounded: a peer that never reads again does not keep the task.
        let _ = tokio::time::timeout(
            close_grace,
            sink.send(close_message(kill.code, &kill.reason)),
        )
        .await;
    }
    out.kill(CLOSE_NORMAL, "closing");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_request_bounds_the_id_and_the_method() {
        assert!(parse_request(r#"{"type":"req","id":"1","method":"ping"}"#).is_ok());
        let long = "x".repeat(MAX_ID_LEN + 1);
        let frame = format!(r#"{{"type":"req","id":"{long}","method":"ping"}}"#);
        assert_eq!(parse_request(&frame).unwrap_err().0, "");
        let (id, error) = parse_request(r#"{"type":"req","id":"7","method":""}"#).unwrap_err();
        assert_eq!((id.as_str(), error.code), ("7", ErrorCode::InvalidRequest));
        let extra = r#"{"type":"req","id":"9","method":"ping","x":1}"#;
        assert_eq!(parse_request(extra).unwrap_err().0, "9");
        assert_eq!(parse_request("[]").unwrap_err().0, "");
    }
}
