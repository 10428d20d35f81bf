//! The built-in `shell` agent: the prompt text is a command line for `sh -c`.

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{
    agent::{Agent, AgentOutput, AgentRequest, RunEnd},
    process::{self, Bound, CommandSpec, OutputEvent},
    project,
};

/// Runs the prompt text with `sh -c` in the project directory, through [`crate::process`].
///
/// Attachments are checked again when the command starts (the approval named them; a file
/// swapped for a symlink since then is refused and nothing runs). They reach the command as
/// positional parameters (`"$1"`, `"$@"`, exact for any name) and as `AX_ATTACHMENTS`, one
/// absolute path per line: an environment value cannot hold NUL, and no accepted path holds
/// a line break or any other control character, so the lines are unambiguous.
///
/// The environment is the process module's allowlist plus `AX_ATTACHMENTS`; output is kept
/// head and tail within [`AgentRequest::output_limit`].
#[derive(Debug, Default, Clone, Copy)]
pub struct ShellAgent;

impl Agent for ShellAgent {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn describe(&self, request: &AgentRequest) -> String {
        request.text.clone()
    }

    fn run(
        &self,
        request: AgentRequest,
        output: mpsc::Sender<AgentOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, RunEnd> {
        Box::pin(run_shell(request, output, cancel))
    }
}

async fn run_shell(
    request: AgentRequest,
    output: mpsc::Sender<AgentOutput>,
    cancel: CancellationToken,
) -> RunEnd {
    let mut paths = Vec::with_capacity(request.attachments.len());
    for attachment in &request.attachments {
        match project::recheck(&request.project_dir, attachment) {
            Ok(path) => paths.push(path),
            Err(e) => return RunEnd::Failed(format!("{e}; the command did not run")),
        }
    }
    let mut listing = String::new();
    for path in &paths {
        // `recheck` refused anything that is not UTF-8 without control characters.
        listing.push_str(&path.to_string_lossy());
        listing.push('\n');
    }
    let spec = CommandSpec::shell(&request.text, &request.project_dir)
        .args(&paths)
        .env("AX_ATTACHMENTS", listing)
        .bound(Bound::head_and_tail(request.output_limit));
    let (process, mut events) = match process::spawn_with_events(spec) {
        Ok(started) => started,
        Err(e) => return RunEnd::Failed(e.to_string()),
    };
    if output
        .send(AgentOutput::ProcessGroup(process.group()))
        .await
        .is_err()
    {
        return RunEnd::Cancelled;
    }
    let mut cancelled = false;
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = cancel.cancelled(), if !cancelled => {
                cancelled = true;
                process.kill();
                continue;
            }
        };
        let forward = match event {
            Some(OutputEvent::Output(piece)) => AgentOutput::Output {
                stream: piece.stream,
                text: piece.text,
            },
            Some(OutputEvent::Truncated { dropped_bytes }) => {
                AgentOutput::Truncated { dropped_bytes }
            }
            Some(OutputEvent::Exit(status)) if !cancelled => {
                return RunEnd::Exited {
                    code: status.code,
                    signal: status.signal,
                };
            }
            Some(OutputEvent::Exit(_)) => return RunEnd::Cancelled,
            None if cancelled => return RunEnd::Cancelled,
            None => return RunEnd::Failed("the command's output ended without an exit".into()),
        };
        if output.send(forward).await.is_err() {
            // Nobody listens any more: stop the command (dropping `process` would too).
            process.kill();
            cancelled = true;
        }
    }
}
