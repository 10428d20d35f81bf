//! The TUI in a pseudo-terminal, its screen emulated by vt100.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::{AX, Env, WAIT, signal};

/// Records OSC 52 clipboard writes, bells and the OSC sequences vt100 does not handle itself
/// (desktop notifications: OSC 9, OSC 777), as a terminal would receive them.
#[derive(Default)]
pub struct Clipboard {
    copies: Vec<Vec<u8>>,
    bells: usize,
    oscs: Vec<String>,
}

impl vt100::Callbacks for Clipboard {
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _ty: &[u8], data: &[u8]) {
        self.copies.push(data.to_vec());
    }

    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.bells += 1;
    }

    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        let fields: Vec<String> = params
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        self.oscs.push(fields.join(";"));
    }
}

/// Decodes standard base64 (what an OSC 52 copy carries).
pub fn unbase64(text: &[u8]) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    for chunk in text.chunks(4) {
        let digits: Vec<u8> = chunk
            .iter()
            .filter(|&&c| c != b'=')
            .map(|&c| value(c))
            .collect();
        let n = digits
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        for i in 0..digits.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// The default terminal width.
pub const COLS: u16 = 120;
/// The default terminal height.
pub const ROWS: u16 = 36;

/// Where the screen is, as the main pane's title row shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShownRoute {
    Home,
    Session(String),
    Unknown,
}

