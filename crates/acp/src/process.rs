//! Starting agent processes: own process group, allowlisted environment, bounded stderr tail,
//! bounded stdout lines, and signals to the whole group.

use std::{collections::VecDeque, path::Path, process::Stdio};

use futures::Stream;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::config::AgentSpec;

/// How much of an agent's stderr is kept (the end).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// Longest stdout line accepted from an agent; longer lines are dropped with a warning.
/// (A 10 MiB file written through `fs/write_text_file` is about that much JSON.)
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// The command for an agent, built on the one process module (`ax_agents::process`):
/// project directory, own process group, the allowlisted environment plus the agent's
/// configured `env`, all three standard streams piped.
/// `tag`, when given, is set as [`ax_agents::process::AGENT_TAG`] (after the configured
/// `env`, so an agent's config cannot take it away): every process the agent starts
/// inherits it, and stopping the agent stops them all (docs/agents.md §2).
pub fn agent_command(
    spec: &AgentSpec,
    project_dir: &Path,
    tag: Option<&str>,
) -> tokio::process::Command {
    let mut command_spec =
        ax_agents::process::CommandSpec::new(&spec.command, project_dir).args(&spec.args);
    for (k, v) in &spec.env {
        command_spec = command_spec.env(k, v);
    }
    if let Some(tag) = tag {
        command_spec = command_spec.env(ax_agents::process::AGENT_TAG, tag);
    }
    let mut command = command_spec.command();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The exit task owns the child and kills the group itself.
        .kill_on_drop(false);
    command
}

/// The last `cap` bytes written.
#[derive(Debug)]
pub struct Tail {
    buf: VecDeque<u8>,
    cap: usize,
    dropped: u64,
}

impl Tail {
    /// An empty tail that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Tail {
            buf: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    /// Appends `bytes`, dropping the oldest bytes over the cap.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = if bytes.len() > self.cap {
            self.dropped += (bytes.len() - self.cap) as u64;
            &bytes[bytes.len() - self.cap..]
        } else {
            bytes
        };
        let over = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        if over > 0 {
            self.buf.drain(..over);
            self.dropped += over as u64;
        }
        self.buf.extend(bytes);
    }

    /// Whether anything was dropped from the front.
    pub fn truncated(&self) -> bool {
        self.dropped > 0
    }

    /// The kept bytes as text; a character cut at the front is skipped.
    pub fn text(&self) -> String {
        let (a, b) = self.buf.as_slices();
        let mut bytes = Vec::with_capacity(self.buf.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        let start = if self.truncated() {
            bytes
                .iter()
                .take(4)
                .position(|b| (b & 0xC0) != 0x80)
                .unwrap_or(0)
        } else {
            0
        };
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

/// Reads `reader` into `tail` until EOF.
pub async fn collect_tail(
    mut reader: impl AsyncRead + Unpin,
    tail: std::sync::Arc<std::sync::Mutex<Tail>>,
) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => tail
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buf[..n]),
        }
    }
}

/// Splits an agent's stdout into lines for the JSON-RPC layer, bounded: a line longer than
/// `max` bytes or not valid UTF-8 is dropped with a warning instead of growing memory or
/// ending the connection. Empty lines are skipped.
pub fn bounded_lines(
    reader: impl AsyncRead + Unpin + Send + 'static,
    max: usize,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    struct State<R> {
        reader: BufReader<R>,
        line: Vec<u8>,
        discarding: bool,
        done: bool,
    }
    let state = State {
        reader: BufReader::with_capacity(16 * 1024, reader),
        line: Vec::new(),
        discarding: false,
        done: false,
    };
    futures::stream::unfold(state, move |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            let (consumed, complete) = match st.reader.fill_buf().await {
                Err(e) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
                Ok([]) => {
                    st.done = true;
                    (0, true)
                }
                Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                    Some(i) => {
                        if !st.discarding {
                            st.line.extend_from_slice(&buf[..i]);
                        }
                        (i + 1, true)
                    }
                    None => {
                        if !st.discarding {
                            st.line.extend_from_slice(buf);
                        }
                        (buf.len(), false)
                    }
                },
            };
            st.reader.consume(consumed);
            if st.line.len() > max {
                tracing::warn!(
                    bytes = st.line.len(),
                    "agent stdout line over the bound: dropped"
                );
                st.line = Vec::new();
                st.discarding = true;
            }
            if !complete {
                continue;
            }
            if std::mem::take(&mut st.discarding) {
                continue;
            }
            let line = std::mem::take(&mut st.line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match String::from_utf8(line) {
                Ok(s) => return Some((Ok(s), st)),
                Err(_) => tracing::warn!("agent stdout line is not UTF-8: dropped"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn env_allowlist() {
        for ok in [
            "PATH",
            "HOME",
            "LC_ALL",
            "XDG_RUNTIME_DIR",
            "TMPDIR",
            "LANG",
        ] {
            assert!(
                ax_agents::process::env::is_allowed(std::ffi::OsStr::new(ok)),
                "{ok}"
            );
        }
        for bad in [
            "AX_CODE_SERVER_PASSWORD",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_AUTH_SOCK",
            "LD_PRELOAD",
            "PATHX",
        ] {
            assert!(
                !ax_agents::process::env::is_allowed(std::ffi::OsStr::new(bad)),
                "{bad}"
            );
        }
    }

    #[test]
    fn tail_keeps_the_end_on_a_char_boundary() {
        let mut t = Tail::new(8);
        t.push(b"abc");
        assert_eq!(t.text(), "abc");
        assert!(!t.truncated());
        t.push("défghij".as_bytes());
        assert!(t.truncated());
        assert_eq!(t.text(), "défghij");
        let mut t = Tail::new(4);
        t.push("aé".as_bytes());
        t.push(b"xyz");
        // "é" is two bytes; the kept four are [0xA9, x, y, z]: the cut byte is skipped.
        assert_eq!(t.text(), "xyz");
        let mut t = Tail::new(3);
        t.push(b"0123456789");
        assert_eq!(t.text(), "789");
    }

    #[tokio::test]
    async fn lines_are_bounded_and_garbage_is_skipped() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"a\":1}\n\n");
        input.extend_from_slice(&[b'x'; 100]);
        input.extend_from_slice(b"\n\xff\xfe\nlast");
        let lines: Vec<String> = bounded_lines(std::io::Cursor::new(input), 50)
            .map(|l| l.unwrap())
            .collect()
            .await;
        assert_eq!(lines, vec!["{\"a\":1}".to_string(), "last".to_string()]);
    }
}
