//! The one process module: every command ax-code starts for a person or an agent (the `shell`
//! agent, the operator terminal, ACP `terminal/*`) runs through here.
//!
//! What it guarantees:
//! - the command runs in its own process group, in the given working directory, with stdin
//!   closed and an environment built from an allowlist ([`mod@env`]) plus explicit extras;
//! - stdout and stderr are read by one task and delivered in arrival order as UTF-8 text (a
//!   character split between two reads waits for its rest);
//! - output is bounded ([`Bound`]): head and tail with a marker between, or the end only;
//! - the whole group is killed when the command ends (so `sleep 30 &` in it cannot keep the
//!   run open), on [`Process::kill`], and when the [`Process`] is dropped;
//! - the group is recorded ([`Process::group`]: pgid and leader start time) so a backend
//!   restarted after a crash can kill what the dead one left running ([`kill_orphaned_group`]);
//! - waiting is event driven: no sleep loops, only the bound on the final drain;
//! - a start is a `posix_spawn`, never a `fork` of the (possibly large) backend: a bare
//!   program name is looked up on the child's own `PATH` first (`process/program.rs`).
//!
//! Use:
//!
//! ```no_run
//! # async fn demo() -> Result<(), ax_agents::process::SpawnError> {
//! use ax_agents::process::{self, Bound, CommandSpec, OutputEvent};
//!
//! let spec = CommandSpec::shell("make test", "/path/to/project").bound(Bound::head_and_tail(1 << 20));
//! let (proc, mut events) = process::spawn_with_events(spec)?;
//! println!("running as group {}", proc.group().pgid);
//! while let Some(event) = events.next().await {
//!     match event {
//!         OutputEvent::Output(piece) => print!("{}", piece.text),
//!         OutputEvent::Truncated { dropped_bytes } => println!("[{dropped_bytes} bytes dropped]"),
//!         OutputEvent::Exit(status) => println!("exit {:?}", status.code),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! The Control UI's terminal runs its shell under a pseudo-terminal through [`pty::spawn_pty`]:
//! the same allowlisted environment and crash-cleanup record, a session of its own instead of
//! a group (its kills reach every job of the shell), input and resizes.
//!
//! ACP terminals use [`spawn`] (no events) with [`Bound::Tail`], then [`Process::snapshot`]
//! for `terminal/output`, [`Process::wait_for_exit`], [`Process::kill`] and
//! [`Process::release`].

pub mod env;
mod group;
mod output;
mod program;
pub mod pty;

use std::{
    ffi::OsString,
    os::unix::process::ExitStatusExt,
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_protocol::Stream;
use tokio::{
    io::{AsyncRead, AsyncReadExt},
    process::{Child, Command},
    sync::{mpsc, watch},
};

pub use group::{
    AGENT_TAG, ProcessGroup, kill_group, kill_orphaned_group, kill_session, kill_tagged,
    owner_alive, process_start_time, signal_group, this_process,
};
pub use output::{Bound, ExitStatus, OutputEvent, Piece, Snapshot, marker};

/// Output kept when the caller does not choose: 1 MiB, head and tail.
pub const DEFAULT_BOUND: usize = 1 << 20;
/// After the command exited and its group was killed, how long the pipes may take to reach
/// their end. Only a process that left the group (`setsid`) and kept a pipe open makes this
/// run out; its further output is then not read.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Events buffered for a consumer before the reader waits (and the command, once its pipe is
/// full, waits too).
const EVENT_QUEUE: usize = 64;
const READ_SIZE: usize = 8 * 1024;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    program: OsString,
    args: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    bound: Bound,
}

