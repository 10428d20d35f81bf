//! `ui.command` fan-out to 1, 100 and 1,000 connected Control UIs, beside a bare WebSocket
//! broadcast in the same run, plus memory per idle connection, gateway CPU per delivered
//! frame and the time for 1,000 UIs to connect.
//!
//! The server runs in a child process (this binary re-executed with `AX_BENCH_ROLE=server`)
//! so its resident memory and CPU time can be read from `/proc/<pid>` apart from the clients.
//!
//!     cargo bench -p ax-gateway --bench fanout
//!
//! Results are written to stdout; see docs/PERFORMANCE-gateway.md.

use std::{
    io::{BufRead, BufReader, Write},
    net::SocketAddr,
    process::{Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use ax_gateway::{
    ClientMode, ConnectOptions, Gateway, GatewayClient, GatewayConfig, Method, Scope,
    SessionDirectory,
};
use axum::{
    Router,
    extract::{
        State,
        ws::{Message as AxMessage, WebSocket, WebSocketUpgrade},
    },
    routing::get,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::{net::TcpStream, sync::Notify};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite::Message};

const TOKEN: &str = "bench-token-0123456789abcdef";
const SESSION: &str = "ses_0000000000aaAAAAAAAAAAAAAA";

fn main() {
    if std::env::var("AX_BENCH_ROLE").as_deref() == Ok("server") {
        server();
    } else if std::env::args().any(|a| a == "--bench") || std::env::args().len() == 1 {
        client();
    }
}

// ---- server process ------------------------------------------------------------------

struct AnySession;
impl SessionDirectory for AnySession {
    fn contains(&self, _: &str) -> bool {
        true
    }
}

/// The baseline: every frame from a trigger connection goes to every receiver, shared bytes,
/// one writer task per connection, the same buffer sizes as the gateway.
#[derive(Clone, Default)]
struct Bare {
    receivers: Arc<Mutex<Vec<tokio::sync::mpsc::UnboundedSender<AxMessage>>>>,
}

async fn bare_socket(bare: Bare, socket: WebSocket, trigger: bool) {
    let (mut sink, mut stream) = socket.split();
    if trigger {
        while let Some(Ok(msg)) = stream.next().await {
            if let AxMessage::Text(t) = msg {
                let receivers = bare.receivers.lock().unwrap();
                for r in receivers.iter() {
                    let _ = r.send(AxMessage::Text(t.clone()));
                }
            }
        }
        return;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    bare.receivers.lock().unwrap().push(tx);
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if sink.send(m).await.is_err() {
                break;
            }
        }
    });
    while let Some(Ok(_)) = stream.next().await {}
    writer.abort();
}

fn server() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let gateway = Gateway::new(GatewayConfig {
            token: TOKEN.into(),
            server_version: "bench".into(),
            terminal: None,
            sessions: Arc::new(AnySession),
        });
        let bare = Bare::default();
        let app = Router::new()
            .route(
                "/gateway",
                get(
                    |State((g, _)): State<(Gateway, Bare)>, ws: WebSocketUpgrade| async move {
                        g.configure_upgrade(ws)
                            .on_upgrade(move |s| g.serve_socket(s))
                    },
                ),
            )
            .route(
                "/bare",
                get(
                    |State((_, b)): State<(Gateway, Bare)>, ws: WebSocketUpgrade| async move {
                        ws.read_buffer_size(4096)
                            .write_buffer_size(4096)
                            .on_upgrade(move |s| bare_socket(b, s, false))
                    },
                ),
            )
            .route(
                "/bare-trigger",
                get(
                    |State((_, b)): State<(Gateway, Bare)>, ws: WebSocketUpgrade| async move {
                        ws.on_upgrade(move |s| bare_socket(b, s, true))
                    },
                ),
            )
            .with_state((gateway, bare));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        // Serve until the parent closes our stdin.
        let stop = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        });
        tokio::select! {
            _ = axum::serve(listener, app) => {}
            _ = stop => {}
        }
    });
}

// ---- client process ------------------------------------------------------------------

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

struct Counter {
    seen: AtomicUsize,
    /// The count the waiting round needs; only the frame that reaches it wakes the waiter.
    target: AtomicUsize,
    notify: Notify,
}

async fn read_json(ws: &mut Ws) -> serde_json::Value {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).unwrap(),
            Some(Ok(_)) => continue,
            other => panic!("connection ended: {other:?}"),
        }
    }
}

