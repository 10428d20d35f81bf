//! `ui.layout` (reports and reads), targeting one UI (`uiId`, `target: "requester"`) and the
//! revision and per-pane notes a UI adds to its acknowledgement (docs/gateway.md §3).

use std::sync::{Arc, Mutex};

use ax_gateway::SessionScreens;
use serde_json::{Value, json};

use crate::util::{ALL, Client, SESSION_A, TOKEN, eventually, start, typed};

fn report(revision: u64, session: &str) -> Value {
    json!({"revision": revision,
           "panes": [{"paneId": "p1", "sessionId": session, "column": 0, "row": 0, "active": true, "size": 1.0}],
           "sidebar": {"shown": true},
           "terminal": {"shown": false, "dock": "bottom"},
           "browser": {"shown": true, "dock": "right"}})
}

#[tokio::test]
async fn uis_report_layouts_and_a_reader_gets_them_back() {
    let gw = start().await;
    let mut ui1 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut ui2 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut reader = Client::connected(gw.addr, "agent", &[], &["operator.read"]).await;
    assert!(eventually(|| gw.gateway.ui_client_count() == 2).await);

    let ok = ui1.request("ui.layout.report", report(4, SESSION_A)).await;
    assert_eq!(ok["payload"], json!({"ok": true}), "{ok}");
    let ok = ui2.request("ui.layout.report", report(1, SESSION_A)).await;
    assert_eq!(ok["ok"], true);
    // A report is the arrangement only: anything else is refused and the old one kept.
    let mut bad = report(5, SESSION_A);
    bad["panes"][0]["title"] = json!("what the page shows");
    let res = ui1.request("ui.layout.report", bad).await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
    let mut two_active = report(5, SESSION_A);
    two_active["panes"] = json!([
        {"paneId": "p1", "column": 0, "row": 0, "active": true, "size": 0.5},
        {"paneId": "p2", "column": 1, "row": 0, "active": true, "size": 0.5}]);
    let res = ui1.request("ui.layout.report", two_active).await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
    // Only a UI target reports.
    let res = reader
        .request("ui.layout.report", report(1, SESSION_A))
        .await;
    assert_eq!(res["error"]["code"], "FORBIDDEN");

    let res = reader.request("ui.layout", json!({})).await;
    let uis = res["payload"]["uis"].as_array().unwrap().clone();
    assert_eq!(uis.len(), 2, "{res}");
    let revisions: Vec<u64> = uis
        .iter()
        .map(|u| u["revision"].as_u64().unwrap())
        .collect();
    assert_eq!(revisions, [4, 1]);
    assert_eq!(uis[0]["uiId"], ui1.conn_id.as_str());
    assert_eq!(uis[0]["panes"][0]["sessionId"], SESSION_A);

    // One UI by id; an id that is not a live UI is UNAVAILABLE, never everyone.
    let id2 = ui2.conn_id.clone();
    let res = reader.request("ui.layout", json!({"uiId": id2})).await;
    let uis = res["payload"]["uis"].as_array().unwrap().clone();
    assert_eq!((uis.len(), uis[0]["revision"].clone()), (1, json!(1)));
    let res = reader
        .request("ui.layout", json!({"uiId": reader.conn_id.clone()}))
        .await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE", "{res}");
    // No requester without a session turn from a Control UI.
    let res = reader
        .request("ui.layout", json!({"target": "requester"}))
        .await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE", "{res}");
    let res = reader
        .request("ui.layout", json!({"target": "requester", "uiId": id2}))
        .await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
    drop(ui1);
}

