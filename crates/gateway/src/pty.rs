//! The operator's interactive terminals (`docs/gateway.md` §6): a shell under a
//! pseudo-terminal per terminal, kept by the gateway across page reloads and reconnects.
//!
//! A terminal belongs to the gateway, not to a connection. Its output goes into a bounded
//! scrollback ring ([`SCROLLBACK`]) as fast as the shell writes it; the one attached
//! connection (the last to `terminal.attach` or `terminal.open` it) reads the ring from where
//! it is, at its own pace, as `terminal.data` events. So a slow viewer never holds up the
//! shell: if it falls behind by more than the ring, it gets a `terminal.dropped` marker and
//! continues from the oldest byte kept. Input and resizes come only from the attached
//! connection. A terminal ends on `terminal.close`, when its shell exits (it stays listed,
//! with its scrollback, until closed), and when the gateway is dropped (backend exit); a
//! closed connection only detaches it.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::{
    frame::{ErrorCode, ErrorShape, EventPrefix},
    outbound::{Out, Outbound},
    terminal::{PtyControl, PtyOutput, TerminalHost, TerminalSize},
};

/// Output kept per terminal and replayed to a newly attached viewer.
pub const SCROLLBACK: usize = 256 * 1024;
/// Terminals a gateway keeps at once (ended ones make room for new ones).
pub const MAX_TERMINALS: usize = 4;
/// Largest `terminal.input` data.
pub const MAX_INPUT: usize = 64 * 1024;
/// Largest terminal, in cells per side.
pub const MAX_COLS: u16 = 1000;
/// Largest terminal, in rows.
pub const MAX_ROWS: u16 = 500;
/// Most output bytes in one `terminal.data` event.
const CHUNK: usize = 32 * 1024;

/// Params of `terminal.open`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenParams {
    /// Columns (1 to [`MAX_COLS`]).
    pub cols: u16,
    /// Rows (1 to [`MAX_ROWS`]).
    pub rows: u16,
}

/// Params of `terminal.attach` and `terminal.close`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerminalRef {
    /// The terminal.
    pub terminal_id: String,
}

/// Params of `terminal.input`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InputParams {
    /// The terminal.
    pub terminal_id: String,
    /// What was typed (at most [`MAX_INPUT`] bytes).
    pub data: String,
}

/// Params of `terminal.resize`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResizeParams {
    /// The terminal.
    pub terminal_id: String,
    /// Columns (1 to [`MAX_COLS`]).
    pub cols: u16,
    /// Rows (1 to [`MAX_ROWS`]).
    pub rows: u16,
}

/// Params of `terminal.list` (none).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {}

fn check_size(cols: u16, rows: u16) -> Result<TerminalSize, ErrorShape> {
    if (1..=MAX_COLS).contains(&cols) && (1..=MAX_ROWS).contains(&rows) {
        Ok(TerminalSize { cols, rows })
    } else {
        Err(ErrorShape::invalid(format!(
            "invalid terminal size: cols must be 1..={MAX_COLS} and rows 1..={MAX_ROWS}"
        )))
    }
}

/// The last [`SCROLLBACK`] bytes of output, addressed by absolute offsets so a viewer can
/// tell how far it is and whether it fell out of the ring. Only whole UTF-8 text goes in.
struct Ring {
    buf: VecDeque<u8>,
    /// Absolute offset of `buf[0]`.
    start: u64,
}

impl Ring {
    fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    fn push(&mut self, text: &str) {
        self.buf.extend(text.as_bytes());
        let over = self.buf.len().saturating_sub(SCROLLBACK);
        if over > 0 {
            self.buf.drain(..over);
            self.start += over as u64;
        }
    }

    /// `bytes` of output that never reached the ring: everything kept is dropped with them,
    /// so a viewer behind or at the end skips exactly what it did not get (a ring has no
    /// holes). The next read starts on a line of its own, as after an eviction.
    fn gap(&mut self, bytes: u64) {
        self.start = self.end() + bytes;
        self.buf.clear();
    }

