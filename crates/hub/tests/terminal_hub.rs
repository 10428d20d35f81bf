//! The operator terminal through the hub (docs/hub.md §3, §4): the hub's gateway for a machine
//! (`/machine/{m}/gateway`, the gateway's own protocol) runs a terminal of that machine's
//! backend over NATS, with the gateway's bounds and the backend's rules; a machine that goes
//! away ends it on the hub, and a hub that goes away lets its lease run out on the machine.
//!
//! Real nats-server, real backends with real shells under PTYs. Run with `SHELL=/bin/sh`.

mod support;

use std::time::Duration;

use ax_gateway::{Method, TERMINAL_MAX_INPUT};
use ax_hub::{
    terminal::{TerminalAction, TerminalId, TerminalOpened, TerminalOutput},
    testing::NatsServer,
    wire::{Reply, Request},
};
use futures_util::StreamExt;
use serde_json::json;
use support::{
    HUB_TOKEN, HubClient, Machine, start_hub,
    terminal::{Operator, eventually, hub_gateway, number_between, process_gone},
    within,
};

fn project_of(machine: &Machine) -> String {
    std::fs::canonicalize(machine.project.path())
        .unwrap()
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_on_machine_two_through_the_hub_echoes_resizes_and_closes() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let one = Machine::start(&nats, "one").await;
    let two = Machine::start(&nats, "two").await;
    api.wait_machine("one", |m| m.online).await;
    api.wait_machine("two", |m| m.online).await;

    // The hub's credential, in the gateway's connect, as on a backend.
    let refused = Operator::connect(&hub_gateway(&hub, "two"), "not-the-hub-credential")
        .await
        .err()
        .expect("a wrong credential is refused");
    assert_eq!(refused.code().as_str(), "FORBIDDEN", "{refused}");
    // A machine that never joined has no gateway; a cross-site page cannot open one.
    assert!(
        Operator::connect(&hub_gateway(&hub, "ghost"), HUB_TOKEN)
            .await
            .is_err()
    );
    let cross_site = api
        .http
        .get(format!("{}/machine/two/gateway", hub.url()))
        .header("Origin", "http://evil.example")
        .header("Connection", "Upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13")
        .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), 403);

    let mut op = Operator::hub(&hub, "two").await;
    let id = op.open().await;
    let mut seen = String::new();
    op.type_in(&id, "echo hub-$((40+2)); stty size; pwd -P\r")
        .await;
    op.until(&id, &mut seen, "hub-42").await;
    op.until(&id, &mut seen, "24 80").await;
    // Machine two's shell, in machine two's project.
    op.until(&id, &mut seen, &project_of(&two)).await;
    assert!(!seen.contains(&project_of(&one)), "{seen}");

    // It is a terminal of machine two's own gateway.
    let on_two = Operator::on_machine(&two).await;
    let listed = on_two.list().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["running"], true);

    let resized = op
        .client
        .request(
            Method::TerminalResize,
            json!({"terminalId": id, "cols": 132, "rows": 43}),
        )
        .await
        .unwrap();
    assert_eq!(resized["ok"], true, "{resized}");
    op.type_in(&id, "stty size\r").await;
    op.until(&id, &mut seen, "43 132").await;

    // The gateway's bound on input, before anything reaches NATS.
    let big = "x".repeat(TERMINAL_MAX_INPUT + 1);
    let over = op
        .client
        .request(
            Method::TerminalInput,
            json!({"terminalId": id, "data": big}),
        )
        .await
        .unwrap_err();
    assert_eq!(over.code().as_str(), "INVALID_REQUEST", "{over}");
    assert!(
        over.to_string()
            .contains(&format!("at most {TERMINAL_MAX_INPUT} bytes")),
        "{over}"
    );

    // A second machine's terminal is its own: another shell, another project, other lists.
    let mut op_one = Operator::hub(&hub, "one").await;
    let id_one = op_one.open().await;
    let mut seen_one = String::new();
    op_one.type_in(&id_one, "pwd -P\r").await;
    op_one
        .until(&id_one, &mut seen_one, &project_of(&one))
        .await;
    assert_eq!(op_one.list().await.len(), 1);
    assert_eq!(op.list().await.len(), 1);
    let foreign = op_one
        .client
        .request(
            Method::TerminalInput,
            json!({"terminalId": id, "data": "echo foreign\r"}),
        )
        .await
        .unwrap_err();
    assert_eq!(foreign.code().as_str(), "NOT_FOUND", "{foreign}");

    // The hub's bound: four terminals per machine.
    let mut more = Vec::new();
    for _ in 0..3 {
        more.push(op.open().await);
    }
    let fifth = op
        .client
        .request(Method::TerminalOpen, json!({"cols": 80, "rows": 24}))
        .await
        .unwrap_err();
    assert_eq!(fifth.code().as_str(), "UNAVAILABLE", "{fifth}");
    for extra in &more {
        op.client
            .request(Method::TerminalClose, json!({"terminalId": extra}))
            .await
            .unwrap();
    }

    // Closed: the shell is killed on machine two and the viewer gets the exit.
    let pid = op.shell_pid(&id).await;
    assert!(!process_gone(pid), "the shell {pid} runs");
    op.client
        .request(Method::TerminalClose, json!({"terminalId": id}))
        .await
        .unwrap();
    let (exit, _) = op.until_exit(&id).await;
    assert!(
        exit.get("signal").is_some() || exit.get("code").is_some(),
        "{exit}"
    );
    eventually("the shell on machine two is gone", || process_gone(pid)).await;
    eventually_async("machine two's gateway lists no terminal", || async {
        on_two.list().await.is_empty()
    })
    .await;
    // Machine one's terminal still runs.
    op_one.type_in(&id_one, "echo still-$((1+1))\r").await;
    op_one.until(&id_one, &mut seen_one, "still-2").await;
}

