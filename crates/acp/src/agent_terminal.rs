//! `terminal/*`: what the runtime needs from a process module, behind one small trait, and its
//! implementation on the one process module of the tree (`ax_agents::process`, shared with the
//! `shell` agent and the operator terminal).

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use ax_agents::process;
use ax_protocol::turn::{TERMINAL_OUTPUT_KEPT, TerminalExit};
use futures::future::BoxFuture;
use tokio::{sync::watch, time::Instant};

/// Output kept per terminal when the agent names no `outputByteLimit`.
pub const DEFAULT_OUTPUT_LIMIT: u64 = 1024 * 1024;
/// The largest `outputByteLimit` honoured.
pub const MAX_OUTPUT_LIMIT: u64 = 16 * 1024 * 1024;
/// Terminals one session may hold at once.
pub const MAX_TERMINALS: usize = 32;

/// What to run.
#[derive(Debug, Clone)]
pub struct TerminalSpec {
    /// The program, as the agent named it.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Added to the allowlisted environment.
    pub env: Vec<(String, String)>,
    /// Already checked to be inside the project.
    pub cwd: PathBuf,
    /// How much output to keep (the end); [`DEFAULT_OUTPUT_LIMIT`] when absent, at most [`MAX_OUTPUT_LIMIT`].
    pub output_byte_limit: Option<u64>,
}

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit status, when the command exited on its own.
    pub exit_code: Option<u32>,
    /// The signal name, e.g. `SIGKILL`.
    pub signal: Option<String>,
}

/// What `terminal/output` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutput {
    /// The output kept, lossily decoded as UTF-8.
    pub output: String,
    /// Whether earlier output was dropped to stay within the limit.
    pub truncated: bool,
    /// How the command ended, if it has.
    pub exit: Option<ExitInfo>,
}

/// Live output of a terminal, coalesced: at most one [`TerminalEvent::Output`] per
/// [`FLUSH_EVERY`], then the rest and one [`TerminalEvent::Exited`] when the command ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalEvent {
    /// New output (the end of it, when it came faster than it was delivered).
    Output {
        /// The terminal.
        terminal_id: String,
        /// The output since the last delivered event.
        text: String,
        /// Output dropped before `text` to stay within [`TERMINAL_OUTPUT_KEPT`].
        dropped_bytes: u64,
    },
    /// The command ended.
    Exited {
        /// The terminal.
        terminal_id: String,
        /// How it ended.
        exit: TerminalExit,
    },
}

/// Where a terminal's live output goes. Returns whether the event was delivered (the turn
/// shows the terminal in a tool call); an undelivered output event is kept and offered again.
pub type TerminalSink = Arc<dyn Fn(TerminalEvent) -> bool + Send + Sync>;

/// Live output is offered at most this often per terminal.
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// After the command ended, how often and how many times the rest of its output and its exit
/// are offered while no tool call shows the terminal yet (an agent shows it right after
/// creating it).
const END_RETRY: std::time::Duration = std::time::Duration::from_millis(50);
const END_RETRIES: u32 = 20;

/// A terminal request that cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    /// No terminal has this id (never created, or released).
    #[error("no terminal {0}")]
    Unknown(String),
    /// The command could not be started.
    #[error("cannot start {command}: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// Why it could not start.
        source: std::io::Error,
    },
    /// The session holds [`MAX_TERMINALS`] already.
    #[error("too many terminals (at most {MAX_TERMINALS} per session)")]
    TooMany,
}

/// The terminals of one agent session.
pub trait Terminals: Send + Sync + 'static {
    /// Starts a command; returns the terminal id. Its output also streams to `sink`, if given.
    fn create(
        &self,
        spec: TerminalSpec,
        sink: Option<TerminalSink>,
    ) -> Result<String, TerminalError>;
    /// The output so far (the end, when over the limit) and the exit status if it ended.
    fn output(&self, id: &str) -> Result<TerminalOutput, TerminalError>;
    /// Resolves when the command has exited.
    fn wait_for_exit(&self, id: &str) -> BoxFuture<'static, Result<ExitInfo, TerminalError>>;
    /// Kills the command's process group; the terminal stays until released.
    fn kill(&self, id: &str) -> Result<(), TerminalError>;
    /// Kills the command if still running and forgets the terminal.
    fn release(&self, id: &str) -> Result<(), TerminalError>;
    /// Releases every terminal (the session ended).
    fn release_all(&self);
}

/// One terminal: a process started through the one process module (`ax_agents::process`),
/// keeping the end of its output as `outputByteLimit` asks.
struct Term {
    process: Arc<process::Process>,
    /// Turns true once the live output (if any) and the exit were offered to the sink.
    forwarded: watch::Receiver<bool>,
}

