//! The join's side of the operator terminal through a hub (docs/hub.md §3).
//!
//! Each terminal a hub opens is a terminal of the backend's own gateway: the join opens a
//! gateway connection on loopback with the backend's credential (`operator.admin`, which the
//! terminal methods need), sends `terminal.open`, and from then on relays the hub's input,
//! resizes and close to that connection (the one attached to the terminal) and its output to
//! `ax.<machine>.term.<id>`. So the backend applies its own rules: sizes, the input bound, at
//! most [`ax_gateway::MAX_TERMINALS`] terminals, the shell and its environment.
//!
//! Bounded: at most [`ax_gateway::MAX_TERMINALS`] terminals for hubs at once; output waits
//! for NATS in a buffer of [`JOIN_BUFFER`] bytes, beyond which the oldest is dropped and
//! counted ([`TerminalOutput::Dropped`]). A terminal whose hub stops renewing its lease is
//! closed, and so is one whose gateway connection ends; one a person on the machine attaches
//! to from its own Control UI (`terminal.detached`) is theirs from then on and ends for the
//! hub.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_client::Secret;
use ax_gateway::{
    ClientMode, ConnectOptions, EventFrame, GatewayClient, MAX_TERMINALS, Method, Scope,
    client::gateway_url,
};
use serde_json::{Value, json};
use tokio::{
    sync::{Notify, broadcast},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use crate::{
    MachineName,
    terminal::{CHUNK, JOIN_BUFFER, TerminalAction, TerminalId, TerminalOpened, TerminalOutput},
    wire::{Reply, ReplyError},
};

/// How long one gateway call or NATS publish of a terminal may take.
const CALL_WAIT: Duration = Duration::from_secs(5);

/// The terminals this join runs for hubs.
pub(crate) struct JoinTerminals {
    nats: async_nats::Client,
    machine: MachineName,
    backend_url: String,
    token: Secret,
    lease: Duration,
    /// `None` while the terminal is being opened (it holds its place in the bound).
    slots: Mutex<HashMap<TerminalId, Option<Arc<Term>>>>,
    stop: CancellationToken,
}

/// One terminal: the gateway connection attached to it and its lease.
struct Term {
    backend_id: String,
    client: GatewayClient,
    deadline: Mutex<Instant>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn error(status: u16, code: &str, message: String) -> Reply {
    Reply::Error(ReplyError {
        status,
        code: code.to_owned(),
        message,
    })
}

impl JoinTerminals {
    pub(crate) fn new(
        nats: async_nats::Client,
        machine: MachineName,
        backend_url: String,
        token: Secret,
        lease: Duration,
    ) -> JoinTerminals {
        JoinTerminals {
            nats,
            machine,
            backend_url,
            token,
            lease: lease.max(Duration::from_millis(300)),
            slots: Mutex::new(HashMap::new()),
            stop: CancellationToken::new(),
        }
    }

    /// Ends every terminal (the join stops); each is closed on the backend as it goes.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }

    fn find(&self, id: &TerminalId) -> Option<Arc<Term>> {
        lock(&self.slots).get(id).cloned().flatten()
    }

    /// Answers one request of a hub.
    pub(crate) async fn answer(self: &Arc<Self>, id: TerminalId, action: TerminalAction) -> Reply {
        match action {
            TerminalAction::Open { cols, rows } => self.open(id, cols, rows).await,
            TerminalAction::Input { data } => {
                self.relay(
                    &id,
                    Method::TerminalInput,
                    |t| json!({"terminalId": t, "data": data}),
                )
                .await
            }
            TerminalAction::Resize { cols, rows } => {
                self.relay(
                    &id,
                    Method::TerminalResize,
                    |t| json!({"terminalId": t, "cols": cols, "rows": rows}),
                )
                .await
            }
            TerminalAction::Renew {} => match self.find(&id) {
                Some(term) => {
                    *lock(&term.deadline) = Instant::now() + self.lease;
                    Reply::Ok(json!({"ok": true}))
                }
                None => not_found(&id),
            },
            TerminalAction::Close {} => {
                self.relay(&id, Method::TerminalClose, |t| json!({"terminalId": t}))
                    .await
            }
        }
    }

    /// Sends `method` to the connection attached to terminal `id`, with the params `params`
    /// makes of the backend's terminal ID; the gateway's answer or error.
    async fn relay(
        &self,
        id: &TerminalId,
        method: Method,
        params: impl FnOnce(&str) -> Value,
    ) -> Reply {
        let Some(term) = self.find(id) else {
            return not_found(id);
        };
        let sent = tokio::time::timeout(
            CALL_WAIT,
            term.client.request(method, params(&term.backend_id)),
        )
        .await;
        match sent {
            Ok(Ok(value)) => Reply::Ok(value),
            Ok(Err(e)) => crate::screen::error_reply(&e),
            Err(_) => crate::screen::error_reply(&ax_gateway::ClientError::Timeout),
        }
    }

    async fn open(self: &Arc<Self>, id: TerminalId, cols: u16, rows: u16) -> Reply {
        {
            let mut slots = lock(&self.slots);
            if slots.contains_key(&id) {
                return error(409, "conflict", format!("terminal {id} is already open"));
            }
            if slots.len() >= MAX_TERMINALS {
                return error(
                    503,
                    "UNAVAILABLE",
                    format!(
                        "at most {MAX_TERMINALS} terminals through hubs at once on this machine"
                    ),
                );
            }
            slots.insert(id.clone(), None);
        }
        match self.open_on_backend(cols, rows).await {
            Ok((term, events, opened)) => {
                let term = Arc::new(term);
                lock(&self.slots).insert(id.clone(), Some(term.clone()));
                tokio::spawn(self.clone().run(id.clone(), term, events));
                let opened = TerminalOpened {
                    terminal_id: id,
                    cols: opened["cols"].as_u64().map_or(cols, |c| c as u16),
                    rows: opened["rows"].as_u64().map_or(rows, |r| r as u16),
                    lease_ms: self.lease.as_millis() as u64,
                };
                match serde_json::to_value(opened) {
                    Ok(v) => Reply::Ok(v),
                    Err(e) => error(500, "internal", e.to_string()),
                }
            }
            Err(reply) => {
                lock(&self.slots).remove(&id);
                reply
            }
        }
    }

    async fn connect(&self) -> Result<GatewayClient, ax_gateway::ClientError> {
        let url = gateway_url(&self.backend_url)?;
        let options = ConnectOptions::new(self.token.clone(), ClientMode::Cli, vec![Scope::Admin])
            .with_client_id("ax-code-hub-terminal");
        GatewayClient::connect(&url, options).await
    }

    /// Opens the terminal on a connection of its own; the connection, its events (subscribed
    /// before the open, so nothing is missed) and the gateway's answer.
    async fn open_on_backend(
        &self,
        cols: u16,
        rows: u16,
    ) -> Result<(Term, broadcast::Receiver<EventFrame>, Value), Reply> {
        let client = self
            .connect()
            .await
            .map_err(|e| crate::screen::error_reply(&e))?;
        let events = client.subscribe();
        let opened = tokio::time::timeout(
            CALL_WAIT,
            client.request(Method::TerminalOpen, json!({"cols": cols, "rows": rows})),
        )
        .await
        .unwrap_or(Err(ax_gateway::ClientError::Timeout))
        .map_err(|e| crate::screen::error_reply(&e))?;
        let Some(backend_id) = opened["terminalId"].as_str().map(str::to_owned) else {
            return Err(error(
                502,
                "bad_reply",
                format!("terminal.open answered without a terminalId: {opened}"),
            ));
        };
        let term = Term {
            backend_id,
            client,
            deadline: Mutex::new(Instant::now() + self.lease),
        };
        Ok((term, events, opened))
    }

    /// Relays the terminal's output to NATS until it ends, its lease runs out or the join
    /// stops; then closes it on the backend and forgets it.
    async fn run(
        self: Arc<Self>,
        id: TerminalId,
        term: Arc<Term>,
        events: broadcast::Receiver<EventFrame>,
    ) {
        let pending = Mutex::new(Pending::default());
        let wake = Notify::new();
        let subject = self.machine.terminal_subject(&id);
        tokio::join!(
            self.read(&id, &term, events, &pending, &wake),
            self.publish(&subject, &pending, &wake),
        );
        {
            let mut slots = lock(&self.slots);
            if slots
                .get(&id)
                .is_some_and(|t| t.as_ref().is_some_and(|t| Arc::ptr_eq(t, &term)))
            {
                slots.remove(&id);
            }
        }
        self.close_on_backend(&term).await;
    }

    /// The backend's events for the terminal into `pending`, until its exit (or the lease,
    /// the connection or the join ends).
    async fn read(
        &self,
        id: &TerminalId,
        term: &Term,
        mut events: broadcast::Receiver<EventFrame>,
        pending: &Mutex<Pending>,
        wake: &Notify,
    ) {
        let mut closing = false;
        let end = loop {
            let deadline = *lock(&term.deadline);
            tokio::select! {
                event = events.recv() => match event {
                    Ok(event) => {
                        if let Some(end) = take_event(&term.backend_id, event, pending) {
                            break end;
                        }
                    }
                    // The client reads the socket as fast as it comes: only a stalled join
                    // lags. The size of what was lost is unknown: a byte per event is told.
                    Err(broadcast::error::RecvError::Lagged(n)) => lock(pending).gap(n),
                    Err(broadcast::error::RecvError::Closed) => break (None, None),
                },
                () = tokio::time::sleep_until(deadline), if !closing => {
                    if Instant::now() >= *lock(&term.deadline) {
                        tracing::info!(machine = %self.machine, terminal = %id,
                            "hub: no hub renewed the terminal's lease; closing it");
                        closing = true;
                        let closed = tokio::time::timeout(
                            CALL_WAIT,
                            term.client.request(
                                Method::TerminalClose,
                                json!({"terminalId": term.backend_id}),
                            ),
                        )
                        .await;
                        // Its exit follows on the connection; without one, end here.
                        if !matches!(closed, Ok(Ok(_))) {
                            break (None, None);
                        }
                    }
                }
                // As a crash: nothing more is published (the hub's renewal finds no one).
                () = self.stop.cancelled() => {
                    lock(pending).silent = true;
                    wake.notify_one();
                    return;
                }
            }
            wake.notify_one();
        };
        lock(pending).exit = Some(end);
        wake.notify_one();
    }

    /// `pending` to NATS, in order, until the exit is sent.
    async fn publish(&self, subject: &str, pending: &Mutex<Pending>, wake: &Notify) {
        loop {
            let next = {
                let mut pending = lock(pending);
                if pending.silent {
                    return;
                }
                pending.next()
            };
            let Some(message) = next else {
                wake.notified().await;
                continue;
            };
            let last = matches!(message, TerminalOutput::Exit { .. });
            match serde_json::to_vec(&message) {
                Ok(payload) => {
                    let sent = tokio::time::timeout(
                        CALL_WAIT,
                        self.nats.publish(subject.to_owned(), payload.into()),
                    )
                    .await;
                    // Lost on the way: the hub sees the gap in the next message's offset.
                    if !matches!(sent, Ok(Ok(()))) {
                        tracing::debug!(%subject, "hub: terminal output not published");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "hub: terminal output not encoded"),
            }
            if last {
                return;
            }
        }
    }

    /// Closes the terminal on the backend (an ended one is forgotten there, a running one
    /// killed), on its own connection or, when that one broke, on a new one.
    async fn close_on_backend(&self, term: &Term) {
        let params = json!({"terminalId": term.backend_id});
        let closed = tokio::time::timeout(
            CALL_WAIT,
            term.client.request(Method::TerminalClose, params.clone()),
        )
        .await;
        match closed {
            Ok(Ok(_)) => return,
            Ok(Err(e)) if e.code() == ax_gateway::ErrorCode::NotFound => return,
            _ => {}
        }
        let again = tokio::time::timeout(CALL_WAIT, async {
            let client = self.connect().await?;
            let answer = client.request(Method::TerminalClose, params).await;
            client.close().await;
            answer
        })
        .await;
        if !matches!(again, Ok(Ok(_))) {
            tracing::warn!(terminal = %term.backend_id, "hub: could not close a terminal on the backend");
        }
    }
}

fn not_found(id: &TerminalId) -> Reply {
    error(
        404,
        "NOT_FOUND",
        format!("no terminal {id} on this machine"),
    )
}

/// One gateway event of the terminal into `pending`; its end when it is one.
fn take_event(
    backend_id: &str,
    event: EventFrame,
    pending: &Mutex<Pending>,
) -> Option<(Option<i32>, Option<i32>)> {
    let payload = event.payload?;
    if payload["terminalId"] != backend_id {
        return None;
    }
    let int = |v: &Value| v.as_i64().and_then(|n| i32::try_from(n).ok());
    match event.event.as_str() {
        "terminal.data" => {
            if let Some(data) = payload["data"].as_str() {
                lock(pending).push(data);
            }
            None
        }
        "terminal.dropped" => {
            lock(pending).gap(payload["droppedBytes"].as_u64().unwrap_or(0));
            None
        }
        "terminal.exit" => Some((int(&payload["code"]), int(&payload["signal"]))),
        // A person on the machine attached to it: theirs now, ended for the hub.
        "terminal.detached" => Some((None, None)),
        _ => None,
    }
}

/// Output waiting for NATS: a gap (always before the text), the text, then the exit.
#[derive(Default)]
struct Pending {
    /// Bytes lost, not told yet; they come before `text`.
    dropped: u64,
    text: String,
    /// Where the next message starts.
    offset: u64,
    exit: Option<(Option<i32>, Option<i32>)>,
    /// The join stopped: publish nothing more.
    silent: bool,
}

impl Pending {
    fn push(&mut self, data: &str) {
        self.text.push_str(data);
        let over = self.text.len().saturating_sub(JOIN_BUFFER);
        if over > 0 {
            let mut cut = over;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// `bytes` lost here: with the text not sent yet (it came before them).
    fn gap(&mut self, bytes: u64) {
        self.dropped += self.text.len() as u64 + bytes;
        self.text.clear();
    }

    fn next(&mut self) -> Option<TerminalOutput> {
        if self.dropped > 0 {
            let message = TerminalOutput::Dropped {
                offset: self.offset,
                dropped_bytes: self.dropped,
            };
            self.offset += self.dropped;
            self.dropped = 0;
            return Some(message);
        }
        if !self.text.is_empty() {
            let mut cut = self.text.len().min(CHUNK);
            while !self.text.is_char_boundary(cut) {
                cut -= 1;
            }
            let data: String = self.text.drain(..cut).collect();
            let message = TerminalOutput::Data {
                offset: self.offset,
                data,
            };
            self.offset += cut as u64;
            return Some(message);
        }
        let (code, signal) = self.exit.take()?;
        Some(TerminalOutput::Exit {
            offset: self.offset,
            code,
            signal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_output_is_bounded_and_every_byte_is_accounted_for() {
        let mut p = Pending::default();
        p.push("héllo ");
        let big = "é".repeat(JOIN_BUFFER);
        p.push(&big);
        assert!(p.text.len() <= JOIN_BUFFER);
        let mut sent = 0u64;
        let mut first = true;
        while let Some(m) = p.next() {
            match m {
                TerminalOutput::Dropped {
                    offset,
                    dropped_bytes,
                } => {
                    assert!(first, "a gap comes before the text");
                    assert_eq!(offset, sent);
                    sent += dropped_bytes;
                }
                TerminalOutput::Data { offset, data } => {
                    assert_eq!(offset, sent);
                    assert!(data.len() <= CHUNK);
                    sent += data.len() as u64;
                }
                TerminalOutput::Exit { .. } => unreachable!("no exit yet"),
            }
            first = false;
        }
        assert_eq!(sent, "héllo ".len() as u64 + big.len() as u64);
        // A gap drops what was waiting with it; the exit comes last, at the end.
        p.push("waiting");
        p.gap(10);
        p.push("after");
        p.exit = Some((Some(0), None));
        assert_eq!(
            p.next(),
            Some(TerminalOutput::Dropped {
                offset: sent,
                dropped_bytes: 17
            })
        );
        assert_eq!(
            p.next(),
            Some(TerminalOutput::Data {
                offset: sent + 17,
                data: "after".into()
            })
        );
        assert_eq!(
            p.next(),
            Some(TerminalOutput::Exit {
                offset: sent + 22,
                code: Some(0),
                signal: None
            })
        );
        assert_eq!(p.next(), None);
    }
}
