//! What a hub costs (docs/hub.md §7, figures in docs/PERFORMANCE-hub.md), against a real
//! `nats-server` and real backends in this process:
//!
//! - the latency a hub adds to an event's way from a backend's agent to a client at 1,000
//!   events/s: each timed chunk is stamped when the agent writes it, and taken when it reaches
//!   a client of the backend's own `/event` and a client of the hub's `/event`;
//! - `GET /session` through a hub over 10 machines × 1,000 sessions, twice: with the
//!   backends and their joins in this process (one runtime shared with the hub), then with
//!   each backend and its join in a child process of its own (this binary again), so the
//!   hub's process holds only the hub and the timing client.
//!
//! `cargo bench -p ax-hub --bench hub [-- latency|listing|listing-processes ...]` (no name: all
//! three). This binary is also the mock agent (started with `AX_TEST_BE_MOCK_AGENT=1` through
//! the agent's configured `env`) and a machine of the last run (`AX_BENCH_MACHINE`).

#[path = "../tests/support/mod.rs"]
mod support;

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use ax_client::Client;
use ax_hub::testing::NatsServer;
use ax_protocol::{Event, MessageId, SessionId, SessionStatus, turn::TurnDelta};
use support::{HubClient, Machine, start_hub};

/// Timed chunks in the latency run, and their rate.
const EVENTS: u64 = 10_000;
const RATE: u64 = 1_000;

/// Machines and sessions per machine in the listing run, and how many listings are timed.
const MACHINES: usize = 10;
const SESSIONS: usize = 1_000;
const LISTINGS: usize = 200;