/// Terminals of one agent session, run through `ax_agents::process` (process group,
/// allowlisted environment, bounded output keeping the end, reaped on exit). Dropping it
/// kills every terminal still running.
#[derive(Default)]
pub struct LocalTerminals {
    terms: Mutex<HashMap<String, Term>>,
    next: std::sync::atomic::AtomicU64,
    /// Set as [`process::AGENT_TAG`] on every command, when given.
    tag: Option<String>,
}

impl LocalTerminals {
    /// No terminals yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// No terminals yet; each command started carries `tag` as [`process::AGENT_TAG`], so
    /// the cleanup of an agent that ended (or of a backend that crashed) finds it. For an
    /// agent served inside the backend, whose terminals inherit no tag from an agent
    /// process (`AgentHandle::start_in_memory`).
    pub fn tagged(tag: Option<String>) -> Self {
        let mut terminals = Self::default();
        terminals.tag = tag;
        terminals
    }

    fn get(&self, id: &str) -> Result<Arc<process::Process>, TerminalError> {
        Ok(self.get_term(id)?.0)
    }

    fn get_term(
        &self,
        id: &str,
    ) -> Result<(Arc<process::Process>, watch::Receiver<bool>), TerminalError> {
        let terms = self.terms.lock().unwrap_or_else(|p| p.into_inner());
        terms
            .get(id)
            .map(|t| (t.process.clone(), t.forwarded.clone()))
            .ok_or_else(|| TerminalError::Unknown(id.to_string()))
    }
}

/// Output waiting to be delivered, bounded like the card that shows it.
#[derive(Default)]
struct Pending {
    text: String,
    dropped: u64,
}

impl Pending {
    fn push(&mut self, text: &str) {
        self.text.push_str(text);
        if self.text.len() > TERMINAL_OUTPUT_KEPT {
            let mut cut = self.text.len() - TERMINAL_OUTPUT_KEPT;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// Offers what waits; whether nothing waits any more.
    fn flush(&mut self, id: &str, sink: &TerminalSink) -> bool {
        if self.text.is_empty() && self.dropped == 0 {
            return true;
        }
        let delivered = sink(TerminalEvent::Output {
            terminal_id: id.to_string(),
            text: self.text.clone(),
            dropped_bytes: self.dropped,
        });
        if delivered {
            *self = Pending::default();
        }
        delivered
    }
}

/// Streams one terminal's output to `sink`, coalesced (see [`TerminalEvent`]); keeps reading
/// whatever happens, so the command is never held back by a full pipe.
async fn forward(
    id: String,
    mut events: process::OutputEvents,
    sink: TerminalSink,
    done: watch::Sender<bool>,
) {
    let mut pending = Pending::default();
    let mut next_flush = Instant::now();
    let exit = loop {
        let event = if pending.text.is_empty() {
            events.next().await
        } else {
            match tokio::time::timeout_at(next_flush, events.next()).await {
                Ok(event) => event,
                Err(_) => {
                    pending.flush(&id, &sink);
                    next_flush = Instant::now() + FLUSH_EVERY;
                    continue;
                }
            }
        };
        match event {
            Some(process::OutputEvent::Output(piece)) => pending.push(&piece.text),
            Some(process::OutputEvent::Truncated { dropped_bytes }) => {
                pending.dropped += dropped_bytes
            }
            Some(process::OutputEvent::Exit(status)) => break Some(status),
            None => break None,
        }
        if Instant::now() >= next_flush {
            pending.flush(&id, &sink);
            next_flush = Instant::now() + FLUSH_EVERY;
        }
    };
    let exit = exit.map(|status| {
        let info = exit_info(status);
        TerminalExit {
            exit_code: info.exit_code,
            signal: info.signal,
        }
    });
    let exited = |exit: &TerminalExit| {
        sink(TerminalEvent::Exited {
            terminal_id: id.clone(),
            exit: exit.clone(),
        })
    };
    // The rest of the output, then the exit, each offered again while no call shows the
    // terminal yet: a silent command can end before the agent's update that shows it, and
    // an exit offered only once then never reached the card.
    let (mut output_left, mut exit_left) = (true, exit.is_some());
    for _ in 0..END_RETRIES {
        if output_left {
            output_left = !pending.flush(&id, &sink);
        }
        if !output_left && exit_left {
            exit_left = !exit.as_ref().is_some_and(exited);
        }
        if !output_left && !exit_left {
            break;
        }
        tokio::time::sleep(END_RETRY).await;
    }
    if output_left && let Some(exit) = &exit {
        // Gave up on the output: the exit is still offered, once.
        exited(exit);
    }
    let _ = done.send(true);
}

/// A signal's name as a terminal's exit gives it (`SIGKILL`; `SIG<n>` for one without a
/// name here). The v13 migration of stored shell replies names signals the same way.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        other => return format!("SIG{other}"),
    };
    name.to_string()
}

