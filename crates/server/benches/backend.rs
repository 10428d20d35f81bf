//! Backend figures (see docs/PERFORMANCE-backend.md):
//! - `GET /session` latency with 10,000 and 100,000 stored sessions (full list and `?limit=100`);
//! - prompt → first output event latency (a session that allows its commands always);
//! - events per second one SSE client receives, live and replaying the resume ring.
//!
//! Run: `cargo bench -p ax-server --bench backend [-- lists|prompt|events]` (release). Real HTTP on 127.0.0.1, a real
//! SQLite file in a temp directory.

use std::time::{Duration, Instant};

use ax_client::Client;
use ax_protocol::{Event, PermissionReply, Session, SessionStatus};
use ax_server::{ServerConfig, store};

mod common;
use common::cpu_us;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: n={} median={:.2} ms p99={:.2} ms",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3
    );
}

fn populate(data: &std::path::Path, project: &std::path::Path, n: usize) {
    let store = store::Store::open(data).unwrap();
    let dir = std::fs::canonicalize(project).unwrap();
    let dir = dir.to_string_lossy().into_owned();
    store
        .write_blocking(|c| {
            let project = store::project_id(c, &dir)?;
            let tx = c.transaction()?;
            let base = 1_700_000_000_000i64;
            for i in 0..n {
                let created = base + i as i64;
                let id = format!("ses_{:012x}{:014}", (created as u64) << 4, i);
                let session = Session {
                    id: id.parse().unwrap(),
                    title: format!("session number {i}"),
                    created,
                    updated: created,
                    status: SessionStatus::Idle,
                    agent: "shell".into(),
                    agent_state: None,
                    standing: Vec::new(),
                };
                store::insert_session(&tx, project, &session)?;
            }
            tx.commit()?;
            Ok(())
        })
        .unwrap();
}

async fn list_latency(n: usize, full_iters: usize) {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let t = Instant::now();
    populate(data.path(), project.path(), n);
    println!(
        "populated {n} sessions in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut config = ServerConfig::new(project.path(), data.path());
    config.register = false;
    let server = ax_server::start(config).await.unwrap();
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    assert_eq!(client.list_sessions().await.unwrap().len(), n);
    let mut full = Vec::new();
    for _ in 0..full_iters {
        let t = Instant::now();
        let list = client.list_sessions().await.unwrap();
        full.push(t.elapsed());
        assert_eq!(list.len(), n);
    }
    report(&format!("GET /session, {n} sessions, full list"), full);
    let mut page = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        let list = client.list_sessions_limit(100).await.unwrap();
        page.push(t.elapsed());
        assert_eq!(list.len(), 100);
    }
    report(&format!("GET /session?limit=100, {n} sessions"), page);
    server.shutdown().await;
}

async fn prompt_latency(iters: usize) {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(project.path(), data.path());
    config.register = false;
    let server = ax_server::start(config).await.unwrap();
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    let id = client.create_session(None).await.unwrap().id;
    let mut events = client.events(None);
    while !events.is_connected() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first = client.prompt_text(&id, "true").await.unwrap();
    client
        .reply_permission(&id, &first.permission.unwrap().id, PermissionReply::Always)
        .await
        .unwrap();
    let wait_idle = async |events: &mut ax_client::EventStream| loop {
        let e = events.next().await.unwrap().unwrap();
        if matches!(
            e.event,
            Event::SessionStatus {
                status: SessionStatus::Idle,
                ..
            }
        ) {
            return;
        }
    };
    wait_idle(&mut events).await;
    let mut samples = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        client.prompt_text(&id, "echo x").await.unwrap();
        loop {
            let e = events.next().await.unwrap().unwrap();
            if let Event::MessageDelta {
                delta: ax_protocol::turn::TurnDelta::TerminalOutput { .. },
                ..
            } = e.event
            {
                samples.push(t.elapsed());
                break;
            }
        }
        wait_idle(&mut events).await;
    }
    report("prompt -> first output event (sh -c 'echo x')", samples);
    server.shutdown().await;
}

async fn event_rate() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(project.path(), data.path());
    config.register = false;
    config.event_ring = 1 << 16;
    let server = ax_server::start(config).await.unwrap();
    let client = Client::new(server.url(), server.token().expose()).unwrap();

    // Live: 8 writers create sessions (one event each) for 3 s; one SSE client counts.
    let mut events = client.events(None);
    while !events.is_connected() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first_id = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let cpu_before = cpu_us();
    let stop = Instant::now() + Duration::from_secs(3);
    let mut writers = Vec::new();
    for _ in 0..8 {
        let client = client.clone();
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < stop {
                client.create_session(None).await.unwrap();
                n += 1;
            }
            n
        }));
    }
    let counter = tokio::spawn({
        let first_id = first_id.clone();
        async move {
            let mut n = 0u64;
            let started = Instant::now();
            while let Ok(Some(Ok(e))) =
                tokio::time::timeout(Duration::from_millis(500), events.next()).await
            {
                if n == 0 {
                    first_id.store(e.id, std::sync::atomic::Ordering::Relaxed);
                }
                n += 1;
            }
            (n, started.elapsed() - Duration::from_millis(500))
        }
    });
    let mut produced = 0;
    for w in writers {
        produced += w.await.unwrap();
    }
    let (received, elapsed) = counter.await.unwrap();
    // The writers, the server and the SSE client share this process: CPU per event is the
    // whole path (request, insert, publish, SSE framing, decoding), steadier than the rate on
    // a shared machine. The counter's 500 ms idle tail costs next to nothing.
    let cpu = cpu_us() - cpu_before;
    println!(
        "live SSE: {received} of {produced} events in {:.2} s = {:.0} events/s (bounded by 8 writers creating sessions)",
        elapsed.as_secs_f64(),
        received as f64 / elapsed.as_secs_f64()
    );
    println!(
        "live SSE: {:.1} µs CPU per event (create request + insert + publish + delivery, whole process)",
        cpu as f64 / received as f64
    );

    // Replay: a fresh client resumes from the first of those events and drains the ring.
    let first = first_id.load(std::sync::atomic::Ordering::Relaxed);
    let mut replay = client.events(Some(first - 1));
    let want = received.min(1 << 16) - 1;
    let t = Instant::now();
    let mut got = 0u64;
    while got < want {
        replay.next().await.unwrap().unwrap();
        got += 1;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "replay SSE: {got} events in {secs:.3} s = {:.0} events/s (one client, typed client decoding JSON)",
        got as f64 / secs
    );
    server.shutdown().await;
}

/// Sections to run: the bench's non-flag arguments (`lists`, `prompt`, `events`), all when none.
fn wanted(section: &str) -> bool {
    let names: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    names.is_empty() || names.iter().any(|n| n == section)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        if wanted("lists") {
            list_latency(10_000, 100).await;
            list_latency(100_000, 20).await;
        }
        if wanted("prompt") {
            prompt_latency(100).await;
        }
        if wanted("events") {
            event_rate().await;
        }
    });
}