#[tokio::test]
async fn a_command_for_one_ui_reaches_only_it_and_carries_its_revision() {
    let gw = start().await;
    let mut ui1 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut ui2 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut agent = Client::connected(gw.addr, "agent", &[], &["operator.write"]).await;
    assert!(eventually(|| gw.gateway.ui_client_count() == 2).await);

    let cmd = json!({"command": {"kind": "focus", "paneId": "p2"}, "expectedRevision": 9,
                     "uiId": ui2.conn_id.clone(), "wait": true});
    let id = agent.send_request("ui.command", cmd).await;
    let ev = ui2.event("ui.command").await;
    assert_eq!(ev["payload"]["expectedRevision"], 9);
    assert_eq!(ev["payload"]["command"]["paneId"], "p2");
    let command_id = ev["payload"]["commandId"].clone();
    let ack = ui2
        .request(
            "ui.command.result",
            json!({"commandId": command_id, "outcome": "ignored",
                   "reason": "stale revision: expected 9, current 11", "revision": 11}),
        )
        .await;
    assert_eq!(ack["payload"], json!({"accepted": true}));
    let res = agent.response(&id).await;
    let p = &res["payload"];
    assert_eq!(p["delivered"], 1, "{res}");
    assert_eq!(p["outcomes"][0]["connId"], ui2.conn_id.as_str());
    assert_eq!(p["outcomes"][0]["revision"], 11);
    // The other UI got nothing.
    let _ = ui1.request("ping", json!({})).await;
    assert!(ui1.events.iter().all(|e| e["event"] != "ui.command"));

    // notApplied is bounded and passed through.
    let cmd = json!({"command": {"kind": "apply-layout", "preset": "grid"}, "uiId": ui1.conn_id.clone(), "wait": true});
    let id = agent.send_request("ui.command", cmd).await;
    let ev = ui1.event("ui.command").await;
    let command_id = ev["payload"]["commandId"].clone();
    let too_many: Vec<Value> = (0..17)
        .map(|i| json!({"paneId": format!("p{i}"), "reason": "busy"}))
        .collect();
    let res = ui1
        .request(
            "ui.command.result",
            json!({"commandId": command_id, "outcome": "applied", "notApplied": too_many}),
        )
        .await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    let res = ui1
        .request(
            "ui.command.result",
            json!({"commandId": command_id, "outcome": "applied", "revision": 3,
            "notApplied": [{"paneId": "p1", "reason": "the person is using it"}]}),
        )
        .await;
    assert_eq!(res["payload"], json!({"accepted": true}));
    let res = agent.response(&id).await;
    assert_eq!(
        res["payload"]["outcomes"][0]["notApplied"][0]["paneId"], "p1",
        "{res}"
    );

    // A gone UI is UNAVAILABLE.
    let gone = ui1.conn_id.clone();
    drop(ui1);
    assert!(eventually(|| gw.gateway.ui_client_count() == 1).await);
    let res = agent
        .request(
            "ui.command",
            json!({"command": {"kind": "sidebar", "visible": true}, "uiId": gone}),
        )
        .await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE", "{res}");
}

/// A session whose turn a given UI started.
struct Requester(Mutex<Option<String>>);
impl SessionScreens for Requester {
    fn session_of(&self, _token: &ax_core::Secret) -> Option<String> {
        None
    }
    fn enabled(&self, _session: &str) -> bool {
        false
    }
    fn requester(&self, session: &str) -> Option<String> {
        (session == SESSION_A)
            .then(|| self.0.lock().unwrap().clone())
            .flatten()
    }
}

#[tokio::test]
async fn requester_means_the_ui_that_started_the_turn_and_nothing_else() {
    let gw = start().await;
    let mut ui1 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut ui2 = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut agent = Client::connected(gw.addr, "agent", &[], &["operator.write"]).await;
    let screens = Arc::new(Requester(Mutex::new(None)));
    assert!(gw.gateway.set_session_screens(screens.clone()));
    let cmd = json!({"command": {"kind": "sidebar", "visible": false}, "sessionKey": SESSION_A, "target": "requester"});
    let res = agent.request("ui.command", cmd.clone()).await;
    assert_eq!(
        res["error"]["code"], "UNAVAILABLE",
        "no turn running: {res}"
    );
    *screens.0.lock().unwrap() = Some(ui2.conn_id.clone());
    let res = agent.request("ui.command", cmd).await;
    assert_eq!(res["payload"]["delivered"], 1, "{res}");
    let _ = ui2.event("ui.command").await;
    let _ = ui1.request("ping", json!({})).await;
    assert!(ui1.events.iter().all(|e| e["event"] != "ui.command"));
}

/// A session credential whose gate the test opens.
struct Gate(Mutex<bool>);
const SESSION_TOKEN: &str = "session-a-layout-credential-0123456789";
impl SessionScreens for Gate {
    fn session_of(&self, token: &ax_core::Secret) -> Option<String> {
        (token.expose() == SESSION_TOKEN).then(|| SESSION_A.to_string())
    }
    fn enabled(&self, _session: &str) -> bool {
        *self.0.lock().unwrap()
    }
}

#[tokio::test]
async fn a_session_credential_reads_layouts_only_while_its_gate_is_open() {
    use ax_gateway::{ClientMode, Method, Scope};
    let gw = start().await;
    let gate = Arc::new(Gate(Mutex::new(false)));
    assert!(gw.gateway.set_session_screens(gate.clone()));
    let every = [Scope::Read, Scope::Write];
    let ui = typed(gw.addr, ClientMode::Ui, &["ui-commands"], &every, TOKEN)
        .await
        .unwrap();
    ui.request(Method::UiLayoutReport, report(2, SESSION_A))
        .await
        .unwrap();
    let agent = typed(gw.addr, ClientMode::Agent, &[], &every, SESSION_TOKEN)
        .await
        .unwrap();
    let err = agent
        .request(Method::UiLayout, json!({}))
        .await
        .unwrap_err();
    let shape = err.gateway_error().unwrap();
    assert_eq!(shape.code, ax_gateway::ErrorCode::Forbidden);
    *gate.0.lock().unwrap() = true;
    let res = agent.request(Method::UiLayout, json!({})).await.unwrap();
    assert_eq!(res["uis"][0]["revision"], 2, "{res}");
}
