//! The endpoint inside the TUI: a private Unix socket plus `endpoint.json` (docs/tuimcp.md §2, §4).
//!
//! Each connection is authenticated (peer uid, then the token in constant time) before its
//! request is even looked at, then forwarded to the state owner as an [`Inbound`] message
//! carrying a oneshot reply. The endpoint never touches the controller itself.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use ax_core::Secret;
use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{UnixListener, UnixStream},
    sync::{Semaphore, mpsc, oneshot, watch},
    task::JoinSet,
    time::Instant,
};

use crate::{
    controller::{Identity, Reply},
    endpoint_file::{self, EndpointFile, SOCKET_NAME},
    frame::{FrameError, read_frame},
    protocol::{Code, MAX_FRAME, Request, Response, SelectSession},
};

/// At most this many connections are served at once; the next one is answered `busy`.
pub const MAX_CONNECTIONS: usize = 16;
/// A connection lives at most this long (controller 4.0 s < adapter 4.5 s < socket 5.0 s).
pub const SOCKET_DEADLINE: Duration = Duration::from_secs(5);
/// Past the cap, how long a caller's frame may take to arrive and its stored receipt to be
/// looked up before the answer is plain `busy`.
const OVER_CAP_LIMIT: Duration = Duration::from_secs(1);
/// On close, how long decided answers may take to reach their callers.
const CLOSE_GRACE: Duration = Duration::from_millis(200);
/// Socket paths must be shorter than this (the smallest `sun_path` is 104 bytes, on macOS).
pub const MAX_SOCKET_PATH: usize = 100;

/// A message from the endpoint to the state owner.
#[derive(Debug)]
pub enum Inbound {
    /// An authenticated, well-formed request: hand it to [`Controller::handle`].
    ///
    /// [`Controller::handle`]: crate::Controller::handle
    Request {
        /// The parsed request.
        request: Request,
        /// Where the answer goes.
        reply: Reply,
    },
    /// A `select_session` that arrived past the connection cap: answer it from a stored
    /// receipt only ([`Controller::answer_from_receipt`]); it never starts a navigation.
    ///
    /// [`Controller::answer_from_receipt`]: crate::Controller::answer_from_receipt
    Receipt {
        /// The request to look up.
        request: SelectSession,
        /// Where the answer goes.
        reply: Reply,
    },
    /// A caller hung up while waiting: call [`Controller::caller_gone`].
    ///
    /// [`Controller::caller_gone`]: crate::Controller::caller_gone
    CallerGone,
    /// The endpoint closed on its own (fatal listener error): call [`Controller::revoke`].
    ///
    /// [`Controller::revoke`]: crate::Controller::revoke
    Closed,
}

/// Where to put the private directory.
#[derive(Clone, Debug, Default)]
pub struct EndpointOptions {
    /// Temp root; default `$TMPDIR` (or `/tmp`). Canonicalized before use.
    pub temp_root: Option<PathBuf>,
}

/// Why sharing could not start.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// A Unix socket path has a small fixed limit (`sun_path`); the temp root is too deep.
    #[error(
        "the TUIMCP socket path {path} is {len} bytes; it must be shorter than {MAX_SOCKET_PATH}. \
         Start with a shorter private temp root, e.g. `TMPDIR=$(mktemp -d /tmp/ax.XXXXXX) ax-code --tui-mcp`"
    )]
    PathTooLong {
        /// The socket path that would be used.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
    },
    /// The private directory, the socket or the endpoint file could not be created.
    #[error("cannot create the TUIMCP endpoint under {root}: {reason}")]
    Io {
        /// The temp root it was created under.
        root: PathBuf,
        /// What the system said.
        reason: std::io::Error,
    },
}

struct Inner {
    dir: PathBuf,
    file: PathBuf,
    closing: Arc<AtomicBool>,
    shutdown: watch::Sender<bool>,
    done: watch::Receiver<bool>,
}