impl CommandSpec {
    /// `program` with no arguments, in `cwd`, with the default bound (head and tail).
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> CommandSpec {
        CommandSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            bound: Bound::head_and_tail(DEFAULT_BOUND),
        }
    }

    /// `sh -c LINE` with `$0` set to `ax-code`, so further [`CommandSpec::arg`]s are the
    /// positional parameters `"$1"`, `"$2"`, ….
    pub fn shell(line: &str, cwd: impl Into<PathBuf>) -> CommandSpec {
        CommandSpec::new("sh", cwd)
            .arg("-c")
            .arg(line)
            .arg("ax-code")
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> CommandSpec {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I: IntoIterator<Item = A>, A: Into<OsString>>(mut self, args: I) -> CommandSpec {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable beyond the allowlisted ones (it wins over an inherited one).
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> CommandSpec {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Chooses how output is bounded.
    pub fn bound(mut self, bound: Bound) -> CommandSpec {
        self.bound = bound;
        self
    }

    /// The program to run.
    pub fn program(&self) -> &OsString {
        &self.program
    }

    /// A command with everything but stdio set: the working directory, a process group of its
    /// own, the allowlisted environment and the extras, killed if the handle is dropped.
    ///
    /// [`spawn`] uses it; a caller that talks to a long-lived process over its pipes (an ACP
    /// agent) can build on it, record [`ProcessGroup::of_leader`] and use [`kill_group`].
    pub fn command(&self) -> Command {
        let inherited = env::allowlisted(std::env::vars_os());
        // The child's PATH: an extra set here wins over the inherited one, as in `envs` below.
        let path = self
            .env
            .iter()
            .rev()
            .chain(&inherited)
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.as_os_str());
        let found = program::find(&self.program, path, &self.cwd);
        let mut command = Command::new(found.as_deref().unwrap_or(self.program.as_ref()));
        command
            .arg0(&self.program)
            .args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(inherited.iter().map(|(k, v)| (k, v)))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .kill_on_drop(true);
        command
    }
}

/// The command could not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The operating system refused (no such program, no such directory, …).
    #[error("cannot start {program}: {source}")]
    Io {
        /// What was to run.
        program: String,
        /// Why it did not.
        #[source]
        source: std::io::Error,
    },
    /// The child was gone before its id could be read.
    #[error("{program} vanished before it started")]
    Vanished {
        /// What was to run.
        program: String,
    },
}

/// A running (or ended) command. Dropping it kills the whole group.
#[derive(Debug)]
pub struct Process {
    group: Arc<group::LiveGroup>,
    record: ProcessGroup,
    buffer: Arc<Mutex<output::Buffer>>,
    exit: watch::Receiver<Option<ExitStatus>>,
}

/// The live output of a process started with [`spawn_with_events`].
#[derive(Debug)]
pub struct OutputEvents {
    rx: mpsc::Receiver<OutputEvent>,
}

impl OutputEvents {
    /// The next event; `None` after [`OutputEvent::Exit`] (or if the reader task was dropped
    /// with its runtime).
    pub async fn next(&mut self) -> Option<OutputEvent> {
        self.rx.recv().await
    }
}

/// A handle that can kill a process's group from anywhere (another task, a `Drop`), and
/// stops working once the command has ended.
#[derive(Debug, Clone)]
pub struct Killer {
    group: Arc<group::LiveGroup>,
}

impl Killer {
    /// Kills the whole group (SIGKILL); whether a signal went out.
    pub fn kill(&self) -> bool {
        self.group.kill()
    }
}

/// Starts `spec`; read its output through [`Process::snapshot`].
pub fn spawn(spec: CommandSpec) -> Result<Process, SpawnError> {
    start(spec, None)
}

/// Starts `spec` and streams its output as [`OutputEvent`]s. A consumer that stops reading
/// holds the command back (its pipe fills), never our memory; dropping the events keeps the
/// command running with its output still kept for [`Process::snapshot`].
pub fn spawn_with_events(spec: CommandSpec) -> Result<(Process, OutputEvents), SpawnError> {
    let (tx, rx) = mpsc::channel(EVENT_QUEUE);
    let process = start(spec, Some(tx))?;
    Ok((process, OutputEvents { rx }))
}

fn start(
    spec: CommandSpec,
    events: Option<mpsc::Sender<OutputEvent>>,
) -> Result<Process, SpawnError> {
    let program = spec.program.to_string_lossy().into_owned();
    let mut child = spec
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SpawnError::Io {
            program: program.clone(),
            source,
        })?;
    let Some(pgid) = child.id() else {
        return Err(SpawnError::Vanished { program });
    };
    let record = ProcessGroup::of_leader(pgid);
    let group = Arc::new(group::LiveGroup::new(pgid));
    let buffer = Arc::new(Mutex::new(output::Buffer::new(spec.bound)));
    let (exit_tx, exit) = watch::channel(None);
    let pipes = [
        Pipe::new(child.stdout.take().map(boxed), Stream::Stdout),
        Pipe::new(child.stderr.take().map(boxed), Stream::Stderr),
    ];
    tokio::spawn(drive(
        child,
        pipes,
        group.clone(),
        buffer.clone(),
        events,
        exit_tx,
    ));
    Ok(Process {
        group,
        record,
        buffer,
        exit,
    })
}

impl Process {
    /// The group as recorded for crash cleanup.
    pub fn group(&self) -> ProcessGroup {
        self.record
    }

    /// What is kept so far (all of it once [`Process::wait_for_exit`] returned).
    pub fn snapshot(&self) -> Snapshot {
        let exit = *self.exit.borrow();
        lock(&self.buffer).snapshot(exit)
    }

    /// How it ended, once it has and all its output is in.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits until the command has exited, its group is killed and all output is in.
    pub async fn wait_for_exit(&self) -> ExitStatus {
        wait_exit(&self.exit).await
    }

    /// Kills the whole group (SIGKILL). Output read so far stays; the exit status follows.
    /// Returns whether a signal went out (`false` once the command has ended).
    pub fn kill(&self) -> bool {
        self.group.kill()
    }

