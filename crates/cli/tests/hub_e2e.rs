//! Several machines end to end, as real processes (docs/hub.md): a nats-server with
//! JetStream, two `ax-code serve --join` backends in their own data directories and projects,
//! one `ax-code hub`, and an HTTP client listing both machines' sessions through the hub. A
//! backend killed is shown offline with its sessions as last seen; started again, once.

mod support;

use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use ax_hub::testing::NatsServer;
use serde_json::Value;
use support::{Env, Reaped, line_channel, signal};

/// Generous: an offline machine is noticed after three missed 2 s heartbeats.
const LONG_WAIT: Duration = Duration::from_secs(45);
const HUB_PASSWORD: &str = "hub-e2e-credential-0123456789abcdef";

/// Reads stdout lines until one starts with `prefix`.
fn line_starting(lines: &Receiver<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(LONG_WAIT)
            .unwrap_or_else(|_| panic!("no line starting {prefix:?}"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

fn url_in(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned()
}

/// `ax-code serve --port 0 --join NATS --name NAME` in `env`: (process, backend URL).
fn serve_joined(env: &Env, nats: &str, name: &str, password: &str) -> (Reaped, String) {
    let mut child = env
        .command(&["serve", "--port", "0", "--join", nats, "--name", name])
        .env("AX_CODE_SERVER_PASSWORD", password)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = line_channel(child.stdout.take().unwrap());
    let url = url_in(&line_starting(&lines, "ax-code backend"));
    let joined = line_starting(&lines, "Joined");
    assert!(joined.contains(name), "{joined}");
    (Reaped(child), url)
}

async fn poll<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    tokio::time::timeout(LONG_WAIT, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for: {what}"))
}

async fn get(http: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = http
        .get(url)
        .bearer_auth(HUB_PASSWORD)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn machine<'a>(all: &'a Value, name: &str) -> Option<&'a Value> {
    all.as_array()?.iter().find(|m| m["machine"] == name)
}

fn titles(entry: &Value) -> Vec<String> {
    entry["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_joined_backends_are_listed_through_one_hub() {
    let nats = NatsServer::start();
    let (laptop_env, box_env) = (Env::new(), Env::new());
    let (mut laptop, laptop_url) = serve_joined(
        &laptop_env,
        &nats.url(),
        "laptop",
        "pw-laptop-0123456789abcdef",
    );
    let (_box2, box_url) = serve_joined(
        &box_env,
        &nats.url(),
        "workstation",
        "pw-box-0123456789abcdef",
    );

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    for (url, password, title) in [
        (&laptop_url, "pw-laptop-0123456789abcdef", "on-the-laptop"),
        (&box_url, "pw-box-0123456789abcdef", "on-the-workstation"),
    ] {
        let created = http
            .post(format!("{url}/session"))
            .bearer_auth(password)
            .json(&serde_json::json!({"title": title}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
    }

    let mut hub_child = laptop_env
        .command(&["hub", "--nats", &nats.url(), "--port", "0"])
        .env("AX_CODE_HUB_PASSWORD", HUB_PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let hub_lines = line_channel(hub_child.stdout.take().unwrap());
    let _hub = Reaped(hub_child);
    let hub = url_in(&line_starting(&hub_lines, "ax-code hub listening on"));

    // Both machines, their projects, and each one's sessions, answered live.
    let all = poll("both machines' sessions through the hub", async || {
        let (status, all) = get(&http, &format!("{hub}/session")).await;
        let both = status == 200
            && ["laptop", "workstation"].iter().all(|m| {
                machine(&all, m).is_some_and(|e| e["online"] == true && e["lastSeen"] == false)
            });
        both.then_some(all)
    })
    .await;
    assert_eq!(titles(machine(&all, "laptop").unwrap()), ["on-the-laptop"]);
    assert_eq!(
        titles(machine(&all, "workstation").unwrap()),
        ["on-the-workstation"]
    );
    let (status, machines) = get(&http, &format!("{hub}/machine")).await;
    assert_eq!(status, 200);
    let project_of = |name: &str| {
        machines
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .map(|m| m["project"].as_str().unwrap().to_owned())
    };
    assert_eq!(project_of("laptop").as_deref(), laptop_env.project.to_str());
    assert_eq!(
        project_of("workstation").as_deref(),
        box_env.project.to_str()
    );
    let id = machine(&all, "laptop").unwrap()["sessions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, messages) =
        get(&http, &format!("{hub}/machine/laptop/session/{id}/message")).await;
    assert_eq!(status, 200, "{messages}");
    assert_eq!(messages, serde_json::json!([]));
    // Without the hub's credential: refused.
    let anonymous = http.get(format!("{hub}/session")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);

    // The laptop's backend is killed: offline, its sessions as last seen.
    signal(laptop.0.id(), "KILL");
    let _ = laptop.0.wait();
    let all = poll("the laptop offline on the hub", async || {
        let (_, all) = get(&http, &format!("{hub}/session")).await;
        machine(&all, "laptop")
            .is_some_and(|e| e["online"] == false)
            .then_some(all)
    })
    .await;
    let seen = machine(&all, "laptop").unwrap();
    assert_eq!(seen["lastSeen"], true);
    assert_eq!(titles(seen), ["on-the-laptop"]);
    assert_eq!(machine(&all, "workstation").unwrap()["online"], true);
    // And, once its heartbeats stopped, offline in the machine list too.
    poll("the laptop's heartbeats missed", async || {
        let (_, machines) = get(&http, &format!("{hub}/machine")).await;
        machines
            .as_array()?
            .iter()
            .any(|m| m["name"] == "laptop" && m["online"] == false)
            .then_some(())
    })
    .await;

    // Started again on the same data directory: back, once.
    let (_laptop_again, _) = serve_joined(
        &laptop_env,
        &nats.url(),
        "laptop",
        "pw-laptop-0123456789abcdef",
    );
    let all = poll("the laptop back on the hub", async || {
        let (_, all) = get(&http, &format!("{hub}/session")).await;
        machine(&all, "laptop")
            .is_some_and(|e| e["online"] == true && e["lastSeen"] == false)
            .then_some(all)
    })
    .await;
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    assert_eq!(titles(machine(&all, "laptop").unwrap()), ["on-the-laptop"]);
}

#[test]
fn serve_refuses_a_bad_machine_name_and_name_without_join() {
    let env = Env::new();
    let out = support::output_bounded(
        &mut env.command(&[
            "serve",
            "--port",
            "0",
            "--join",
            "nats://127.0.0.1:1",
            "--name",
            "Bad.Name",
        ]),
        support::WAIT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--name") && err.contains("a-z"), "{err}");
    let out = support::output_bounded(
        &mut env.command(&["serve", "--port", "0", "--name", "laptop"]),
        support::WAIT,
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--join"));
}

/// docs/SECURITY.md, "Several machines": without NATS credentials a server beyond loopback is
/// joined only when the person says its network is trusted; the refusal says how to tunnel.
#[test]
fn serve_joins_a_nats_server_beyond_loopback_only_when_trusted() {
    let env = Env::new();
    let out = support::output_bounded(
        &mut env.command(&["serve", "--port", "0", "--join", "nats://192.0.2.1:4222"]),
        support::WAIT,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not on this machine's loopback")
            && err.contains("ssh -L")
            && err.contains("--trust-nats-network"),
        "{err}"
    );
    let out = support::output_bounded(
        &mut env.command(&["serve", "--port", "0", "--trust-nats-network"]),
        support::WAIT,
    );
    assert!(!out.status.success(), "--trust-nats-network needs --join");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--join"));
}

#[test]
fn the_hub_flags_are_described_in_help() {
    for (args, flags) in [
        (
            &["serve", "--help"][..],
            &["--join <URL>", "--name <NAME>", "--trust-nats-network"][..],
        ),
        (
            &["hub", "--help"][..],
            &["--nats <URL>", "--port <PORT>"][..],
        ),
    ] {
        let out = support::output_bounded(
            std::process::Command::new(support::AX)
                .args(args)
                .env("COLUMNS", "200"),
            support::WAIT,
        );
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        for flag in flags {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(flag))
                .unwrap_or_else(|| panic!("{flag} in {help}"));
            let (_, text) = line.trim_start().split_once("  ").expect("a description");
            assert!(!text.trim().is_empty(), "{line}");
        }
    }
}

/// docs/hub.md §1: a wrong NATS password is refused at start, naming the user, never the
/// password (given by the environment, so no process listing shows it).
#[test]
fn serve_and_hub_refuse_a_wrong_nats_password_without_showing_it() {
    use ax_hub::{
        MachineName,
        nats::{backend_permissions, hub_permissions},
        testing::NatsUser,
    };
    let nats = NatsServer::start_with_users(&[
        NatsUser {
            user: "laptop".into(),
            password: "right-laptop-pw".into(),
            permissions: backend_permissions(&MachineName::new("laptop").unwrap()),
        },
        NatsUser {
            user: "hub".into(),
            password: "right-hub-pw".into(),
            permissions: hub_permissions(),
        },
    ]);
    let env = Env::new();
    let url = nats.url();
    let serve = ["serve", "--port", "0", "--join", &url, "--name", "laptop"];
    let mut args = serve.to_vec();
    args.extend(["--nats-user", "laptop"]);
    let mut command = env.command(&args);
    command.env("AX_CODE_NATS_PASSWORD", "wrong-pw-123");
    let out = support::output_bounded(&mut command, support::WAIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused NATS user \"laptop\""), "{err}");
    assert!(!err.contains("wrong-pw-123"), "{err}");

    let mut command = env.command(&["hub", "--nats", &url, "--port", "0", "--nats-user", "hub"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pw");
    std::fs::write(&file, "wrong-hub-pw\n").unwrap();
    command.arg("--nats-password-file").arg(&file);
    let out = support::output_bounded(&mut command, support::WAIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused NATS user \"hub\""), "{err}");
    assert!(!err.contains("wrong-hub-pw"), "{err}");

    // A user without a password is refused before connecting.
    let mut command = env.command(&args);
    command.env_remove("AX_CODE_NATS_PASSWORD");
    let out = support::output_bounded(&mut command, support::WAIT);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("AX_CODE_NATS_PASSWORD"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