/// The agent: the gateway crate's typed client.
async fn agent_client(addr: SocketAddr) -> GatewayClient {
    let options = ConnectOptions::new(TOKEN, ClientMode::Agent, vec![Scope::Write]);
    GatewayClient::connect(&format!("ws://{addr}/gateway"), options)
        .await
        .unwrap()
}

/// A UI of the fleet past the handshake. Kept as a raw socket on purpose: the fleet is the
/// measuring instrument and only counts frames; the typed client would parse every event of
/// 1,000 connections on the two cores the server runs on.
async fn gateway_client(addr: SocketAddr, mode: &str, caps: &[&str], scopes: &[&str]) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/gateway"))
        .await
        .unwrap();
    let challenge = read_json(&mut ws).await;
    assert_eq!(challenge["event"], "connect.challenge");
    let connect = json!({"type": "req", "id": "c", "method": "connect", "params": {
        "minProtocol": 1, "maxProtocol": 1,
        "client": {"id": "bench", "version": "0", "platform": "linux", "mode": mode},
        "caps": caps, "role": "operator", "scopes": scopes, "auth": {"token": TOKEN}}});
    ws.send(Message::text(connect.to_string())).await.unwrap();
    let hello = read_json(&mut ws).await;
    assert_eq!(hello["ok"], true, "{hello}");
    ws
}

/// Count `needle` frames on `ws` until it closes.
fn count_frames(
    mut ws: Ws,
    counter: Arc<Counter>,
    needle: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(Ok(msg)) = ws.next().await {
            if let Message::Text(t) = msg
                && t.contains(needle)
            {
                let seen = counter.seen.fetch_add(1, Ordering::AcqRel) + 1;
                if seen == counter.target.load(Ordering::Acquire) {
                    counter.notify.notify_one();
                }
            }
        }
    })
}

/// Wait until `target` frames were counted (the target was set before the send).
async fn wait_count(counter: &Counter, target: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let notified = counter.notify.notified();
        if counter.seen.load(Ordering::Acquire) >= target {
            return;
        }
        assert!(Instant::now() < deadline, "fan-out stalled");
        let _ = tokio::time::timeout(Duration::from_secs(1), notified).await;
    }
}

struct Stats {
    median: Duration,
    p99: Duration,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        median: at(0.5),
        p99: at(0.99),
    }
}

fn proc_cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the state field.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10) // USER_HZ = 100 on Linux
}

fn proc_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

struct Fleet {
    counter: Arc<Counter>,
    size: usize,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // The reader tasks own the sockets: ending them closes the connections.
        for r in &self.readers {
            r.abort();
        }
    }
}

impl Fleet {
    fn new() -> Fleet {
        Fleet {
            counter: Arc::new(Counter {
                seen: AtomicUsize::new(0),
                target: AtomicUsize::new(usize::MAX),
                notify: Notify::new(),
            }),
            size: 0,
            readers: Vec::new(),
        }
    }
}

async fn grow_gateway(addr: SocketAddr, fleet: &mut Fleet, to: usize) -> Duration {
    let start = Instant::now();
    let mut tasks = Vec::new();
    // At most 64 handshakes in flight: 1,000 simultaneous SYNs overflow the listen backlog
    // and the retransmission after 1 s would be measured instead of the gateway.
    let gate = Arc::new(tokio::sync::Semaphore::new(64));
    for _ in fleet.size..to {
        let gate = gate.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await.unwrap();
            gateway_client(addr, "ui", &["ui-commands"], &["operator.read"]).await
        }));
    }
    for t in tasks {
        let reader = count_frames(t.await.unwrap(), fleet.counter.clone(), "\"ui.command\"");
        fleet.readers.push(reader);
    }
    fleet.size = to;
    start.elapsed()
}

async fn grow_bare(addr: SocketAddr, fleet: &mut Fleet, to: usize) {
    for _ in fleet.size..to {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/bare"))
            .await
            .unwrap();
        let reader = count_frames(ws, fleet.counter.clone(), "\"ui.command\"");
        fleet.readers.push(reader);
    }
    fleet.size = to;
}