fn exit_info(status: process::ExitStatus) -> ExitInfo {
    ExitInfo {
        exit_code: status.code.and_then(|c| u32::try_from(c).ok()),
        signal: status.signal.map(signal_name),
    }
}

impl Terminals for LocalTerminals {
    fn create(
        &self,
        spec: TerminalSpec,
        sink: Option<TerminalSink>,
    ) -> Result<String, TerminalError> {
        if self.terms.lock().unwrap_or_else(|p| p.into_inner()).len() >= MAX_TERMINALS {
            return Err(TerminalError::TooMany);
        }
        let limit = spec
            .output_byte_limit
            .unwrap_or(DEFAULT_OUTPUT_LIMIT)
            .min(MAX_OUTPUT_LIMIT) as usize;
        let mut command = process::CommandSpec::new(&spec.command, &spec.cwd)
            .args(&spec.args)
            .bound(process::Bound::Tail { limit });
        for (k, v) in &spec.env {
            command = command.env(k, v);
        }
        if let Some(tag) = &self.tag {
            // After the agent's own: an agent cannot take the tag off its commands.
            command = command.env(process::AGENT_TAG, tag);
        }
        let started = process::spawn_with_events(command).map_err(|e| TerminalError::Spawn {
            command: spec.command.clone(),
            source: match e {
                process::SpawnError::Io { source, .. } => source,
                other => std::io::Error::other(other.to_string()),
            },
        })?;
        let (started, events) = started;
        let id = format!(
            "term-{}",
            self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
        );
        let (done, forwarded) = watch::channel(false);
        match sink {
            Some(sink) => {
                tokio::spawn(forward(id.clone(), events, sink, done));
            }
            None => {
                // Nobody watches: dropping the events keeps the output for `output`.
                drop(events);
                let _ = done.send(true);
            }
        }
        self.terms.lock().unwrap_or_else(|p| p.into_inner()).insert(
            id.clone(),
            Term {
                process: Arc::new(started),
                forwarded,
            },
        );
        Ok(id)
    }

    fn output(&self, id: &str) -> Result<TerminalOutput, TerminalError> {
        let snapshot = self.get(id)?.snapshot();
        Ok(TerminalOutput {
            output: snapshot.text(),
            truncated: snapshot.truncated(),
            exit: snapshot.exit.map(exit_info),
        })
    }

    fn wait_for_exit(&self, id: &str) -> BoxFuture<'static, Result<ExitInfo, TerminalError>> {
        let found = self.get_term(id);
        Box::pin(async move {
            let (process, mut forwarded) = found?;
            let exit = exit_info(process.wait_for_exit().await);
            // The card shows the whole output and the exit before the agent hears of it, so
            // the turn cannot end with them still on their way.
            let _ = forwarded.wait_for(|done| *done).await;
            Ok(exit)
        })
    }

    fn kill(&self, id: &str) -> Result<(), TerminalError> {
        self.get(id)?.kill();
        Ok(())
    }

    fn release(&self, id: &str) -> Result<(), TerminalError> {
        let term = self
            .terms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
            .ok_or_else(|| TerminalError::Unknown(id.to_string()))?;
        term.process.kill();
        Ok(())
    }

    fn release_all(&self) {
        let terms: Vec<Term> = self
            .terms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, t)| t)
            .collect();
        for t in terms {
            t.process.kill();
        }
    }
}

