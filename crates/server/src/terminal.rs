//! The gateway's operator terminal, run by the backend: `terminal.run` commands go through the
//! one process module (`ax_agents::process`) like the `shell` agent's, so they get the same
//! process group, allowlisted environment, head-and-tail bound and group kill at the end.
//! Each command's group is recorded in the store while it runs, so a backend restarted after
//! a crash kills what the dead one left running (as it does for session runs).

use std::path::PathBuf;

use ax_agents::process::{self, Bound, CommandSpec, OutputEvent, ProcessGroup};
use ax_gateway::{TerminalEvent, TerminalHost, TerminalStartError, TerminalStream};
use ax_protocol::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::{self, Store};

/// Runs operator-terminal commands in the project directory.
pub(crate) struct Terminal {
    pub(crate) project_dir: PathBuf,
    pub(crate) store: Store,
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
            if let Some(start) = start
                && let Err(e) = store
                    .write(move |c| {
                        store::record_process_group(c, pgid, start, process::this_process())
                    })
                    .await
            {
                tracing::error!(error = %e, "recording a terminal's process group failed");
            }
            forward(process, &mut events, &tx, stop).await;
            if let Err(e) = store
                .write(move |c| store::forget_process_group(c, pgid))
                .await
            {
                tracing::error!(error = %e, "forgetting a terminal's process group failed");
            }
        });
        Ok(rx)
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
