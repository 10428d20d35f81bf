//! `ui.command` targets, fan-out, acknowledgements and slow consumers.

use std::time::Duration;

use ax_gateway::Tuning;
use serde_json::{Value, json};
use tokio_tungstenite::MaybeTlsStream;

use crate::util::{
    ALL, Client, Ended, SESSION_A, SESSION_B, TOKEN, connect_params, eventually, start, start_with,
};

const WRITE: &[&str] = &["operator.write"];

fn split_cmd() -> Value {
    json!({"command": {"kind": "split", "direction": "right", "sessionKey": SESSION_B}, "sessionKey": SESSION_A})
}

#[tokio::test]
async fn no_ui_is_unavailable() {
    let gw = start().await;
    let mut agent = Client::connected(gw.addr, "agent", &[], WRITE).await;
    let res = agent.request("ui.command", split_cmd()).await;
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "UNAVAILABLE");
    assert_eq!(res["error"]["message"], "no ui client");
}

#[tokio::test]
async fn two_uis_both_receive_but_not_lookalikes() {
    let gw = start().await;
    let mut ui1 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut ui2 =
        Client::connected(gw.addr, "ui", &["other", "ui-commands"], &["operator.read"]).await;
    // A cli client that claims the cap and a ui without it are not targets.
    let mut cli = Client::connected(gw.addr, "cli", &["ui-commands"], ALL).await;
    let mut bare_ui = Client::connected(gw.addr, "ui", &[], ALL).await;
    assert!(eventually(|| gw.gateway.ui_client_count() == 2).await);

    let mut agent = Client::connected(gw.addr, "agent", &[], WRITE).await;
    let res = agent.request("ui.command", split_cmd()).await;
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["payload"], json!({"ok": true, "delivered": 2}));

    let e1 = ui1.event("ui.command").await;
    let e2 = ui2.event("ui.command").await;
    for e in [&e1, &e2] {
        let p = &e["payload"];
        assert_eq!(p["command"], split_cmd()["command"]);
        assert_eq!(p["sessionKey"], SESSION_A);
        assert!(p["commandId"].as_str().unwrap().starts_with("cmd_"));
        assert!(p.get("wait").is_none());
    }
    assert_eq!(e1["payload"]["commandId"], e2["payload"]["commandId"]);

    // The lookalikes got nothing: a ping answered proves everything before it was read.
    for c in [&mut cli, &mut bare_ui] {
        let res = c.request("ping", json!({})).await;
        assert_eq!(res["ok"], true);
        assert!(
            c.events.iter().all(|e| e["event"] != "ui.command"),
            "non-target got ui.command: {:?}",
            c.events
        );
    }
    // Only targets may acknowledge.
    let res = cli
        .request(
            "ui.command.result",
            json!({"commandId": e1["payload"]["commandId"], "outcome": "applied"}),
        )
        .await;
    assert_eq!(res["error"]["code"], "FORBIDDEN");
}

