//! Frame time while output streams into transcripts of 1,000 / 10,000 / 100,000 lines, drawn
//! into ratatui's TestBackend, and the memory the 100,000-line transcript holds; then the same
//! with a transcript of 10,000 agent turn parts (Markdown text, thoughts, tool calls with
//! diffs, plans, permissions, notices) while an answer streams in as `message.delta`s.
//!
//! Run: `cargo bench -p ax-tui --bench frame` (release). Figures go to docs/PERFORMANCE-tui.md.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ax_protocol::turn::{
    Notice, NoticeKind, PermissionChoice, PermissionKind, PermissionOutcome, PermissionPart,
    PlanEntry, PlanPriority, PlanStatus, ToolCallPart, ToolContent, ToolKind, ToolStatus,
    TurnDelta, TurnPart,
};
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
        standing: Vec::new(),
    };
    app.on_synced(g, Ok((vec![session], vec![])));
    app.navigate_by_agent(sid());
    let g = load_gen(&mut app).expect("a transcript load");
    // Parts of at most 1,000 lines each, like streamed chunks.
    let parts: Vec<Part> = (0..lines.div_ceil(1000))
        .map(|c| output(1000.min(lines - c * 1000), c * 1000))
        .collect();
    let message = Message {
        id: "msg_0123456789abABCDEFGHIJ0001".parse().unwrap(),
        session_id: sid(),
        role: Role::Assistant,
        created: 1,
        ended: None,
        deltas: 0,
        parts,
    };
    app.on_transcript(g, Ok(vec![message]));
    app
}

/// Part `i` of a turn: every kind in turn, each of a realistic size.
fn agent_part(i: usize) -> TurnPart {
    let tool = |status| ToolCallPart {
        tool_call_id: format!("t{i}"),
        title: format!("Edit crates/some-crate/src/file{i}.rs"),
        kind: ToolKind::Edit,
        status,
        content: vec![ToolContent::Diff {
            path: format!("crates/some-crate/src/file{i}.rs"),
            old_text: Some("fn a() {}\nfn b() {\n    1\n}\n".repeat(5)),
            new_text: "fn a() {}\nfn b() {\n    2\n}\n".repeat(5),
            line: None,
        }],
        ..ToolCallPart::default()
    };
    match i % 6 {
        0 => TurnPart::Text {
            text: format!(
                "## Step {i}\n\nThe **parser** drops the *last* line of `input.rs`; see \
                 [the issue](https://example.test/{i}).\n\n- first point\n- second point\n\n\
                 ```rust\nfn main() {{ println!(\"{i}\"); }}\n```\n"
            ),
        },
        1 => TurnPart::Thought {
            text: "Considering the options.\nThe second line of thought.\n".repeat(3),
        },
        2 => TurnPart::ToolCall(tool(ToolStatus::Completed)),
        3 => TurnPart::Plan {
            entries: (0..4)
                .map(|k| PlanEntry {
                    content: format!("step {k} of the plan"),
                    priority: PlanPriority::Medium,
                    status: if k < 2 {
                        PlanStatus::Completed
                    } else {
                        PlanStatus::Pending
                    },
                })
                .collect(),
        },
        4 => TurnPart::Permission(PermissionPart {
            permission_id: format!("per_{i:026}").parse().unwrap(),
            tool_call: tool(ToolStatus::Pending),
            options: vec![PermissionChoice {
                option_id: "allow".into(),
                name: "Allow".into(),
                kind: PermissionKind::AllowOnce,
            }],
            outcome: PermissionOutcome::Selected {
                option_id: "allow".into(),
                kind: PermissionKind::AllowOnce,
            },
        }),
        _ => TurnPart::Notice(Notice {
            kind: NoticeKind::Usage,
            message: format!("{i} tokens"),
        }),
    }
}

/// A well-formed message ID, distinct per `tag` and `n`.
fn mid(tag: char, n: usize) -> ax_protocol::MessageId {
    format!("msg_{tag}{n:025}").parse().unwrap()
}

/// An app on the session route with `parts` agent turn parts in turns of 10 parts, the last
/// message (an answer being streamed) created empty.
fn app_with_turns(parts: usize) -> App {
    let mut app = app_with(0);
    let mut messages = Vec::new();
    for turn in 0..parts / 10 {
        messages.push(Message {
            id: mid('u', turn),
            session_id: sid(),
            role: Role::User,
            created: 1,
            ended: None,
            deltas: 0,
            parts: vec![Part::Text {
                text: format!("prompt {turn}"),
            }],
        });
        messages.push(Message {
            id: mid('a', turn),
            session_id: sid(),
            role: Role::Assistant,
            created: 1,
            ended: None,
            deltas: 0,
            parts: (0..10)
                .map(|k| Part::from_turn(agent_part(turn * 10 + k)))
                .collect(),
        });
    }
    messages.push(Message {
        id: mid('l', 0),
        session_id: sid(),
        role: Role::Assistant,
        created: 1,
        ended: None,
        deltas: 0,
        parts: vec![],
    });
    // The session is open already: a reset reloads its transcript.
    app.on_event(Event::Reset);
    let g = load_gen(&mut app).expect("a transcript load");
    app.on_transcript(g, Ok(messages));
    app
}

