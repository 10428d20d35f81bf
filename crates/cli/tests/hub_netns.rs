//! Several machines as separate networks (docs/hub.md §5): three `ax-code serve --join`
//! backends, each in a network namespace of its own joined to the hub's namespace by one
//! virtual link, and `ax-code hub` with nats-server in that hub namespace. It proves what the
//! loopback tests cannot: a backend reaches the hub only by connecting out to NATS (the hub
//! cannot reach a backend's port, and no machine reaches another's network), and a machine
//! cut off from the network is shown offline, then catches up without gaps or duplicates
//! when its link comes back.
//!
//! The test runs itself again inside a fresh network namespace (and a user namespace when not
//! run as root, `unshare --map-root-user`), so every link and address it makes lives in
//! namespaces of its own and is gone with its processes; the machine's own network is never
//! touched. Addresses are 10.77.N.0/30, one subnet per machine, only inside those namespaces.

mod support;

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use ax_hub::testing::NatsServer;
use serde_json::Value;
use support::{
    Env, HUB_WAIT as LONG_WAIT, Reaped, line_channel, machine_entry as entry, read_events_until,
    session_titles as titles,
};

/// Set in the re-run inside the fresh namespace.
const INSIDE: &str = "AX_TEST_NETNS_INSIDE";
const HUB_PASSWORD: &str = "hub-netns-credential-0123456789abcdef";