/// Time from sending one command until the last UI of the fleet has it, `rounds` times.
async fn rounds_gateway(agent: &GatewayClient, fleet: &Fleet, rounds: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(rounds);
    let params = json!({"command": {"kind": "focus", "sessionKey": SESSION}});
    for _ in 0..rounds {
        let target = fleet.counter.seen.load(Ordering::Acquire) + fleet.size;
        fleet.counter.target.store(target, Ordering::Release);
        let t0 = Instant::now();
        let pending = agent.send(Method::UiCommand, params.clone()).await.unwrap();
        wait_count(&fleet.counter, target).await;
        times.push(t0.elapsed());
        // The response is read too, so nothing backs up.
        pending.response().await.unwrap();
    }
    times
}

async fn rounds_bare(trigger: &mut Ws, fleet: &Fleet, rounds: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(rounds);
    // The same bytes a gateway UI receives.
    let frame = json!({"type": "event", "event": "ui.command", "payload": {
        "command": {"kind": "focus", "sessionKey": SESSION}, "commandId": "cmd_0123456789abcdef"},
        "seq": 2})
    .to_string();
    for _ in 0..rounds {
        let target = fleet.counter.seen.load(Ordering::Acquire) + fleet.size;
        fleet.counter.target.store(target, Ordering::Release);
        let t0 = Instant::now();
        trigger.send(Message::text(frame.clone())).await.unwrap();
        wait_count(&fleet.counter, target).await;
        times.push(t0.elapsed());
    }
    times
}

fn client() {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .env("AX_BENCH_ROLE", "server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: SocketAddr = line.trim().parse().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        println!("gateway fan-out benchmark (server pid {pid}, {addr})");
        println!("{:>6}  {:>22}  {:>22}", "UIs", "gateway median / p99", "bare WS median / p99");

        let agent = agent_client(addr).await;
        let (mut trigger, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/bare-trigger"))
            .await
            .unwrap();
        let mut gw = Fleet::new();
        let mut bare = Fleet::new();
        for (n, rounds) in [(1usize, 400usize), (100, 200)] {
            grow_gateway(addr, &mut gw, n).await;
            grow_bare(addr, &mut bare, n).await;
            let g = stats(rounds_gateway(&agent, &gw, rounds).await);
            let b = stats(rounds_bare(&mut trigger, &bare, rounds).await);
            println!(
                "{n:>6}  {:>10.3?} / {:>9.3?}  {:>10.3?} / {:>9.3?}",
                g.median, g.p99, b.median, b.p99
            );
        }

        // 1,000: a fresh fleet, connected all at once, on an otherwise idle gateway.
        drop(gw);
        drop(agent);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss_before = proc_rss_kib(pid);
        let mut gw = Fleet::new();
        let connect = grow_gateway(addr, &mut gw, 1000).await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let rss_after = proc_rss_kib(pid);
        let agent = agent_client(addr).await;

        let bare_before = proc_rss_kib(pid);
        grow_bare(addr, &mut bare, 1000).await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let bare_per_conn = proc_rss_kib(pid).saturating_sub(bare_before) as f64 / 900.0;
        let cpu0 = proc_cpu(pid);
        let g_times = rounds_gateway(&agent, &gw, 200).await;
        let cpu1 = proc_cpu(pid);
        let b_times = rounds_bare(&mut trigger, &bare, 200).await;
        let cpu2 = proc_cpu(pid);
        let (g, b) = (stats(g_times), stats(b_times));
        println!(
            "{:>6}  {:>10.3?} / {:>9.3?}  {:>10.3?} / {:>9.3?}",
            1000, g.median, g.p99, b.median, b.p99
        );
        let frames = 200.0 * 1000.0;
        println!(
            "server CPU per delivered frame: gateway {:.2} µs, bare {:.2} µs (200 × 1,000 frames each)",
            (cpu1 - cpu0).as_secs_f64() * 1e6 / frames,
            (cpu2 - cpu1).as_secs_f64() * 1e6 / frames,
        );
        println!(
            "1,000 UIs connected (WebSocket + challenge + connect + hello-ok, 64 at a time) in {connect:.1?}"
        );
        println!(
            "server memory per idle gateway connection: {:.1} KiB ({} KiB RSS for 1,000)",
            (rss_after.saturating_sub(rss_before)) as f64 / 1000.0,
            rss_after.saturating_sub(rss_before)
        );
        println!("server memory per idle bare WebSocket connection: {bare_per_conn:.1} KiB");
    });
    drop(child.stdin.take());
    let _ = child.wait();
}
