//! Frame time while output streams into transcripts of 1,000 / 10,000 / 100,000 lines, drawn
//! into ratatui's TestBackend, and the memory the 100,000-line transcript holds.
//!
//! Run: `cargo bench -p ax-tui --bench frame` (release). Figures go to docs/PERFORMANCE-tui.md.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ax_protocol::{Event, Message, Part, Role, Session, SessionId, SessionStatus, Stream};
use ax_tui::app::{App, Effect};
use ax_tui::render::draw;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const W: u16 = 120;
const H: u16 = 40;

fn sid() -> SessionId {
    "ses_0000000000aaABCDEFGHIJKLMN".parse().unwrap()
}

fn output(lines: usize, from: usize) -> Part {
    let mut text = String::new();
    for i in from..from + lines {
        text.push_str(&format!(
            "{i:>7} Compiling some-crate v0.{i} (/home/me/project/crates/some-crate) ok\n"
        ));
    }
    Part::Output {
        stream: Stream::Stdout,
        text,
    }
}

/// An app on the session route with `lines` transcript lines loaded.
fn app_with(lines: usize) -> App {
    let mut app = App::new("/home/me/project", None);
    app.resize(W, H);
    app.on_stream_connected();
    let g = app
        .take_effects()
        .into_iter()
        .find_map(|e| match e {
            Effect::Resync { generation } => Some(generation),
            _ => None,
        })
        .unwrap();
    let session = Session {
        id: sid(),
        title: "bench".into(),
        created: 1,
        updated: 1,
        status: SessionStatus::Busy,
        agent: "shell".into(),
        agent_state: None,
    };
    app.on_synced(g, Ok((vec![session], vec![])));
    app.navigate_by_agent(sid());
    let g = app
        .take_effects()
        .into_iter()
        .find_map(|e| match e {
            Effect::LoadTranscript { generation, .. } => Some(generation),
            _ => None,
        })
        .unwrap();
    // Parts of at most 1,000 lines each, like streamed chunks.
    let parts: Vec<Part> = (0..lines.div_ceil(1000))
        .map(|c| output(1000.min(lines - c * 1000), c * 1000))
        .collect();
    let message = Message {
        id: "msg_0123456789abABCDEFGHIJ0001".parse().unwrap(),
        session_id: sid(),
        role: Role::Assistant,
        created: 1,
        parts,
    };
    app.on_transcript(g, Ok(vec![message]));
    app
}

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64;
    (mean, us(v[v.len() / 2]), us(v[v.len() * 99 / 100]))
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    const FRAMES: usize = 400;
    println!(
        "frame = one streamed output part (1 line) applied + a full draw, {W}x{H} TestBackend"
    );
    println!(
        "{:>8} {:>10} {:>10} {:>10}  {:>10}",
        "lines", "mean µs", "p50 µs", "p99 µs", "scrolled p50"
    );
    for lines in [1_000usize, 10_000, 100_000] {
        let mut app = app_with(lines);
        let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
        let mut times = Vec::with_capacity(FRAMES);
        for i in 0..FRAMES {
            let start = Instant::now();
            app.on_event(Event::MessagePart {
                session_id: sid(),
                message_id: "msg_0123456789abABCDEFGHIJ0001".parse().unwrap(),
                index: (lines.div_ceil(1000) + i) as u32,
                part: output(1, lines + i),
            });
            term.draw(|f| draw(f, &app)).unwrap();
            times.push(start.elapsed());
        }
        // The same while scrolled halfway up the transcript (PageUp many times).
        for _ in 0..(lines / 2 / (H as usize - 10)) {
            app.handle_input(ax_tui::input::Input::Key(ax_tui::input::Key::plain(
                ax_tui::input::KeyCode::PageUp,
            )));
        }
        let mut scrolled = Vec::with_capacity(FRAMES);
        for _ in 0..FRAMES {
            let start = Instant::now();
            term.draw(|f| draw(f, &app)).unwrap();
            scrolled.push(start.elapsed());
        }
        black_box(&app);
        let (mean, p50, p99) = stats(times);
        let (_, sp50, _) = stats(scrolled);
        println!("{lines:>8} {mean:>10.1} {p50:>10.1} {p99:>10.1}  {sp50:>10.1}");
    }

    let before = rss_kib();
    let app = app_with(100_000);
    let after = rss_kib();
    println!(
        "memory: 100,000-line transcript ({} rows): RSS grew by {} KiB ({:.1} MiB)",
        app.transcript().total_rows(),
        after.saturating_sub(before),
        after.saturating_sub(before) as f64 / 1024.0
    );
    black_box(app);
}
