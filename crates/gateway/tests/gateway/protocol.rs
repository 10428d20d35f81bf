//! Handshake, frames, scopes and keepalive.

use std::{collections::BTreeSet, time::Duration};

use ax_gateway::Tuning;
use serde_json::{Value, json};

use crate::util::{
    ALL, Client, Ended, SESSION_A, TOKEN, connect_params, eventually, start, start_with,
};

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn assert_closed_with_error(ended: Ended, code: u16) {
    match ended {
        Ended::Close(Some(f)) => assert_eq!(u16::from(f.code), code, "close frame {f:?}"),
        other => panic!("expected a close frame with code {code}, got {other:?}"),
    }
}

#[tokio::test]
async fn handshake_challenge_then_hello_ok() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    let challenge = c.frame().await;
    assert_eq!(challenge["type"], "event");
    assert_eq!(challenge["event"], "connect.challenge");
    assert_eq!(challenge["seq"], 1);
    assert_eq!(
        keys(&challenge["payload"]),
        ["nonce", "ts"].map(String::from).into()
    );
    assert!(challenge["payload"]["nonce"].as_str().unwrap().len() >= 16);
    assert!(challenge["payload"]["ts"].as_i64().unwrap() > 0);

    let res = c
        .request(
            "connect",
            connect_params("ui", &["ui-commands"], ALL, TOKEN),
        )
        .await;
    assert_eq!(
        keys(&res),
        ["id", "ok", "payload", "type"].map(String::from).into()
    );
    assert_eq!(res["ok"], true);
    let hello = &res["payload"];
    assert_eq!(
        keys(hello),
        ["auth", "features", "policy", "protocol", "server"]
            .map(String::from)
            .into()
    );
    assert_eq!(hello["protocol"], 1);
    assert_eq!(
        keys(&hello["server"]),
        ["connId", "version"].map(String::from).into()
    );
    assert_eq!(hello["server"]["version"], "9.9.9-test");
    assert!(
        hello["server"]["connId"]
            .as_str()
            .unwrap()
            .starts_with("conn_")
    );
    assert_eq!(
        keys(&hello["features"]),
        ["events", "methods"].map(String::from).into()
    );
    let methods: Vec<&str> = hello["features"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(methods.contains(&"ui.command") && methods.contains(&"ui.command.result"));
    assert_eq!(hello["auth"], json!({"role": "operator", "scopes": ALL}));
    assert_eq!(
        keys(&hello["policy"]),
        ["maxPayload", "tickIntervalMs"].map(String::from).into()
    );
    assert_eq!(hello["policy"]["tickIntervalMs"], 15000);
    assert!(gw.gateway.connection_count() == 1);

    // After the handshake, requests work and event seq continues from the challenge.
    let pong = c.request("ping", json!({})).await;
    assert_eq!(pong["ok"], true);
}

#[tokio::test]
async fn granted_scopes_are_what_was_asked() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    let res = c
        .request(
            "connect",
            connect_params("cli", &[], &["operator.read"], TOKEN),
        )
        .await;
    assert_eq!(res["payload"]["auth"]["scopes"], json!(["operator.read"]));
}

#[tokio::test]
async fn wrong_token_is_refused_and_closed() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    let id = c
        .send_request("connect", connect_params("ui", &[], ALL, "not-the-token"))
        .await;
    let res = c.frame().await;
    assert_eq!(res["id"], id.as_str());
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "FORBIDDEN");
    assert!(!res.to_string().contains("not-the-token"));
    assert!(!res.to_string().contains(TOKEN));
    assert_closed_with_error(c.until_end().await, 1008);
    assert_eq!(gw.gateway.connection_count(), 0);
}

#[tokio::test]
async fn unsupported_protocol_range_is_refused() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    let mut params = connect_params("ui", &[], ALL, TOKEN);
    params["minProtocol"] = json!(2);
    params["maxProtocol"] = json!(3);
    c.send_request("connect", params).await;
    let res = c.frame().await;
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert!(
        res["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocol")
    );
    assert_closed_with_error(c.until_end().await, 1008);
}

#[tokio::test]
async fn a_frame_before_connect_is_refused() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    let id = c.send_request("ping", json!({})).await;
    let res = c.frame().await;
    assert_eq!(res["id"], id.as_str());
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert!(
        res["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connect")
    );
    assert_closed_with_error(c.until_end().await, 1008);
}

#[tokio::test]
async fn garbage_before_connect_is_refused() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    c.send_text("this is not json".into()).await;
    let res = c.frame().await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert_closed_with_error(c.until_end().await, 1008);
}