    /// A handle to kill the group from elsewhere.
    pub fn killer(&self) -> Killer {
        Killer {
            group: self.group.clone(),
        }
    }

    /// Kills what is still running and forgets the process (ACP `terminal/release`).
    pub fn release(self) {
        drop(self);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.group.kill();
    }
}

/// Waits until `exit` holds the status (a command's or a terminal's).
async fn wait_exit(exit: &tokio::sync::watch::Receiver<Option<ExitStatus>>) -> ExitStatus {
    let mut exit = exit.clone();
    match exit.wait_for(Option::is_some).await {
        Ok(status) => status.unwrap_or(UNKNOWN),
        // The reader task went away with its runtime; its guard killed the group.
        Err(_) => UNKNOWN,
    }
}

const UNKNOWN: ExitStatus = ExitStatus {
    code: None,
    signal: None,
};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type Reader = Box<dyn AsyncRead + Unpin + Send>;

fn boxed(r: impl AsyncRead + Unpin + Send + 'static) -> Reader {
    Box::new(r)
}

struct Pipe {
    reader: Option<Reader>,
    stream: Stream,
    buf: Box<[u8]>,
    carry: output::Utf8Carry,
}

impl Pipe {
    fn new(reader: Option<Reader>, stream: Stream) -> Pipe {
        Pipe {
            reader,
            stream,
            buf: vec![0; READ_SIZE].into_boxed_slice(),
            carry: output::Utf8Carry::default(),
        }
    }

    fn is_open(&self) -> bool {
        self.reader.is_some()
    }

    /// One read; 0 at the end (errors count as the end).
    async fn read(&mut self) -> usize {
        match self.reader.as_mut() {
            Some(r) => r.read(&mut self.buf).await.unwrap_or(0),
            None => 0,
        }
    }

    /// Decoded text of the last `n` bytes read, or at the end what the carry held.
    fn take(&mut self, n: usize) -> String {
        if n == 0 {
            self.reader = None;
            self.carry.finish()
        } else {
            self.carry.decode(&self.buf[..n])
        }
    }
}

/// Kills what is left of the group however the reader task ends (also when its runtime
/// shuts down mid-run).
struct EndGuard(Arc<group::LiveGroup>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

enum Step {
    Read(usize, usize),
    Exited(Option<std::process::ExitStatus>),
    DrainTimedOut,
}

/// The reader task: owns the child and both pipes until the command has ended.
async fn drive(
    mut child: Child,
    mut pipes: [Pipe; 2],
    group: Arc<group::LiveGroup>,
    buffer: Arc<Mutex<output::Buffer>>,
    mut events: Option<mpsc::Sender<OutputEvent>>,
    exit_tx: watch::Sender<Option<ExitStatus>>,
) {
    let _guard = EndGuard(group.clone());
    let mut status: Option<ExitStatus> = None;
    let drain = tokio::time::sleep(DRAIN_TIMEOUT);
    tokio::pin!(drain);
    while status.is_none() || pipes.iter().any(Pipe::is_open) {
        let [out, err] = &mut pipes;
        let step = tokio::select! {
            n = out.read(), if out.is_open() => Step::Read(0, n),
            n = err.read(), if err.is_open() => Step::Read(1, n),
            s = child.wait(), if status.is_none() => Step::Exited(s.ok()),
            () = &mut drain, if status.is_some() => Step::DrainTimedOut,
        };
        match step {
            Step::Read(i, n) => {
                let pipe = &mut pipes[i];
                let text = pipe.take(n);
                let live = lock(&buffer).push(pipe.stream, text);
                if let (Some(piece), Some(tx)) = (live, events.as_ref())
                    && tx.send(OutputEvent::Output(piece)).await.is_err()
                {
                    events = None;
                }
            }
            Step::Exited(s) => {
                status = Some(s.map_or(UNKNOWN, |s| ExitStatus {
                    code: s.code(),
                    signal: s.signal(),
                }));
                // Background children would keep the pipes (and the run) open: end them now.
                group.end();
                drain
                    .as_mut()
                    .reset(tokio::time::Instant::now() + DRAIN_TIMEOUT);
            }
            Step::DrainTimedOut => {
                for pipe in &mut pipes {
                    if pipe.is_open() {
                        let text = pipe.take(0);
                        lock(&buffer).push(pipe.stream, text);
                    }
                }
            }
        }
    }
    let status = status.unwrap_or(UNKNOWN);
    let (dropped, tail) = lock(&buffer).unsent_tail();
    let _ = exit_tx.send(Some(status));
    if let Some(tx) = events {
        if dropped > 0 {
            let _ = tx
                .send(OutputEvent::Truncated {
                    dropped_bytes: dropped,
                })
                .await;
        }
        for piece in tail {
            let _ = tx.send(OutputEvent::Output(piece)).await;
        }
        let _ = tx.send(OutputEvent::Exit(status)).await;
    }
}
