//! The operator terminal's one-shot commands, `terminal.run` / `terminal.kill` (scope
//! `operator.admin`), and the [`TerminalHost`] seam the interactive terminals of
//! `crate::pty` start through.
//!
//! The gateway starts no process itself: the backend gives it a [`TerminalHost`] (as it gives
//! it a [`crate::SessionDirectory`]) that runs the command in the project directory, in a
//! process group of its own, bounded, and kills the group when the command ends, on
//! `terminal.kill` and when the connection goes. This module speaks the wire: one command per
//! connection, its output as `terminal.output` events to that connection only, a
//! `terminal.truncated` marker where output was dropped, one `terminal.exit`.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    frame::{ErrorCode, ErrorShape, EventPrefix},
    outbound::{Out, Outbound},
};

/// Output kept per run (head and tail); the middle is counted and dropped.
pub const MAX_OUTPUT: usize = 1 << 20;
/// Longest command line accepted.
pub const MAX_COMMAND: usize = 16 * 1024;

/// Runs operator-terminal commands for the gateway.
pub trait TerminalHost: Send + Sync + 'static {
    /// Starts `command` (1 to [`MAX_COMMAND`] bytes, not blank) with `sh -c` in the project
    /// directory, keeping at most `max_output` bytes of output. Events arrive in order and end
    /// with exactly one [`TerminalEvent::Exit`]. Cancelling `stop` kills the command's whole
    /// process group (the `Exit` still follows); so does dropping the receiver.
    fn start(
        &self,
        command: &str,
        max_output: usize,
        stop: CancellationToken,
    ) -> Result<mpsc::Receiver<TerminalEvent>, TerminalStartError>;

    /// Starts the operator's shell under a pseudo-terminal of `size` in the project
    /// directory, in a session of its own with the allowlisted environment (`terminal.open`,
    /// `docs/gateway.md` §6). Output arrives in order and ends with exactly one
    /// [`PtyOutput::Exit`]; dropping the control kills the whole session. A host without
    /// terminals keeps the default, which refuses.
    fn open_pty(&self, size: TerminalSize) -> Result<OpenedPty, TerminalStartError> {
        let _ = size;
        Err(TerminalStartError(
            "this backend has no interactive terminals".into(),
        ))
    }
}

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// What a command under a pseudo-terminal reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PtyOutput {
    /// Output text (whole UTF-8 characters).
    Data(String),
    /// This many bytes of output were lost on the way here (a relay that fell behind, e.g.
    /// the hub's terminal over NATS, docs/hub.md §4). The terminal's scrollback before the
    /// gap is dropped with them, and a viewer is told what it missed as `terminal.dropped`.
    Dropped(u64),
    /// The shell ended and its session was killed; the last item.
    Exit {
        /// Exit code, if it exited.
        code: Option<i32>,
        /// The signal that ended it.
        signal: Option<i32>,
    },
}

/// Input, resize and kill for a running pseudo-terminal. None of them may block.
pub trait PtyControl: Send + Sync + 'static {
    /// Queues `data` for the terminal's input; an error says why it was refused.
    fn write(&self, data: Vec<u8>) -> Result<(), TerminalStartError>;
    /// Sets the terminal's size.
    fn resize(&self, size: TerminalSize) -> Result<(), TerminalStartError>;
    /// Kills the whole session (the [`PtyOutput::Exit`] still follows).
    fn kill(&self);
}

/// A started pseudo-terminal: its control and its output.
pub struct OpenedPty {
    /// Input, resize, kill; dropping it kills the session.
    pub control: Box<dyn PtyControl>,
    /// Output, ending with [`PtyOutput::Exit`].
    pub output: mpsc::Receiver<PtyOutput>,
}

/// The command could not start (the message says why; it never holds a credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TerminalStartError(pub String);

