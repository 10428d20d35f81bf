//! Commands under a pseudo-terminal: the Control UI's terminal.
//!
//! The same guarantees as the rest of the module, adapted to a terminal:
//! - the command leads a session of its own with the terminal as its controlling terminal (so
//!   Ctrl-C, job control and `SIGWINCH` on resize work); kills reach every process group of
//!   that session, since an interactive shell puts each job in a group of its own;
//! - the environment is the allowlist ([`mod@super::env`]) plus the spec's extras;
//! - output arrives as UTF-8 text (a character split between reads waits for its rest); the
//!   consumer sets the pace, up to a bounded queue, after which the reader waits;
//! - input is queued to a writer thread ([`PtyProcess::write`] never blocks; a full queue is
//!   an error), so a command that does not read its input holds up nobody;
//! - when the command ends, what is left of its session is killed, and so it is on
//!   [`PtyProcess::kill`] and when the [`PtyProcess`] is dropped;
//! - the group is recorded ([`PtyProcess::group`]) for crash cleanup like any other.
//!
//! The pseudo-terminal comes from `portable-pty`; its reads and writes block, so each has a
//! thread of its own, and waiting for the exit is a blocking `waitpid` on a third.

use std::{
    io::{Read, Write},
    sync::{Arc, Mutex, mpsc as std_mpsc},
};

use portable_pty::{CommandBuilder, MasterPty, native_pty_system};
use tokio::sync::{mpsc, oneshot, watch};

use super::{
    CommandSpec, DRAIN_TIMEOUT, ExitStatus, Killer, ProcessGroup, READ_SIZE, SpawnError, UNKNOWN,
    env, group::LiveGroup, lock, output::Utf8Carry,
};

/// Writes waiting for the terminal before [`PtyProcess::write`] refuses more.
pub const INPUT_QUEUE: usize = 256;
/// Output pieces buffered for the consumer before the reader waits.
const OUTPUT_QUEUE: usize = 64;

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// What a command under a terminal reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PtyEvent {
    /// Output text (whole UTF-8 characters; invalid bytes replaced).
    Output(String),
    /// The command ended and its session was killed; the last event.
    Exit(ExitStatus),
}

/// Input or a resize did not reach the terminal.
#[derive(Debug, thiserror::Error)]
pub enum PtyError {
    /// More input is queued than the command has read.
    #[error("the terminal's input queue is full (the command is not reading its input)")]
    InputFull,
    /// The command has ended.
    #[error("the terminal has ended")]
    Ended,
    /// The operating system refused the new size.
    #[error("cannot resize the terminal: {0}")]
    Resize(String),
}

/// A command running under a terminal. Dropping it kills the command's whole session.
pub struct PtyProcess {
    group: Arc<LiveGroup>,
    record: ProcessGroup,
    master: Mutex<Box<dyn MasterPty + Send>>,
    input: std_mpsc::SyncSender<Vec<u8>>,
    exit: watch::Receiver<Option<ExitStatus>>,
}

impl std::fmt::Debug for PtyProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtyProcess")
            .field("group", &self.record)
            .finish_non_exhaustive()
    }
}

/// The live output of a [`PtyProcess`].
#[derive(Debug)]
pub struct PtyEvents {
    rx: mpsc::Receiver<PtyEvent>,
}

impl PtyEvents {
    /// The next event; `None` after [`PtyEvent::Exit`].
    pub async fn next(&mut self) -> Option<PtyEvent> {
        self.rx.recv().await
    }
}

fn os_error(program: &str, e: impl std::fmt::Display) -> SpawnError {
    SpawnError::Io {
        program: program.to_owned(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Starts `spec` under a new terminal of `size`. Its bound is not used: a terminal's
/// consumer keeps what it shows (the gateway keeps a scrollback ring).
pub fn spawn_pty(spec: CommandSpec, size: TermSize) -> Result<(PtyProcess, PtyEvents), SpawnError> {
    let program = spec.program.to_string_lossy().into_owned();
    // portable-pty would quietly fall back to the home directory.
    if !spec.cwd.is_dir() {
        return Err(SpawnError::Io {
            program,
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no such directory: {}", spec.cwd.display()),
            ),
        });
    }
    let pair = native_pty_system()
        .openpty(pty_size(size))
        .map_err(|e| os_error(&program, e))?;
    let reader = pair
        .master
        .try_clone_reader()
        .map_err(|e| os_error(&program, e))?;
    let writer = pair
        .master
        .take_writer()
        .map_err(|e| os_error(&program, e))?;

    let mut command = CommandBuilder::new(&spec.program);
    command.args(&spec.args);
    command.cwd(&spec.cwd);
    // The builder starts from the whole parent environment: clear it, then the allowlist.
    command.env_clear();
    for (name, value) in env::allowlisted(std::env::vars_os()) {
        command.env(name, value);
    }
    for (name, value) in &spec.env {
        command.env(name, value);
    }
    let child = pair
        .slave
        .spawn_command(command)
        .map_err(|e| os_error(&program, e))?;
    // Our copy of the terminal's other end must go, or its reader never sees the end.
    drop(pair.slave);
    let Some(pid) = child.process_id() else {
        return Err(SpawnError::Vanished { program });
    };
    // The child is waited for by pid below; the handle itself holds nothing we need.
    drop(child);
    let record = ProcessGroup::of_leader(pid);
    let group = Arc::new(LiveGroup::session(pid));

    let (status_tx, status_rx) = oneshot::channel();
    let (text_tx, text_rx) = mpsc::channel(OUTPUT_QUEUE);
    let (input, input_rx) = std_mpsc::sync_channel(INPUT_QUEUE);
    let threads = [
        spawn_thread("ax-pty-wait", move || {
            let _ = status_tx.send(wait_for(pid));
        }),
        spawn_thread("ax-pty-read", move || read_loop(reader, &text_tx)),
        spawn_thread("ax-pty-write", move || write_loop(writer, &input_rx)),
    ];
    if let Some(Err(e)) = threads.into_iter().find(Result::is_err) {
        group.end();
        return Err(os_error(&program, e));
    }

    let (events_tx, events) = mpsc::channel(OUTPUT_QUEUE);
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(drive(group.clone(), text_rx, status_rx, events_tx, exit_tx));
    Ok((
        PtyProcess {
            group,
            record,
            master: Mutex::new(pair.master),
            input,
            exit,
        },
        PtyEvents { rx: events },
    ))
}

fn pty_size(size: TermSize) -> portable_pty::PtySize {
    portable_pty::PtySize {
        rows: size.rows,
        cols: size.cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map(drop)
}

/// Blocks until `pid` (our child) exits; how it ended.
fn wait_for(pid: u32) -> ExitStatus {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return UNKNOWN;
    };
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => {
                return ExitStatus {
                    code: status.exit_status(),
                    signal: status.terminating_signal(),
                };
            }
            Err(rustix::io::Errno::INTR) => continue,
            Ok(None) | Err(_) => return UNKNOWN,
        }
    }
}

