//! The operator terminal's wire: admin only, output to the caller only, one command at a time,
//! killable, bounded by the host with a marker. The commands here run on a scripted host (see
//! `util::ScriptedTerminal`); the backend's tests run real processes behind the same wire.

use serde_json::{Value, json};

use crate::util::{ALL, Client, start};

/// Events of one run, in order, up to and including `terminal.exit`.
async fn run_events(c: &mut Client, run_id: &str) -> Vec<Value> {
    let mut got = Vec::new();
    loop {
        let ev = match c.events.pop_front() {
            Some(ev) => ev,
            None => c.frame().await,
        };
        let Some(name) = ev["event"].as_str() else {
            continue;
        };
        if !name.starts_with("terminal.") {
            continue;
        }
        assert_eq!(ev["payload"]["runId"], run_id, "{ev}");
        got.push(ev.clone());
        if name == "terminal.exit" {
            return got;
        }
    }
}

#[tokio::test]
async fn streams_to_the_caller_only_in_order() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut other = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;

    let res = op
        .request(
            "terminal.run",
            json!({"command": "out:here err:oops out:again exit:3"}),
        )
        .await;
    assert_eq!(res["ok"], true, "{res}");
    // The response comes before any event of the run.
    assert!(op.events.iter().all(|e| e["event"] != "terminal.output"));
    let run_id = res["payload"]["runId"].as_str().unwrap().to_string();
    let events = run_events(&mut op, &run_id).await;
    let shown: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["event"] == "terminal.output")
        .map(|e| {
            (
                e["payload"]["stream"].as_str().unwrap().to_owned(),
                e["payload"]["data"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("stdout".into(), "here\n".into()),
            ("stderr".into(), "oops\n".into()),
            ("stdout".into(), "again\n".into())
        ]
    );
    let exit = events.last().unwrap();
    assert_eq!(exit["payload"]["code"], 3);
    assert_eq!(exit["payload"]["truncated"], false);
    assert_eq!(
        *gw.terminal.started.lock().unwrap(),
        [(
            "out:here err:oops out:again exit:3".to_owned(),
            ax_gateway::TERMINAL_MAX_OUTPUT
        )]
    );

    let res = other.request("ping", json!({})).await;
    assert_eq!(res["ok"], true);
    assert!(
        other
            .events
            .iter()
            .all(|e| !e["event"].as_str().unwrap().starts_with("terminal."))
    );
}

#[tokio::test]
async fn kill_stops_the_command_and_frees_the_slot() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], &["operator.admin"]).await;
    let res = op.request("terminal.run", json!({"command": "hang"})).await;
    assert_eq!(res["ok"], true);
    let run_id = res["payload"]["runId"].as_str().unwrap().to_string();
    // One command at a time.
    let res = op
        .request("terminal.run", json!({"command": "exit:0"}))
        .await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE");

    let res = op.request("terminal.kill", json!({})).await;
    assert_eq!(res["payload"], json!({"ok": true, "killed": true}));
    let events = run_events(&mut op, &run_id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["payload"]["signal"], 9);

    // Free again.
    let res = op
        .request("terminal.run", json!({"command": "out:again exit:0"}))
        .await;
    assert_eq!(res["ok"], true);
    let out = op.event("terminal.output").await;
    assert_eq!(out["payload"]["data"], "again\n");
}

#[tokio::test]
async fn closing_the_connection_stops_its_command() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], &["operator.admin"]).await;
    let res = op.request("terminal.run", json!({"command": "hang"})).await;
    assert_eq!(res["ok"], true);
    drop(op);
    // The host's `hang` step ends only when the gateway cancels the run's stop token.
    tokio::time::timeout(crate::util::WAIT, gw.terminal.stopped.notified())
        .await
        .expect("the command of a closed connection is stopped");
}

#[tokio::test]
async fn truncation_is_marked_between_head_and_tail() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], &["operator.admin"]).await;
    let res = op
        .request(
            "terminal.run",
            json!({"command": "out:head trunc:4000 out:tail exit:0"}),
        )
        .await;
    let run_id = res["payload"]["runId"].as_str().unwrap().to_string();
    let events = run_events(&mut op, &run_id).await;
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "terminal.output",
            "terminal.truncated",
            "terminal.output",
            "terminal.exit"
        ]
    );
    assert_eq!(events[1]["payload"]["droppedBytes"], 4000);
    assert_eq!(events[3]["payload"]["truncated"], true);
    assert_eq!(events[3]["payload"]["droppedBytes"], 4000);
}

#[tokio::test]
async fn terminal_params_are_closed() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], ALL).await;
    for bad in [
        json!({"command": "ls", "cwd": "/"}),
        json!({}),
        json!({"command": ""}),
        json!({"command": "   "}),
        json!({"command": "x".repeat(ax_gateway::TERMINAL_MAX_COMMAND + 1)}),
    ] {
        let res = op.request("terminal.run", bad.clone()).await;
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{bad}");
    }
    let res = op.request("terminal.kill", json!({"pid": 1})).await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    let res = op.request("terminal.kill", json!({})).await;
    assert_eq!(res["payload"]["killed"], false);
    // A command the host cannot start is an error, and the slot stays free.
    let res = op.request("terminal.run", json!({"command": "fail"})).await;
    assert_eq!(res["error"]["code"], "INTERNAL", "{res}");
    let res = op
        .request("terminal.run", json!({"command": "exit:0"}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    assert!(gw.terminal.started.lock().unwrap().len() == 1);
}
