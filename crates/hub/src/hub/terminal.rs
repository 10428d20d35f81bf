//! `GET /machine/{m}/gateway` (docs/hub.md §4): the operator terminal of a machine through
//! the hub, in the gateway's own WebSocket protocol (docs/gateway.md §6).
//!
//! The hub serves an [`ax_gateway::Gateway`] per machine that joined, with the hub's
//! credential (checked in the gateway's `connect`, in constant time, as a backend's gateway
//! does; the Host and Origin checks are the hub's, as on every route). Its [`TerminalHost`]
//! starts no process: [`TerminalHost::open_pty`] returns at once an [`OpenedPty`] backed by
//! NATS. Control goes as [`Request::Terminal`] on `ax.req.<m>`, answered by the machine's join
//! through its own backend's gateway (`join/terminal.rs`), so the backend applies its own
//! rules; output comes on `ax.<m>.term.<id>`. The hub's gateway keeps the terminal as it keeps
//! a local one (scrollback, one attached viewer, `terminal.dropped` for a slow one) and
//! applies the same bounds before anything reaches NATS: sizes, 64 KiB of input, four
//! terminals per machine. The same gateway carries the machine's shared `ui.command`s to the
//! Control UIs on it and takes their acknowledgements (`ui.rs`).
//!
//! Lifetimes: the hub renews each terminal's lease at a third of the lease the join gave; the
//! terminal ends (with a line in it saying why, then `terminal.exit`) when the machine stops
//! answering (no responders, or no answer for a whole lease) or no longer has it. Bounded: at
//! most [`OUTPUT_ITEMS`] output messages wait for the gateway (it reads them at once; beyond,
//! they are counted as dropped), [`INPUT_QUEUE`] bytes of input for the machine, and lost
//! output is told to the gateway as a gap ([`PtyOutput::Dropped`]), from the offsets the join
//! sends.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_gateway::{
    Gateway, GatewayConfig, OpenedPty, PtyControl, PtyOutput, SessionDirectory, TERMINAL_MAX_INPUT,
    TerminalEvent, TerminalHost, TerminalSize, TerminalStartError,
};
use axum::{
    Extension, Router,
    extract::{Path, State, ws::WebSocketUpgrade},
    response::{IntoResponse, Response},
    routing::get,
};
use futures_util::StreamExt;
use tokio::{
    sync::{Notify, mpsc},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{ApiError, S, Shared};
use crate::{
    MachineName,
    terminal::{TerminalAction, TerminalId, TerminalOpened, TerminalOutput},
    wire::{Reply, ReplyError, Request, decode},
};

/// Output messages waiting for the gateway's terminal pump.
pub(super) const OUTPUT_ITEMS: usize = 64;
/// Input waiting for the machine (a full queue refuses input, as a backend's does).
pub(super) const INPUT_QUEUE: usize = 256 * 1024;
/// Longest a terminal's control request may take.
const CONTROL_WAIT: Duration = Duration::from_secs(10);
/// How long a closed terminal waits for its exit from the machine.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The hub's gateways, one per machine, made when first asked for.
#[derive(Default)]
pub(super) struct Gateways {
    by_machine: Mutex<BTreeMap<MachineName, Gateway>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The gateway of a hub knows no session: it serves the terminal and relays the machine's
/// shared `ui.command`s (`ui.rs`; a `ui.command` a client sends it naming a
/// session is refused).
struct NoSessions;

impl SessionDirectory for NoSessions {
    fn contains(&self, _: &str) -> bool {
        false
    }
}

impl Gateways {
    /// Machine m's gateway, if a client asked for it already.
    pub(super) fn existing(&self, machine: &MachineName) -> Option<Gateway> {
        lock(&self.by_machine).get(machine).cloned()
    }

    fn get(&self, shared: &Shared, machine: &MachineName) -> Gateway {
        lock(&self.by_machine)
            .entry(machine.clone())
            .or_insert_with(|| {
                Gateway::new(GatewayConfig {
                    token: shared.access.token.clone(),
                    server_version: env!("CARGO_PKG_VERSION").to_owned(),
                    sessions: Arc::new(NoSessions),
                    terminal: Some(Arc::new(MachineTerminals {
                        nats: shared.nats.clone(),
                        machine: machine.clone(),
                    })),
                })
            })
            .clone()
    }
}

/// `/machine/{m}/gateway`, outside the bearer check: a browser's WebSocket cannot send the
/// header, and the gateway's `connect` asks for the same credential.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/machine/{m}/gateway", get(upgrade))
        .with_state(shared)
}

async fn upgrade(
    State(shared): S,
    Path(m): Path<String>,
    conn: Option<Extension<ax_listen::Conn>>,
    ws: WebSocketUpgrade,
) -> Response {
    let machine = match MachineName::new(&m) {
        Ok(m) => m,
        Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
    };
    let known = {
        let machines = shared.machines.read().unwrap_or_else(|p| p.into_inner());
        machines.get(&machine).is_some_and(|c| c.record.is_some())
    };
    if !known {
        return ApiError::new(404, "not_found", format!("no machine {m:?} joined")).into_response();
    }
    let gateway = shared.gateways.get(&shared, &machine);
    // The socket keeps its place in the cap on unauthenticated connections until its
    // `connect` succeeds, and is closed if the cap evicts it meanwhile (as on a backend).
    let place = ax_listen::SocketPlace::of(conn.as_ref().map(|Extension(c)| c));
    gateway.configure_upgrade(ws).on_upgrade(move |socket| {
        let serve = gateway.serve_socket_then(socket, place.on_authenticated());
        place.run(serve)
    })
}

/// The terminals of one machine, over NATS.
struct MachineTerminals {
    nats: async_nats::Client,
    machine: MachineName,
}

impl TerminalHost for MachineTerminals {
    fn start(
        &self,
        _command: &str,
        _max_output: usize,
        _stop: CancellationToken,
    ) -> Result<mpsc::Receiver<TerminalEvent>, TerminalStartError> {
        Err(TerminalStartError(
            "terminal.run is not relayed through the hub; open a terminal (terminal.open)".into(),
        ))
    }

    fn open_pty(&self, size: TerminalSize) -> Result<OpenedPty, TerminalStartError> {
        let id = TerminalId::random().map_err(|e| TerminalStartError(e.to_string()))?;
        let (tx, output) = mpsc::channel(OUTPUT_ITEMS);
        let link = Arc::new(Link {
            queued: Mutex::new(Queued::default()),
            wake: Notify::new(),
            stop: CancellationToken::new(),
            ended: CancellationToken::new(),
            out: Mutex::new(Out {
                tx: Some(tx),
                dropped: 0,
            }),
        });
        let remote = Remote {
            nats: self.nats.clone(),
            machine: self.machine.clone(),
            id,
        };
        tokio::spawn(run(remote, size, link.clone()));
        Ok(OpenedPty {
            control: Box::new(Control(link)),
            output,
        })
    }
}

/// Input and a resize not sent yet.
#[derive(Default)]
struct Queued {
    input: String,
    resize: Option<TerminalSize>,
}

/// The output side towards the gateway.
struct Out {
    /// `None` once the exit was sent.
    tx: Option<mpsc::Sender<PtyOutput>>,
    /// Bytes lost, not told yet.
    dropped: u64,
}

/// What the gateway's control and the terminal's tasks share.
struct Link {
    queued: Mutex<Queued>,
    wake: Notify,
    /// The gateway closed the terminal (or dropped it).
    stop: CancellationToken,
    /// The exit was sent: everything ends.
    ended: CancellationToken,
    out: Mutex<Out>,
}

impl Link {
    /// Tells the gateway of bytes it missed, if it has room; else they wait to be told.
    fn flush_gap(out: &mut Out) -> bool {
        let Some(tx) = &out.tx else { return false };
        if out.dropped == 0 {
            return true;
        }
        if tx.try_send(PtyOutput::Dropped(out.dropped)).is_ok() {
            out.dropped = 0;
            return true;
        }
        false
    }

    fn data(&self, text: String) {
        let mut out = lock(&self.out);
        if !Link::flush_gap(&mut out) {
            out.dropped += text.len() as u64;
            return;
        }
        if let Some(tx) = &out.tx
            && let Err(mpsc::error::TrySendError::Full(PtyOutput::Data(text))) =
                tx.try_send(PtyOutput::Data(text))
        {
            out.dropped += text.len() as u64;
        }
    }

    fn gap(&self, bytes: u64) {
        let mut out = lock(&self.out);
        out.dropped += bytes;
        Link::flush_gap(&mut out);
    }

    /// Sends what is left, `note` (a line saying why the hub ended it) and the exit, once.
    async fn finish(&self, note: Option<String>, code: Option<i32>, signal: Option<i32>) {
        let (tx, dropped) = {
            let mut out = lock(&self.out);
            (out.tx.take(), std::mem::take(&mut out.dropped))
        };
        self.ended.cancel();
        let Some(tx) = tx else { return };
        if dropped > 0 {
            let _ = tx.send(PtyOutput::Dropped(dropped)).await;
        }
        if let Some(note) = note {
            let _ = tx.send(PtyOutput::Data(format!("\r\n[{note}]\r\n"))).await;
        }
        let _ = tx.send(PtyOutput::Exit { code, signal }).await;
    }

    /// The input (at most [`TERMINAL_MAX_INPUT`] bytes, whole characters) and the resize
    /// waiting, if any.
    fn take(&self) -> (Option<String>, Option<TerminalSize>) {
        let mut q = lock(&self.queued);
        let input = (!q.input.is_empty()).then(|| {
            let mut cut = q.input.len().min(TERMINAL_MAX_INPUT);
            while !q.input.is_char_boundary(cut) {
                cut -= 1;
            }
            q.input.drain(..cut).collect()
        });
        (input, q.resize.take())
    }
}

/// The gateway's control of one terminal; dropping it closes the terminal.
struct Control(Arc<Link>);

impl PtyControl for Control {
    fn write(&self, data: Vec<u8>) -> Result<(), TerminalStartError> {
        if self.0.ended.is_cancelled() || self.0.stop.is_cancelled() {
            return Err(TerminalStartError("the terminal has ended".into()));
        }
        let text = String::from_utf8(data)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        {
            let mut q = lock(&self.0.queued);
            if q.input.len() + text.len() > INPUT_QUEUE {
                return Err(TerminalStartError(
                    "the terminal's input queue is full (the machine is slow to take it)".into(),
                ));
            }
            q.input.push_str(&text);
        }
        self.0.wake.notify_one();
        Ok(())
    }

    fn resize(&self, size: TerminalSize) -> Result<(), TerminalStartError> {
        if self.0.ended.is_cancelled() || self.0.stop.is_cancelled() {
            return Err(TerminalStartError("the terminal has ended".into()));
        }
        lock(&self.0.queued).resize = Some(size);
        self.0.wake.notify_one();
        Ok(())
    }

    fn kill(&self) {
        self.0.stop.cancel();
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.0.stop.cancel();
    }
}

/// Why a request about a terminal failed.
enum Failure {
    /// Nobody answers on the machine's subject: it is gone.
    NoResponders,
    /// No answer in time.
    Timeout,
    /// The machine answered with an error.
    Refused(ReplyError),
    /// Anything else (NATS refused it, a bad answer).
    Other(String),
}

impl Failure {
    fn describe(&self) -> String {
        match self {
            Failure::NoResponders => "is not connected".into(),
            Failure::Timeout => "did not answer in time".into(),
            Failure::Refused(e) => format!("refused: {} ({})", e.message, e.code),
            Failure::Other(m) => format!("failed: {m}"),
        }
    }
}

/// One terminal on one machine, as NATS names it.
struct Remote {
    nats: async_nats::Client,
    machine: MachineName,
    id: TerminalId,
}

impl Remote {
    async fn ask(&self, action: TerminalAction) -> Result<serde_json::Value, Failure> {
        let request = Request::Terminal {
            terminal: self.id.clone(),
            action,
        };
        let payload = serde_json::to_vec(&request).map_err(|e| Failure::Other(e.to_string()))?;
        let sent = tokio::time::timeout(
            CONTROL_WAIT,
            self.nats
                .request(self.machine.request_subject(), payload.into()),
        )
        .await;
        let msg = match sent {
            Err(_) => return Err(Failure::Timeout),
            Ok(Err(e)) => {
                return Err(match e.kind() {
                    async_nats::RequestErrorKind::NoResponders => Failure::NoResponders,
                    async_nats::RequestErrorKind::TimedOut => Failure::Timeout,
                    _ => Failure::Other(e.to_string()),
                });
            }
            Ok(Ok(msg)) => msg,
        };
        match decode::<Reply>(&msg.payload).map_err(Failure::Other)? {
            Reply::Ok(value) => Ok(value),
            Reply::Error(e) => Err(Failure::Refused(e)),
        }
    }
}

/// Opens the terminal on the machine, then relays until it ends.
async fn run(remote: Remote, size: TerminalSize, link: Arc<Link>) {
    let machine = remote.machine.clone();
    let ended = |why: String| format!("ax-code hub: the terminal on {machine} ended: {why}");
    // Subscribed before the open is asked for, on the same connection: the server takes the
    // SUB before it routes the request, and the join publishes only once it has the request,
    // so no output goes before the subscription holds (the open is the round trip).
    let sub = match remote
        .nats
        .subscribe(remote.machine.terminal_subject(&remote.id))
        .await
    {
        Ok(sub) => sub,
        Err(e) => {
            let note = ended(format!("cannot subscribe to its output: {e}"));
            link.finish(Some(note), None, None).await;
            return;
        }
    };
    let opened = remote
        .ask(TerminalAction::Open {
            cols: size.cols,
            rows: size.rows,
        })
        .await
        .and_then(|v| {
            serde_json::from_value::<TerminalOpened>(v).map_err(|e| Failure::Other(e.to_string()))
        });
    let lease = match opened {
        Ok(opened) => Duration::from_millis(opened.lease_ms.max(300)),
        Err(failure) => {
            let note = format!(
                "ax-code hub: cannot open a terminal on {machine}: it {}",
                failure.describe()
            );
            link.finish(Some(note), None, None).await;
            return;
        }
    };
    tokio::join!(
        output(sub, &link, &ended),
        control(&remote, lease, &link, &ended)
    );
}

/// The terminal's output from NATS into the gateway, gaps told, until its exit.
async fn output(mut sub: async_nats::Subscriber, link: &Link, ended: &impl Fn(String) -> String) {
    // Where the next message should start: a later one means output was lost on the way.
    let mut expected = 0u64;
    loop {
        let msg = tokio::select! {
            msg = sub.next() => msg,
            () = link.ended.cancelled() => return,
        };
        let Some(msg) = msg else {
            let note = ended("the hub's NATS subscription ended".into());
            link.finish(Some(note), None, None).await;
            return;
        };
        let Ok(out) = decode::<TerminalOutput>(&msg.payload) else {
            tracing::warn!(subject = %msg.subject, "hub: ignored bad terminal output");
            continue;
        };
        match out {
            TerminalOutput::Data { offset, data } => {
                // An old or repeated message.
                if offset < expected {
                    continue;
                }
                if offset > expected {
                    link.gap(offset - expected);
                }
                expected = offset + data.len() as u64;
                link.data(data);
            }
            TerminalOutput::Dropped {
                offset,
                dropped_bytes,
            } => {
                let end = offset.saturating_add(dropped_bytes);
                if end > expected {
                    link.gap(end - expected);
                    expected = end;
                }
            }
            TerminalOutput::Exit {
                offset,
                code,
                signal,
            } => {
                if offset > expected {
                    link.gap(offset - expected);
                }
                link.finish(None, code, signal).await;
                return;
            }
        }
    }
}

/// Input, resizes, the lease and the close, in order, until the terminal ends.
async fn control(remote: &Remote, lease: Duration, link: &Link, ended: &impl Fn(String) -> String) {
    let every = (lease / 3).max(Duration::from_millis(100));
    let mut renew = tokio::time::interval_at(Instant::now() + every, every);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut answered = Instant::now();
    let machine = &remote.machine;
    loop {
        tokio::select! {
            biased;
            () = link.ended.cancelled() => return,
            () = link.stop.cancelled() => {
                if let Err(f) = remote.ask(TerminalAction::Close {}).await {
                    tracing::debug!(%machine, "hub: closing a terminal: it {}", f.describe());
                }
                // The exit follows on the subject; a machine that sends none is gone.
                tokio::select! {
                    () = link.ended.cancelled() => {}
                    () = tokio::time::sleep(CLOSE_WAIT) => link.finish(None, None, None).await,
                }
                return;
            }
            () = link.wake.notified() => loop {
                let (input, resize) = link.take();
                if input.is_none() && resize.is_none() {
                    break;
                }
                let mut asked = Vec::new();
                if let Some(data) = input {
                    asked.push(TerminalAction::Input { data });
                }
                if let Some(size) = resize {
                    asked.push(TerminalAction::Resize { cols: size.cols, rows: size.rows });
                }
                for action in asked {
                    match remote.ask(action).await {
                        Ok(_) => answered = Instant::now(),
                        Err(Failure::NoResponders) => {
                            let note = ended(format!("machine {machine} is not connected"));
                            link.finish(Some(note), None, None).await;
                            return;
                        }
                        Err(f) => tracing::warn!(%machine, "hub: terminal input or resize: it {}", f.describe()),
                    }
                }
            },
            _ = renew.tick() => match remote.ask(TerminalAction::Renew {}).await {
                Ok(_) => answered = Instant::now(),
                Err(Failure::NoResponders) => {
                    let note = ended(format!("machine {machine} went offline"));
                    link.finish(Some(note), None, None).await;
                    return;
                }
                Err(Failure::Refused(e)) if e.status == 404 => {
                    let note = ended(format!("machine {machine} no longer has it"));
                    link.finish(Some(note), None, None).await;
                    return;
                }
                Err(f) if answered.elapsed() >= lease => {
                    let note = ended(format!("machine {machine} {}", f.describe()));
                    link.finish(Some(note), None, None).await;
                    return;
                }
                Err(f) => tracing::debug!(%machine, "hub: renewing a terminal: it {}", f.describe()),
            },
        }
    }
}