    /// Up to `max` bytes from `from`: `(skipped, text, next)`. `skipped` counts bytes the
    /// viewer missed because they left the ring; then the text starts after the next line
    /// break (so no cut escape sequence or character opens it) when one is near.
    fn read(&self, from: u64, max: usize) -> (u64, String, u64) {
        let len = self.buf.len();
        let continues = |i: usize| i < len && self.buf[i] & 0xC0 == 0x80;
        let (skipped, at) = if from < self.start {
            let near = self.buf.iter().take(4096).position(|&b| b == b'\n');
            let mut at = near.map_or(0, |i| i + 1);
            // A character cut by the eviction: skip its remaining bytes.
            while continues(at) {
                at += 1;
            }
            (self.start - from + at as u64, at)
        } else {
            (0, usize::try_from(from - self.start).unwrap_or(usize::MAX))
        };
        if at >= len {
            return (skipped, String::new(), self.end());
        }
        let mut stop = (at + max).min(len);
        // Never end inside a character: back off to its first byte, or take the whole of a
        // character longer than `max`.
        while stop > at && continues(stop) {
            stop -= 1;
        }
        if stop == at {
            stop += 1;
            while continues(stop) {
                stop += 1;
            }
        }
        let bytes: Vec<u8> = self.buf.range(at..stop).copied().collect();
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (skipped, text, self.start + stop as u64)
    }
}

struct Viewer {
    conn: u64,
    stop: CancellationToken,
}

struct State {
    ring: Ring,
    size: TerminalSize,
    exit: Option<(Option<i32>, Option<i32>)>,
    viewer: Option<Viewer>,
}

impl State {
    fn attached(&self, conn: u64) -> bool {
        self.viewer
            .as_ref()
            .is_some_and(|v| v.conn == conn && !v.stop.is_cancelled())
    }
}

struct Term {
    id: String,
    control: Box<dyn PtyControl>,
    state: Mutex<State>,
    /// Bumped after every change of the ring or the exit; viewers wait on it.
    changed: watch::Sender<u64>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Term {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn summary(&self) -> Value {
        let s = self.state();
        let mut v = json!({
            "terminalId": self.id,
            "cols": s.size.cols,
            "rows": s.size.rows,
            "running": s.exit.is_none(),
            "attached": s.viewer.as_ref().is_some_and(|v| !v.stop.is_cancelled()),
        });
        if let Some((code, signal)) = s.exit {
            v["code"] = json!(code);
            v["signal"] = json!(signal);
        }
        v
    }
}

/// The gateway's terminals.
#[derive(Default)]
pub(crate) struct Terminals {
    list: Mutex<Vec<Arc<Term>>>,
}

impl Drop for Terminals {
    fn drop(&mut self) {
        for term in lock(&self.list).drain(..) {
            term.control.kill();
        }
    }
}

fn not_found(id: &str) -> ErrorShape {
    ErrorShape::new(ErrorCode::NotFound, format!("no terminal {id}"))
}

/// What attaching returns: the response payload and the viewer to spawn after it is queued.
pub(crate) type Attached = (Value, std::pin::Pin<Box<dyn Future<Output = ()> + Send>>);

impl Terminals {
    fn find(&self, id: &str) -> Result<Arc<Term>, ErrorShape> {
        lock(&self.list)
            .iter()
            .find(|t| t.id == id)
            .cloned()
            .ok_or_else(|| not_found(id))
    }

    /// `terminal.open`: starts a shell and attaches `conn` to it.
    pub(crate) fn open(
        &self,
        host: Option<&Arc<dyn TerminalHost>>,
        p: &OpenParams,
        conn: u64,
        out: &Arc<Outbound>,
    ) -> Result<Attached, ErrorShape> {
        let size = check_size(p.cols, p.rows)?;
        let Some(host) = host else {
            return Err(ErrorShape::new(
                ErrorCode::Unavailable,
                "this gateway has no operator terminal",
            ));
        };
        let id = format!("term_{}", crate::random_hex(6)?);
        {
            let mut list = lock(&self.list);
            // Ended terminals make room (their viewers already got all of their output).
            list.retain(|t| t.state().exit.is_none());
            if list.len() >= MAX_TERMINALS {
                return Err(ErrorShape::new(
                    ErrorCode::Unavailable,
                    format!("at most {MAX_TERMINALS} terminals at once (terminal.close ends one)"),
                ));
            }
            let opened = host
                .open_pty(size)
                .map_err(|e| ErrorShape::new(ErrorCode::Internal, e.0))?;
            let term = Arc::new(Term {
                id: id.clone(),
                control: opened.control,
                state: Mutex::new(State {
                    ring: Ring {
                        buf: VecDeque::new(),
                        start: 0,
                    },
                    size,
                    exit: None,
                    viewer: None,
                }),
                changed: watch::channel(0).0,
            });
            tokio::spawn(pump(term.clone(), opened.output));
            list.push(term);
        }
        self.attach(&id, conn, out)
    }