fn press(app: &mut App, code: ax_tui::input::KeyCode) {
    app.handle_input(ax_tui::input::Input::Key(ax_tui::input::Key::plain(code)));
}

/// Scrolls halfway up `rows` (PageUp many times), then times `frames` draws.
fn scrolled_frames(
    app: &mut App,
    term: &mut Terminal<TestBackend>,
    rows: usize,
    frames: usize,
) -> Vec<Duration> {
    for _ in 0..(rows / 2 / (H as usize - 10)) {
        press(app, ax_tui::input::KeyCode::PageUp);
    }
    (0..frames)
        .map(|_| {
            let start = Instant::now();
            term.draw(|f| draw(f, app)).unwrap();
            start.elapsed()
        })
        .collect()
}

/// The generation of the transcript load the app asked for, if it asked.
fn load_gen(app: &mut App) -> Option<u64> {
    app.take_effects().into_iter().find_map(|e| match e {
        Effect::LoadTranscript { generation, .. } => Some(generation),
        _ => None,
    })
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
        let scrolled = scrolled_frames(&mut app, &mut term, lines, FRAMES);
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
    println!();
    println!(
        "frame = one message.delta (a streamed text chunk, or every 8th a tool call update) \
         applied + a full draw, {W}x{H}"
    );
    println!(
        "{:>8} {:>8} {:>10} {:>10} {:>10}  {:>10} {:>12}",
        "parts", "rows", "mean µs", "p50 µs", "p99 µs", "scrolled p50", "open card µs"
    );
    for parts in [1_000usize, 10_000] {
        let start = Instant::now();
        let mut app = app_with_turns(parts);
        let load = start.elapsed();
        let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
        let mut times = Vec::with_capacity(FRAMES);
        let mut seq = 0;
        let mut delta = |app: &mut App, d: TurnDelta| {
            seq += 1;
            app.on_event(Event::MessageDelta {
                session_id: sid(),
                message_id: mid('l', 0),
                seq,
                delta: d,
            });
        };
        delta(
            &mut app,
            TurnDelta::ToolCallCreated {
                tool_call: ToolCallPart {
                    tool_call_id: "live-tool".into(),
                    title: "cargo test".into(),
                    kind: ToolKind::Execute,
                    ..ToolCallPart::default()
                },
            },
        );
        for i in 0..FRAMES {
            let start = Instant::now();
            if i % 8 == 7 {
                delta(
                    &mut app,
                    TurnDelta::ToolCallUpdated {
                        tool_call_id: "live-tool".into(),
                        fields: ax_protocol::turn::ToolCallFields {
                            status: Some(ToolStatus::InProgress),
                            ..Default::default()
                        },
                    },
                );
            } else {
                // A paragraph of ~40 chunks (~1.5 KB), then the next one.
                let text = if i % 40 == 38 {
                    "\n\nA new paragraph starts here and "
                } else {
                    "streams a few more words of the answer "
                };
                delta(&mut app, TurnDelta::TextAppended { text: text.into() });
            }
            term.draw(|f| draw(f, &app)).unwrap();
            times.push(start.elapsed());
        }
        let rows = app.transcript().total_rows();
        let scrolled = scrolled_frames(&mut app, &mut term, rows, FRAMES);
        // Opening a card far up the transcript (Shift+Tab to the oldest then Enter) + a draw.
        let mut open = Vec::new();
        for _ in 0..20 {
            press(&mut app, ax_tui::input::KeyCode::BackTab);
            let start = Instant::now();
            press(&mut app, ax_tui::input::KeyCode::Enter);
            term.draw(|f| draw(f, &app)).unwrap();
            open.push(start.elapsed());
        }
        black_box(&app);
        let (mean, p50, p99) = stats(times);
        let (_, sp50, _) = stats(scrolled);
        let (_, op50, _) = stats(open);
        println!(
            "{parts:>8} {rows:>8} {mean:>10.1} {p50:>10.1} {p99:>10.1}  {sp50:>10.1} {op50:>12.1}   (load {:.1} ms)",
            load.as_secs_f64() * 1e3
        );
    }
    println!();
}
