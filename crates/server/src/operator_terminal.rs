//! The gateway's operator terminal, run by the backend: `terminal.run` commands go through the
//! one process module (`ax_agents::process`) like the `shell` agent's, so they get the same
//! process group, allowlisted environment, head-and-tail bound and group kill at the end.
//! Each command's group is recorded in the store while it runs, so a backend restarted after
//! a crash kills what the dead one left running (as it does for session runs).
//!
//! The interactive terminals (`terminal.open`) run the person's shell under a pseudo-terminal
//! through the same module (`process::pty`): a session of its own, the allowlisted
//! environment with `TERM=xterm-256color`, recorded for crash cleanup the same way.

use std::path::PathBuf;

use ax_agents::process::{
    self, Bound, CommandSpec, OutputEvent, ProcessGroup,
    pty::{PtyEvent, PtyProcess, TermSize},
};
use ax_gateway::{
    OpenedPty, PtyControl, PtyOutput, TerminalEvent, TerminalHost, TerminalSize,
    TerminalStartError, TerminalStream,
};
use ax_protocol::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::{self, Store};

/// Runs operator-terminal commands in the project directory.
pub(crate) struct Terminal {
    pub(crate) project_dir: PathBuf,
    pub(crate) store: Store,
    /// The backend's shutdown: interactive terminals outlive connections, not the backend.
    pub(crate) shutdown: CancellationToken,
}

impl TerminalHost for Terminal {
    fn start(
        &self,
        command: &str,
        max_output: usize,
        stop: CancellationToken,
    ) -> Result<mpsc::Receiver<TerminalEvent>, TerminalStartError> {
        let spec =
            CommandSpec::shell(command, &self.project_dir).bound(Bound::head_and_tail(max_output));
        let (process, mut events) =
            process::spawn_with_events(spec).map_err(|e| TerminalStartError(e.to_string()))?;
        let (tx, rx) = mpsc::channel(16);
        let store = self.store.clone();
        tokio::spawn(async move {
            let ProcessGroup { pgid, start } = process.group();
            record_group(&store, pgid, start).await;
            forward(process, &mut events, &tx, stop).await;
            forget_group(&store, pgid).await;
        });
        Ok(rx)
    }

    fn open_pty(&self, size: TerminalSize) -> Result<OpenedPty, TerminalStartError> {
        let spec = CommandSpec::new(shell(), &self.project_dir)
            .env("TERM", "xterm-256color")
            .env("COLORTERM", "truecolor");
        let (pty, mut events) = process::pty::spawn_pty(
            spec,
            TermSize {
                cols: size.cols,
                rows: size.rows,
            },
        )
        .map_err(|e| TerminalStartError(e.to_string()))?;
        let ProcessGroup { pgid, start } = pty.group();
        let (tx, rx) = mpsc::channel(16);
        let store = self.store.clone();
        let shutdown = self.shutdown.clone();
        let killer = pty.killer();
        tokio::spawn(async move {
            record_group(&store, pgid, start).await;
            let mut killed = false;
            loop {
                let event = tokio::select! {
                    event = events.next() => event,
                    () = shutdown.cancelled(), if !killed => {
                        killed = true;
                        killer.kill();
                        continue;
                    }
                };
                let Some(event) = event else { break };
                let item = match event {
                    PtyEvent::Output(text) => PtyOutput::Data(text),
                    PtyEvent::Exit(status) => PtyOutput::Exit {
                        code: status.code,
                        signal: status.signal,
                    },
                };
                // The gateway reads as fast as the shell writes; if it went away, the
                // control (and with it the shell) is dropped too.
                if tx.send(item).await.is_err() {
                    break;
                }
            }
            forget_group(&store, pgid).await;
        });
        Ok(OpenedPty {
            control: Box::new(Pty(pty)),
            output: rx,
        })
    }
}

/// Records a terminal's process group, so a backend that crashes leaves none running (the
/// next start kills what the record names).
async fn record_group(store: &Store, pgid: u32, start: Option<u64>) {
    let Some(start) = start else { return };
    if let Err(e) = store
        .write(move |c| store::record_process_group(c, pgid, start, process::this_process()))
        .await
    {
        tracing::error!(error = %e, "recording a terminal's process group failed");
    }
}

/// Drops the crash record of a terminal's process group once it is gone.
async fn forget_group(store: &Store, pgid: u32) {
    if let Err(e) = store
        .write(move |c| store::forget_process_group(c, pgid))
        .await
    {
        tracing::error!(error = %e, "forgetting a terminal's process group failed");
    }
}

/// The person's login shell when `SHELL` names an executable path, else `/bin/sh`.
fn shell() -> PathBuf {
    std::env::var_os("SHELL")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

struct Pty(PtyProcess);

impl PtyControl for Pty {
    fn write(&self, data: Vec<u8>) -> Result<(), TerminalStartError> {
        self.0
            .write(data)
            .map_err(|e| TerminalStartError(e.to_string()))
    }

    fn resize(&self, size: TerminalSize) -> Result<(), TerminalStartError> {
        self.0
            .resize(TermSize {
                cols: size.cols,
                rows: size.rows,
            })
            .map_err(|e| TerminalStartError(e.to_string()))
    }

    fn kill(&self) {
        self.0.kill();
    }
}

/// Forwards the command's events until its exit, killing it when `stop` fires or nobody reads.
async fn forward(
    process: process::Process,
    events: &mut process::OutputEvents,
    tx: &mpsc::Sender<TerminalEvent>,
    stop: CancellationToken,
) {
    let mut dropped = 0;
    let mut killed = false;
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = stop.cancelled(), if !killed => {
                killed = true;
                process.kill();
                continue;
            }
            // Nobody reads any more (the gateway went away): stop the command.
            () = tx.closed(), if !killed => {
                killed = true;
                process.kill();
                continue;
            }
        };
        let forward = match event {
            Some(OutputEvent::Output(piece)) => TerminalEvent::Output {
                stream: match piece.stream {
                    Stream::Stdout => TerminalStream::Stdout,
                    Stream::Stderr => TerminalStream::Stderr,
                },
                data: piece.text,
            },
            Some(OutputEvent::Truncated { dropped_bytes }) => {
                dropped = dropped_bytes;
                TerminalEvent::Truncated { dropped_bytes }
            }
            Some(OutputEvent::Exit(status)) => TerminalEvent::Exit {
                code: status.code,
                signal: status.signal,
                dropped_bytes: dropped,
            },
            None => TerminalEvent::Exit {
                code: None,
                signal: None,
                dropped_bytes: dropped,
            },
        };
        let last = matches!(forward, TerminalEvent::Exit { .. });
        if tx.send(forward).await.is_err() && !killed {
            killed = true;
            process.kill();
        }
        if last {
            return;
        }
    }
}
