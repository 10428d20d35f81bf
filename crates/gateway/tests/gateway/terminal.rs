//! The operator terminal: admin only, output to the caller only, killable, bounded.

use serde_json::json;

use crate::util::{ALL, Client, start};

#[tokio::test]
async fn runs_in_the_project_dir_and_streams_to_the_caller_only() {
    let gw = start().await;
    std::fs::write(gw.dir.path().join("marker.txt"), "here").unwrap();
    let mut op = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut other = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;

    let res = op
        .request(
            "terminal.run",
            json!({"command": "cat marker.txt; echo; echo oops >&2; exit 3"}),
        )
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let run_id = res["payload"]["runId"].as_str().unwrap().to_string();

    let mut stdout = String::new();
    let mut stderr = String::new();
    let exit = loop {
        let ev = op.frame().await;
        match ev["event"].as_str() {
            Some("terminal.output") => {
                assert_eq!(ev["payload"]["runId"], run_id.as_str());
                let data = ev["payload"]["data"].as_str().unwrap();
                match ev["payload"]["stream"].as_str().unwrap() {
                    "stdout" => stdout.push_str(data),
                    "stderr" => stderr.push_str(data),
                    s => panic!("stream {s}"),
                }
            }
            Some("terminal.exit") => break ev,
            _ => {}
        }
    };
    assert_eq!(stdout, "here\n");
    assert_eq!(stderr, "oops\n");
    assert_eq!(exit["payload"]["code"], 3);
    assert_eq!(exit["payload"]["truncated"], false);

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
async fn kill_ends_the_whole_group() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], &["operator.admin"]).await;
    let res = op
        .request(
            "terminal.run",
            json!({"command": "sleep 30 & sleep 30; echo never"}),
        )
        .await;
    assert_eq!(res["ok"], true);
    // One command at a time.
    let res = op.request("terminal.run", json!({"command": "true"})).await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE");

    let res = op.request("terminal.kill", json!({})).await;
    assert_eq!(res["payload"], json!({"ok": true, "killed": true}));
    let exit = op.event("terminal.exit").await;
    assert_eq!(exit["payload"]["signal"], 9);
    assert!(op.events.iter().all(|e| e["event"] != "terminal.output"));

    // Free again.
    let res = op
        .request("terminal.run", json!({"command": "echo again"}))
        .await;
    assert_eq!(res["ok"], true);
    let out = op.event("terminal.output").await;
    assert_eq!(out["payload"]["data"], "again\n");
}

#[tokio::test]
async fn output_is_bounded() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], &["operator.admin"]).await;
    // About 3 MiB of output.
    let res = op
        .request(
            "terminal.run",
            json!({"command": "head -c 3145728 /dev/zero | tr '\\0' a"}),
        )
        .await;
    assert_eq!(res["ok"], true);
    let mut got = 0usize;
    let exit = loop {
        let ev = op.frame().await;
        match ev["event"].as_str() {
            Some("terminal.output") => got += ev["payload"]["data"].as_str().unwrap().len(),
            Some("terminal.exit") => break ev,
            _ => {}
        }
    };
    assert!(got <= ax_gateway::TERMINAL_MAX_OUTPUT, "{got}");
    assert!(got > 0);
    assert_eq!(exit["payload"]["truncated"], true);
    assert_eq!(
        exit["payload"]["droppedBytes"].as_u64().unwrap() as usize + got,
        3 * 1024 * 1024
    );
}

#[tokio::test]
async fn terminal_params_are_closed() {
    let gw = start().await;
    let mut op = Client::connected(gw.addr, "cli", &[], ALL).await;
    for bad in [
        json!({"command": "ls", "cwd": "/"}),
        json!({}),
        json!({"command": ""}),
    ] {
        let res = op.request("terminal.run", bad.clone()).await;
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{bad}");
    }
    let res = op.request("terminal.kill", json!({"pid": 1})).await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    let res = op.request("terminal.kill", json!({})).await;
    assert_eq!(res["payload"]["killed"], false);
}
