//! The operator terminal: `terminal.run` / `terminal.kill` (scope `operator.admin`).
//!
//! This is the only place in the gateway that starts a process. A command runs with `sh -c` in
//! the project directory, in its own process group so `terminal.kill` ends all of it, and its
//! output streams as events to the connection that started it, bounded per run.

use std::{
    os::unix::process::ExitStatusExt,
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::{
    frame::{ErrorCode, ErrorShape, EventPrefix},
    outbound::{Out, Outbound},
};

/// Output forwarded per run; the rest is counted and dropped.
pub const MAX_OUTPUT: usize = 1 << 20;
/// Longest command line accepted.
pub const MAX_COMMAND: usize = 16 * 1024;
const CHUNK: usize = 8 * 1024;

/// Params of `terminal.run`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    pub command: String,
}

/// Params of `terminal.kill` (none).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillParams {}

struct Running {
    run_id: String,
    pgid: i32,
}

/// The one command a connection may have running.
#[derive(Default)]
pub(crate) struct TerminalSlot {
    running: Mutex<Option<Running>>,
}

impl TerminalSlot {
    /// Kill the running command's process group; `false` if nothing runs.
    pub(crate) fn kill(&self) -> bool {
        let guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let Some(r) = guard.as_ref() else {
            return false;
        };
        match rustix::process::Pid::from_raw(r.pgid) {
            Some(pid) => {
                rustix::process::kill_process_group(pid, rustix::process::Signal::KILL).is_ok()
            }
            None => false,
        }
    }

    fn clear(&self, run_id: &str) {
        let mut guard = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_some_and(|r| r.run_id == run_id) {
            *guard = None;
        }
    }
}

/// Start `command`; its output goes to `out` as `terminal.output` / `terminal.exit` events.
pub(crate) fn run(
    slot: Arc<TerminalSlot>,
    out: Arc<Outbound>,
    dir: &Path,
    command: &str,
    run_id: String,
) -> Result<(), ErrorShape> {
    if command.trim().is_empty() || command.len() > MAX_COMMAND {
        return Err(ErrorShape::invalid(format!(
            "invalid terminal.run params: command must be 1..={MAX_COMMAND} bytes"
        )));
    }
    let mut guard = slot.running.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_some() {
        return Err(ErrorShape::new(
            ErrorCode::Unavailable,
            "a terminal command is already running (terminal.kill stops it)",
        ));
    }
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_remove("AX_CODE_SERVER_PASSWORD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ErrorShape::new(ErrorCode::Internal, format!("cannot start sh: {e}")))?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    *guard = Some(Running {
        run_id: run_id.clone(),
        pgid,
    });
    drop(guard);

    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    tokio::spawn(async move {
        let mut sent = 0usize;
        let mut dropped = 0u64;
        let mut so = stdout.map(|s| Reader::new(s, "stdout"));
        let mut se = stderr.map(|s| Reader::new(s, "stderr"));
        let cancel = out.cancel_token().clone();
        // Until both pipes end (`else` never fires while the cancel branch is armed).
        while so.is_some() || se.is_some() {
            let chunk = tokio::select! {
                _ = cancel.cancelled() => break,
                c = next_chunk(&mut so), if so.is_some() => c,
                c = next_chunk(&mut se), if se.is_some() => c,
            };
            let Some((stream, text)) = chunk else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            if sent + text.len() > MAX_OUTPUT {
                dropped += text.len() as u64;
                continue;
            }
            sent += text.len();
            // Terminal output yields to the queue: it must not get its own connection cut.
            while out.queued_bytes() > out.max_bytes() / 2 && !out.is_closed() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let ev = json!({"runId": run_id, "stream": stream, "data": text});
            out.push(Out::Event(EventPrefix::new("terminal.output", &ev)));
        }
        if cancel.is_cancelled() {
            let _ = child.start_kill();
            if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
        let status = child.wait().await.ok();
        slot.clear(&run_id);
        let mut ev = json!({"runId": run_id, "truncated": dropped > 0});
        if dropped > 0 {
            ev["droppedBytes"] = json!(dropped);
        }
        if let Some(status) = status {
            if let Some(code) = status.code() {
                ev["code"] = json!(code);
            }
            if let Some(sig) = status.signal() {
                ev["signal"] = json!(sig);
            }
        }
        out.push(Out::Event(EventPrefix::new("terminal.exit", &ev)));
    });
    Ok(())
}

/// Reads one pipe, yielding whole UTF-8 text (a split character waits for its next bytes).
struct Reader<R> {
    inner: R,
    stream: &'static str,
    carry: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    fn new(inner: R, stream: &'static str) -> Self {
        Reader {
            inner,
            stream,
            carry: Vec::new(),
        }
    }

    /// `None` at end of stream.
    async fn read(&mut self) -> Option<String> {
        let mut buf = vec![0u8; CHUNK];
        let n = self.inner.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            if self.carry.is_empty() {
                return None;
            }
            let rest = std::mem::take(&mut self.carry);
            return Some(String::from_utf8_lossy(&rest).into_owned());
        }
        self.carry.extend_from_slice(&buf[..n]);
        let keep = incomplete_tail(&self.carry);
        let tail = self.carry.split_off(self.carry.len() - keep);
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry = tail;
        Some(text)
    }
}

/// Bytes at the end of `b` that start a UTF-8 character not yet complete.
fn incomplete_tail(b: &[u8]) -> usize {
    match std::str::from_utf8(b) {
        Ok(_) => 0,
        Err(e) if e.error_len().is_none() => b.len() - e.valid_up_to(),
        Err(_) => {
            // Invalid bytes somewhere: look only at the last three bytes.
            let start = b.len().saturating_sub(3);
            (start..b.len())
                .find(|&i| b[i] >= 0xC0 && std::str::from_utf8(&b[i..]).is_err())
                .map(|i| b.len() - i)
                .unwrap_or(0)
        }
    }
}

async fn next_chunk<R: AsyncRead + Unpin>(
    r: &mut Option<Reader<R>>,
) -> Option<(&'static str, String)> {
    let reader = r.as_mut()?;
    match reader.read().await {
        Some(text) => Some((reader.stream, text)),
        None => {
            *r = None;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::incomplete_tail;

    #[test]
    fn split_characters_wait() {
        let e = "é".as_bytes();
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail(&[b'a', e[0]]), 1);
        assert_eq!(incomplete_tail(&[b'a', e[0], e[1]]), 0);
    }
}