    /// `terminal.attach`: `conn` becomes the terminal's one viewer (the previous one gets
    /// `terminal.detached`) and is sent the whole scrollback, then the live output.
    pub(crate) fn attach(
        &self,
        id: &str,
        conn: u64,
        out: &Arc<Outbound>,
    ) -> Result<Attached, ErrorShape> {
        let term = self.find(id)?;
        let stop = out.cancel_token().child_token();
        if let Some(old) = term.state().viewer.replace(Viewer {
            conn,
            stop: stop.clone(),
        }) {
            old.stop.cancel();
        }
        // From the very beginning: when output already left the ring, the viewer is told how
        // much, and the replay starts on a line of its own.
        let from = 0;
        let mut payload = term.summary();
        payload["ok"] = json!(true);
        let view = view(term, out.clone(), stop, from);
        Ok((payload, Box::pin(view)))
    }

    /// `terminal.input`, from the attached connection only.
    pub(crate) fn input(&self, p: InputParams, conn: u64) -> Result<(), ErrorShape> {
        if p.data.len() > MAX_INPUT {
            return Err(ErrorShape::invalid(format!(
                "invalid terminal.input params: data must be at most {MAX_INPUT} bytes"
            )));
        }
        let term = self.attached(&p.terminal_id, conn)?;
        term.control
            .write(p.data.into_bytes())
            .map_err(|e| ErrorShape::new(ErrorCode::Unavailable, e.0))
    }

    /// `terminal.resize`, from the attached connection only.
    pub(crate) fn resize(&self, p: &ResizeParams, conn: u64) -> Result<(), ErrorShape> {
        let size = check_size(p.cols, p.rows)?;
        let term = self.attached(&p.terminal_id, conn)?;
        term.control
            .resize(size)
            .map_err(|e| ErrorShape::new(ErrorCode::Unavailable, e.0))?;
        term.state().size = size;
        Ok(())
    }

    fn attached(&self, id: &str, conn: u64) -> Result<Arc<Term>, ErrorShape> {
        let term = self.find(id)?;
        if !term.state().attached(conn) {
            return Err(ErrorShape::new(
                ErrorCode::Unavailable,
                "this connection is not attached to the terminal (terminal.attach first)",
            ));
        }
        Ok(term)
    }

    /// `terminal.close`: kills the shell's session and forgets the terminal. Its viewer still
    /// gets the output up to the end and `terminal.exit`.
    pub(crate) fn close(&self, id: &str) -> Result<(), ErrorShape> {
        let term = {
            let mut list = lock(&self.list);
            let i = list
                .iter()
                .position(|t| t.id == id)
                .ok_or_else(|| not_found(id))?;
            list.remove(i)
        };
        term.control.kill();
        Ok(())
    }