/// Waits (within the test-wide bound) until the async `check` holds.
async fn eventually_async<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    within(what, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_machine_ends_its_terminal_on_the_hub() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let mut two = Machine::start(&nats, "two").await;
    two.rejoin(|c| c.terminal_lease = Duration::from_millis(1500))
        .await;
    api.wait_machine("two", |m| m.online).await;

    let mut op = Operator::hub(&hub, "two").await;
    let id = op.open().await;
    let mut seen = String::new();
    op.type_in(&id, "echo up-$((2+3))\r").await;
    op.until(&id, &mut seen, "up-5").await;

    two.crash().await;
    let (_, said) = op.until_exit(&id).await;
    assert!(
        said.contains("ax-code hub: the terminal on two ended"),
        "{said:?}"
    );
    let listed = op.list().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["running"], false, "{listed:?}");
    let refused = op
        .client
        .request(
            Method::TerminalInput,
            json!({"terminalId": id, "data": "echo late\r"}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code().as_str(), "UNAVAILABLE", "{refused}");
}

/// A hub that goes away without closing its terminal (a crash): a plain NATS client plays
/// the hub, renews the lease for a while, then stops. The join closes the terminal, its shell
/// is killed on the machine, and the exit is published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_whose_hub_stops_renewing_is_closed_on_the_machine() {
    let nats = NatsServer::start();
    let _hub = start_hub(&nats).await;
    let mut two = Machine::start(&nats, "two").await;
    let lease = Duration::from_millis(1200);
    two.rejoin(|c| c.terminal_lease = lease).await;

    let raw = async_nats::connect(nats.url()).await.unwrap();
    let id = TerminalId::new("tleasetest").unwrap();
    let ask = |action: TerminalAction| {
        let raw = raw.clone();
        let id = id.clone();
        async move {
            let request = Request::Terminal {
                terminal: id,
                action,
            };
            let payload = serde_json::to_vec(&request).unwrap();
            let msg = within("the machine's answer", async {
                loop {
                    // Until the join has subscribed (no responders before).
                    match raw.request("ax.req.two", payload.clone().into()).await {
                        Ok(msg) => return msg,
                        Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                }
            })
            .await;
            serde_json::from_slice::<Reply>(&msg.payload).unwrap()
        }
    };
    let mut output = raw.subscribe("ax.two.term.tleasetest").await.unwrap();
    let opened = match ask(TerminalAction::Open { cols: 80, rows: 24 }).await {
        Reply::Ok(v) => serde_json::from_value::<TerminalOpened>(v).unwrap(),
        Reply::Error(e) => panic!("{e:?}"),
    };
    assert_eq!(opened.lease_ms, lease.as_millis() as u64);
    assert_eq!(opened.terminal_id, id);
    let typed = ask(TerminalAction::Input {
        data: "echo pid-$$-end\r".into(),
    })
    .await;
    assert!(matches!(typed, Reply::Ok(_)), "{typed:?}");
    let mut seen = String::new();
    let mut expected = 0u64;
    let pid = within("the shell's pid on NATS", async {
        loop {
            if let Some(pid) = number_between(&seen, "pid-", "-end") {
                return pid;
            }
            let msg = output.next().await.unwrap();
            match serde_json::from_slice::<TerminalOutput>(&msg.payload).unwrap() {
                TerminalOutput::Data { offset, data } => {
                    assert_eq!(offset, expected, "nothing lost on loopback");
                    expected += data.len() as u64;
                    seen.push_str(&data);
                }
                other => panic!("{other:?} before the pid; {seen:?}"),
            }
        }
    })
    .await;

    // Renewed for two leases: it keeps running.
    let on_two = Operator::on_machine(&two).await;
    for _ in 0..6 {
        tokio::time::sleep(lease / 3).await;
        let renewed = ask(TerminalAction::Renew {}).await;
        assert!(matches!(renewed, Reply::Ok(_)), "{renewed:?}");
    }
    assert!(!process_gone(pid), "a renewed terminal was closed");
    assert_eq!(on_two.list().await.len(), 1);

    // No more renewals: closed on the machine, the exit published, the shell gone.
    let exit = within("the exit on NATS", async {
        loop {
            let msg = output.next().await.unwrap();
            if let TerminalOutput::Exit { .. } =
                serde_json::from_slice::<TerminalOutput>(&msg.payload).unwrap()
            {
                return msg;
            }
        }
    })
    .await;
    assert_eq!(exit.subject.as_str(), "ax.two.term.tleasetest");
    eventually("the shell on machine two is gone", || process_gone(pid)).await;
    eventually_async("machine two's gateway lists no terminal", || async {
        on_two.list().await.is_empty()
    })
    .await;
    let late = ask(TerminalAction::Renew {}).await;
    match late {
        Reply::Error(e) => assert_eq!((e.status, e.code.as_str()), (404, "NOT_FOUND")),
        Reply::Ok(v) => panic!("an expired terminal was renewed: {v}"),
    }
}