fn main() {
    if std::env::var_os("AX_TEST_BE_MOCK_AGENT").is_some() {
        ax_mock_agent::run();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Ok(name) = std::env::var(MACHINE_VAR) {
        rt.block_on(machine_process(&name));
        return;
    }
    // `cargo bench` passes `--bench`; any other word names a run.
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |run: &str| named.is_empty() || named.iter().any(|n| n == run);
    rt.block_on(async {
        // A NATS server each, so the listing sees only its own machines.
        if wanted("latency") {
            latency(&NatsServer::start()).await;
        }
        if wanted("listing") {
            listing(&NatsServer::start()).await;
        }
        if wanted("listing-processes") {
            listing_processes(&NatsServer::start()).await;
        }
    });
}

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

/// The stamps (`t<unix ns>`) in a text delta.
fn stamps(delta: &TurnDelta) -> Vec<i128> {
    match delta {
        TurnDelta::TextAppended { text } => text
            .split_whitespace()
            .filter_map(|s| s.strip_prefix('t').and_then(|n| n.parse().ok()))
            .collect(),
        _ => Vec::new(),
    }
}

/// When each timed chunk of one reply reached a reader of the event stream.
struct Arrivals {
    reply: MessageId,
    session: SessionId,
    /// The reply's first delta has come (the idle status before it is the previous turn's).
    seen: bool,
    /// Stamp → arrival, in ns.
    at: HashMap<i128, i128>,
}

impl Arrivals {
    fn new(reply: MessageId, session: SessionId) -> Arrivals {
        Arrivals {
            reply,
            session,
            seen: false,
            at: HashMap::new(),
        }
    }

    /// Notes `event`'s chunks; true once the session went idle after the reply.
    fn note(&mut self, event: Event) -> bool {
        match event {
            Event::MessageDelta {
                message_id, delta, ..
            } if message_id == self.reply => {
                self.seen = true;
                let now = now_ns();
                for stamp in stamps(&delta) {
                    self.at.insert(stamp, now);
                }
                false
            }
            Event::SessionStatus { session_id, status } => {
                self.seen && session_id == self.session && status == SessionStatus::Idle
            }
            _ => false,
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn report(what: &str, mut ms: Vec<f64>) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "  {what}: {} samples, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms.len(),
        percentile(&ms, 0.50),
        percentile(&ms, 0.99),
        ms.last().copied().unwrap_or(0.0)
    );
}

async fn latency(nats: &NatsServer) {
    let exe = std::env::current_exe().unwrap();
    let agents = format!(
        "[agents.mock]\ncommand = {:?}\nenv = {{ AX_TEST_BE_MOCK_AGENT = \"1\" }}\n",
        exe.to_string_lossy()
    );
    let machine = Machine::start_with(nats, "bench", None, |config| {
        config.agents = ax_acp::AgentsConfig::parse(Path::new("bench.toml"), &agents).unwrap();
    })
    .await;
    let hub = start_hub(nats).await;
    let api = HubClient::new(hub.url());
    api.wait_machine("bench", |m| m.online).await;
    let client = &machine.client;
    let id = client
        .create_session_with(None, Some("mock"))
        .await
        .unwrap()
        .id;
    // Warm up: the agent process starts with the first prompt.
    run_turn(client, &id, "text warm").await;

    // Both readers start from now: the hub's from its newest sequence.
    let mut backend_events = client.events(None);
    while !backend_events.is_connected() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut hub_events = api.events("?machine=bench", None).await;
    let marker = client.create_session(Some("marker")).await.unwrap().id;
    hub_events
        .next_matching(
            |e| matches!(&e.event.event, Event::SessionCreated { session } if session.id == marker),
        )
        .await;

    let script = format!("flood-timed {EVENTS} {RATE}");
    let reply = client.prompt_text(&id, &script).await.unwrap().reply_id;
    let direct = {
        let reply = reply.clone();
        let id = id.clone();
        tokio::spawn(async move {
            let mut arrivals = Arrivals::new(reply, id);
            loop {
                let e = backend_events.next().await.unwrap().unwrap();
                if arrivals.note(e.event) {
                    return arrivals.at;
                }
            }
        })
    };
    let mut arrivals = Arrivals::new(reply, id);
    loop {
        let (_, e) = hub_events.next().await;
        if arrivals.note(e.event.event) {
            break;
        }
    }
    let through_hub = arrivals.at;
    let direct = direct.await.unwrap();
    assert_eq!(
        direct.len() as u64,
        EVENTS,
        "every chunk reached the backend's client"
    );
    assert_eq!(
        through_hub.len() as u64,
        EVENTS,
        "every chunk reached the hub's client"
    );

    let ms = |ns: i128| ns as f64 / 1e6;
    let mut to_backend = Vec::new();
    let mut to_hub = Vec::new();
    let mut added = Vec::new();
    for (stamp, at_backend) in &direct {
        let at_hub = through_hub[stamp];
        to_backend.push(ms(at_backend - stamp));
        to_hub.push(ms(at_hub - stamp));
        added.push(ms(at_hub - at_backend));
    }
    println!("an event's way from the agent at {RATE} events/s ({EVENTS} timed chunks):");
    report("agent → backend's /event client", to_backend);
    report("agent → backend → NATS → hub's /event client", to_hub);
    report(
        "added by the hub (hub client − backend client, per chunk)",
        added,
    );
    drop(hub);
}

/// Sends `script` and waits until the session is idle again.
async fn run_turn(client: &Client, id: &ax_protocol::SessionId, script: &str) {
    let reply = client.prompt_text(id, script).await.unwrap().reply_id;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let session = client.get_session(id).await.unwrap();
        let messages = client.messages(id).await.unwrap();
        let answered = messages
            .iter()
            .any(|m| m.id == reply && !m.parts.is_empty());
        if session.status == SessionStatus::Idle && answered {
            return;
        }
        assert!(Instant::now() < deadline, "the warm-up turn ended in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn listing(nats: &NatsServer) {
    let mut machines = Vec::new();
    for i in 0..MACHINES {
        machines.push(Machine::start(nats, &format!("m{i}")).await);
    }
    let t0 = Instant::now();
    futures_util::future::join_all(machines.iter().map(|m| async move {
        for s in 0..SESSIONS {
            m.client
                .create_session(Some(&format!("session {s} on {}", m.name)))
                .await
                .unwrap();
        }
    }))
    .await;
    println!(
        "listing {MACHINES} machines × {SESSIONS} sessions through a hub ({:.1} s to create them):",
        t0.elapsed().as_secs_f64()
    );
    let clients: Vec<Client> = machines.iter().map(|m| m.client.clone()).collect();
    time_listings(nats, &clients, "in this process", false).await;
    for m in machines {
        drop(m);
    }
}

/// Times `GET /session` on a new hub over the machines `m0`… of `nats`, then the same
/// listings asked of the backends (`clients`) straight, at once. With `change`, a session
/// of every machine is renamed before each listing (not timed), so no machine's answer is
/// the one before (the hub reads every listing in full), and the straight listings are not
/// timed again.
async fn time_listings(nats: &NatsServer, clients: &[Client], machines_where: &str, change: bool) {
    let hub = start_hub(nats).await;
    let api = HubClient::new(hub.url());
    for i in 0..clients.len() {
        api.wait_machine(&format!("m{i}"), |v| v.online).await;
    }
    let mut renamed = Vec::new();
    for client in clients {
        renamed.push(client.list_sessions().await.unwrap()[0].id.clone());
    }
    let machines_where = if change {
        format!("{machines_where}, each machine's listing changed before each")
    } else {
        machines_where.to_owned()
    };
    let mut ms = Vec::with_capacity(LISTINGS);
    let mut cpu = Vec::with_capacity(LISTINGS);
    let mut bytes = 0;
    for i in 0..LISTINGS + 10 {
        if change {
            for (client, id) in clients.iter().zip(&renamed) {
                client
                    .rename_session(id, &format!("renamed {i}"))
                    .await
                    .unwrap();
            }
        }
        let (t, on_cpu) = (Instant::now(), process_cpu_ns());
        let response = api.get("/session").await;
        assert_eq!(response.status(), 200);
        let body = response.bytes().await.unwrap();
        let took = t.elapsed().as_secs_f64() * 1e3;
        let used = process_cpu_ns().saturating_sub(on_cpu) as f64 / 1e6;
        if i >= 10 {
            ms.push(took);
            cpu.push(used);
        }
        bytes = body.len();
        let all: Vec<ax_hub::hub::MachineSessions> = serde_json::from_slice(&body).unwrap();
        assert_eq!(all.len(), MACHINES);
        assert!(all.iter().all(|m| m.online && m.sessions.len() == SESSIONS));
    }
    report(
        &format!(
            "GET /session ({} KiB, live from each machine; machines {machines_where})",
            bytes / 1024
        ),
        ms,
    );
    report(
        "CPU time of this process (the hub, and the client reading the answer) per GET /session",
        cpu,
    );
    if change {
        return;
    }
    // The same listings asked of the backends straight, at once: what the hub adds is the
    // difference.
    let mut direct = Vec::with_capacity(LISTINGS);
    for _ in 0..LISTINGS {
        let t = Instant::now();
        let lists = futures_util::future::join_all(clients.iter().map(|c| c.list_sessions())).await;
        direct.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(lists.iter().all(|l| l.as_ref().unwrap().len() == SESSIONS));
    }
    report("the 10 backends' GET /session straight, at once", direct);
    drop(hub);
}

/// CPU time of this process so far, all its threads (ns, from `/proc/self/task/*/schedstat`):
/// unlike a wall-clock time, what another process's load barely changes.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Set in a child process of [`listing_processes`]: the machine's name (its NATS URL in
/// [`NATS_VAR`]).
const MACHINE_VAR: &str = "AX_BENCH_MACHINE";
const NATS_VAR: &str = "AX_BENCH_NATS";

/// One machine of [`listing_processes`], in a child process: a backend on fresh directories
/// and its join, [`SESSIONS`] sessions made, then `ready URL TOKEN` on stdout; it stops when
/// its stdin closes.
async fn machine_process(name: &str) {
    let nats = std::env::var(NATS_VAR).expect("the NATS URL");
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    let server = ax_server::start(config).await.expect("backend starts");
    let client = Client::new(server.url(), server.token().expose()).unwrap();
    let mut join = ax_hub::join::JoinConfig::new(
        nats,
        ax_hub::MachineName::new(name).unwrap(),
        server.url(),
        server.token().clone(),
        server.project_dir().display().to_string(),
    );
    join.heartbeat = support::HEARTBEAT;
    let _join = ax_hub::join::start(join).await.expect("the join starts");
    for s in 0..SESSIONS {
        client
            .create_session(Some(&format!("session {s} on {name}")))
            .await
            .unwrap();
    }
    println!("ready {} {}", server.url(), server.token().expose());
    let _ = tokio::task::spawn_blocking(|| {
        use std::io::Read;
        std::io::stdin().read_to_end(&mut Vec::new())
    })
    .await;
    server.shutdown().await;
}

/// The listing with each backend and its join in a child process: the hub's figure without
/// ten backends sharing its runtime (they still share the machine's cores).
async fn listing_processes(nats: &NatsServer) {
    use std::io::BufRead;
    let exe = std::env::current_exe().unwrap();
    let t0 = Instant::now();
    let mut children: Vec<std::process::Child> = (0..MACHINES)
        .map(|i| {
            std::process::Command::new(&exe)
                .env(MACHINE_VAR, format!("m{i}"))
                .env(NATS_VAR, nats.url())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut clients = Vec::new();
    for child in &mut children {
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"ready"), "a machine process: {line:?}");
        clients.push(Client::new(words[1], words[2]).unwrap());
    }
    println!(
        "listing {MACHINES} machines × {SESSIONS} sessions through a hub, each machine a \
         process of its own ({:.1} s to start them and create the sessions):",
        t0.elapsed().as_secs_f64()
    );
    time_listings(nats, &clients, "in processes of their own", false).await;
    time_listings(nats, &clients, "in processes of their own", true).await;
    for mut child in children {
        drop(child.stdin.take());
        let _ = child.wait();
    }
}