/// Handle to a live endpoint. Cloneable; [`Endpoint::close`] is idempotent and every caller
/// awaits the same completion.
#[derive(Clone)]
pub struct Endpoint {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("file", &self.inner.file)
            .finish()
    }
}

impl Endpoint {
    /// Creates the private directory, listens on its socket, then writes `endpoint.json`.
    pub async fn start(
        identity: Identity,
        options: EndpointOptions,
    ) -> Result<(Endpoint, mpsc::Receiver<Inbound>), EndpointError> {
        let root = options.temp_root.unwrap_or_else(std::env::temp_dir);
        let io = |reason| EndpointError::Io {
            root: root.clone(),
            reason,
        };
        let root_real = std::fs::canonicalize(&root).map_err(io)?;
        let dir = endpoint_file::make_private_dir(&root_real).map_err(io)?;
        match listen(&dir, identity) {
            Ok((listener, file, token)) => {
                let (tx, rx) = mpsc::channel(2 * MAX_CONNECTIONS);
                let (shutdown, shutdown_rx) = watch::channel(false);
                let (done_tx, done) = watch::channel(false);
                let closing = Arc::new(AtomicBool::new(false));
                tokio::spawn(accept_loop(
                    listener,
                    Arc::new(token),
                    tx,
                    Lifecycle {
                        closing: closing.clone(),
                        shutdown: shutdown_rx,
                        done: done_tx,
                    },
                    dir.clone(),
                ));
                let inner = Arc::new(Inner {
                    dir,
                    file,
                    closing,
                    shutdown,
                    done,
                });
                Ok((Endpoint { inner }, rx))
            }
            Err(err) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(match err {
                    ListenError::TooLong(path, len) => EndpointError::PathTooLong { path, len },
                    ListenError::Io(reason) => io(reason),
                })
            }
        }
    }

    /// Absolute path of `endpoint.json`: what the TUIMCP bar shows.
    pub fn path(&self) -> &Path {
        &self.inner.file
    }

    /// The private directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Stops listening, drops every connection and removes the directory. Idempotent: every
    /// caller waits for the same completion.
    pub async fn close(&self) {
        self.inner.closing.store(true, Ordering::SeqCst);
        let _ = self.inner.shutdown.send(true);
        let mut done = self.inner.done.clone();
        let _ = done.wait_for(|done| *done).await;
    }

    /// True once the endpoint closed.
    pub fn is_closed(&self) -> bool {
        *self.inner.done.borrow()
    }

    /// True from the moment closing began (by [`Endpoint::close`] or a fatal listener
    /// error). [`Sharing`](crate::Sharing) revokes the controller as soon as it sees this.
    pub fn is_closing(&self) -> bool {
        self.inner.closing.load(Ordering::SeqCst)
    }
}

enum ListenError {
    TooLong(PathBuf, usize),
    Io(std::io::Error),
}

fn listen(dir: &Path, identity: Identity) -> Result<(UnixListener, PathBuf, Secret), ListenError> {
    let socket = dir.join(SOCKET_NAME);
    let len = socket.as_os_str().len();
    if len >= MAX_SOCKET_PATH {
        return Err(ListenError::TooLong(socket, len));
    }
    let listener = UnixListener::bind(&socket).map_err(ListenError::Io)?;
    rustix::fs::chmod(&socket, rustix::fs::Mode::from_bits_truncate(0o600))
        .map_err(|e| ListenError::Io(e.into()))?;
    let token = endpoint_file::new_token().map_err(ListenError::Io)?;
    // Written only now that the socket listens.
    let file = endpoint_file::write_endpoint_file(dir, &EndpointFile::new(identity, token.clone()))
        .map_err(ListenError::Io)?;
    Ok((listener, file, token))
}

struct Lifecycle {
    closing: Arc<AtomicBool>,
    shutdown: watch::Receiver<bool>,
    done: watch::Sender<bool>,
}