impl Drop for LocalTerminals {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(script: &str, limit: Option<u64>) -> TerminalSpec {
        TerminalSpec {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("AX_TERM_TEST".into(), "yes".into())],
            cwd: std::env::temp_dir(),
            output_byte_limit: limit,
        }
    }

    #[tokio::test]
    async fn output_keeps_the_end_and_exit_is_reported() {
        let t = LocalTerminals::new();
        let id = t
            .create(
                spec(
                    // One stream: the order across stdout and stderr is the reader's, not the command's.
                    "printf 'aaaaaaaaaa0123456789'; echo \"$AX_TERM_TEST\"; exit 7",
                    Some(12),
                ),
                None,
            )
            .unwrap();
        let exit = t.wait_for_exit(&id).await.unwrap();
        assert_eq!(exit.exit_code, Some(7));
        let out = t.output(&id).unwrap();
        assert!(out.truncated);
        assert_eq!(out.output.len(), 12);
        assert!(out.output.ends_with("yes\n"), "{:?}", out.output);
        assert_eq!(out.exit, Some(exit));
        t.release(&id).unwrap();
        assert!(matches!(t.output(&id), Err(TerminalError::Unknown(_))));
    }

    #[tokio::test]
    async fn kill_stops_the_group_and_release_all_kills_the_rest() {
        let t = LocalTerminals::new();
        let id = t
            .create(spec("sleep 30 & sleep 30; wait", None), None)
            .unwrap();
        t.kill(&id).unwrap();
        let exit = tokio::time::timeout(std::time::Duration::from_secs(10), t.wait_for_exit(&id))
            .await
            .expect("killed in time")
            .unwrap();
        assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
        let other = t.create(spec("sleep 30", None), None).unwrap();
        let wait = t.wait_for_exit(&other);
        t.release_all();
        let exit = tokio::time::timeout(std::time::Duration::from_secs(10), wait)
            .await
            .expect("released terminal dies")
            .unwrap();
        assert!(exit.signal.is_some());
    }

    /// Live output is coalesced (a few events, not one per line), offered again while the
    /// sink refuses it, and ends with the exit; `wait_for_exit` answers only after that.
    #[tokio::test]
    async fn live_output_is_coalesced_retried_and_ends_with_the_exit() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let refuse = Arc::new(std::sync::atomic::AtomicU32::new(2));
        let sink: TerminalSink = {
            let (seen, refuse) = (seen.clone(), refuse.clone());
            Arc::new(move |e| {
                if matches!(e, TerminalEvent::Output { .. })
                    && refuse
                        .fetch_update(
                            std::sync::atomic::Ordering::SeqCst,
                            std::sync::atomic::Ordering::SeqCst,
                            |n| n.checked_sub(1),
                        )
                        .is_ok()
                {
                    return false;
                }
                seen.lock().unwrap().push(e);
                true
            })
        };
        let t = LocalTerminals::new();
        let started = std::time::Instant::now();
        let id = t
            .create(
                spec(
                    "for i in $(seq 1 200); do echo line$i; sleep 0.005; done; exit 3",
                    None,
                ),
                Some(sink),
            )
            .unwrap();
        let exit = t.wait_for_exit(&id).await.unwrap();
        let took = started.elapsed();
        assert_eq!(exit.exit_code, Some(3));
        let seen = seen.lock().unwrap().clone();
        let (last, outputs) = seen.split_last().expect("events");
        assert_eq!(
            last,
            &TerminalEvent::Exited {
                terminal_id: id.clone(),
                exit: TerminalExit {
                    exit_code: Some(3),
                    signal: None
                }
            }
        );
        let text: String = outputs
            .iter()
            .map(|e| match e {
                TerminalEvent::Output { text, .. } => text.as_str(),
                other => panic!("output before the exit: {other:?}"),
            })
            .collect();
        let want: String = (1..=200).map(|i| format!("line{i}\n")).collect();
        assert_eq!(text, want, "every byte once, in order");
        // At most one flush per FLUSH_EVERY of wall time (plus the two refused offers and the
        // last one), so a loaded machine that stretches the loop stretches the bound with it;
        // one event per line would still be far above it.
        let flushes = (took.as_millis() / FLUSH_EVERY.as_millis()) as usize + 4;
        assert!(
            outputs.len() <= flushes.min(100),
            "{} events in {took:?}",
            outputs.len()
        );
    }

    /// A silent command can end before the agent's update that shows its terminal: its exit
    /// is offered again until a call shows it (refused twice here), not dropped.
    #[tokio::test]
    async fn the_exit_of_a_silent_command_waits_for_the_card() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let offers = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let sink: TerminalSink = {
            let (seen, offers) = (seen.clone(), offers.clone());
            Arc::new(move |e| {
                if offers.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
                    return false;
                }
                seen.lock().unwrap().push(e);
                true
            })
        };
        let t = LocalTerminals::new();
        let id = t.create(spec("exit 4", None), Some(sink)).unwrap();
        let exit = t.wait_for_exit(&id).await.unwrap();
        assert_eq!(exit.exit_code, Some(4));
        assert_eq!(
            *seen.lock().unwrap(),
            vec![TerminalEvent::Exited {
                terminal_id: id,
                exit: TerminalExit {
                    exit_code: Some(4),
                    signal: None
                }
            }]
        );
        assert_eq!(offers.load(std::sync::atomic::Ordering::SeqCst), 3);
    }
}
