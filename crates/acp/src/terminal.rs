//! `terminal/*`: what the runtime needs from a process module, behind one small trait, and its
//! implementation on the one process module of the tree (`ax_agents::process`, shared with the
//! `shell` agent and the operator terminal).

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use ax_agents::process;
use futures::future::BoxFuture;

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
    /// Starts a command; returns the terminal id.
    fn create(&self, spec: TerminalSpec) -> Result<String, TerminalError>;
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
}

/// Terminals of one agent session, run through `ax_agents::process` (process group,
/// allowlisted environment, bounded output keeping the end, reaped on exit). Dropping it
/// kills every terminal still running.
#[derive(Default)]
pub struct LocalTerminals {
    terms: Mutex<HashMap<String, Term>>,
    next: std::sync::atomic::AtomicU64,
}

impl LocalTerminals {
    /// No terminals yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, id: &str) -> Result<Arc<process::Process>, TerminalError> {
        let terms = self.terms.lock().unwrap_or_else(|p| p.into_inner());
        terms
            .get(id)
            .map(|t| t.process.clone())
            .ok_or_else(|| TerminalError::Unknown(id.to_string()))
    }
}

fn signal_name(signal: i32) -> String {
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
    fn create(&self, spec: TerminalSpec) -> Result<String, TerminalError> {
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
        let started = process::spawn(command).map_err(|e| TerminalError::Spawn {
            command: spec.command.clone(),
            source: match e {
                process::SpawnError::Io { source, .. } => source,
                other => std::io::Error::other(other.to_string()),
            },
        })?;
        let id = format!(
            "term-{}",
            self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
        );
        self.terms.lock().unwrap_or_else(|p| p.into_inner()).insert(
            id.clone(),
            Term {
                process: Arc::new(started),
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
        let found = self.get(id);
        Box::pin(async move { Ok(exit_info(found?.wait_for_exit().await)) })
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
            .create(spec(
                // One stream: the order across stdout and stderr is the reader's, not the command's.
                "printf 'aaaaaaaaaa0123456789'; echo \"$AX_TERM_TEST\"; exit 7",
                Some(12),
            ))
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
        let id = t.create(spec("sleep 30 & sleep 30; wait", None)).unwrap();
        t.kill(&id).unwrap();
        let exit = tokio::time::timeout(std::time::Duration::from_secs(10), t.wait_for_exit(&id))
            .await
            .expect("killed in time")
            .unwrap();
        assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
        let other = t.create(spec("sleep 30", None)).unwrap();
        let wait = t.wait_for_exit(&other);
        t.release_all();
        let exit = tokio::time::timeout(std::time::Duration::from_secs(10), wait)
            .await
            .expect("released terminal dies")
            .unwrap();
        assert!(exit.signal.is_some());
    }
}