async fn accept_loop(
    listener: UnixListener,
    token: Arc<Secret>,
    tx: mpsc::Sender<Inbound>,
    lifecycle: Lifecycle,
    dir: PathBuf,
) {
    let Lifecycle {
        closing,
        mut shutdown,
        done,
    } = lifecycle;
    let uid = rustix::process::getuid().as_raw();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    let mut failures = 0u32;
    loop {
        tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    failures = 0;
                    // Reap finished connections here rather than in a `join_next` branch:
                    // that branch would wake this task once more for every call.
                    while connections.try_join_next().is_some() {}
                    match slots.clone().try_acquire_owned() {
                        Ok(permit) => {
                            let (token, tx) = (token.clone(), tx.clone());
                            connections.spawn(async move {
                                serve_connection(stream, uid, &token, &tx).await;
                                drop(permit);
                            });
                        }
                        Err(_) => {
                            connections.spawn(over_cap(stream, uid, token.clone(), tx.clone()));
                        }
                    }
                }
                Err(err) => {
                    failures += 1;
                    if failures > 100 {
                        tracing::error!(error = %err, "tuimcp: the listener failed; closing");
                        closing.store(true, Ordering::SeqCst);
                        let _ = tx.try_send(Inbound::Closed);
                        break;
                    }
                    tracing::warn!(error = %err, "tuimcp: accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
    // New callers fail at once from here on.
    drop(listener);
    let _ = std::fs::remove_file(dir.join(endpoint_file::FILE_NAME));
    let _ = std::fs::remove_file(dir.join(SOCKET_NAME));
    // Answers that are already decided (e.g. `revoked` after a revoke fenced them) get a
    // moment to reach their callers; everything else is dropped.
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.shutdown().await;
    if let Err(err) = std::fs::remove_dir_all(&dir) {
        tracing::warn!(error = %err, "tuimcp: could not remove the endpoint directory");
    }
    let _ = done.send(true);
}

fn peer_is_us(stream: &UnixStream, uid: u32) -> bool {
    stream.peer_cred().is_ok_and(|cred| cred.uid() == uid)
}

/// Writes the answer and closes our side. `unread` says the caller's frame may still be
/// unread: then the close lingers (see [`linger`]).
async fn write_response(stream: &mut UnixStream, response: &Response, unread: bool) {
    let frame = response.to_frame();
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(&frame).await?;
        stream.shutdown().await?;
        if unread {
            linger(stream).await?;
        }
        Ok::<(), std::io::Error>(())
    })
    .await;
}

/// A Unix socket closed with unread input resets the connection, and the caller could lose
/// an answer sent before its frame was read (`busy`, a refused peer, an oversized frame).
/// Drain until the caller closes, bounded by the caller of this function's timeout.
async fn linger(stream: &mut UnixStream) -> std::io::Result<()> {
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained <= 4 * MAX_FRAME {
        match stream.read(&mut sink).await? {
            0 => break,
            n => drained += n,
        }
    }
    Ok(())
}

/// A connection past the cap. It starts nothing new, but a repeated `requestId` still gets
/// its stored receipt (an applied navigation must never be answered "busy", which says that
/// nothing happened); everything else is `busy`. Bounded by [`OVER_CAP_LIMIT`].
async fn over_cap(mut stream: UnixStream, uid: u32, token: Arc<Secret>, tx: mpsc::Sender<Inbound>) {
    if !peer_is_us(&stream, uid) {
        write_response(&mut stream, &Response::Rejected(Code::Unauthorized), true).await;
        return;
    }
    let busy = Response::Rejected(Code::Busy);
    let answer = tokio::time::timeout(OVER_CAP_LIMIT, async {
        let frame = read_frame(&mut stream).await.ok()?;
        let args = match authenticate(&frame, &token) {
            Ok(Request::SelectSession(args)) => args,
            Ok(Request::GetViewContext) => return Some(busy.clone()),
            Err(code) => return Some(Response::Rejected(code)),
        };
        let (reply, answer) = oneshot::channel();
        // Never waits for room: a full queue means the owner is swamped.
        tx.try_send(Inbound::Receipt {
            request: args,
            reply,
        })
        .ok()?;
        answer.await.ok()
    })
    .await;
    match answer {
        Ok(Some(response)) => write_response(&mut stream, &response, false).await,
        // Unread, unauthenticated or unanswered in time: plain `busy`.
        _ => write_response(&mut stream, &busy, true).await,
    }
}

