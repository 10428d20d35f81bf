//! A limited token (the backend's screen credential): read and write at most, never admin.

use serde_json::json;

use crate::util::{ALL, Client, TOKEN, WRITE_TOKEN, connect_params, start};

/// A client past the handshake with `token`; returns it and the granted scopes.
async fn connect_with(
    addr: std::net::SocketAddr,
    scopes: &[&str],
    token: &str,
) -> (Client, serde_json::Value) {
    let mut c = Client::open(addr).await;
    assert_eq!(c.frame().await["event"], "connect.challenge");
    let res = c
        .request("connect", connect_params("agent", &[], scopes, token))
        .await;
    assert_eq!(res["ok"], true, "handshake failed: {res}");
    let granted = res["payload"]["auth"]["scopes"].clone();
    (c, granted)
}

#[tokio::test]
async fn a_limited_token_can_write_but_never_gets_admin() {
    let gw = start().await;
    let mut ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let (mut agent, granted) = connect_with(gw.addr, ALL, WRITE_TOKEN).await;
    assert_eq!(granted, json!(["operator.read", "operator.write"]));

    // Write works: the command reaches the Control UI.
    let res = agent
        .request(
            "ui.command",
            json!({"command": {"kind": "sidebar", "visible": false}}),
        )
        .await;
    assert_eq!(res["ok"], true, "{res}");
    assert_eq!(res["payload"]["delivered"], 1);
    let ev = ui.event("ui.command").await;
    assert_eq!(ev["payload"]["command"]["kind"], "sidebar");

    // Admin is not: the operator terminal refuses, and nothing was started.
    let res = agent
        .request("terminal.run", json!({"command": "touch pwned"}))
        .await;
    assert_eq!(res["ok"], false, "{res}");
    assert_eq!(res["error"]["code"], "FORBIDDEN");
    assert_eq!(res["error"]["details"]["code"], "MISSING_SCOPE");
    assert_eq!(res["error"]["details"]["missingScope"], "operator.admin");
    assert!(
        gw.terminal.started.lock().unwrap().is_empty(),
        "nothing ran"
    );
}

#[tokio::test]
async fn asking_only_admin_with_a_limited_token_grants_nothing() {
    let gw = start().await;
    let (mut c, granted) = connect_with(gw.addr, &["operator.admin"], WRITE_TOKEN).await;
    assert_eq!(granted, json!([]));
    let res = c
        .request("terminal.run", json!({"command": "touch pwned"}))
        .await;
    assert_eq!(res["error"]["code"], "FORBIDDEN", "{res}");
    assert_eq!(res["error"]["details"]["code"], "MISSING_SCOPE");
    let res = c
        .request(
            "ui.command",
            json!({"command": {"kind": "sidebar", "visible": true}}),
        )
        .await;
    assert_eq!(res["error"]["code"], "FORBIDDEN", "{res}");
    assert!(
        gw.terminal.started.lock().unwrap().is_empty(),
        "nothing ran"
    );
}

#[tokio::test]
async fn the_full_token_still_gets_admin_beside_a_limited_one() {
    let gw = start().await;
    let (_c, granted) = connect_with(gw.addr, ALL, TOKEN).await;
    assert_eq!(
        granted,
        json!(["operator.read", "operator.write", "operator.admin"])
    );
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
        let mut c = Client::open(gw.addr).await;
        c.frame().await;
        let res = c
            .request("connect", connect_params("agent", &[], ALL, &token))
            .await;
        assert_eq!(res["ok"], false, "{token:?} was accepted: {res}");
        assert_eq!(res["error"]["code"], "FORBIDDEN");
        assert_eq!(res["error"]["details"]["code"], "AUTH_FAILED");
        assert!(!res.to_string().contains(WRITE_TOKEN));
    }
    assert_eq!(gw.gateway.connection_count(), 0);
}