#[tokio::test]
async fn wait_collects_outcomes_and_marks_silent_uis() {
    let gw = start().await;
    let mut eager = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut silent = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut agent = Client::connected(gw.addr, "agent", &[], WRITE).await;

    let mut params =
        json!({"command": {"kind": "close-pane", "sessionKey": SESSION_A}, "wait": true});
    let id = agent.send_request("ui.command", params.take()).await;

    let ev = eager.event("ui.command").await;
    let command_id = ev["payload"]["commandId"].as_str().unwrap().to_string();
    let ack = eager
        .request(
            "ui.command.result",
            json!({"commandId": command_id, "outcome": "ignored", "reason": "last pane"}),
        )
        .await;
    assert_eq!(ack["payload"], json!({"accepted": true}));
    // A second answer from the same UI is not counted twice.
    let again = eager
        .request(
            "ui.command.result",
            json!({"commandId": command_id, "outcome": "applied"}),
        )
        .await;
    assert_eq!(again["payload"], json!({"accepted": false}));
    let _ = silent.event("ui.command").await;

    let res = agent.response(&id).await;
    assert_eq!(res["ok"], true, "{res}");
    let p = &res["payload"];
    assert_eq!(p["ok"], true);
    assert_eq!(p["delivered"], 2);
    let outcomes = p["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 2);
    let mut seen: Vec<(String, Option<String>)> = outcomes
        .iter()
        .map(|o| {
            assert!(o["connId"].as_str().unwrap().starts_with("conn_"));
            (
                o["outcome"].as_str().unwrap().to_string(),
                o["reason"].as_str().map(str::to_string),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("ignored".to_string(), Some("last pane".to_string())),
            ("no_answer".to_string(), None)
        ]
    );

    // Answers after the wait are accepted as no-ops.
    let late = silent
        .request(
            "ui.command.result",
            json!({"commandId": command_id, "outcome": "applied"}),
        )
        .await;
    assert_eq!(late["payload"], json!({"accepted": false}));
}

#[tokio::test]
async fn wait_returns_as_soon_as_all_answered() {
    let gw = start_with(Tuning {
        // Long enough that a test relying on the timeout would hit the per-frame WAIT.
        wait_timeout: Duration::from_secs(30),
        ..Tuning::default()
    })
    .await;
    let mut ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut agent = Client::connected(gw.addr, "agent", &[], WRITE).await;
    let id = agent
        .send_request(
            "ui.command",
            json!({"command": {"kind": "sidebar", "visible": true}, "wait": true}),
        )
        .await;
    let ev = ui.event("ui.command").await;
    ui.request(
        "ui.command.result",
        json!({"commandId": ev["payload"]["commandId"], "outcome": "applied"}),
    )
    .await;
    let res = agent.response(&id).await;
    assert_eq!(res["payload"]["outcomes"][0]["outcome"], "applied");
    assert!(res["payload"]["outcomes"][0]["connId"].as_str().is_some());
}

#[tokio::test]
async fn ack_params_are_closed() {
    let gw = start().await;
    let mut ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    for bad in [
        json!({"commandId": "cmd_1", "outcome": "maybe"}),
        json!({"commandId": "cmd_1", "outcome": "applied", "extra": 1}),
        json!({"commandId": "cmd_1", "outcome": "ignored", "reason": "r".repeat(600)}),
    ] {
        let res = ui.request("ui.command.result", bad.clone()).await;
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{bad}");
    }
}

/// A UI whose socket has a tiny receive buffer, so that not reading fills the path quickly.
async fn stalled_ui(addr: std::net::SocketAddr) -> (Client, String) {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let stream = sock.connect(addr).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async(
        format!("ws://{addr}/gateway"),
        MaybeTlsStream::Plain(stream),
    )
    .await
    .unwrap();
    let mut c = Client::from_ws(ws);
    c.frame().await;
    let res = c
        .request(
            "connect",
            connect_params("ui", &["ui-commands"], ALL, TOKEN),
        )
        .await;
    assert_eq!(res["ok"], true);
    let conn_id = res["payload"]["server"]["connId"]
        .as_str()
        .unwrap()
        .to_string();
    (c, conn_id)
}

#[tokio::test]
async fn a_stalled_ui_is_cut_and_does_not_hold_up_the_others() {
    let logs = crate::util::logs();
    let gw = start_with(Tuning {
        queue_frames: 64,
        queue_bytes: 32 * 1024,
        close_grace: Duration::from_secs(30),
        ..Tuning::default()
    })
    .await;
    let mut healthy = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let (mut stalled, stalled_id) = stalled_ui(gw.addr).await;
    let mut agent = Client::connected(gw.addr, "agent", &[], WRITE).await;
    assert!(eventually(|| gw.gateway.ui_client_count() == 2).await);

    // The healthy UI counts what it receives in its own task.
    let (count_tx, mut count_rx) = tokio::sync::watch::channel(0usize);
    let reader = tokio::spawn(async move {
        let mut n = 0;
        loop {
            healthy.event("ui.command").await;
            n += 1;
            let _ = count_tx.send(n);
        }
    });

    // Flood with commands in pipelined batches until the stalled UI is cut (bounded).
    let mut sent = 0usize;
    let mut cut_after = None;
    for _batch in 0..400 {
        let mut ids = Vec::new();
        for _ in 0..50 {
            ids.push(agent.send_request("ui.command", split_cmd()).await);
        }
        for id in ids {
            let res = agent.response(&id).await;
            assert_eq!(res["ok"], true, "{res}");
            sent += 1;
        }
        if gw.gateway.ui_client_count() == 1 {
            cut_after = Some(sent);
            break;
        }
    }
    let cut_after = cut_after.expect("the stalled UI was never disconnected");
    eprintln!("stalled UI cut after {cut_after} commands");

    // Everyone else still gets everything, and the count is exact.
    let res = agent.request("ui.command", split_cmd()).await;
    assert_eq!(res["payload"]["delivered"], 1);
    sent += 1;
    let got = tokio::time::timeout(Duration::from_secs(20), count_rx.wait_for(|n| *n >= sent))
        .await
        .expect("the healthy UI fell behind")
        .map(|n| *n)
        .unwrap();
    assert_eq!(got, sent);
    reader.abort();

    // The stalled UI, when it finally reads, finds its connection closed with 1008 and why
    // (not cut silently), and the gateway logged it at warn with the connection id.
    let ended = tokio::time::timeout(Duration::from_secs(20), stalled.until_end())
        .await
        .expect("stalled connection never ended");
    match &ended {
        Ended::Close(Some(frame)) => {
            assert_eq!(u16::from(frame.code), 1008, "{frame:?}");
            assert!(frame.reason.contains("slow consumer"), "{frame:?}");
        }
        other => panic!(
            "the slow consumer was cut without a close frame: {other:?}\n{}",
            logs.text()
        ),
    }
    let text = logs.text();
    assert!(
        text.lines()
            .any(|l| l.contains("WARN") && l.contains(&stalled_id) && l.contains("slow consumer")),
        "no warning names {stalled_id}:\n{text}"
    );
}

#[tokio::test]
async fn the_typed_client_subscribes_to_events_and_answers_them() {
    use ax_gateway::{ClientMode, Method, Scope, UiCommandParams};
    let gw = start().await;
    let ui = crate::util::typed(
        gw.addr,
        ClientMode::Ui,
        &["ui-commands"],
        &[Scope::Read],
        TOKEN,
    )
    .await
    .unwrap();
    let mut events = ui.subscribe();
    let agent = crate::util::typed(gw.addr, ClientMode::Agent, &[], &[Scope::Write], TOKEN)
        .await
        .unwrap();
    assert!(eventually(|| gw.gateway.ui_client_count() == 1).await);

    let params: UiCommandParams = serde_json::from_value(
        json!({"command": {"kind": "focus", "sessionKey": SESSION_A}, "wait": true}),
    )
    .unwrap();
    let answer = tokio::spawn(async move { agent.ui_command(&params).await });
    let event = loop {
        let e = tokio::time::timeout(crate::util::WAIT, events.recv())
            .await
            .expect("an event in time")
            .unwrap();
        if e.event == "ui.command" {
            break e;
        }
    };
    // The challenge was seq 1; nothing was skipped on the way.
    assert!(event.seq >= 2);
    let payload = event.payload.unwrap();
    assert_eq!(payload["command"]["sessionKey"], SESSION_A);
    let ack = ui
        .request(
            Method::UiCommandResult,
            json!({"commandId": payload["commandId"], "outcome": "applied"}),
        )
        .await
        .unwrap();
    assert_eq!(ack, json!({"accepted": true}));
    let res = answer.await.unwrap().unwrap();
    assert_eq!(res.delivered, 1);
    let outcomes = res.outcomes.unwrap();
    assert_eq!(outcomes[0].outcome, ax_gateway::Outcome::Applied);
    assert_eq!(outcomes[0].conn_id, ui.hello().server.conn_id);
}

#[tokio::test]
async fn a_relayed_command_keeps_its_id_and_hands_on_each_answer_once() {
    use ax_gateway::{Outcome, UiCommand, UiCommandEvent};
    let gw = start_with(Tuning {
        wait_timeout: Duration::from_millis(500),
        ..Tuning::default()
    })
    .await;
    let event = UiCommandEvent {
        command: UiCommand::Sidebar { visible: false },
        session_key: None,
        command_id: "cmd_from_machine".into(),
        expected_revision: Some(4),
    };
    // No UI: nothing to relay to.
    let none = gw.gateway.relay_ui_command(&event).unwrap_err();
    assert_eq!(none.code.as_str(), "UNAVAILABLE");

    let mut ui1 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut ui2 = Client::connected(gw.addr, "ui", &["ui-commands"], &["operator.read"]).await;
    let mut cli = Client::connected(gw.addr, "cli", &["ui-commands"], ALL).await;
    assert!(eventually(|| gw.gateway.ui_client_count() == 2).await);

    // What the other gateway could not have accepted is refused here too.
    for bad in [
        UiCommandEvent {
            command_id: String::new(),
            ..event.clone()
        },
        UiCommandEvent {
            command_id: "x".repeat(129),
            ..event.clone()
        },
        UiCommandEvent {
            command: UiCommand::Panel {
                panel: ax_gateway::PanelKind::Browser,
                open: false,
                dock: Some(ax_gateway::Dock::Right),
            },
            ..event.clone()
        },
    ] {
        let refused = gw.gateway.relay_ui_command(&bad).unwrap_err();
        assert_eq!(refused.code.as_str(), "INVALID_REQUEST", "{bad:?}");
    }

    let mut relayed = gw.gateway.relay_ui_command(&event).unwrap();
    assert_eq!(relayed.delivered, 2);
    // The same command again while it is waited for.
    let twice = gw.gateway.relay_ui_command(&event).unwrap_err();
    assert_eq!(twice.code.as_str(), "INVALID_REQUEST");

    // Both UIs get it with the other gateway's commandId; the cli lookalike does not.
    for ui in [&mut ui1, &mut ui2] {
        let e = ui.event("ui.command").await;
        assert_eq!(
            e["payload"],
            json!({"command": {"kind": "sidebar", "visible": false},
                   "commandId": "cmd_from_machine", "expectedRevision": 4})
        );
    }
    let forbidden = cli
        .request(
            "ui.command.result",
            json!({"commandId": "cmd_from_machine", "outcome": "applied"}),
        )
        .await;
    assert_eq!(forbidden["error"]["code"], "FORBIDDEN");
    let unknown = ui2
        .request(
            "ui.command.result",
            json!({"commandId": "cmd_never_sent", "outcome": "applied"}),
        )
        .await;
    assert_eq!(unknown["payload"], json!({"accepted": false}));

    // An answer comes out as soon as it is recorded, once.
    let ack = json!({"commandId": "cmd_from_machine", "outcome": "applied", "revision": 7});
    let first = ui1.request("ui.command.result", ack.clone()).await;
    assert_eq!(first["payload"], json!({"accepted": true}));
    let again = ui1.request("ui.command.result", ack).await;
    assert_eq!(again["payload"], json!({"accepted": false}));
    let answer = tokio::time::timeout(Duration::from_secs(5), relayed.answers.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.conn_id, ui1.conn_id);
    assert_eq!(answer.outcome, Outcome::Applied);
    assert_eq!(answer.revision, Some(7));

    // The silent UI: the answers end with the wait, and a late answer counts nowhere.
    let ended = tokio::time::timeout(Duration::from_secs(5), relayed.answers.recv())
        .await
        .unwrap();
    assert!(ended.is_none(), "{ended:?}");
    let late = ui2
        .request(
            "ui.command.result",
            json!({"commandId": "cmd_from_machine", "outcome": "ignored"}),
        )
        .await;
    assert_eq!(late["payload"], json!({"accepted": false}));
}
