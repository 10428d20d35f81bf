//! Session-scoped screen credentials (the screen server a session hands its agent,
//! docs/agents.md §8): bound to their session, usable only while its gate is open, never a
//! UI, never admin, and one session's credential never acts for another session.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use ax_gateway::{ClientMode, ErrorCode, GatewayClient, Method, Scope, SessionScreens};
use serde_json::{Value, json};

use crate::util::{SESSION_A, SESSION_B, TOKEN, WAIT, start, typed};

const TOKEN_A: &str = "session-a-screen-credential-0123456789";
const TOKEN_B: &str = "session-b-screen-credential-0123456789";

/// Two sessions' credentials and gates, switched by the test.
#[derive(Default)]
struct Screens {
    open: Mutex<HashMap<String, bool>>,
}

impl SessionScreens for Screens {
    fn session_of(&self, token: &ax_core::Secret) -> Option<String> {
        match token.expose() {
            TOKEN_A => Some(SESSION_A.into()),
            TOKEN_B => Some(SESSION_B.into()),
            _ => None,
        }
    }
    fn enabled(&self, session: &str) -> bool {
        self.open.lock().unwrap().get(session) == Some(&true)
    }
}

async fn refused(c: &GatewayClient, method: Method, params: Value) -> (ErrorCode, Value) {
    let err = c.request(method, params).await.unwrap_err();
    let shape = err.gateway_error().expect("an error response").clone();
    (shape.code, shape.details.unwrap_or(Value::Null))
}

fn sidebar(source: Option<&str>) -> Value {
    let mut p = json!({"command": {"kind": "sidebar", "visible": false}});
    if let Some(s) = source {
        p["sessionKey"] = json!(s);
    }
    p
}

#[tokio::test]
async fn a_session_credential_works_only_for_its_own_open_session() {
    let gw = start().await;
    let screens = Arc::new(Screens::default());
    assert!(gw.gateway.set_session_screens(screens.clone()));
    let every = [Scope::Read, Scope::Write, Scope::Admin];
    let ui = typed(gw.addr, ClientMode::Ui, &["ui-commands"], &every, TOKEN)
        .await
        .unwrap();
    let mut ui_events = ui.subscribe();
    let a = typed(gw.addr, ClientMode::Agent, &[], &every, TOKEN_A)
        .await
        .unwrap();
    let b = typed(gw.addr, ClientMode::Agent, &[], &every, TOKEN_B)
        .await
        .unwrap();
    // Never more than write, whatever it asks for.
    assert_eq!(a.hello().auth.scopes, vec![Scope::Read, Scope::Write]);
    // Never a UI (it could acknowledge its own commands), and a near miss is no credential.
    let err = typed(gw.addr, ClientMode::Ui, &["ui-commands"], &every, TOKEN_A)
        .await
        .err()
        .expect("refused as a ui");
    assert_eq!(err.gateway_error().unwrap().code, ErrorCode::Forbidden);
    let near = format!("{TOKEN_A}x");
    assert!(
        typed(gw.addr, ClientMode::Agent, &[], &every, &near)
            .await
            .is_err()
    );
    // The backend credential's UI is not a session's.
    assert!(gw.gateway.is_ui_client(&ui.hello().server.conn_id));

    // Closed gate: refused with the reason, nothing reaches the UI.
    let (code, details) = refused(&a, Method::UiCommand, sidebar(None)).await;
    assert_eq!(
        (code, details["code"].as_str()),
        (ErrorCode::Forbidden, Some("SCREEN_DISABLED"))
    );
    assert_eq!(
        a.request(Method::ScreenGate, json!({})).await.unwrap()["enabled"],
        false
    );

    // B's gate opens: B's screen servers hear it, A's do not, and A stays refused.
    let mut a_events = a.subscribe();
    let mut b_events = b.subscribe();
    screens.open.lock().unwrap().insert(SESSION_B.into(), true);
    gw.gateway.screen_gate_changed(SESSION_B, true);
    let ev = loop {
        let ev = tokio::time::timeout(WAIT, b_events.recv())
            .await
            .unwrap()
            .unwrap();
        if ev.event != "tick" {
            break ev;
        }
    };
    assert_eq!(
        (ev.event.as_str(), &ev.payload),
        ("screen.gate", &Some(json!({"enabled": true})))
    );
    let (code, details) = refused(&a, Method::UiCommand, sidebar(None)).await;
    assert_eq!(
        (code, details["code"].as_str()),
        (ErrorCode::Forbidden, Some("SCREEN_DISABLED"))
    );
    // A cannot borrow B's open gate by naming B as its source session either.
    let (code, details) = refused(&a, Method::UiCommand, sidebar(Some(SESSION_B))).await;
    assert_eq!(
        (code, details["code"].as_str()),
        (ErrorCode::Forbidden, Some("OTHER_SESSION"))
    );
    assert!(a_events.try_recv().is_err(), "A heard B's gate");

    // B works as itself, not as A.
    let res = b
        .request(Method::UiCommand, sidebar(Some(SESSION_B)))
        .await
        .unwrap();
    assert_eq!(res["delivered"], 1, "{res}");
    let ev = loop {
        let ev = tokio::time::timeout(WAIT, ui_events.recv())
            .await
            .unwrap()
            .unwrap();
        if ev.event == "ui.command" {
            break ev;
        }
    };
    assert_eq!(ev.payload.unwrap()["sessionKey"], SESSION_B);
    let (code, details) = refused(&b, Method::UiCommand, sidebar(Some(SESSION_A))).await;
    assert_eq!(
        (code, details["code"].as_str()),
        (ErrorCode::Forbidden, Some("OTHER_SESSION"))
    );
    // Never the operator terminal.
    let (code, details) = refused(&b, Method::TerminalRun, json!({"command": "true"})).await;
    assert_eq!(
        (code, details["code"].as_str()),
        (ErrorCode::Forbidden, Some("MISSING_SCOPE"))
    );

    // The backend credential has no gate to ask about.
    let op = typed(gw.addr, ClientMode::Agent, &[], &every, TOKEN)
        .await
        .unwrap();
    let (code, _) = refused(&op, Method::ScreenGate, json!({})).await;
    assert_eq!(code, ErrorCode::Forbidden);
    // An agent connection is never a UI client, whatever its credential.
    assert!(!gw.gateway.is_ui_client(&op.hello().server.conn_id));
    assert!(!gw.gateway.is_ui_client(&a.hello().server.conn_id));
    assert!(!gw.gateway.is_ui_client("conn_0000000000000000"));
}