/// Runs `program args`, asserting it succeeds.
fn run(program: &str, args: &[&str]) {
    let out = support::output_bounded(Command::new(program).args(args), support::WAIT);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One machine's network: a namespace held open by a sleeping process, linked to the hub's
/// namespace by a veth pair `axN` (hub side, 10.77.N.1) / `axNm` (machine side, 10.77.N.2).
struct MachineNet {
    holder: Child,
    n: u8,
}

impl MachineNet {
    fn new(n: u8) -> MachineNet {
        let holder = Command::new("unshare")
            .args(["--net", "--", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare (util-linux) starts a process in a new network namespace");
        // `unshare` execs `sleep` once the namespace exists; wait until it has.
        let net = format!("/proc/{}/ns/net", holder.id());
        let own = std::fs::read_link("/proc/self/ns/net").unwrap();
        let deadline = std::time::Instant::now() + support::WAIT;
        while !(std::fs::read_link(&net).is_ok_and(|ns| ns != own)
            && std::fs::read_to_string(format!("/proc/{}/comm", holder.id()))
                .is_ok_and(|c| c.trim() == "sleep"))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "no namespace for machine {n}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let net = MachineNet { holder, n };
        let (hub_end, machine_end) = (format!("ax{n}"), format!("ax{n}m"));
        run(
            "ip",
            &[
                "link",
                "add",
                &hub_end,
                "type",
                "veth",
                "peer",
                "name",
                &machine_end,
            ],
        );
        run(
            "ip",
            &[
                "link",
                "set",
                &machine_end,
                "netns",
                &net.holder.id().to_string(),
            ],
        );
        run(
            "ip",
            &["addr", "add", &format!("10.77.{n}.1/30"), "dev", &hub_end],
        );
        run("ip", &["link", "set", &hub_end, "up"]);
        for args in [
            &[
                "ip",
                "addr",
                "add",
                &format!("10.77.{n}.2/30"),
                "dev",
                &machine_end,
            ][..],
            &["ip", "link", "set", &machine_end, "up"],
            &["ip", "link", "set", "lo", "up"],
        ] {
            run(
                "nsenter",
                &[&[net.enter().as_str(), "--"][..], args].concat(),
            );
        }
        net
    }

    /// `nsenter`'s option that enters this namespace.
    fn enter(&self) -> String {
        format!("--net=/proc/{}/ns/net", self.holder.id())
    }

    /// The hub's address as this machine sees it.
    fn hub_address(&self) -> String {
        format!("10.77.{}.1", self.n)
    }

    /// Takes the link down (`false`) or up again, on the hub's side.
    fn link(&self, up: bool) {
        let state = if up { "up" } else { "down" };
        run("ip", &["link", "set", &format!("ax{}", self.n), state]);
    }
}

impl Drop for MachineNet {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// One machine: its network, its directories and its `serve --join` process.
struct Machine {
    net: MachineNet,
    env: Env,
    name: String,
    password: String,
    _serve: Reaped,
    port: u16,
}

impl Machine {
    fn start(n: u8, nats_port: u16) -> Machine {
        let net = MachineNet::new(n);
        let env = Env::new();
        let name = format!("m{n}");
        let password = format!("pw-{name}-0123456789abcdef");
        let nats = format!("nats://{}:{nats_port}", net.hub_address());
        let mut child = env
            .command_via(
                &["nsenter", &net.enter(), "--"],
                &[
                    "serve",
                    "--port",
                    "0",
                    "--join",
                    &nats,
                    "--name",
                    &name,
                    "--trust-nats-network",
                ],
            )
            .env("AX_CODE_SERVER_PASSWORD", &password)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = line_channel(child.stdout.take().unwrap());
        let mut port = None;
        loop {
            let line = lines
                .recv_timeout(LONG_WAIT)
                .unwrap_or_else(|_| panic!("{name}: serve --join printed no `Joined` line"));
            if line.starts_with("ax-code backend") {
                let url = line.split_whitespace().find(|w| w.starts_with("http://"));
                port = url.and_then(|u| u.rsplit(':').next()?.trim_end_matches('/').parse().ok());
            }
            if line.starts_with("Joined") {
                break;
            }
        }
        Machine {
            net,
            env,
            name,
            password,
            _serve: Reaped(child),
            port: port.expect("the backend's URL and port"),
        }
    }

    /// `ax-code ARGS` run on this machine (in its network namespace), its stdout.
    fn ax(&self, args: &[&str]) -> String {
        let mut cmd = self
            .env
            .command_via(&["nsenter", &self.net.enter(), "--"], args);
        cmd.env("AX_CODE_SERVER_PASSWORD", &self.password);
        let out = support::output_bounded(&mut cmd, support::WAIT);
        assert!(
            out.status.success(),
            "{}: ax-code {args:?}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Whether a TCP connection from this machine's network to `addr` gets through.
    fn reaches(&self, addr: &str) -> bool {
        let (host, port) = addr.rsplit_once(':').unwrap();
        Command::new("nsenter")
            .args([&self.net.enter(), "--", "bash", "-c"])
            .arg(format!("exec 3<>/dev/tcp/{host}/{port}"))
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

struct Hub {
    http: reqwest::Client,
    url: String,
}

impl Hub {
    async fn get(&self, path: &str) -> (u16, Value) {
        let request = self.http.get(format!("{}{path}", self.url));
        support::hub_call(request, HUB_PASSWORD).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let request = self.http.post(format!("{}{path}", self.url)).json(&body);
        support::hub_call(request, HUB_PASSWORD).await
    }

    /// Waits until `check` finds what it looks for in the hub's `GET /session`.
    async fn wait_sessions<T>(&self, what: &str, check: impl Fn(&Value) -> Option<T>) -> T {
        tokio::time::timeout(LONG_WAIT, async {
            loop {
                let (status, all) = self.get("/session").await;
                if status == 200
                    && let Some(found) = check(&all)
                {
                    return found;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for: {what}"))
    }
}

#[test]
fn three_machines_in_network_namespaces_reach_the_hub_only_through_nats() {
    if std::env::var_os(INSIDE).is_none() {
        // Again, alone, in a network namespace of its own (see the module's doc).
        let root = effective_uid() == Some(0);
        let mut unshare = Command::new("unshare");
        if !root {
            unshare.arg("--map-root-user");
        }
        let status = unshare
            .args(["--net", "--"])
            .arg(std::env::current_exe().unwrap())
            .args([
                "three_machines_in_network_namespaces_reach_the_hub_only_through_nats",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(INSIDE, "1")
            .status()
            .expect("unshare (util-linux) runs the test in a new network namespace");
        assert!(status.success(), "the test inside its namespace failed");
        return;
    }
    inside();
}

/// This process's effective user id, from `/proc/self/status`.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

fn inside() {
    // A new network namespace starts with its loopback down.
    run("ip", &["link", "set", "lo", "up"]);
    let nats = NatsServer::start_on_all_interfaces();
    let hub_env = Env::new();
    let (_hub_process, hub_url) = support::start_hub(&hub_env, &nats.url(), HUB_PASSWORD);
    let hub_port: u16 = hub_url.rsplit(':').next().unwrap().parse().unwrap();
    let machines: Vec<Machine> = (1..=3).map(|n| Machine::start(n, nats.port())).collect();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let hub = Hub {
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            url: hub_url,
        };
        for m in &machines {
            m.ax(&["session", "create", "--title", &format!("on-{}", m.name)]);
        }
        // Every machine, online, with its own project and session, through the hub.
        hub.wait_sessions("three machines online with their sessions", |all| {
            machines
                .iter()
                .all(|m| {
                    entry(all, &m.name).is_some_and(|e| {
                        e["online"] == true && titles(e) == [format!("on-{}", m.name)]
                    })
                })
                .then_some(())
        })
        .await;
        let (_, listed) = hub.get("/machine").await;
        for m in &machines {
            let record = listed
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == m.name.as_str())
                .unwrap_or_else(|| panic!("{} in {listed}", m.name));
            assert_eq!(record["project"], m.env.project.to_str().unwrap());
        }

        // The hub's network cannot reach a backend (each listens in its own namespace), and
        // no machine reaches another machine's network: only the way out to NATS is open.
        let nats_port = nats.port();
        for m in &machines {
            // (Unless that port number is, by chance, the hub's or NATS's here.)
            if ![hub_port, nats_port].contains(&m.port) {
                assert!(
                    std::net::TcpStream::connect(("127.0.0.1", m.port)).is_err(),
                    "{}'s backend port {} answers in the hub's namespace",
                    m.name,
                    m.port
                );
            }
            assert!(
                m.reaches(&format!("{}:{nats_port}", m.net.hub_address())),
                "{} reaches NATS",
                m.name
            );
            for other in machines.iter().filter(|o| o.n() != m.n()) {
                assert!(
                    !m.reaches(&format!("10.77.{}.2:{}", other.n(), other.port)),
                    "{} reaches {}'s network",
                    m.name,
                    other.name
                );
            }
        }

        // A prompt through the hub to the third machine, approved there, its output read back.
        let m3 = &machines[2];
        let (status, session) = hub
            .post(
                &format!("/machine/{}/session", m3.name),
                serde_json::json!({"title": "remote"}),
            )
            .await;
        assert_eq!(status, 201, "{session}");
        let sid = session["id"].as_str().unwrap();
        let (status, accepted) = hub
            .post(
                &format!("/machine/{}/session/{sid}/prompt", m3.name),
                serde_json::json!({"parts": [{"type": "text", "text": "echo via-nats-$((40+2))"}]}),
            )
            .await;
        assert_eq!(status, 202, "{accepted}");
        let pid = accepted["permission"]["id"].as_str().unwrap();
        let (status, answered) = hub
            .post(
                &format!("/machine/{}/session/{sid}/permission/{pid}", m3.name),
                serde_json::json!({"reply": "once"}),
            )
            .await;
        assert_eq!(status, 200, "{answered}");
        tokio::time::timeout(LONG_WAIT, async {
            loop {
                let (_, messages) = hub
                    .get(&format!("/machine/{}/session/{sid}/message", m3.name))
                    .await;
                if messages.to_string().contains("via-nats-42") {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the command's output through the hub");

        // The second machine's link goes down: offline on the hub, as last seen, while the
        // others stay online; it keeps working on its own meanwhile.
        let m2 = &machines[1];
        m2.net.link(false);
        hub.wait_sessions("m2 offline, the others online", |all| {
            let away = entry(all, &m2.name)?;
            (away["online"] == false
                && away["lastSeen"] == true
                && ["m1", "m3"]
                    .iter()
                    .all(|m| entry(all, m).is_some_and(|e| e["online"] == true)))
            .then_some(())
        })
        .await;
        m2.ax(&["session", "create", "--title", "while-cut"]);

        // Back: online again with what it did while cut off, each session once.
        m2.net.link(true);
        let back = hub
            .wait_sessions(
                "m2 online again with its session made while cut off",
                |all| {
                    let e = entry(all, &m2.name)?;
                    (e["online"] == true && titles(e).iter().any(|t| t == "while-cut"))
                        .then(|| e.clone())
                },
            )
            .await;
        let mut seen = titles(&back);
        seen.sort_unstable();
        assert_eq!(seen, ["on-m2", "while-cut"], "{back}");
        // Its events through the hub: the session made while cut off, once.
        let events = hub
            .http
            .get(format!("{}/event?machine=m2&after=0", hub.url))
            .bearer_auth(HUB_PASSWORD)
            .send()
            .await
            .unwrap();
        assert_eq!(events.status(), 200);
        let mut events = Box::pin(events.bytes_stream());
        let created = read_events_until(&mut events, "m2's session made while cut off", |events| {
            let created: Vec<String> = events
                .iter()
                .filter(|e| e.data["event"]["event"]["type"] == "session.created")
                .filter_map(|e| e.data["event"]["event"]["session"]["title"].as_str())
                .map(str::to_owned)
                .collect();
            created.iter().any(|t| t == "while-cut").then_some(created)
        })
        .await;
        assert_eq!(created, ["on-m2", "while-cut"]);
    });
}

impl Machine {
    fn n(&self) -> u8 {
        self.net.n
    }
}
