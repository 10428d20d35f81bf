//! The gateway and the Control UI as `ax-code serve` mounts them, and `ax-code mcp screen`
//! finding its credential without the environment variable: real processes, real sockets.

mod support;

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::Path,
    process::{Command, Stdio},
};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::*;
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};

fn ws_url(url: &str) -> String {
    format!("{}/gateway", url.replacen("http://", "ws://", 1))
}

async fn first_frame(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Value {
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("frame in time")
            .expect("open")
            .expect("frame");
        if let Message::Text(t) = msg {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

#[tokio::test]
async fn the_mounted_gateway_checks_origin_and_host_and_speaks_the_protocol() {
    let s = ControlServe::start();

    // A page of another origin cannot open the gateway (cross-site WebSocket hijacking).
    let mut req = ws_url(&s.url).into_client_request().unwrap();
    req.headers_mut()
        .insert("Origin", HeaderValue::from_static("http://evil.example"));
    let refused = tokio_tungstenite::connect_async(req).await;
    assert!(refused.is_err(), "a foreign Origin was accepted");

    // A rebound DNS name is refused too.
    let mut req = ws_url(&s.url).into_client_request().unwrap();
    let port = s.url.rsplit(':').next().unwrap();
    req.headers_mut().insert(
        "Host",
        HeaderValue::from_str(&format!("attacker.example:{port}")).unwrap(),
    );
    assert!(tokio_tungstenite::connect_async(req).await.is_err());

    // The backend's own origin is welcome, and the protocol runs as specified.
    let mut req = ws_url(&s.url).into_client_request().unwrap();
    req.headers_mut()
        .insert("Origin", HeaderValue::from_str(&s.url).unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let challenge = first_frame(&mut ws).await;
    assert_eq!(challenge["event"], "connect.challenge");
    let connect = json!({"type": "req", "id": "c", "method": "connect", "params": {
        "minProtocol": 1, "maxProtocol": 1,
        "client": {"id": "t", "version": "1", "platform": "linux", "mode": "ui"},
        "caps": ["ui-commands"], "role": "operator", "scopes": ["operator.read"],
        "auth": {"token": s.token},
    }});
    ws.send(Message::text(connect.to_string())).await.unwrap();
    let hello = first_frame(&mut ws).await;
    assert_eq!(hello["ok"], true, "{hello}");
    assert_eq!(hello["payload"]["auth"]["scopes"], json!(["operator.read"]));
    assert_eq!(
        hello["payload"]["server"]["version"],
        env!("CARGO_PKG_VERSION")
    );

    // A read-only caller cannot send ui.command; a session of this project is known.
    let cmd = json!({"type": "req", "id": "u", "method": "ui.command",
        "params": {"command": {"kind": "sidebar", "visible": true}}});
    ws.send(Message::text(cmd.to_string())).await.unwrap();
    let res = first_frame(&mut ws).await;
    assert_eq!(res["error"]["details"]["code"], "MISSING_SCOPE");
}

#[tokio::test]
async fn the_control_ui_is_served_with_a_strict_policy() {
    let s = ControlServe::start();
    let http = reqwest::Client::new();
    let page = http.get(format!("{}/", s.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
    assert!(csp.contains("frame-src http: https:") && !csp.contains("unsafe"));
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains("/assets/app.js"));
    assert!(!html.contains(&s.token));

    let js = http
        .get(format!("{}/assets/app.js", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    let missing = http
        .get(format!("{}/assets/../Cargo.toml", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let missing = http
        .get(format!("{}/assets/nope.js", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// Speak just enough MCP over stdio to call `screen` once; returns the tool result.
fn call_screen(mut cmd: Command, args: Value) -> Value {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watchdog = Watchdog::new(child.id(), WAIT);
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "screen-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "screen", "arguments": args}}),
    ];
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut result = Value::Null;
    for (i, line) in lines.iter().enumerate() {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        if i == 1 {
            continue;
        }
        let mut reply = String::new();
        out.read_line(&mut reply).unwrap();
        let reply: Value = serde_json::from_str(&reply).expect("stdout carries JSON-RPC only");
        result = reply["result"].clone();
    }
    drop(stdin);
    let mut rest = String::new();
    let _ = out.read_to_string(&mut rest);
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    let _ = child.wait();
    drop(watchdog);
    assert!(rest.trim().is_empty(), "extra stdout: {rest}");
    result
}

fn screen_command(s: &ControlServe, cwd: &Path, url: Option<&str>) -> Command {
    let mut c = Command::new(AX);
    c.current_dir(cwd)
        .args(["mcp", "screen"])
        .env("AX_CODE_DATA_DIR", s.data.path())
        .env_remove("AX_CODE_SERVER_PASSWORD")
        .env_remove("XDG_DATA_HOME");
    if let Some(url) = url {
        c.args(["--url", url]);
    }
    c
}

#[tokio::test]
async fn mcp_screen_finds_the_credential_without_the_environment() {
    let s = ControlServe::start();
    let elsewhere = tempfile::tempdir().unwrap();
    // By URL, from the `screen/` record `serve` wrote: the gateway answers (no UI yet), so
    // the handshake with the found credential succeeded.
    for (cwd, url) in [
        (elsewhere.path(), Some(s.url.as_str())),
        // Without --url: the registered backend of the current project.
        (s.project.path(), None),
    ] {
        let cmd = screen_command(&s, cwd, url);
        let result = tokio::task::spawn_blocking(move || {
            call_screen(cmd, json!({"action": "sidebar_show"}))
        })
        .await
        .unwrap();
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(
            result["structuredContent"],
            json!({"ok": false, "error": {"code": "UNAVAILABLE", "message": "no ui client"}})
        );
        assert!(!result.to_string().contains(&s.token));
    }

    // Elsewhere and without --url there is nothing to find.
    let cmd = screen_command(&s, elsewhere.path(), None);
    let result = tokio::task::spawn_blocking(move || call_screen(cmd, json!({"action": "focus"})))
        .await
        .unwrap();
    assert_eq!(result["structuredContent"]["error"]["code"], "UNAVAILABLE");
    assert!(
        result["structuredContent"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no running backend")
    );
}

#[tokio::test]
async fn mcp_screen_uses_only_the_screen_credential() {
    let s = ControlServe::start();
    // A data directory holding only the backend's `screen/` record (no `servers/`, no
    // `credentials/`): mcp screen still gets through, so that file is all it reads. The
    // record holds the screen credential and not the full one.
    let data = tempfile::tempdir().unwrap();
    let screen_dir = data.path().join("screen");
    std::fs::create_dir(&screen_dir).unwrap();
    let mut copied = 0;
    for entry in std::fs::read_dir(s.data.path().join("screen")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains(&s.token),
            "{path:?} holds the full credential"
        );
        let record: Value = serde_json::from_str(&text).unwrap();
        assert!(
            record["screenToken"].is_string(),
            "{path:?} lacks screenToken"
        );
        std::fs::write(screen_dir.join(path.file_name().unwrap()), text).unwrap();
        copied += 1;
    }
    assert!(copied > 0, "serve wrote no screen record");
    for dir in ["servers", "credentials"] {
        for entry in std::fs::read_dir(s.data.path().join(dir)).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            assert!(
                !text.contains("screenToken"),
                "{dir}/ holds the screen credential"
            );
        }
    }
    let elsewhere = tempfile::tempdir().unwrap();
    let mut cmd = screen_command(&s, elsewhere.path(), Some(&s.url));
    cmd.env("AX_CODE_DATA_DIR", data.path());
    assert!(
        cmd.get_args()
            .chain(cmd.get_envs().filter_map(|(_, v)| v))
            .all(|a| !a.to_string_lossy().contains(&s.token)),
        "the full credential is in mcp screen's arguments or environment"
    );
    let result =
        tokio::task::spawn_blocking(move || call_screen(cmd, json!({"action": "sidebar_show"})))
            .await
            .unwrap();
    assert_eq!(
        result["structuredContent"],
        json!({"ok": false, "error": {"code": "UNAVAILABLE", "message": "no ui client"}}),
        "the gateway handshake with the screen credential failed: {result}"
    );

    // Without the screen record (as with a backend of an older version, whose records held
    // `screenToken` beside the full credential) it is refused with a clear message, though
    // the full credential is recorded.
    std::fs::remove_dir_all(&screen_dir).unwrap();
    let creds = data.path().join("credentials");
    std::fs::create_dir(&creds).unwrap();
    for entry in std::fs::read_dir(s.data.path().join("credentials")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, creds.join(path.file_name().unwrap())).unwrap();
    }
    let mut cmd = screen_command(&s, elsewhere.path(), Some(&s.url));
    cmd.env("AX_CODE_DATA_DIR", data.path());
    let result =
        tokio::task::spawn_blocking(move || call_screen(cmd, json!({"action": "sidebar_show"})))
            .await
            .unwrap();
    assert_eq!(result["structuredContent"]["error"]["code"], "UNAVAILABLE");
    let message = result["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("restart a backend of an older version"),
        "{message}"
    );
    assert!(!result.to_string().contains(&s.token));
}
