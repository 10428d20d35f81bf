//! Several machines end to end, as real processes (docs/hub.md): a nats-server with
//! JetStream, two `ax-code serve --join` backends in their own data directories and projects,
//! one `ax-code hub`, and an HTTP client listing both machines' sessions through the hub. A
//! backend killed is shown offline with its sessions as last seen; started again, once.

mod support;

use std::process::Stdio;
use std::time::Duration;

use ax_hub::testing::NatsServer;
use serde_json::Value;
use support::{
    Env, HUB_WAIT as LONG_WAIT, Reaped, line_channel, line_starting, machine_entry as machine,
    read_events_until, session_titles as titles, signal, url_in,
};

const HUB_PASSWORD: &str = "hub-e2e-credential-0123456789abcdef";

/// `ax-code serve --port 0 --join NATS --name NAME` in `env`: (process, backend URL).
fn serve_joined(env: &Env, nats: &str, name: &str, password: &str) -> (Reaped, String) {
    serve_joined_with(env, &["--join", nats, "--name", name], name, password, &[])
}

/// `ax-code serve --port 0` with `join` (the `--join` flags) and `vars` in `env`: (process,
/// backend URL).
fn serve_joined_with(
    env: &Env,
    join: &[&str],
    name: &str,
    password: &str,
    vars: &[(&str, &str)],
) -> (Reaped, String) {
    let mut child = env
        .command(&[&["serve", "--port", "0"][..], join].concat())
        .env("AX_CODE_SERVER_PASSWORD", password)
        .envs(vars.iter().copied())
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
    support::hub_call(http.get(url), HUB_PASSWORD).await
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

    let (_hub, hub) = support::start_hub(&laptop_env, &nats.url(), HUB_PASSWORD);

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
    let out = support::output_bounded(
        &mut env.command(&["serve", "--port", "0", "--share-ui-commands"]),
        support::WAIT,
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--join"));
}

/// docs/hub.md §3: `serve --join … --share-ui-commands` sends the hub what its agents send its
/// Control UIs: an agent's `ui.command`, accepted by the machine's gateway, reaches a page on
/// the hub (`GET /ui-command`); one the gateway refuses does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharing_machines_ui_commands_reach_the_hub() {
    use ax_gateway::{ClientMode, ConnectOptions, GatewayClient, Method, Scope, client};

    let nats = NatsServer::start();
    let env = Env::new();
    let password = "pw-share-0123456789abcdef";
    let nats_url = nats.url();
    let join = [
        "--join",
        &nats_url,
        "--name",
        "laptop",
        "--share-ui-commands",
    ];
    let (_laptop, laptop_url) = serve_joined_with(&env, &join, "laptop", password, &[]);
    let (_hub, hub) = support::start_hub(&env, &nats.url(), HUB_PASSWORD);

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let page = http
        .get(format!("{hub}/ui-command?machine=laptop"))
        .bearer_auth(HUB_PASSWORD)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let mut page = Box::pin(page.bytes_stream());

    let agent = GatewayClient::connect(
        &client::gateway_url(&laptop_url).unwrap(),
        ConnectOptions::new(
            ax_core::Secret::new(password.to_owned()),
            ClientMode::Agent,
            vec![Scope::Write],
        ),
    )
    .await
    .unwrap();
    // Accepted once the join's relay is one of the machine's UIs (before: UNAVAILABLE).
    let command =
        serde_json::json!({"command": {"kind": "panel", "panel": "terminal", "open": true}});
    poll(
        "the relay connected as the machine's UI",
        async || match agent.request(Method::UiCommand, command.clone()).await {
            Ok(answer) => {
                assert_eq!(answer["delivered"], 1, "{answer}");
                Some(())
            }
            Err(e) => {
                assert_eq!(e.code().as_str(), "UNAVAILABLE", "{e}");
                None
            }
        },
    )
    .await;
    let refused = agent
        .request(
            Method::UiCommand,
            serde_json::json!({"command": {"kind": "sidebar"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code().as_str(), "INVALID_REQUEST", "{refused}");
    let second = serde_json::json!({"command": {"kind": "sidebar", "visible": false}});
    let answer = agent
        .request(Method::UiCommand, second.clone())
        .await
        .unwrap();
    assert_eq!(answer["delivered"], 1, "{answer}");

    // On the hub's page: the two accepted commands in order, each with its machine.
    let seen = read_events_until(&mut page, "two ui.commands on the hub's page", |events| {
        let shown: Vec<Value> = events
            .iter()
            .filter(|e| e.name.as_deref() == Some("ui.command"))
            .map(|e| e.data.clone())
            .collect();
        (shown.len() >= 2).then_some(shown)
    })
    .await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    for (shown, sent) in seen.iter().zip([&command, &second]) {
        assert_eq!(shown["machine"], "laptop", "{shown}");
        assert_eq!(shown["command"]["command"], sent["command"], "{shown}");
    }
    agent.close().await;
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
            &[
                "--join <URL>",
                "--name <NAME>",
                "--trust-nats-network",
                "--share-ui-commands",
            ][..],
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

/// `POST url` with `body` as the hub's client: (status, JSON body).
async fn post(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    support::hub_call(http.post(url).json(&body), HUB_PASSWORD).await
}

/// Whether a process whose command line is exactly `argv` runs on this machine.
fn running(argv: &[&str]) -> bool {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| cmdline == wanted)
    })
}

/// docs/hub.md §3, "When things fail": a backend SIGKILLed in the middle of a turn that was
/// started and approved through the hub is shown offline; started again on its data, the
/// turn is over (its output kept, marked interrupted, its command's process killed), the
/// session is listed once and idle, and the machine's events through the hub, both boots'
/// in order, carry the output once and the new boot's work once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_killed_mid_turn_comes_back_with_its_turn_ended_once() {
    let nats = NatsServer::start();
    let env = Env::new();
    let password = "pw-killed-0123456789abcdef";
    let (laptop, _) = serve_joined(&env, &nats.url(), "laptop", password);
    let (_hub, hub) = support::start_hub(&env, &nats.url(), HUB_PASSWORD);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let online = |want: bool| {
        let (http, hub) = (http.clone(), hub.clone());
        async move {
            poll("the laptop's state on the hub", async || {
                let (_, all) = get(&http, &format!("{hub}/session")).await;
                machine(&all, "laptop")
                    .is_some_and(|e| e["online"] == want)
                    .then_some(())
            })
            .await
        }
    };
    online(true).await;

    // A turn through the hub: created, prompted, approved; its command prints, then waits.
    let (status, session) = post(
        &http,
        &format!("{hub}/machine/laptop/session"),
        serde_json::json!({"title": "long"}),
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let sid = session["id"].as_str().unwrap().to_owned();
    // The marker is computed by the shell, so the prompt's own text never matches it.
    let sleeper = ["sleep", "4242.5"];
    let command = format!("echo started-$((6*7)); exec {} {}", sleeper[0], sleeper[1]);
    let (status, accepted) = post(
        &http,
        &format!("{hub}/machine/laptop/session/{sid}/prompt"),
        serde_json::json!({"parts": [{"type": "text", "text": command}]}),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let reply_id = accepted["replyId"].as_str().unwrap().to_owned();
    let pid = accepted["permission"]["id"].as_str().unwrap().to_owned();
    let (status, answered) = post(
        &http,
        &format!("{hub}/machine/laptop/session/{sid}/permission/{pid}"),
        serde_json::json!({"reply": "once"}),
    )
    .await;
    assert_eq!(status, 200, "{answered}");
    let messages_url = format!("{hub}/machine/laptop/session/{sid}/message");
    poll("the command's first output through the hub", async || {
        let (_, messages) = get(&http, &messages_url).await;
        messages.to_string().contains("started-42").then_some(())
    })
    .await;
    assert!(running(&sleeper), "the command runs");
    // A client of the hub's events that stays connected across the crash and the restart.
    let live = http
        .get(format!("{hub}/event?machine=laptop"))
        .bearer_auth(HUB_PASSWORD)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    let mut live = Box::pin(live.bytes_stream());
    let (_, machines) = get(&http, &format!("{hub}/machine")).await;
    let first_boot = machines
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "laptop"))
        .map(|m| m["boot"].clone())
        .expect("the laptop's boot");

    // Killed mid-turn, as a crash or an OOM kill would: no shutdown of its own.
    signal(laptop.0.id(), "KILL");
    drop(laptop);
    online(false).await;

    let (_laptop, _) = serve_joined(&env, &nats.url(), "laptop", password);
    online(true).await;
    // Without reloading anything, the live client is told the turn ended: the reply's
    // `interrupted` part, its end, and the session idle, from the new boot (its recovery).
    let is = |e: &Value, kind: &str| e["event"]["event"]["type"] == kind;
    let told = read_events_until(&mut live, "the cut turn's end, live", |events| {
        let seen: Vec<Value> = events.iter().map(|e| e.data.clone()).collect();
        let idle = seen.iter().position(|e| {
            is(e, "session.status")
                && e["event"]["event"]["sessionId"] == sid.as_str()
                && e["event"]["event"]["status"] == "idle"
        })?;
        seen.iter()
            .any(|e| is(e, "message.part") && e["event"]["event"]["part"]["type"] == "interrupted")
            .then_some((seen, idle))
    })
    .await;
    let (told, idle) = told;
    let interrupted: Vec<&Value> = told
        .iter()
        .filter(|e| is(e, "message.part") && e["event"]["event"]["part"]["type"] == "interrupted")
        .collect();
    assert_eq!(interrupted.len(), 1, "told once: {told:?}");
    let interrupted = interrupted[0];
    assert_eq!(
        interrupted["event"]["event"]["messageId"],
        reply_id.as_str()
    );
    assert_ne!(interrupted["boot"], first_boot, "told by the new boot");
    let at = |kind: &str| {
        told.iter()
            .position(|e| is(e, kind) && e["event"]["event"]["messageId"] == reply_id.as_str())
    };
    let part_at = told
        .iter()
        .position(|e| std::ptr::eq(e, interrupted))
        .unwrap();
    let ended_at = at("message.ended");
    assert!(
        ended_at.is_some_and(|ended| part_at < ended && ended < idle),
        "the part, the end, then idle: {told:?}"
    );
    assert!(
        told[..idle].iter().any(|e| is(e, "session.updated")
            && e["event"]["event"]["session"]["id"] == sid.as_str()
            && e["event"]["event"]["session"]["status"] == "idle"),
        "the session as stored, idle: {told:?}"
    );
    let messages = poll("the turn ended after the restart", async || {
        let (status, messages) = get(&http, &messages_url).await;
        let ended = status == 200
            && messages
                .as_array()
                .and_then(|m| m.iter().find(|m| m["id"] == reply_id.as_str()))
                .is_some_and(|m| !m["ended"].is_null());
        ended.then_some(messages)
    })
    .await;
    let messages = messages.as_array().unwrap();
    assert_eq!(messages.len(), 2, "the prompt and its reply: {messages:?}");
    let parts = messages[1]["parts"].as_array().unwrap();
    // The command's output, on its call's terminal.
    let output: String = parts
        .iter()
        .filter(|p| p["type"] == "tool_call" && p["kind"] == "execute")
        .flat_map(|p| p["content"].as_array().unwrap())
        .filter(|c| c["type"] == "terminal")
        .map(|c| c["output"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(output.matches("started-42").count(), 1, "{parts:?}");
    assert_eq!(
        parts.last().unwrap()["type"],
        "interrupted",
        "the reply says the turn was cut: {parts:?}"
    );
    // The restarted backend killed what its dead predecessor's turn left running.
    poll("the killed turn's command is gone", async || {
        (!running(&sleeper)).then_some(())
    })
    .await;
    let (_, all) = get(&http, &format!("{hub}/session")).await;
    let listed = machine(&all, "laptop").unwrap()["sessions"]
        .as_array()
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "idle", "{listed:?}");
    // The restarted backend works through the hub.
    let (status, after) = post(
        &http,
        &format!("{hub}/machine/laptop/session"),
        serde_json::json!({"title": "after-restart"}),
    )
    .await;
    assert_eq!(status, 201, "{after}");

    // The machine's events, from the first: both boots' in order, nothing of the dead boot
    // published again by the new one.
    let events = http
        .get(format!("{hub}/event?machine=laptop&after=0"))
        .bearer_auth(HUB_PASSWORD)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    let mut events = Box::pin(events.bytes_stream());
    let seen = read_events_until(
        &mut events,
        "events of both boots through the hub",
        |events| {
            let seen: Vec<(u64, Value)> = events
                .iter()
                .filter_map(|e| Some((e.id?, e.data.clone())))
                .collect();
            let boots: std::collections::BTreeSet<&str> = seen
                .iter()
                .filter_map(|(_, e)| e["boot"].as_str())
                .collect();
            let after = seen
                .iter()
                .any(|(_, e)| e.to_string().contains("after-restart"));
            (boots.len() == 2 && after).then_some(seen)
        },
    )
    .await;
    let seqs: Vec<u64> = seen.iter().map(|(seq, _)| *seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let outputs = seen
        .iter()
        .filter(|(_, e)| e.to_string().contains("started-42"))
        .count();
    assert_eq!(outputs, 1, "the output once: {seen:?}");
    let ends = seen
        .iter()
        .filter(|(_, e)| e["event"]["event"]["part"]["type"] == "interrupted")
        .count();
    assert_eq!(ends, 1, "the turn's end once: {seen:?}");
    let created: Vec<&str> = seen
        .iter()
        .filter(|(_, e)| e["event"]["event"]["type"] == "session.created")
        .map(|(_, e)| e["event"]["event"]["session"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(created, ["long", "after-restart"], "{seen:?}");
}

/// docs/hub.md §1: with the right NATS users, `serve --join --nats-user` (its password from
/// the environment) and `hub --nats-user` (from a file) work under the backend's and the
/// hub's subject permissions; neither password is in a process's arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_hub_with_the_right_nats_users_work_and_show_no_password() {
    use ax_hub::{
        MachineName,
        nats::{backend_permissions, hub_permissions},
        testing::NatsUser,
    };
    let (laptop_pw, hub_pw) = ("right-laptop-pw-4711", "right-hub-pw-0815");
    let nats = NatsServer::start_with_users(&[
        NatsUser {
            user: "laptop".into(),
            password: laptop_pw.into(),
            permissions: backend_permissions(&MachineName::new("laptop").unwrap()),
        },
        NatsUser {
            user: "hub".into(),
            password: hub_pw.into(),
            permissions: hub_permissions(),
        },
    ]);
    let env = Env::new();
    let url = nats.url();
    let join = ["--join", &url, "--name", "laptop", "--nats-user", "laptop"];
    let (serve, laptop_url) = serve_joined_with(
        &env,
        &join,
        "laptop",
        "pw-users-0123456789abcdef",
        &[("AX_CODE_NATS_PASSWORD", laptop_pw)],
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hub-pw");
    std::fs::write(&file, format!("{hub_pw}\n")).unwrap();
    let mut command = env.command(&["hub", "--nats", &url, "--port", "0", "--nats-user", "hub"]);
    command
        .arg("--nats-password-file")
        .arg(&file)
        .env("AX_CODE_HUB_PASSWORD", HUB_PASSWORD);
    let (hub_process, hub) = support::spawn_hub(command);

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let created = http
        .post(format!("{laptop_url}/session"))
        .bearer_auth("pw-users-0123456789abcdef")
        .json(&serde_json::json!({"title": "with-users"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    poll("the laptop and its session through the hub", async || {
        let (_, all) = get(&http, &format!("{hub}/session")).await;
        machine(&all, "laptop")
            .is_some_and(|e| e["online"] == true && titles(e) == ["with-users"])
            .then_some(())
    })
    .await;
    for pid in [serve.0.id(), hub_process.0.id()] {
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let argv = String::from_utf8_lossy(&argv);
        assert!(
            !argv.contains(laptop_pw) && !argv.contains(hub_pw),
            "a NATS password in {argv:?}"
        );
    }
}
