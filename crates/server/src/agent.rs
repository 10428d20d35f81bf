//! The agent interface and the built-in `shell` agent.
//!
//! An agent turns a prompt into one permission request and then a run that streams output.
//! The runner (`runner.rs`) owns everything around it: permissions, storage, events, bounds
//! and abort, so another agent (for example one speaking the Agent Client Protocol) only has
//! to implement [`Agent`].

use std::{os::unix::process::ExitStatusExt, path::PathBuf, process::Stdio, time::Duration};

use ax_protocol::Stream;
use futures_util::future::BoxFuture;
use tokio::{io::AsyncReadExt, process::Command, sync::mpsc};
use tokio_util::sync::CancellationToken;

/// What the person asked, resolved: the prompt text and attachment paths inside the project.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The prompt's text parts joined with newlines.
    pub text: String,
    /// Canonical project directory; the work runs there.
    pub project_dir: PathBuf,
    /// Canonical absolute paths of the attached files, all inside the project.
    pub attachments: Vec<PathBuf>,
}

/// A chunk of output in arrival order.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub stream: Stream,
    pub bytes: Vec<u8>,
}

/// What an agent reports while it works.
#[derive(Debug, Clone)]
pub enum AgentOutput {
    /// The work runs as this process group (the runner records it so a backend restarted
    /// after a crash can stop what the dead backend left running).
    ProcessGroup(u32),
    /// Output, in arrival order.
    Chunk(Chunk),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// Stopped through the cancellation token.
    Cancelled,
    /// The work could not start.
    Failed(String),
}

/// A session's agent.
pub trait Agent: Send + Sync + 'static {
    /// Short name, e.g. `shell`.
    fn name(&self) -> &'static str;

    /// What the approval request shows the person (for `shell`: the command line).
    fn describe(&self, request: &AgentRequest) -> String;

    /// Does the work. Output (and the process group, if any) goes to `output` in order; when `cancel` fires the agent stops
    /// everything it started and returns [`RunEnd::Cancelled`]. Dropping every clone of
    /// `output` tells the runner no more output follows.
    fn run(
        &self,
        request: AgentRequest,
        output: mpsc::Sender<AgentOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, RunEnd>;
}

/// Runs the prompt text with `sh -c` in the project directory.
///
/// Attachments reach the command two ways: as positional parameters (`"$1"`, `"$@"`) and as
/// the environment variable `AX_ATTACHMENTS` (absolute paths, one per line). The command runs
/// in its own process group with stdin closed; abort, and also the end of the command itself,
/// kill the whole group so background children cannot outlive the run. The backend credential
/// variable is removed from its environment.
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

/// The start time of a process (clock ticks after boot, `/proc/PID/stat` field 22): with the
/// pid it identifies a process even after the pid is reused.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after it follow the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This backend process as a run owner: pid and start time.
pub fn this_process() -> (u32, Option<u64>) {
    static START: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let pid = std::process::id();
    (pid, *START.get_or_init(|| process_start_time(pid)))
}

/// Whether `owner` is a live process other than this one (same pid and start time).
pub fn owner_alive(owner: (u32, Option<u64>)) -> bool {
    owner.0 != std::process::id() && owner.1.is_some() && process_start_time(owner.0) == owner.1
}

/// Kills the process group `pgid` only if its leader is still the process that started at
/// `start` (so a reused pid is never hit). Returns whether a signal was sent.
pub fn kill_orphaned_group(pgid: u32, start: u64) -> bool {
    if process_start_time(pgid) != Some(start) {
        return false;
    }
    kill_group(pgid);
    true
}

fn kill_group(pgid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid as i32) {
        // ESRCH (nobody left in the group) is the normal case after a clean exit.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

async fn pump(
    mut reader: impl tokio::io::AsyncRead + Unpin,
    stream: Stream,
    output: mpsc::Sender<AgentOutput>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let chunk = Chunk {
                    stream,
                    bytes: buf[..n].to_vec(),
                };
                if output.send(AgentOutput::Chunk(chunk)).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn run_shell(
    request: AgentRequest,
    output: mpsc::Sender<AgentOutput>,
    cancel: CancellationToken,
) -> RunEnd {
    let mut listing = String::new();
    for path in &request.attachments {
        listing.push_str(&path.to_string_lossy());
        listing.push('\n');
    }
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(&request.text)
        .arg("ax-code")
        .args(&request.attachments)
        .current_dir(&request.project_dir)
        .env_remove(ax_protocol::local::PASSWORD_ENV)
        .env("AX_ATTACHMENTS", listing)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return RunEnd::Failed(format!("cannot start sh: {e}")),
    };
    let Some(pgid) = child.id() else {
        return RunEnd::Failed("the command vanished before it started".into());
    };
    let _ = output.send(AgentOutput::ProcessGroup(pgid)).await;
    let mut pumps = Vec::new();
    if let Some(out) = child.stdout.take() {
        pumps.push(tokio::spawn(pump(out, Stream::Stdout, output.clone())));
    }
    if let Some(err) = child.stderr.take() {
        pumps.push(tokio::spawn(pump(err, Stream::Stderr, output.clone())));
    }
    drop(output);
    let end = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => RunEnd::Exited { code: status.code(), signal: status.signal() },
            Err(e) => RunEnd::Failed(format!("waiting for the command failed: {e}")),
        },
        () = cancel.cancelled() => {
            kill_group(pgid);
            let _ = child.wait().await;
            RunEnd::Cancelled
        }
    };
    // Background children of a finished command would keep the pipes open forever.
    kill_group(pgid);
    for pump in pumps {
        // Bounded: everyone holding the pipes is dead, so EOF follows what is buffered.
        let _ = tokio::time::timeout(Duration::from_secs(5), pump).await;
    }
    end
}
