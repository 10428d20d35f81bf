//! `terminal/*`: what the runtime needs from a process module, behind one small trait, and a
//! simple implementation. (The backend can swap in its shared process module by implementing
//! [`Terminals`]; nothing else in this crate starts terminal processes.)

use std::{
    collections::HashMap,
    os::unix::process::ExitStatusExt,
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::process::{Tail, allowlisted_env, collect_tail, signal_group};

/// Output kept per terminal when the agent names no `outputByteLimit`.
pub const DEFAULT_OUTPUT_LIMIT: u64 = 1024 * 1024;
/// The largest `outputByteLimit` honoured.
pub const MAX_OUTPUT_LIMIT: u64 = 16 * 1024 * 1024;
/// Terminals one session may hold at once.
pub const MAX_TERMINALS: usize = 32;

/// What to run.
#[derive(Debug, Clone)]
pub struct TerminalSpec {
    pub command: String,
    pub args: Vec<String>,
    /// Added to the allowlisted environment.
    pub env: Vec<(String, String)>,
    /// Already checked to be inside the project.
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    pub exit_code: Option<u32>,
    /// The signal name, e.g. `SIGKILL`.
    pub signal: Option<String>,
}

/// What `terminal/output` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutput {
    pub output: String,
    pub truncated: bool,
    pub exit: Option<ExitInfo>,
}

/// A terminal request that cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("no terminal {0}")]
    Unknown(String),
    #[error("cannot start {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
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

struct Term {
    pgid: u32,
    output: Arc<Mutex<Tail>>,
    exit: watch::Receiver<Option<ExitInfo>>,
}

/// Runs each terminal command directly: own process group, allowlisted environment, output
/// bounded keeping the end, reaped by a task of its own.
#[derive(Default)]
pub struct LocalTerminals {
    terms: Mutex<HashMap<String, Term>>,
    next: std::sync::atomic::AtomicU64,
}

impl LocalTerminals {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, id: &str, f: impl FnOnce(&Term) -> R) -> Result<R, TerminalError> {
        let terms = self.terms.lock().unwrap_or_else(|p| p.into_inner());
        terms
            .get(id)
            .map(f)
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

impl Terminals for LocalTerminals {
    fn create(&self, spec: TerminalSpec) -> Result<String, TerminalError> {
        if self.terms.lock().unwrap_or_else(|p| p.into_inner()).len() >= MAX_TERMINALS {
            return Err(TerminalError::TooMany);
        }
        let limit = spec
            .output_byte_limit
            .unwrap_or(DEFAULT_OUTPUT_LIMIT)
            .min(MAX_OUTPUT_LIMIT) as usize;
        let mut command = tokio::process::Command::new(&spec.command);
        command
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(allowlisted_env())
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().map_err(|source| TerminalError::Spawn {
            command: spec.command.clone(),
            source,
        })?;
        let pgid = child.id().unwrap_or(0);
        let output = Arc::new(Mutex::new(Tail::new(limit)));
        let mut pumps = Vec::new();
        if let Some(out) = child.stdout.take() {
            pumps.push(tokio::spawn(collect_tail(out, output.clone())));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(tokio::spawn(collect_tail(err, output.clone())));
        }
        let (exit_tx, exit_rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await;
            // Background children of the command would keep the pipes open forever.
            signal_group(pgid, rustix::process::Signal::KILL);
            for pump in pumps {
                let _ = pump.await;
            }
            let info = match status {
                Ok(s) => ExitInfo {
                    exit_code: s.code().map(|c| c as u32),
                    signal: s.signal().map(signal_name),
                },
                Err(_) => ExitInfo {
                    exit_code: None,
                    signal: None,
                },
            };
            let _ = exit_tx.send(Some(info));
        });
        let id = format!(
            "term-{}",
            self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
        );
        self.terms.lock().unwrap_or_else(|p| p.into_inner()).insert(
            id.clone(),
            Term {
                pgid,
                output,
                exit: exit_rx,
            },
        );
        Ok(id)
    }

    fn output(&self, id: &str) -> Result<TerminalOutput, TerminalError> {
        self.with(id, |t| {
            let tail = t.output.lock().unwrap_or_else(|p| p.into_inner());
            TerminalOutput {
                output: tail.text(),
                truncated: tail.truncated(),
                exit: t.exit.borrow().clone(),
            }
        })
    }

    fn wait_for_exit(&self, id: &str) -> BoxFuture<'static, Result<ExitInfo, TerminalError>> {
        let rx = self.with(id, |t| t.exit.clone());
        let id = id.to_string();
        Box::pin(async move {
            let mut rx = rx?;
            let got = rx.wait_for(Option::is_some).await;
            match got {
                Ok(v) => Ok(v.clone().unwrap_or(ExitInfo {
                    exit_code: None,
                    signal: None,
                })),
                Err(_) => Err(TerminalError::Unknown(id)),
            }
        })
    }

    fn kill(&self, id: &str) -> Result<(), TerminalError> {
        self.with(id, |t| {
            if t.exit.borrow().is_none() {
                signal_group(t.pgid, rustix::process::Signal::KILL);
            }
        })
    }

    fn release(&self, id: &str) -> Result<(), TerminalError> {
        let term = self
            .terms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
            .ok_or_else(|| TerminalError::Unknown(id.to_string()))?;
        if term.exit.borrow().is_none() {
            signal_group(term.pgid, rustix::process::Signal::KILL);
        }
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
            if t.exit.borrow().is_none() {
                signal_group(t.pgid, rustix::process::Signal::KILL);
            }
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
                "printf 'aaaaaaaaaa0123456789'; echo \"$AX_TERM_TEST\" >&2; exit 7",
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