/// Which stream output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TerminalStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// What a running terminal command reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalEvent {
    /// Output text (whole UTF-8 characters).
    Output {
        /// Which stream.
        stream: TerminalStream,
        /// The text.
        data: String,
    },
    /// Output between the head and the tail was dropped here; the tail follows.
    Truncated {
        /// Bytes dropped.
        dropped_bytes: u64,
    },
    /// The command ended and its group was killed; the last event.
    Exit {
        /// Exit code, if it exited.
        code: Option<i32>,
        /// The signal that ended it (9 after `terminal.kill`).
        signal: Option<i32>,
        /// Bytes of output dropped in all.
        dropped_bytes: u64,
    },
}

/// Params of `terminal.run`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// The command line.
    pub command: String,
}

/// Params of `terminal.kill` (none).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillParams {}

struct Running {
    run_id: String,
    stop: CancellationToken,
}

/// The one command a connection may have running.
#[derive(Default)]
pub(crate) struct TerminalSlot {
    running: Mutex<Option<Running>>,
}

impl TerminalSlot {
    /// Stops the running command (its whole group); `false` if nothing runs.
    pub(crate) fn kill(&self) -> bool {
        let guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(r) if !r.stop.is_cancelled() => {
                r.stop.cancel();
                true
            }
            _ => false,
        }
    }

    fn clear(&self, run_id: &str) {
        let mut guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_some_and(|r| r.run_id == run_id) {
            *guard = None;
        }
    }
}

/// Starts `command` through `host`. The returned future forwards its output to `out` as
/// `terminal.*` events; the caller spawns it after queueing the response, so the response
/// comes before the first event.
pub(crate) fn run(
    slot: Arc<TerminalSlot>,
    out: Arc<Outbound>,
    host: Option<&Arc<dyn TerminalHost>>,
    command: &str,
    run_id: String,
) -> Result<impl Future<Output = ()> + Send + use<>, ErrorShape> {
    if command.trim().is_empty() || command.len() > MAX_COMMAND {
        return Err(ErrorShape::invalid(format!(
            "invalid terminal.run params: command must be 1..={MAX_COMMAND} bytes"
        )));
    }
    let Some(host) = host else {
        return Err(ErrorShape::new(
            ErrorCode::Unavailable,
            "this gateway has no operator terminal",
        ));
    };
    let mut guard = slot.running.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_some() {
        return Err(ErrorShape::new(
            ErrorCode::Unavailable,
            "a terminal command is already running (terminal.kill stops it)",
        ));
    }
    // A child of the connection's token: a closed connection stops its command too.
    let stop = out.cancel_token().child_token();
    let mut events = host
        .start(command, MAX_OUTPUT, stop.clone())
        .map_err(|e| ErrorShape::new(ErrorCode::Internal, e.0))?;
    *guard = Some(Running {
        run_id: run_id.clone(),
        stop,
    });
    drop(guard);

    Ok(async move {
        let mut end = None;
        while let Some(event) = events.recv().await {
            match event {
                TerminalEvent::Output { stream, data } => {
                    if data.is_empty() {
                        continue;
                    }
                    // Terminal output yields to the queue: it must not get its own connection
                    // cut. The writer wakes us when it has taken the queue.
                    out.room(out.max_bytes() / 2).await;
                    let ev = json!({"runId": run_id, "stream": stream, "data": data});
                    out.push(Out::Event(EventPrefix::new("terminal.output", &ev)));
                }
                TerminalEvent::Truncated { dropped_bytes } => {
                    let ev = json!({"runId": run_id, "droppedBytes": dropped_bytes});
                    out.push(Out::Event(EventPrefix::new("terminal.truncated", &ev)));
                }
                TerminalEvent::Exit {
                    code,
                    signal,
                    dropped_bytes,
                } => {
                    end = Some((code, signal, dropped_bytes));
                    break;
                }
            }
        }
        slot.clear(&run_id);
        let (code, signal, dropped) = end.unwrap_or((None, None, 0));
        let mut ev = json!({"runId": run_id, "truncated": dropped > 0});
        if dropped > 0 {
            ev["droppedBytes"] = json!(dropped);
        }
        if let Some(code) = code {
            ev["code"] = json!(code);
        }
        if let Some(signal) = signal {
            ev["signal"] = json!(signal);
        }
        out.push(Out::Event(EventPrefix::new("terminal.exit", &ev)));
    })
}
