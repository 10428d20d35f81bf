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
    let (hello, answer) = handshake(&b, b.server.token().expose(), id.as_str()).await;
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(
        answer["error"]["code"], "UNAVAILABLE",
        "a known session, no UI: {answer}"
    );
    let (_, answer) = handshake(
        &b,
        b.server.token().expose(),
        "ses_0123456789abABCDEFGHIJKLMN",
    )
    .await;
    assert_eq!(answer["error"]["code"], "INVALID_REQUEST", "{answer}");
    let (refused, _) = handshake(&b, "wrong-token-0000000000", id.as_str()).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(!refused.to_string().contains(b.server.token().expose()));
}

/// Connect to the mounted gateway with `token` asking for `scopes`; the socket and `hello`.
async fn connect(
    b: &Backend,
    token: &str,
    scopes: &[&str],
) -> (
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    Value,
) {
    let url = format!("ws://127.0.0.1:{}/gateway", b.server.local_addr().port());
    let (mut ws, _) = within(tokio_tungstenite::connect_async(url)).await.unwrap();
    let challenge = within(ws.next()).await.unwrap().unwrap();
    assert!(challenge.to_text().unwrap().contains("connect.challenge"));
    let connect = json!({"type": "req", "id": "1", "method": "connect", "params": {
        "minProtocol": 1, "maxProtocol": 1,
        "client": {"id": "test", "version": "0", "platform": "linux", "mode": "agent"},
        "role": "operator", "scopes": scopes, "auth": {"token": token}}});
    ws.send(Message::text(connect.to_string())).await.unwrap();
    let hello: Value =
        serde_json::from_str(within(ws.next()).await.unwrap().unwrap().to_text().unwrap()).unwrap();
    (ws, hello)
}

#[tokio::test]
async fn the_screen_credential_opens_the_gateway_but_not_the_api() {
    let b = Backend::start().await;
    let screen = b.server.screen_token().expose().to_owned();
    assert_eq!(
        screen,
        ax_server::screen_credential(b.server.token().expose()).expose()
    );

    // The HTTP API answers the screen credential 401, on every kind of route.
    let raw = b.raw();
    for path in ["/session", "/project", "/permission"] {
        let res = within(
            raw.get(b.url(path))
                .header("authorization", format!("Bearer {screen}"))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(res.status().as_u16(), 401, "{path}");
    }
    let res = within(
        raw.post(b.url("/session"))
            .header("authorization", format!("Bearer {screen}"))
            .json(&json!({}))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    // The full credential still works (so the 401s above are about the credential).
    let res = within(
        raw.get(b.url("/session"))
            .header("authorization", b.bearer())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(res.status().as_u16(), 200);

    // The mounted gateway accepts it, granting read and write only.
    let all = ["operator.read", "operator.write", "operator.admin"];
    let (mut ws, hello) = connect(&b, &screen, &all).await;
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(
        hello["payload"]["auth"]["scopes"],
        json!(["operator.read", "operator.write"])
    );
    // Write reaches ui.command (no Control UI here: UNAVAILABLE, not FORBIDDEN).
    let cmd = json!({"type": "req", "id": "2", "method": "ui.command", "params": {
        "command": {"kind": "sidebar", "visible": true}}});
    ws.send(Message::text(cmd.to_string())).await.unwrap();
    let run = json!({"type": "req", "id": "3", "method": "terminal.run", "params": {
        "command": "touch pwned"}});
    ws.send(Message::text(run.to_string())).await.unwrap();
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 2 {
        let frame: Value =
            serde_json::from_str(within(ws.next()).await.unwrap().unwrap().to_text().unwrap())
                .unwrap();
        if frame["type"] == "res" {
            answers.insert(frame["id"].as_str().unwrap().to_owned(), frame);
        }
    }
    assert_eq!(
        answers["2"]["error"]["code"], "UNAVAILABLE",
        "{}",
        answers["2"]
    );
    assert_eq!(
        answers["3"]["error"]["code"], "FORBIDDEN",
        "{}",
        answers["3"]
    );
    assert_eq!(answers["3"]["error"]["details"]["code"], "MISSING_SCOPE");
    assert!(!b.project_path().join("pwned").exists());

    // The full credential keeps admin; a near miss of the screen credential gets nothing.
    let (_ws, hello) = connect(&b, b.server.token().expose(), &all).await;
    assert_eq!(
        hello["payload"]["auth"]["scopes"],
        json!(["operator.read", "operator.write", "operator.admin"])
    );
    let near = format!("{}0", &screen[..screen.len() - 1]);
    let near = if near == screen {
        format!("{}1", &screen[..screen.len() - 1])
    } else {
        near
    };
    let (_ws, refused) = connect(&b, &near, &all).await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(!refused.to_string().contains(&screen));
}
