//! Holes an outside review found in the gateway, each reproduced here first (docs/SECURITY.md).

use ax_gateway::{ClientMode, ErrorCode, Method, Scope, Tuning, UiCommandParams};
use serde_json::json;
use tokio_tungstenite::tungstenite::{
    Message,
    protocol::frame::{
        Frame,
        coding::{Data, OpCode},
    },
};

use crate::util::{
    ALL, Client, Ended, TOKEN, WRITE_TOKEN, connect_params, eventually, logs, start, start_with,
    typed,
};

fn sidebar() -> UiCommandParams {
    serde_json::from_value(json!({"command": {"kind": "sidebar", "visible": false}})).unwrap()
}

fn close_of(ended: Ended) -> (u16, String) {
    match ended {
        Ended::Close(Some(f)) => (u16::from(f.code), f.reason.to_string()),
        other => panic!("expected a close frame, got {other:?}"),
    }
}

#[tokio::test]
async fn a_ui_granted_no_scope_receives_no_ui_command() {
    let gw = start().await;
    let mut blind = Client::connected(gw.addr, "ui", &["ui-commands"], &[]).await;
    assert_eq!(gw.gateway.ui_client_count(), 0);
    let agent = typed(gw.addr, ClientMode::Agent, &[], &[Scope::Write], TOKEN)
        .await
        .unwrap();
    let err = agent.ui_command(&sidebar()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unavailable, "{err}");
    // Nothing reached it: a ping answered proves everything before it was read.
    let _ = blind.request("ping", json!({})).await;
    assert!(blind.events.iter().all(|e| e["event"] != "ui.command"));
    // Nor may it acknowledge.
    let res = blind
        .request(
            "ui.command.result",
            json!({"commandId": "cmd_1", "outcome": "applied"}),
        )
        .await;
    assert_eq!(res["error"]["code"], "FORBIDDEN");
}

#[tokio::test]
async fn the_screen_credential_cannot_register_as_a_ui() {
    let gw = start().await;
    let refused = typed(
        gw.addr,
        ClientMode::Ui,
        &["ui-commands"],
        &[Scope::Read, Scope::Write],
        WRITE_TOKEN,
    )
    .await
    .err()
    .expect("the limited credential connected as a ui");
    let shape = refused.gateway_error().expect("an error response");
    assert_eq!(shape.code, ErrorCode::Forbidden);
    assert_eq!(shape.details.as_ref().unwrap()["code"], "UI_NOT_ALLOWED");
    assert_eq!(gw.gateway.ui_client_count(), 0);

    // So with no browser open the agent hears UNAVAILABLE, not "delivered: 1".
    let agent = typed(
        gw.addr,
        ClientMode::Agent,
        &[],
        &[Scope::Write],
        WRITE_TOKEN,
    )
    .await
    .unwrap();
    let err = agent.ui_command(&sidebar()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unavailable, "{err}");
    // It still works as an agent.
    assert!(agent.request(Method::Ping, json!({})).await.is_ok());
}

#[tokio::test]
async fn a_frame_over_the_limit_closes_1009_with_a_reason() {
    // The default limit and the backend's upgrade settings: the WebSocket layer's cap must
    // not cut the frame before the gateway answers it.
    let gw = start().await;
    let mut c = Client::connected(gw.addr, "cli", &[], ALL).await;
    c.send_request(
        "ping",
        json!({"pad": "y".repeat(ax_gateway::MAX_PAYLOAD + 1000)}),
    )
    .await;
    let res = c.frame().await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
    assert!(
        res["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large")
    );
    let (code, reason) = close_of(c.until_end().await);
    assert_eq!((code, reason.as_str()), (1009, "frame too large"));
}

#[tokio::test]
async fn a_frame_far_over_the_limit_still_gets_1009() {
    let gw = start_with(Tuning {
        max_payload: 4096,
        ..Tuning::default()
    })
    .await;
    let mut c = Client::connected(gw.addr, "cli", &[], ALL).await;
    // Past the WebSocket layer's own cap (the limit plus 64 KiB).
    c.send_request("ping", json!({"pad": "z".repeat(200 * 1024)}))
        .await;
    loop {
        match c.frame_or_end().await {
            Ok(f) => assert_eq!(f["error"]["code"], "INVALID_REQUEST", "{f}"),
            Err(Ended::Close(Some(f))) => {
                assert_eq!(u16::from(f.code), 1009);
                assert_eq!(f.reason.as_str(), "frame too large");
                break;
            }
            // The unread rest of the frame may turn the close into a reset.
            Err(Ended::Gone) => break,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert!(eventually(|| gw.gateway.connection_count() == 0).await);
}

fn invalid_utf8_text() -> Message {
    Message::Frame(Frame::message(
        vec![b'{', 0xff, 0xfe, b'}'],
        OpCode::Data(Data::Text),
        true,
    ))
}

#[tokio::test]
async fn invalid_utf8_closes_1007_with_a_reason() {
    let gw = start().await;
    // Before the handshake.
    let mut c = Client::open(gw.addr).await;
    c.frame().await;
    use futures_util::SinkExt;
    c.ws.send(invalid_utf8_text()).await.unwrap();
    let mut ended = c.frame_or_end().await;
    if let Ok(res) = &ended {
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
        ended = c.frame_or_end().await;
    }
    let (code, reason) = close_of(ended.unwrap_err());
    assert_eq!(code, 1007);
    assert!(reason.contains("UTF-8"), "{reason}");

    // After it.
    let mut c = Client::connected(gw.addr, "cli", &[], ALL).await;
    c.ws.send(invalid_utf8_text()).await.unwrap();
    let (code, reason) = close_of(c.until_end().await);
    assert_eq!(code, 1007);
    assert!(reason.contains("UTF-8"), "{reason}");
}

#[tokio::test]
async fn no_log_line_carries_a_credential_even_at_trace() {
    let logs = logs();
    let gw = start().await;
    let client = typed(gw.addr, ClientMode::Cli, &[], &[Scope::Admin], TOKEN)
        .await
        .unwrap();
    client.request(Method::Ping, json!({})).await.unwrap();
    let mut wrong = Client::open(gw.addr).await;
    wrong.frame().await;
    wrong
        .request(
            "connect",
            connect_params("ui", &[], ALL, "wrong-secret-0123456789"),
        )
        .await;
    let limited = typed(
        gw.addr,
        ClientMode::Agent,
        &[],
        &[Scope::Write],
        WRITE_TOKEN,
    )
    .await
    .unwrap();
    limited.request(Method::Ping, json!({})).await.unwrap();
    client.close().await;
    let text = logs.text();
    // The capture is live: the WebSocket library's debug lines and the gateway's own are in.
    assert!(!text.is_empty(), "nothing was logged");
    for secret in [TOKEN, WRITE_TOKEN, "wrong-secret-0123456789"] {
        assert!(!text.contains(secret), "a credential reached the logs");
    }
}
