//! The `/event` stream: an SSE reader that reconnects with backoff and resumes with
//! `Last-Event-ID`. Before every connect the server proves it holds the credential (a fresh
//! `/health?proof=` check); a stream that breaks marks its client unverified.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use ax_core::Secret;
use ax_protocol::{ErrorBody, EventEnvelope};
use futures_util::{Stream, StreamExt};
use reqwest::header;
use tokio::sync::mpsc;

use crate::{ClientError, bearer, proof::Verification};

/// No bytes (not even a heartbeat) for this long means the connection is dead.
const IDLE_LIMIT: Duration = Duration::from_secs(35);
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// One SSE event may not exceed this (the backend's largest is far below).
const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Events in order; see [`crate::Client::events`]. Dropping it closes the connection.
pub struct EventStream {
    rx: mpsc::Receiver<Result<EventEnvelope, ClientError>>,
    connected: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl EventStream {
    /// The next event; `None` after a fatal error was delivered.
    pub async fn next(&mut self) -> Option<Result<EventEnvelope, ClientError>> {
        self.rx.recv().await
    }

    /// Whether the stream is connected right now (false while it waits to reconnect).
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Stream for EventStream {
    type Item = Result<EventEnvelope, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// One stream's fixed parts.
struct Target {
    http: reqwest::Client,
    base: String,
    token: Secret,
    verification: Arc<Verification>,
}

pub(crate) fn spawn(
    http: reqwest::Client,
    base: String,
    token: Secret,
    verification: Arc<Verification>,
    last_id: Option<u64>,
) -> EventStream {
    let (tx, rx) = mpsc::channel(256);
    let connected = Arc::new(AtomicBool::new(false));
    let target = Target {
        http,
        base,
        token,
        verification,
    };
    let task = tokio::spawn(run(target, last_id, tx, connected.clone()));
    EventStream {
        rx,
        connected,
        task,
    }
}

/// What one connection attempt ended with.
enum Outcome {
    Retry,
    Fatal(ClientError),
    Closed,
}

async fn run(
    target: Target,
    mut last_id: Option<u64>,
    tx: mpsc::Sender<Result<EventEnvelope, ClientError>>,
    connected: Arc<AtomicBool>,
) {
    let mut backoff = BACKOFF_START;
    loop {
        let outcome = connect_once(&target, &mut last_id, &tx, &connected, &mut backoff).await;
        if !matches!(outcome, Outcome::Closed) {
            // The connection broke or failed: whoever answers next must prove itself again,
            // for the client's ordinary requests too (marked before `is_connected` turns false).
            target.verification.set(false);
        }
        connected.store(false, Ordering::Release);
        match outcome {
            Outcome::Closed => return,
            Outcome::Fatal(err) => {
                let _ = tx.send(Err(err)).await;
                return;
            }
            Outcome::Retry => {}
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = tx.closed() => return,
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

async fn connect_once(
    target: &Target,
    last_id: &mut Option<u64>,
    tx: &mpsc::Sender<Result<EventEnvelope, ClientError>>,
    connected: &AtomicBool,
    backoff: &mut Duration,
) -> Outcome {
    // A fresh proof before every connect, whatever the client's state.
    let checked = tokio::select! {
        r = target.verification.check_now(&target.http, &target.base, &target.token) => r,
        () = tx.closed() => return Outcome::Closed,
    };
    match checked {
        Ok(_) => {}
        Err(ClientError::Transport(_)) => return Outcome::Retry,
        Err(e) => return Outcome::Fatal(e),
    }
    let mut request = target
        .http
        .get(format!("{}/event", target.base))
        .header(header::AUTHORIZATION, bearer(&target.token))
        .header(header::ACCEPT, "text/event-stream");
    if let Some(id) = last_id {
        request = request.header("Last-Event-ID", id.to_string());
    }
    let response = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(10), request.send()) => r,
        () = tx.closed() => return Outcome::Closed,
    };
    let response = match response {
        Ok(Ok(r)) => r,
        Ok(Err(_)) | Err(_) => return Outcome::Retry,
    };
    let status = response.status();
    if !status.is_success() {
        if status.is_server_error() {
            return Outcome::Retry;
        }
        let bytes = response.bytes().await.unwrap_or_default();
        return Outcome::Fatal(match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => ClientError::Api {
                status: status.as_u16(),
                error: body.error,
            },
            Err(_) => ClientError::Status {
                status: status.as_u16(),
            },
        });
    }
    connected.store(true, Ordering::Release);
    *backoff = BACKOFF_START;
    let mut body = response.bytes_stream();
    let mut parser = SseParser::default();
    loop {
        let chunk = tokio::select! {
            c = tokio::time::timeout(IDLE_LIMIT, body.next()) => c,
            () = tx.closed() => return Outcome::Closed,
        };
        let bytes = match chunk {
            Ok(Some(Ok(bytes))) => bytes,
            _ => return Outcome::Retry,
        };
        for data in parser.push(&bytes) {
            let Some(data) = data else {
                return Outcome::Retry;
            };
            let envelope: EventEnvelope = match serde_json::from_str(&data) {
                Ok(e) => e,
                Err(e) => {
                    return Outcome::Fatal(ClientError::Decode(format!("event: {e}")));
                }
            };
            *last_id = Some(envelope.id);
            if tx.send(Ok(envelope)).await.is_err() {
                return Outcome::Closed;
            }
        }
    }
}

/// Incremental SSE parsing: feeds bytes, yields each complete event's `data` (joined lines).
/// `None` in the output means the stream broke the size bound.
#[derive(Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    last_was_cr: bool,
}

impl SseParser {
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<Option<String>> {
        let mut out = Vec::new();
        for &b in bytes {
            if b == b'\n' && self.last_was_cr {
                self.last_was_cr = false;
                continue;
            }
            self.last_was_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                let line = std::mem::take(&mut self.line);
                if let Some(event) = self.line_done(&line) {
                    out.push(Some(event));
                }
                continue;
            }
            self.line.push(b);
            if self.line.len() + self.data.len() > MAX_EVENT_BYTES {
                self.line.clear();
                out.push(None);
                return out;
            }
        }
        out
    }

    fn line_done(&mut self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            return Some(std::mem::take(&mut self.data));
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_split_events_comments_and_crlf() {
        let mut p = SseParser::default();
        let mut got = p.push(b": heartbeat\n\nid: 1\ndata: {\"a\"");
        assert!(got.is_empty());
        got = p.push(b":1}\r\n\r\ndata: x\ndata: y\n\n");
        assert_eq!(
            got,
            vec![Some("{\"a\":1}".to_owned()), Some("x\ny".to_owned())]
        );
    }
}