/// Reads the route from a screen: the first box title (`┌ Sessions (N)` on home,
/// `┌ <title> ses_… ` on a session).
pub fn shown_route(screen: &str) -> ShownRoute {
    let Some(line) = screen.lines().find(|l| l.starts_with('┌')) else {
        return ShownRoute::Unknown;
    };
    if line.starts_with("┌ Sessions") {
        return ShownRoute::Home;
    }
    match line.find("ses_") {
        Some(i) => {
            let id: String = line[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            ShownRoute::Session(id)
        }
        None => ShownRoute::Unknown,
    }
}

/// `ax-code ARGS` in a pseudo-terminal, its screen emulated by vt100.
pub struct Pty {
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<vt100::Parser<Clipboard>>>,
    reader: Option<thread::JoinHandle<()>>,
}

impl Pty {
    /// Spawns `ax-code ARGS` in `env`'s project in a [`ROWS`]×[`COLS`] terminal.
    pub fn spawn(env: &Env, args: &[&str], password: Option<&str>) -> Pty {
        Pty::spawn_sized(env, args, password, ROWS, COLS)
    }

    /// Spawns `ax-code ARGS` in a `rows`×`cols` terminal.
    pub fn spawn_sized(
        env: &Env,
        args: &[&str],
        password: Option<&str>,
        rows: u16,
        cols: u16,
    ) -> Pty {
        Pty::spawn_with(env, args, password, rows, cols, &[])
    }

    /// [`Pty::spawn_sized`] with more environment variables (e.g. `XDG_CONFIG_HOME` for an
    /// agents configuration).
    pub fn spawn_with(
        env: &Env,
        args: &[&str],
        password: Option<&str>,
        rows: u16,
        cols: u16,
        extra_env: &[(&str, &std::ffi::OsStr)],
    ) -> Pty {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(AX);
        cmd.args(args);
        cmd.cwd(&env.project);
        for (k, v) in env.vars() {
            cmd.env(k, v);
        }
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("AX_CODE_SERVER_PASSWORD");
        cmd.env_remove("XDG_DATA_HOME");
        if let Some(p) = password {
            cmd.env("AX_CODE_SERVER_PASSWORD", p);
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new_with_callbacks(
            NonZeroU16::new(rows).unwrap(),
            NonZeroU16::new(cols).unwrap(),
            0,
            Clipboard::default(),
        )));
        let p = parser.clone();
        let reader = thread::spawn(move || {
            // Keep the master open as long as we read.
            let _master = pair.master;
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => p.lock().unwrap().process(&buf[..n]),
                }
            }
        });
        Pty {
            child,
            writer: Arc::new(Mutex::new(writer)),
            parser,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("the TUI's pid")
    }

    /// The screen's text now.
    pub fn screen(&self) -> String {
        self.handle().screen()
    }

    /// The screen with its colours and attributes, as escape sequences (for a text capture
    /// that a terminal shows as it was).
    pub fn screen_ansi(&self) -> String {
        self.parser.lock().unwrap().screen().contents_formatted()
    }

    /// What the TUI asked the terminal to copy (OSC 52), base64 as sent, oldest first.
    pub fn clipboard(&self) -> Vec<Vec<u8>> {
        self.parser.lock().unwrap().callbacks().copies.clone()
    }

    /// How many bells (BEL) the TUI rang.
    pub fn bells(&self) -> usize {
        self.parser.lock().unwrap().callbacks().bells
    }

    /// The OSC sequences vt100 left to us (notifications), fields joined by `;`, oldest first.
    pub fn oscs(&self) -> Vec<String> {
        self.parser.lock().unwrap().callbacks().oscs.clone()
    }

    /// The text of the cells drawn on background `bg`, one string per screen row that has any.
    pub fn text_on(&self, bg: vt100::Color) -> Vec<String> {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        let (rows, cols) = screen.size();
        let (rows, cols) = (rows.get(), cols.get());
        (0..rows)
            .map(|r| {
                (0..cols)
                    .filter_map(|c| screen.cell(r, c))
                    .filter(|cell| cell.bgcolor() == bg)
                    .map(|cell| cell.contents().to_owned())
                    .collect::<String>()
            })
            .filter(|row| !row.is_empty())
            .collect()
    }

    /// Whether the TUI has mouse reporting on.
    pub fn mouse_reporting(&self) -> bool {
        self.parser.lock().unwrap().screen().mouse_protocol_mode() != vt100::MouseProtocolMode::None
    }

    /// Whether the terminal is on the alternate screen.
    pub fn alternate_screen(&self) -> bool {
        self.parser.lock().unwrap().screen().alternate_screen()
    }

    /// A cheap handle for other threads: reads the screen and writes input.
    pub fn handle(&self) -> PtyHandle {
        PtyHandle {
            writer: self.writer.clone(),
            parser: self.parser.clone(),
        }
    }

    /// Polls the screen until `pred` holds; panics with the screen after [`WAIT`].
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.handle().wait_for(what, pred)
    }

    /// Waits for `text` on the screen.
    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Types `bytes`.
    /// Types `text` as one bracketed paste (newlines kept), as a terminal does for a paste.
    pub fn paste(&self, text: &str) {
        self.send(&format!("\x1b[200~{text}\x1b[201~"));
    }

    pub fn send(&self, bytes: &str) {
        self.handle().send(bytes)
    }

    /// A left click at a zero-based cell.
    pub fn click(&self, col: u16, row: u16) {
        self.handle().click(col, row)
    }

    /// Moves the mouse (no button) every 100 ms until the returned guard drops: continuous
    /// human activity that changes nothing on screen.
    pub fn jiggle_mouse(&self) -> Jiggle {
        let handle = self.handle();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::spawn(move || {
            let mut col = 9;
            while !flag.load(Ordering::Relaxed) {
                col = if col == 9 { 10 } else { 9 };
                handle.hover(col, 9);
                thread::sleep(Duration::from_millis(100));
            }
        });
        Jiggle {
            stop,
            thread: Some(thread),
        }
    }

    /// The absolute endpoint.json path shown in the TUIMCP bar.
    pub fn endpoint_path(&self) -> PathBuf {
        let s = self.wait_text("TUIMCP on: ");
        let line = s.lines().find(|l| l.contains("TUIMCP on: ")).unwrap();
        let after = &line[line.find("TUIMCP on: ").unwrap() + "TUIMCP on: ".len()..];
        let end = after.find("endpoint.json").expect("a full path in the bar") + 13;
        PathBuf::from(&after[..end])
    }

    /// Waits for the process to end (bounded) and then for the last output.
    pub fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return status;
            }
            if start.elapsed() > WAIT {
                panic!("the TUI did not exit; the screen:\n{}", self.screen());
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_none()
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            if let Some(pid) = self.child.process_id() {
                signal(pid, "CONT");
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Stops the mouse movement of [`Pty::jiggle_mouse`] when dropped.
pub struct Jiggle {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Drop for Jiggle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Screen and keyboard of a [`Pty`], shareable between threads.
#[derive(Clone)]
pub struct PtyHandle {
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<vt100::Parser<Clipboard>>>,
}

impl PtyHandle {
    /// The screen's text now.
    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Types `bytes`.
    pub fn send(&self, bytes: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// A left click at a zero-based cell, as an SGR mouse press and release.
    pub fn click(&self, col: u16, row: u16) {
        let (c, r) = (col + 1, row + 1);
        self.send(&format!("\x1b[<0;{c};{r}M\x1b[<0;{c};{r}m"));
    }

    /// Mouse movement without a button at a zero-based cell.
    pub fn hover(&self, col: u16, row: u16) {
        self.send(&format!("\x1b[<35;{};{}M", col + 1, row + 1));
    }

    /// Polls the emulated screen until `pred` holds; panics with the screen after [`WAIT`].
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        match self.poll_for(WAIT, &pred) {
            Some(s) => s,
            None => panic!(
                "timed out waiting for {what}; the screen:\n{}",
                self.screen()
            ),
        }
    }

    /// Polls the screen until `pred` holds or `limit` passes.
    pub fn poll_for(&self, limit: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return Some(s);
            }
            if start.elapsed() > limit {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}