/// Reads the terminal until it reports its end (every holder of its other end is gone).
fn read_loop(mut reader: Box<dyn Read + Send>, tx: &mpsc::Sender<String>) {
    let mut buf = vec![0; READ_SIZE];
    let mut carry = Utf8Carry::default();
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let text = carry.decode(&buf[..n]);
        if !text.is_empty() && tx.blocking_send(text).is_err() {
            return;
        }
    }
    let rest = carry.finish();
    if !rest.is_empty() {
        let _ = tx.blocking_send(rest);
    }
}

/// Feeds queued input to the terminal until the queue's sender is dropped or a write fails.
fn write_loop(mut writer: Box<dyn Write + Send>, rx: &std_mpsc::Receiver<Vec<u8>>) {
    while let Ok(data) = rx.recv() {
        if writer
            .write_all(&data)
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Forwards output until the command has exited and the terminal is drained (at most
/// [`DRAIN_TIMEOUT`] after the exit), then reports the exit.
async fn drive(
    group: Arc<LiveGroup>,
    mut text: mpsc::Receiver<String>,
    mut status_rx: oneshot::Receiver<ExitStatus>,
    events: mpsc::Sender<PtyEvent>,
    exit_tx: watch::Sender<Option<ExitStatus>>,
) {
    /// Kills what is left of the session however this task ends.
    struct EndGuard(Arc<LiveGroup>);
    impl Drop for EndGuard {
        fn drop(&mut self) {
            self.0.end();
        }
    }
    let _guard = EndGuard(group.clone());
    let mut status = None;
    let mut reading = true;
    let drain = tokio::time::sleep(DRAIN_TIMEOUT);
    tokio::pin!(drain);
    let mut forward = true;
    while reading || status.is_none() {
        tokio::select! {
            piece = text.recv(), if reading => match piece {
                Some(piece) => {
                    if forward && events.send(PtyEvent::Output(piece)).await.is_err() {
                        // Nobody listens: keep reading so the command is not held up.
                        forward = false;
                    }
                }
                None => reading = false,
            },
            s = &mut status_rx, if status.is_none() => {
                status = Some(s.unwrap_or(UNKNOWN));
                // Jobs the shell left behind would keep the terminal open: end them now.
                group.end();
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_TIMEOUT);
            }
            () = &mut drain, if status.is_some() => break,
        }
    }
    let status = status.unwrap_or(UNKNOWN);
    let _ = exit_tx.send(Some(status));
    let _ = events.send(PtyEvent::Exit(status)).await;
}

impl PtyProcess {
    /// The group as recorded for crash cleanup (its leader leads the session).
    pub fn group(&self) -> ProcessGroup {
        self.record
    }

    /// Queues `data` for the terminal's input without waiting.
    pub fn write(&self, data: Vec<u8>) -> Result<(), PtyError> {
        if self.exit.borrow().is_some() {
            return Err(PtyError::Ended);
        }
        self.input.try_send(data).map_err(|e| match e {
            std_mpsc::TrySendError::Full(_) => PtyError::InputFull,
            std_mpsc::TrySendError::Disconnected(_) => PtyError::Ended,
        })
    }

    /// Sets the terminal's size; the command gets `SIGWINCH`.
    pub fn resize(&self, size: TermSize) -> Result<(), PtyError> {
        lock(&self.master)
            .resize(pty_size(size))
            .map_err(|e| PtyError::Resize(e.to_string()))
    }

    /// Kills every process of the command's session; whether a signal went out.
    pub fn kill(&self) -> bool {
        self.group.kill()
    }

    /// A handle that kills the session from elsewhere (a shutdown), until the command ended.
    pub fn killer(&self) -> Killer {
        Killer {
            group: self.group.clone(),
        }
    }

    /// How it ended, once it has and its output is in.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits until the command has exited, its session is killed and its output is in.
    pub async fn wait_for_exit(&self) -> ExitStatus {
        super::wait_exit(&self.exit).await
    }
}

impl Drop for PtyProcess {
    fn drop(&mut self) {
        self.group.kill();
    }
}