    /// `terminal.list`.
    pub(crate) fn list(&self) -> Value {
        let list: Vec<Value> = lock(&self.list).iter().map(|t| t.summary()).collect();
        json!({"terminals": list})
    }
}

/// Moves the shell's output into the ring as fast as it comes: viewers never slow it down.
async fn pump(term: Arc<Term>, mut output: mpsc::Receiver<PtyOutput>) {
    loop {
        let item = output.recv().await;
        let ended = {
            let mut s = term.state();
            match item {
                Some(PtyOutput::Data(text)) => {
                    s.ring.push(&text);
                    false
                }
                Some(PtyOutput::Dropped(bytes)) => {
                    s.ring.gap(bytes);
                    false
                }
                Some(PtyOutput::Exit { code, signal }) => {
                    s.exit = Some((code, signal));
                    true
                }
                None => {
                    s.exit.get_or_insert((None, None));
                    true
                }
            }
        };
        term.changed.send_modify(|n| *n = n.wrapping_add(1));
        if ended {
            return;
        }
    }
}

/// Streams the ring from `from` to one attached connection, waiting for room in its queue
/// (the gateway cuts a consumer whose queue overflows), until the terminal ends, another
/// connection attaches, or the connection closes.
async fn view(term: Arc<Term>, out: Arc<Outbound>, stop: CancellationToken, from: u64) {
    let mut changed = term.changed.subscribe();
    let mut pos = from;
    let id = term.id.clone();
    loop {
        if stop.is_cancelled() {
            if !out.is_closed() {
                let ev = json!({"terminalId": id});
                out.push(Out::Event(EventPrefix::new("terminal.detached", &ev)));
            }
            return;
        }
        let (skipped, text, next, exit) = {
            let s = term.state();
            let (skipped, text, next) = s.ring.read(pos, CHUNK);
            (skipped, text, next, s.exit)
        };
        if skipped > 0 {
            let ev = json!({"terminalId": id, "droppedBytes": skipped});
            out.push(Out::Event(EventPrefix::new("terminal.dropped", &ev)));
        }
        pos = next;
        if !text.is_empty() {
            tokio::select! {
                () = out.room(out.max_bytes() / 2) => {}
                () = stop.cancelled() => continue,
            }
            let ev = json!({"terminalId": id, "data": text});
            out.push(Out::Event(EventPrefix::new("terminal.data", &ev)));
            continue;
        }
        if let Some((code, signal)) = exit {
            let mut ev = json!({"terminalId": id});
            if let Some(code) = code {
                ev["code"] = json!(code);
            }
            if let Some(signal) = signal {
                ev["signal"] = json!(signal);
            }
            out.push(Out::Event(EventPrefix::new("terminal.exit", &ev)));
            return;
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            () = stop.cancelled() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Ring {
        Ring {
            buf: VecDeque::new(),
            start: 0,
        }
    }

    #[test]
    fn the_ring_keeps_the_last_bytes_and_says_what_a_late_reader_missed() {
        let mut r = ring();
        r.push("first line\n");
        let line = format!("{}\n", "x".repeat(1023));
        for _ in 0..(SCROLLBACK / 1024 + 4) {
            r.push(&line);
        }
        assert_eq!(r.buf.len(), SCROLLBACK);
        let (skipped, text, next) = r.read(0, CHUNK);
        // What left the ring, and the cut line after it, are skipped.
        assert!(skipped >= r.start, "{skipped} {}", r.start);
        assert!(text.starts_with('x') && !text.contains("first"));
        assert!(!text.is_empty() && text.len() <= CHUNK);
        assert_eq!(next, skipped + text.len() as u64);
        // A reader that kept up skips nothing.
        let (skipped, _, _) = r.read(next, CHUNK);
        assert_eq!(skipped, 0);
    }

    #[test]
    fn a_gap_is_counted_to_every_viewer_and_the_next_read_starts_on_a_new_line() {
        let mut r = ring();
        r.push("kept line\n");
        let caught_up = r.end();
        r.push("unread\n");
        r.gap(100);
        r.push("cut escape\nafter\n");
        // A viewer that had read everything misses the unread line and the gap.
        let (skipped, text, _) = r.read(caught_up, CHUNK);
        assert_eq!(
            skipped,
            "unread\n".len() as u64 + 100 + "cut escape\n".len() as u64
        );
        assert_eq!(text, "after\n");
        // A new viewer from the beginning: the scrollback before the gap is gone too.
        let (skipped, text, next) = r.read(0, CHUNK);
        assert_eq!(text, "after\n");
        assert_eq!(skipped + text.len() as u64, next);
        // A gap with nothing after it yet: counted, no text.
        r.gap(5);
        let (skipped, text, _) = r.read(next, CHUNK);
        assert_eq!((skipped, text.as_str()), (5, ""));
    }

    #[test]
    fn reads_never_cut_a_character() {
        let mut r = ring();
        r.push("aé€😀");
        for max in 1..12 {
            let mut pos = 0;
            let mut all = String::new();
            while pos < r.end() {
                let (skipped, text, next) = r.read(pos, max);
                assert_eq!(skipped, 0);
                // A character longer than `max` still comes through whole.
                assert!(!text.is_empty());
                all.push_str(&text);
                pos = next;
            }
            assert_eq!(all, "aé€😀", "max {max}");
        }
    }

    #[test]
    fn sizes_are_bounded() {
        assert!(check_size(80, 24).is_ok());
        assert!(check_size(0, 24).is_err());
        assert!(check_size(80, 0).is_err());
        assert!(check_size(MAX_COLS + 1, 24).is_err());
        assert!(check_size(80, MAX_ROWS + 1).is_err());
    }
}