#[tokio::test]
async fn oversize_frame_before_connect_is_refused() {
    let gw = start().await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    let mut params = connect_params("ui", &[], ALL, TOKEN);
    params["client"]["id"] = json!("x".repeat(70 * 1024));
    c.send_request("connect", params).await;
    let res = c.frame().await;
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert!(
        res["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    assert_closed_with_error(c.until_end().await, 1009);
}

#[tokio::test]
async fn oversize_frame_after_connect_closes() {
    let gw = start_with(Tuning {
        max_payload: 4096,
        ..Tuning::default()
    })
    .await;
    let mut c = Client::connected(gw.addr, "cli", &[], ALL).await;
    c.send_request("ping", json!({"pad": "y".repeat(8192)}))
        .await;
    let res = c.frame().await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert_closed_with_error(c.until_end().await, 1009);
}

#[tokio::test]
async fn unknown_method_is_not_found() {
    let gw = start().await;
    let mut c = Client::connected(gw.addr, "cli", &[], ALL).await;
    let res = c.request("sessions.delete", json!({})).await;
    assert_eq!(res["ok"], false);
    assert_eq!(res["error"]["code"], "NOT_FOUND");
    // The connection stays usable.
    assert_eq!(c.request("ping", json!({})).await["ok"], true);
}

#[tokio::test]
async fn schemas_are_closed() {
    let gw = start().await;

    // An unknown field in connect params.
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    let mut params = connect_params("ui", &[], ALL, TOKEN);
    params["client"]["color"] = json!("blue");
    c.send_request("connect", params).await;
    assert_eq!(c.frame().await["error"]["code"], "INVALID_REQUEST");
    assert_closed_with_error(c.until_end().await, 1008);

    // An unknown mode.
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    c.send_request("connect", connect_params("robot", &[], ALL, TOKEN))
        .await;
    assert_eq!(c.frame().await["error"]["code"], "INVALID_REQUEST");

    let mut c = Client::connected(gw.addr, "agent", &[], ALL).await;
    // An unknown field on the frame itself.
    c.send_text(r#"{"type":"req","id":"x1","method":"ping","extra":true}"#.into())
        .await;
    let res = c.response("x1").await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    // A frame of the wrong type.
    c.send_text(r#"{"type":"res","id":"x2","ok":true}"#.into())
        .await;
    let res = c.response("x2").await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    // Unknown fields inside ui.command and its command.
    for params in [
        // (`target` is a field since issue 22; this one is not.)
        json!({"command": {"kind": "focus"}, "broadcast": "all"}),
        json!({"command": {"kind": "focus", "pane": 2}}),
        json!({"command": {"kind": "split", "direction": "left"}}),
        json!({"command": {"kind": "panel", "panel": "terminal", "open": false, "dock": "right"}}),
        json!({"command": {"kind": "teleport"}}),
        json!("split"),
    ] {
        let res = c.request("ui.command", params.clone()).await;
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{params}");
        assert!(
            res["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("invalid ui.command params: "),
            "{res}"
        );
    }
}

#[tokio::test]
async fn read_only_caller_gets_missing_scope() {
    let gw = start().await;
    let _ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut c = Client::connected(gw.addr, "agent", &[], &["operator.read"]).await;
    let res = c
        .request(
            "ui.command",
            json!({"command": {"kind": "sidebar", "visible": true}}),
        )
        .await;
    assert_eq!(res["ok"], false);
    assert_eq!(
        res["error"],
        json!({
            "code": "FORBIDDEN",
            "message": "missing scope: operator.write",
            "details": {
                "code": "MISSING_SCOPE",
                "missingScope": "operator.write",
                "requiredScopes": ["operator.write"],
            }
        })
    );
    // Read is enough for ping.
    assert_eq!(c.request("ping", json!({})).await["ok"], true);
}

#[tokio::test]
async fn every_scope_case() {
    let gw = start().await;
    let _ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let cmd = json!({"command": {"kind": "sidebar", "visible": false}});
    let cases: &[(&[&str], bool, bool)] = &[
        // scopes, may ui.command, may terminal.run
        (&[], false, false),
        (&["operator.read"], false, false),
        (&["operator.write"], true, false),
        (&["operator.read", "operator.write"], true, false),
        (&["operator.admin"], true, true),
    ];
    for (scopes, write_ok, admin_ok) in cases {
        let mut c = Client::connected(gw.addr, "agent", &[], scopes).await;
        let res = c.request("ui.command", cmd.clone()).await;
        assert_eq!(res["ok"], *write_ok, "{scopes:?}: {res}");
        if !write_ok {
            assert_eq!(res["error"]["details"]["missingScope"], "operator.write");
        }
        let res = c
            .request("terminal.run", json!({"command": "exit:0"}))
            .await;
        assert_eq!(res["ok"], *admin_ok, "{scopes:?}: {res}");
        if !admin_ok {
            assert_eq!(res["error"]["code"], "FORBIDDEN");
            assert_eq!(res["error"]["message"], "missing scope: operator.admin");
            assert_eq!(res["error"]["details"]["code"], "MISSING_SCOPE");
        }
        // The interactive terminals: admin only, exactly like terminal.run.
        let t = json!({"terminalId": "term_000000000000"});
        for (method, params) in [
            ("terminal.list", json!({})),
            ("terminal.open", json!({"cols": 80, "rows": 24})),
            ("terminal.attach", t.clone()),
            (
                "terminal.input",
                json!({"terminalId": t["terminalId"], "data": "x"}),
            ),
            (
                "terminal.resize",
                json!({"terminalId": t["terminalId"], "cols": 80, "rows": 24}),
            ),
            ("terminal.close", t.clone()),
        ] {
            let res = c.request(method, params).await;
            if *admin_ok {
                assert_ne!(res["error"]["code"], "FORBIDDEN", "{method}: {res}");
            } else {
                assert_eq!(
                    res["error"]["code"], "FORBIDDEN",
                    "{scopes:?} {method}: {res}"
                );
                assert_eq!(res["error"]["details"]["missingScope"], "operator.admin");
            }
        }
        let res = c.request("ping", json!({})).await;
        assert_eq!(res["ok"], !scopes.is_empty(), "{scopes:?}: ping {res}");
    }
}

#[tokio::test]
async fn unknown_session_is_invalid_request() {
    let gw = start().await;
    let _ui = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    let mut c = Client::connected(gw.addr, "agent", &[], &["operator.write"]).await;
    let res = c
        .request(
            "ui.command",
            json!({"command": {"kind": "focus", "sessionKey": "ses_00000000000099999999999999"}}),
        )
        .await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    assert!(
        res["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown session")
    );
    let res = c
        .request(
            "ui.command",
            json!({"command": {"kind": "focus"}, "sessionKey": "nope"}),
        )
        .await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST");
    let res = c
        .request(
            "ui.command",
            json!({"command": {"kind": "focus", "sessionKey": SESSION_A}}),
        )
        .await;
    assert_eq!(res["ok"], true);
}

#[tokio::test]
async fn ticks_count_seq_and_dead_peers_are_dropped() {
    let gw = start_with(Tuning {
        tick_interval: Duration::from_millis(100),
        dead_after: Duration::from_millis(400),
        ..Tuning::default()
    })
    .await;
    let mut live = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    assert!(live.event("tick").await["payload"]["ts"].as_i64().is_some());
    live.event("tick").await;
    // `Client::frame` asserts there is no gap in seq.
    assert!(live.last_seq >= 3);

    // A peer that never reads never answers pings either: it is dropped.
    let _silent = Client::connected(gw.addr, "ui", &["ui-commands"], ALL).await;
    assert!(eventually(|| gw.gateway.connection_count() == 2).await);
    let gateway = gw.gateway.clone();
    // Keep the live one reading so it stays.
    let keep = tokio::spawn(async move {
        loop {
            live.event("tick").await;
        }
    });
    assert!(
        eventually(|| gateway.connection_count() == 1).await,
        "the silent peer was not dropped"
    );
    keep.abort();
}

#[tokio::test]
async fn handshake_timeout_closes() {
    let gw = start_with(Tuning {
        handshake_timeout: Duration::from_millis(200),
        ..Tuning::default()
    })
    .await;
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    assert_closed_with_error(c.until_end().await, 1008);
}

#[tokio::test]
async fn a_dropped_connection_future_unregisters() {
    // The backend may drop `serve_socket` (shutdown): the hub must not keep the connection.
    struct NoSessions;
    impl ax_gateway::SessionDirectory for NoSessions {
        fn contains(&self, _: &str) -> bool {
            false
        }
    }
    let gateway = ax_gateway::Gateway::new(ax_gateway::GatewayConfig {
        token: TOKEN.into(),
        server_version: "x".into(),
        sessions: std::sync::Arc::new(NoSessions),
        terminal: None,
    });
    let stop = std::sync::Arc::new(tokio::sync::Notify::new());
    let g = gateway.clone();
    let s2 = stop.clone();
    let app = axum::Router::new().route(
        "/gateway",
        axum::routing::get(move |ws: axum::extract::ws::WebSocketUpgrade| {
            let g = g.clone();
            let s2 = s2.clone();
            async move {
                ws.on_upgrade(move |socket| async move {
                    tokio::select! {
                        () = g.serve_socket(socket) => {}
                        () = s2.notified() => {}
                    }
                })
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let mut ui = Client::connected(addr, "ui", &["ui-commands"], ALL).await;
    assert!(eventually(|| gateway.ui_client_count() == 1).await);
    stop.notify_waiters();
    assert!(
        eventually(|| gateway.connection_count() == 0).await,
        "a dropped connection stayed registered"
    );
    assert!(matches!(
        ui.until_end().await,
        Ended::Close(_) | Ended::Gone
    ));
}
