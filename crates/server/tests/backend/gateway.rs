use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::header};

use crate::util::{Backend, within};

async fn handshake(b: &Backend, token: &str, session: &str) -> (Value, Value) {
    let url = format!("ws://127.0.0.1:{}/gateway", b.server.local_addr().port());
    let mut request = url.into_client_request().unwrap();
    let origin = format!("http://127.0.0.1:{}", b.server.local_addr().port());
    request
        .headers_mut()
        .insert(header::ORIGIN, origin.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let text = |m: Message| -> Value { serde_json::from_str(m.to_text().unwrap()).unwrap() };
    let challenge = text(within(ws.next()).await.unwrap().unwrap());
    assert_eq!(challenge["event"], "connect.challenge", "{challenge}");
    let connect = json!({"type": "req", "id": "1", "method": "connect", "params": {
        "minProtocol": 1, "maxProtocol": 1,
        "client": {"id": "test", "version": "0", "platform": "linux", "mode": "test"},
        "role": "operator", "scopes": ["operator.write"], "auth": {"token": token}}});
    ws.send(Message::text(connect.to_string())).await.unwrap();
    let hello = text(within(ws.next()).await.unwrap().unwrap());
    if hello["ok"] != true {
        return (hello, Value::Null);
    }
    // The gateway knows this project's sessions: an unknown one is INVALID_REQUEST, a real one
    // only lacks a UI to deliver to.
    let cmd = json!({"type": "req", "id": "2", "method": "ui.command", "params": {
        "command": {"kind": "focus", "sessionKey": session}}});
    ws.send(Message::text(cmd.to_string())).await.unwrap();
    let answer = loop {
        let frame = text(within(ws.next()).await.unwrap().unwrap());
        if frame["type"] == "res" {
            break frame;
        }
    };
    (hello, answer)
}

#[tokio::test]
async fn the_gateway_is_mounted_with_the_backend_credential_and_sessions() {
    let b = Backend::start().await;
    let id = b.session().await;
    let (hello, answer) = handshake(&b, b.server.token(), id.as_str()).await;
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(
        answer["error"]["code"], "UNAVAILABLE",
        "a known session, no UI: {answer}"
    );
    let (_, answer) = handshake(&b, b.server.token(), "ses_0123456789abABCDEFGHIJKLMN").await;
    assert_eq!(answer["error"]["code"], "INVALID_REQUEST", "{answer}");
    let (refused, _) = handshake(&b, "wrong-token-0000000000", id.as_str()).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(!refused.to_string().contains(b.server.token()));
}
