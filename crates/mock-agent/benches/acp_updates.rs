//! Agent stdout → ACP client runtime → delta stream, measured with the real mock agent.
//!
//! `cargo bench -p ax-mock-agent --bench acp_updates` prints a table for
//! docs/PERFORMANCE-agents.md: text-chunk updates per second one session sustains, the
//! added latency (agent writes the line → the caller holds the delta) at 5,000 updates/s,
//! this process's CPU per update (the agent process is not counted), and the memory an idle
//! agent session costs this process.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ax_acp::{AcpEvent, AgentHandle, AgentSpec, StartOptions};
use ax_protocol::turn::TurnDelta;

fn spec() -> AgentSpec {
    AgentSpec {
        name: "mock".into(),
        command: env!("CARGO_BIN_EXE_ax-mock-agent").into(),
        args: Vec::new(),
        env: Default::default(),
    }
}

/// User + system CPU time of this process.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the command name.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn session(
    dir: &std::path::Path,
) -> (AgentHandle, tokio::sync::mpsc::UnboundedReceiver<AcpEvent>) {
    let (mut agent, events) = AgentHandle::start(&spec(), StartOptions::new(dir))
        .await
        .expect("mock agent starts");
    agent.open_session(Vec::new(), None).await.expect("session");
    (agent, events)
}

async fn throughput(dir: &std::path::Path, n: u64) -> (f64, f64) {
    let (agent, mut events) = session(dir).await;
    let cpu0 = cpu();
    let t0 = Instant::now();
    agent.prompt_text(&format!("flood {n}")).unwrap();
    let mut got = 0u64;
    loop {
        match events.recv().await.expect("events") {
            AcpEvent::Delta(TurnDelta::TextAppended { .. }) => got += 1,
            AcpEvent::TurnEnded { .. } => break,
            _ => {}
        }
    }
    let elapsed = t0.elapsed();
    let cpu_used = cpu() - cpu0;
    assert_eq!(got, n, "every update arrived");
    agent.stop().await;
    (
        n as f64 / elapsed.as_secs_f64(),
        cpu_used.as_secs_f64() * 1e6 / n as f64,
    )
}

async fn latency(dir: &std::path::Path, n: u64, rate: u64) -> (f64, f64, f64, f64) {
    let (agent, mut events) = session(dir).await;
    let cpu0 = cpu();
    agent
        .prompt_text(&format!("flood-timed {n} {rate}"))
        .unwrap();
    let mut lat = Vec::with_capacity(n as usize);
    loop {
        match events.recv().await.expect("events") {
            AcpEvent::Delta(TurnDelta::TextAppended { text }) => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                if let Some(ts) = text
                    .trim()
                    .strip_prefix('t')
                    .and_then(|t| t.parse::<u128>().ok())
                {
                    lat.push(now.saturating_sub(ts) as f64 / 1e6);
                }
            }
            AcpEvent::TurnEnded { .. } => break,
            _ => {}
        }
    }
    let cpu_used = cpu() - cpu0;
    agent.stop().await;
    lat.sort_by(|a, b| a.total_cmp(b));
    let pick = |q: f64| lat[((lat.len() as f64 - 1.0) * q) as usize];
    (
        pick(0.5),
        pick(0.99),
        pick(1.0),
        cpu_used.as_secs_f64() * 1e6 / n as f64,
    )
}

async fn idle_memory(dir: &std::path::Path, k: usize) -> f64 {
    // One session first, so the runtime's one-time allocations are not counted.
    let warm = session(dir).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_bytes();
    let mut sessions = Vec::new();
    for _ in 0..k {
        sessions.push(session(dir).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_bytes();
    for (agent, _) in &sessions {
        agent.stop().await;
    }
    warm.0.stop().await;
    (after.saturating_sub(before)) as f64 / k as f64 / 1024.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        println!("| measure | value |");
        println!("| --- | --- |");
        for n in [20_000u64, 200_000] {
            let (rate, cpu) = throughput(dir.path(), n).await;
            println!("| throughput, {n} text chunks | {rate:.0} updates/s, {cpu:.2} µs CPU/update |");
        }
        let (p50, p99, max, cpu) = latency(dir.path(), 25_000, 5_000).await;
        println!(
            "| added latency at 5,000 updates/s (25,000 updates) | p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms; {cpu:.2} µs CPU/update |"
        );
        let kib = idle_memory(dir.path(), 20).await;
        println!("| memory per idle agent session (this process, 20 sessions) | {kib:.1} KiB |");
    });
}