/// Authenticates a frame's JSON and parses its request. Anything that fails before the
/// token matched is `unauthorized`, so an unauthenticated caller learns nothing else.
pub fn authenticate(frame: &[u8], token: &Secret) -> Result<Request, Code> {
    let Ok(Value::Object(mut envelope)) = serde_json::from_slice::<Value>(frame) else {
        return Err(Code::Unauthorized);
    };
    let Some(Value::String(given)) = envelope.remove("token") else {
        return Err(Code::Unauthorized);
    };
    if !token.ct_eq_str(&given) {
        return Err(Code::Unauthorized);
    }
    let request = envelope.remove("request").ok_or(Code::InvalidRequest)?;
    if !envelope.is_empty() {
        return Err(Code::InvalidRequest);
    }
    Request::from_value(request).map_err(|_| Code::InvalidRequest)
}

enum Waited {
    Reply(Option<Response>),
    CallerGone,
    Deadline,
}

async fn serve_connection(
    mut stream: UnixStream,
    uid: u32,
    token: &Secret,
    tx: &mpsc::Sender<Inbound>,
) {
    let deadline = Instant::now() + SOCKET_DEADLINE;
    if !peer_is_us(&stream, uid) {
        write_response(&mut stream, &Response::Rejected(Code::Unauthorized), true).await;
        return;
    }
    // One timer for the connection's whole life.
    let expired = tokio::time::sleep_until(deadline);
    tokio::pin!(expired);
    let read = tokio::select! {
        biased;
        read = read_frame(&mut stream) => read,
        () = &mut expired => return,
    };
    let frame = match read {
        Ok(frame) => frame,
        // Oversized: the token cannot be checked, so the caller is not authenticated.
        Err(FrameError::TooLarge) => {
            write_response(&mut stream, &Response::Rejected(Code::Unauthorized), true).await;
            return;
        }
        // Trailing data, EOF, read errors: close without an answer.
        Err(_) => return,
    };
    let request = match authenticate(&frame, token) {
        Ok(request) => request,
        Err(code) => {
            write_response(&mut stream, &Response::Rejected(code), false).await;
            return;
        }
    };
    let (reply, mut answer) = oneshot::channel();
    let sent = tokio::select! {
        biased;
        sent = tx.send(Inbound::Request { request, reply }) => Some(sent),
        () = &mut expired => None,
    };
    match sent {
        Some(Ok(())) => {}
        // The owner is gone: the TUI is closing.
        Some(Err(_)) => {
            write_response(&mut stream, &Response::Rejected(Code::Revoked), false).await;
            return;
        }
        // The owner never took the request, so nothing can have applied.
        None => {
            write_response(&mut stream, &Response::Rejected(Code::Busy), false).await;
            return;
        }
    }
    let mut probe = [0u8; 1];
    let waited = tokio::select! {
        response = &mut answer => Waited::Reply(response.ok()),
        // EOF, an error or more data: the caller is gone or broke the one-frame rule.
        _ = stream.read(&mut probe) => Waited::CallerGone,
        () = &mut expired => Waited::Deadline,
    };
    match waited {
        Waited::Reply(Some(response)) => {
            // Data that arrived after the frame closes the connection without an answer.
            if !matches!(stream.try_read(&mut probe), Ok(n) if n > 0) {
                write_response(&mut stream, &response, false).await;
            }
        }
        Waited::Reply(None) | Waited::Deadline => {}
        Waited::CallerGone => {
            drop(answer);
            let _ = tokio::time::timeout_at(deadline, tx.send(Inbound::CallerGone)).await;
        }
    }
}
