//! A limited token (the backend's screen credential): read and write at most, never admin.
//! Every client here is well-behaved, so all are the crate's typed client.

use ax_gateway::{ClientMode, ErrorCode, GatewayClient, Method, Scope};
use serde_json::{Value, json};

use crate::util::{ALL, Client, TOKEN, WRITE_TOKEN, start, typed};

const EVERY: &[Scope] = &[Scope::Read, Scope::Write, Scope::Admin];

/// An agent past the handshake with `token`; returns it and the granted scopes.
async fn connect_with(
    addr: std::net::SocketAddr,
    scopes: &[Scope],
    token: &str,
) -> (GatewayClient, Vec<Scope>) {
    let c = typed(addr, ClientMode::Agent, &[], scopes, token)
        .await
        .expect("handshake failed");
    let granted = c.hello().auth.scopes.clone();
    (c, granted)
}

/// The error details of a refused request.
async fn refused(c: &GatewayClient, method: Method, params: Value) -> (ErrorCode, Value) {
    let err = c.request(method, params).await.unwrap_err();
    let shape = err.gateway_error().expect("an error response").clone();
    (shape.code, shape.details.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_limited_token_can_write_but_never_gets_admin() {
    let gw = start().await;
    let mut ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let (agent, granted) = connect_with(gw.addr, EVERY, WRITE_TOKEN).await;
    assert_eq!(granted, vec![Scope::Read, Scope::Write]);

    // Write works: the command reaches the Control UI.
    let res = agent
        .request(
            Method::UiCommand,
            json!({"command": {"kind": "sidebar", "visible": false}}),
        )
        .await
        .unwrap();
    assert_eq!(res["delivered"], 1, "{res}");
    let ev = ui.event("ui.command").await;
    assert_eq!(ev["payload"]["command"]["kind"], "sidebar");

    // Admin is not: the operator terminal refuses, and nothing ran.
    let (code, details) = refused(
        &agent,
        Method::TerminalRun,
        json!({"command": "touch pwned"}),
    )
    .await;
    assert_eq!(code, ErrorCode::Forbidden);
    assert_eq!(details["code"], "MISSING_SCOPE");
    assert_eq!(details["missingScope"], "operator.admin");
    assert!(
        gw.terminal.started.lock().unwrap().is_empty(),
        "nothing ran"
    );
}

#[tokio::test]
async fn asking_only_admin_with_a_limited_token_grants_nothing() {
    let gw = start().await;
    let (c, granted) = connect_with(gw.addr, &[Scope::Admin], WRITE_TOKEN).await;
    assert_eq!(granted, Vec::<Scope>::new());
    let (code, details) = refused(&c, Method::TerminalRun, json!({"command": "touch pwned"})).await;
    assert_eq!(code, ErrorCode::Forbidden);
    assert_eq!(details["code"], "MISSING_SCOPE");
    let (code, _) = refused(
        &c,
        Method::UiCommand,
        json!({"command": {"kind": "sidebar", "visible": true}}),
    )
    .await;
    assert_eq!(code, ErrorCode::Forbidden);
    assert!(
        gw.terminal.started.lock().unwrap().is_empty(),
        "nothing ran"
    );
}

#[tokio::test]
async fn the_full_token_still_gets_admin_beside_a_limited_one() {
    let gw = start().await;
    let (_c, granted) = connect_with(gw.addr, EVERY, TOKEN).await;
    assert_eq!(granted, EVERY.to_vec());
}

#[tokio::test]
async fn tokens_close_to_the_limited_one_are_refused() {
    let gw = start().await;
    let mut flipped = WRITE_TOKEN.to_string().into_bytes();
    flipped[3] ^= 1;
    let flipped = String::from_utf8(flipped).unwrap();
    let near = [
        String::new(),
        WRITE_TOKEN[..WRITE_TOKEN.len() - 1].to_string(),
        format!("{WRITE_TOKEN}x"),
        flipped,
        WRITE_TOKEN.to_uppercase(),
    ];
    for token in near {
        let err = typed(gw.addr, ClientMode::Agent, &[], EVERY, &token)
            .await
            .err()
            .unwrap_or_else(|| panic!("{token:?} was accepted"));
        let shape = err.gateway_error().expect("an error response");
        assert_eq!(shape.code, ErrorCode::Forbidden);
        assert_eq!(shape.details.as_ref().unwrap()["code"], "AUTH_FAILED");
        assert!(!shape.message.contains(WRITE_TOKEN));
    }
    assert_eq!(gw.gateway.connection_count(), 0);
}
