//! Agent stdout → stored → SSE client, through the whole backend: updates/s one session
//! sustains with every update stored, added latency at 5,000 updates/s, CPU per update and
//! memory per idle agent session. Figures in docs/PERFORMANCE-agents.md.
//!
//! `cargo bench -p ax-server --bench agents`. This binary is also the mock agent (started
//! with `AX_TEST_BE_MOCK_AGENT=1` through the agent's configured `env`).

use std::{path::Path, time::Instant};

use ax_client::{Client, EventStream};
use ax_protocol::{Event, SessionId, SessionStatus, turn::TurnDelta};
use ax_server::ServerConfig;

mod common;
use common::{cpu_us, stat_cpu_us};

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// Context switches (voluntary + involuntary) of all this process's threads so far: each is a
/// thread going to sleep and being woken (or preempted), the cost a lone update pays.
fn context_switches() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // the thread ended meanwhile
        };
        for line in status.lines() {
            if let Some(n) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += n.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    total
}

async fn connected(client: &Client) -> EventStream {
    let events = client.events(None);
    while !events.is_connected() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    events
}

/// Runs `script` in `id`; calls `on_delta` for each delta of its reply until idle; returns
/// the number of deltas.
async fn turn(
    client: &Client,
    events: &mut EventStream,
    id: &SessionId,
    script: &str,
    mut on_delta: impl FnMut(&TurnDelta),
) -> u64 {
    let reply = client.prompt_text(id, script).await.unwrap().reply_id;
    let mut n = 0;
    let mut seen = false;
    loop {
        let e = events.next().await.unwrap().unwrap();
        match e.event {
            Event::MessageDelta {
                message_id, delta, ..
            } if message_id == reply => {
                seen = true;
                n += 1;
                on_delta(&delta);
            }
            Event::SessionStatus { session_id, status }
                if seen && session_id == *id && status == SessionStatus::Idle =>
            {
                return n;
            }
            _ => {}
        }
    }
}

async fn bench() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let text = format!(
        "[agents.mock]\ncommand = {:?}\nenv = {{ AX_TEST_BE_MOCK_AGENT = \"1\" }}\n",
        exe.to_string_lossy()
    );
    let mut config = ServerConfig::new(project.path(), data.path());
    config.register = false;
    config.agents = ax_acp::AgentsConfig::parse(Path::new("bench.toml"), &text).unwrap();
    let server = ax_server::start(config).await.unwrap();
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    let mut events = connected(&client).await;
    let id = client
        .create_session_with(None, Some("mock"))
        .await
        .unwrap()
        .id;
    // Warm up: the agent process starts with the first prompt.
    turn(&client, &mut events, &id, "text warm", |_| {}).await;

    println!("throughput (one session, every update stored and streamed to an SSE client):");
    for n in [20_000u64, 100_000] {
        let cpu0 = cpu_us();
        let t0 = Instant::now();
        let got = turn(&client, &mut events, &id, &format!("flood {n}"), |_| {}).await;
        let secs = t0.elapsed().as_secs_f64();
        let cpu = cpu_us() - cpu0;
        println!(
            "  {n} agent updates (text chunks) in {secs:.3} s = {:.0} updates/s, streamed as \
             {got} delta events (chunks that queued up are merged); CPU {:.1} µs/update \
             (backend + this SSE client)",
            n as f64 / secs,
            cpu as f64 / n as f64
        );
        let stored = client.messages(&id).await.unwrap();
        let last = stored.last().unwrap();
        assert!(!last.parts.is_empty(), "the flood was stored");
    }

    println!("added latency agent stdout → SSE client at 5,000 updates/s:");
    let cpu0 = cpu_us();
    let switches0 = context_switches();
    let (lat, got) = timed_flood(&client, &mut events, &id).await;
    let cpu = cpu_us() - cpu0;
    let switches = context_switches() - switches0;
    println!(
        "  {}; CPU {:.1} µs/update (backend + this SSE client); {got} delta events; \
         {:.2} context switches/update (all threads)",
        percentiles(lat),
        cpu as f64 / 25_000.0,
        switches as f64 / 25_000.0
    );

    println!("memory per idle agent session (this process; agent processes not counted):");
    let before = rss_kib();
    let mut ids = Vec::new();
    for _ in 0..20 {
        let id = client
            .create_session_with(None, Some("mock"))
            .await
            .unwrap()
            .id;
        turn(&client, &mut events, &id, "text hi", |_| {}).await;
        ids.push(id);
    }
    let after = rss_kib();
    println!(
        "  20 sessions: RSS {before} KiB → {after} KiB = {:.1} KiB per idle session",
        (after.saturating_sub(before)) as f64 / 20.0
    );
    drop(events);
    own_thread_client(
        server.url().to_owned(),
        server.token().expose().to_owned(),
        id,
    )
    .await;
    server.shutdown().await;
}

/// `flood-timed 25000 5000` in `id`: the added latency of each chunk in ms, and the number
/// of delta events it came in.
async fn timed_flood(client: &Client, events: &mut EventStream, id: &SessionId) -> (Vec<f64>, u64) {
    let mut lat = Vec::with_capacity(25_000);
    let got = turn(client, events, id, "flood-timed 25000 5000", |d| {
        if let TurnDelta::TextAppended { text } = d {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as i128;
            for stamp in text.split_whitespace() {
                if let Some(ns) = stamp.strip_prefix('t').and_then(|s| s.parse::<i128>().ok()) {
                    lat.push((now - ns) as f64 / 1e6);
                }
            }
        }
    })
    .await;
    (lat, got)
}

fn percentiles(mut lat: Vec<f64>) -> String {
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    format!(
        "{} samples: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        pct(0.50),
        pct(0.99),
        lat.last().copied().unwrap_or(0.0)
    )
}

/// The 5,000/s flood again, with the SSE client (its connection, parsing and this consumer)
/// on a thread of its own, a current-thread runtime named `bench-client`, so the backend's
/// CPU can be told from the client's: the process's CPU minus that thread's. (The kernel's
/// loopback delivery of each SSE write still runs on the backend's writing thread.) The only
/// SSE client of the backend during this phase.
async fn own_thread_client(url: String, token: String, id: SessionId) {
    println!("the same with the SSE client on a thread of its own (`bench-client`):");
    let client_thread = std::thread::Builder::new()
        .name("bench-client".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let client = Client::new(url, token).unwrap();
                let mut events = connected(&client).await;
                let (process0, thread0) = (cpu_us(), stat_cpu_us("/proc/thread-self/stat"));
                let (lat, got) = timed_flood(&client, &mut events, &id).await;
                let (process, thread) = (
                    cpu_us() - process0,
                    stat_cpu_us("/proc/thread-self/stat") - thread0,
                );
                println!(
                    "  {}; {got} delta events; CPU per update: {:.1} µs process, {:.1} µs \
                     backend (the process less the client's thread), {:.1} µs SSE client",
                    percentiles(lat),
                    process as f64 / 25_000.0,
                    process.saturating_sub(thread) as f64 / 25_000.0,
                    thread as f64 / 25_000.0
                );
            });
        })
        .unwrap();
    tokio::task::spawn_blocking(move || client_thread.join().unwrap())
        .await
        .unwrap();
}