/// A machine played by a plain NATS client (its record in JetStream, its requests answered by
/// the test): an open it refuses ends the hub's terminal with its reason; output lost between
/// the machine and the hub (a message that starts past the offset the hub expected) reaches
/// the viewer as `terminal.dropped` with every byte it missed, and the terminal goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_lost_on_the_way_is_told_to_the_viewer_and_a_refused_open_says_why() {
    use ax_hub::{MachineName, wire::MachineRecord};
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let fake = async_nats::connect(nats.url()).await.unwrap();
    let mut requests = fake.subscribe("ax.req.fake").await.unwrap();
    let record = MachineRecord {
        name: MachineName::new("fake").unwrap(),
        project: "/fake".into(),
        boot: "b1".into(),
        online: true,
        sent_ms: ax_hub::nats::now_ms(),
        heartbeat_ms: 600_000,
    };
    // Acknowledged by the stream: also the round trip after which the subscription holds.
    within("the fake machine's record stored", async {
        let js = async_nats::jetstream::new(fake.clone());
        loop {
            let payload = serde_json::to_vec(&record).unwrap();
            if let Ok(ack) = js.publish("ax.fake.machine", payload.into()).await
                && ack.await.is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    api.wait_machine("fake", |m| m.online).await;

    // The fake join: the first open refused as a backend's gateway would, then accepted.
    let (opened_tx, mut opened_rx) = tokio::sync::mpsc::channel::<TerminalId>(1);
    let answering = fake.clone();
    let responder = tokio::spawn(async move {
        let mut opens = 0;
        while let Some(msg) = requests.next().await {
            let Some(reply_to) = msg.reply else { continue };
            let Ok(Request::Terminal { terminal, action }) = serde_json::from_slice(&msg.payload)
            else {
                continue;
            };
            let reply = match action {
                TerminalAction::Open { cols, rows } => {
                    opens += 1;
                    if opens == 1 {
                        json!({"error": {"status": 503, "code": "UNAVAILABLE",
                            "message": "at most 4 terminals at once (terminal.close ends one)"}})
                    } else {
                        opened_tx.send(terminal.clone()).await.unwrap();
                        json!({"ok": {"terminalId": terminal, "cols": cols, "rows": rows,
                            "leaseMs": 60_000}})
                    }
                }
                _ => json!({"ok": {"ok": true}}),
            };
            answering
                .publish(reply_to, reply.to_string().into())
                .await
                .unwrap();
        }
    });

    let mut op = Operator::hub(&hub, "fake").await;
    let refused = op.open().await;
    let (exit, said) = op.until_exit(&refused).await;
    assert!(
        said.contains("cannot open a terminal on fake")
            && said.contains("at most 4 terminals at once")
            && said.contains("UNAVAILABLE"),
        "{said:?}"
    );
    assert!(exit.get("code").is_none(), "{exit}");

    let id = op.open().await;
    let term = within("the open on the fake machine", opened_rx.recv())
        .await
        .unwrap();
    let subject = format!("ax.fake.term.{term}");
    let send = |out: TerminalOutput| {
        let fake = fake.clone();
        let subject = subject.clone();
        async move {
            let payload = serde_json::to_vec(&out).unwrap();
            fake.publish(subject, payload.into()).await.unwrap();
        }
    };
    send(TerminalOutput::Data {
        offset: 0,
        data: "first\n".into(),
    })
    .await;
    let mut seen = String::new();
    op.until(&id, &mut seen, "first\n").await;
    // 500 bytes never arrived: the next message starts at 6 + 500.
    send(TerminalOutput::Data {
        offset: 506,
        data: "cut line\nthird\n".into(),
    })
    .await;
    // Told as a gap (the line it cut may go with it), then the output goes on: every byte
    // is either shown or counted.
    let mut dropped = 0u64;
    let mut after = String::new();
    within("the gap told and the output after it", async {
        while !after.ends_with("third\n") {
            let (event, payload) = op.next_of(&id).await;
            match event.as_str() {
                "terminal.dropped" => dropped += payload["droppedBytes"].as_u64().unwrap(),
                "terminal.data" => after.push_str(payload["data"].as_str().unwrap()),
                other => panic!("{other}: {payload}"),
            }
        }
    })
    .await;
    assert!(dropped >= 500, "{dropped}");
    assert_eq!(
        dropped + after.len() as u64,
        500 + "cut line\nthird\n".len() as u64
    );
    send(TerminalOutput::Exit {
        offset: 506 + 15,
        code: Some(0),
        signal: None,
    })
    .await;
    let (exit, _) = op.until_exit(&id).await;
    assert_eq!(exit["code"], 0, "{exit}");
    responder.abort();
}
