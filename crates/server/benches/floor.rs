//! The floor under `agents`' 5,000 updates/s figure: the work one burst of streamed text
//! cannot do without, done with no async runtime, no JSON parse and no HTTP. An agent thread
//! writes the mock agent's chunk lines to a pipe, five per millisecond as `flood-timed` does;
//! a turn thread wakes on the pipe, stores the burst as one delta row through the real store
//! (the transaction `Turn::flush` runs) and writes one SSE frame to a loopback TCP socket; a
//! client thread wakes and reads it. CPU per update counts every thread but the agent's.
//! What the real path adds on top (tokio, the ACP and SSE parsing, HTTP) is the difference
//! between `agents` and this. Figures in docs/PERFORMANCE-agents.md.
//!
//! `cargo bench -p ax-server --bench floor`.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    thread,
    time::{Duration, Instant},
};

use ax_protocol::{Message, MessageId, Role, Session, SessionId, SessionStatus, turn::TurnDelta};
use ax_server::store::{self, Store};

/// Updates per run, at `RATE` per second: the `agents` bench's 5,000/s phase.
const UPDATES: u64 = 25_000;
const RATE: u64 = 5_000;

/// What the turn thread does with a burst.
#[derive(Clone, Copy)]
struct Work {
    store: bool,
    stream: bool,
}

fn main() {
    println!(
        "floor of one update at {RATE} updates/s ({UPDATES} updates, bursts as the mock agent writes them):"
    );
    for (label, work) in [
        (
            "pipe read + one-row commit + loopback SSE write and read",
            Work {
                store: true,
                stream: true,
            },
        ),
        (
            "pipe read + loopback SSE write and read (no store)",
            Work {
                store: false,
                stream: true,
            },
        ),
        (
            "pipe read + one-row commit (no stream)",
            Work {
                store: true,
                stream: false,
            },
        ),
    ] {
        let (cpu_ns, bursts) = run(work);
        println!(
            "  {label}: CPU {:.1} µs/update, {:.1} µs/burst, {bursts} bursts",
            cpu_ns as f64 / 1_000.0 / UPDATES as f64,
            cpu_ns as f64 / 1_000.0 / bursts as f64,
        );
    }
}

/// CPU time on the processor of every thread of this process but `except` so far, in ns
/// (`/proc/<tid>/schedstat`, not the 10 ms ticks of `stat`).
fn process_cpu_ns(except: &std::ffi::OsStr) -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|task| task.file_name() != except)
        .map(|task| schedstat_ns(&task.path().join("schedstat")))
        .sum()
}

fn schedstat_ns(path: &std::path::Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.split(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// One run: the CPU of all threads but the agent's (the turn's, the client's and the store's
/// checkpoint thread), and the number of bursts.
fn run(work: Work) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let message: MessageId = "msg_0123456789abABCDEFGHIJKLMA".parse().unwrap();
    store
        .write_blocking(|c| {
            let session: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
            let project = store::project_id(c, "/p")?;
            store::insert_session(
                c,
                project,
                &Session {
                    id: session.clone(),
                    title: String::new(),
                    created: 1,
                    updated: 1,
                    status: SessionStatus::Busy,
                    agent: "mock".into(),
                    agent_state: None,
                    standing: Vec::new(),
                },
            )?;
            store::insert_message(
                c,
                &Message {
                    id: message.clone(),
                    session_id: session,
                    role: Role::Assistant,
                    created: 1,
                    ended: None,
                    deltas: 0,
                    parts: Vec::new(),
                },
            )
        })
        .unwrap();

    let (mut from_agent, mut to_turn) = std::io::pipe().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut to_client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut at_client, _) = listener.accept().unwrap();
    to_client.set_nodelay(true).unwrap();

    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let agent = thread::spawn(move || {
        let me = std::fs::read_link("/proc/thread-self").unwrap();
        tid_tx.send(me.file_name().unwrap().to_owned()).unwrap();
        let start = Instant::now();
        let mut sent = 0;
        while sent < UPDATES {
            // Whole milliseconds, as the mock agent's tokio timer ticks: about five a tick.
            let tick = Duration::from_millis(start.elapsed().as_millis() as u64 + 1);
            thread::sleep((start + tick).saturating_duration_since(Instant::now()));
            let due = (start.elapsed().as_micros() as u64 * RATE / 1_000_000).min(UPDATES);
            while sent < due {
                let ns = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"ses_0123456789abABCDEFGHIJKLMN\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"t{ns} \"}}}}}}}}\n"
                );
                to_turn.write_all(line.as_bytes()).unwrap();
                sent += 1;
            }
        }
    });
    let agent_tid = tid_rx.recv().unwrap();

    let client = thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        while at_client.read(&mut buf).unwrap() > 0 {}
    });

    let cpu0 = process_cpu_ns(&agent_tid);
    let mut buf = vec![0u8; 64 * 1024];
    let mut filled = 0;
    let (mut updates, mut bursts) = (0, 0);
    while updates < UPDATES {
        let n = from_agent.read(&mut buf[filled..]).unwrap();
        filled += n;
        let Some(end) = buf[..filled].iter().rposition(|&b| b == b'\n') else {
            continue;
        };
        let lines = buf[..end].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        // The burst's text, as the turn merges it: the chunks' texts one after the other.
        let text: String = (0..lines).map(|i| format!("t{i:019} ")).collect();
        buf.copy_within(end + 1..filled, 0);
        filled -= end + 1;
        bursts += 1;
        updates += lines;
        let body = store::encode_delta(&TurnDelta::TextAppended { text }).unwrap();
        if work.store {
            store
                .write_blocking(|c| {
                    let tx = store::begin_write(c)?;
                    store::append_delta_bodies(&tx, &message, [(bursts, body.as_str())])?;
                    Ok(tx.commit()?)
                })
                .unwrap();
        }
        if work.stream {
            let data = format!(
                "id: {bursts}\ndata: {{\"id\":{bursts},\"type\":\"message.delta\",\"sessionId\":\"ses_0123456789abABCDEFGHIJKLMN\",\"messageId\":\"msg_0123456789abABCDEFGHIJKLMA\",\"seq\":{bursts},\"delta\":{body}}}\n\n"
            );
            // One HTTP/1.1 chunk, as the backend's SSE response sends each event.
            let frame = format!("{:x}\r\n{data}\r\n", data.len());
            to_client.write_all(frame.as_bytes()).unwrap();
        }
    }
    let cpu = process_cpu_ns(&agent_tid) - cpu0;
    agent.join().unwrap();
    drop(to_client);
    client.join().unwrap();
    (cpu, bursts)
}
