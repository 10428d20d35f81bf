//! The gateway and the Control UI as `ax-code serve` mounts them, and `ax-code mcp screen`
//! finding its credential without the environment variable: real processes, real sockets.

mod support;

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::Path,
    process::{Command, Stdio},
};

use ax_gateway::{ClientMode, ConnectOptions, ErrorCode, GatewayClient, Method, Scope};
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
    let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    // Past the Origin check, a well-behaved client: the gateway crate's own.
    let options =
        ConnectOptions::new(&s.token, ClientMode::Ui, vec![Scope::Read]).with_caps(["ui-commands"]);
    let ui = GatewayClient::handshake(ws, &options).await.unwrap();
    assert_eq!(ui.hello().auth.scopes, vec![Scope::Read]);
    assert_eq!(ui.hello().server.version, env!("CARGO_PKG_VERSION"));

    // A read-only caller cannot send ui.command.
    let err = ui
        .request(
            Method::UiCommand,
            json!({"command": {"kind": "sidebar", "visible": true}}),
        )
        .await
        .unwrap_err();
    let shape = err.gateway_error().expect("an error response");
    assert_eq!(shape.details.as_ref().unwrap()["code"], "MISSING_SCOPE");
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
fn call_screen(cmd: Command, args: Value) -> Value {
    call_screen_after(cmd, args, || {}).0
}

/// Like [`call_screen`], running `between` after `initialize` was answered (the server is up
/// and checked its `--session`) and before the call; also returns what it wrote to stderr.
fn call_screen_after(mut cmd: Command, args: Value, between: impl FnOnce()) -> (Value, String) {
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
    let mut between = Some(between);
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
        if let Some(f) = between.take() {
            f();
        }
    }
    drop(stdin);
    let mut rest = String::new();
    let _ = out.read_to_string(&mut rest);
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    let _ = child.wait();
    drop(watchdog);
    assert!(rest.trim().is_empty(), "extra stdout: {rest}");
    (result, err)
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

/// A session of the backend, created through the API with the full credential.
async fn create_session(s: &ControlServe) -> String {
    let res: Value = reqwest::Client::new()
        .post(format!("{}/session", s.url))
        .bearer_auth(&s.token)
        .json(&json!({"title": "screen"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    res["id"].as_str().expect("a session id").to_string()
}

#[tokio::test]
async fn mcp_screen_checks_its_session_at_start_and_uses_it_only_where_it_applies() {
    let s = ControlServe::start();
    let elsewhere = tempfile::tempdir().unwrap();

    // A session ID of the right form that this backend does not know (stale, or another
    // project's): refused at start with a clear message, before any tool call.
    let stale = "ses_0000000000zzZZZZZZZZZZZZZZ";
    let mut cmd = screen_command(&s, elsewhere.path(), Some(&s.url));
    cmd.args(["--session", stale]);
    let output = tokio::task::spawn_blocking(move || {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let watchdog = Watchdog::new(child.id(), WAIT);
        let output = child.wait_with_output().unwrap();
        drop(watchdog);
        output
    })
    .await
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(stale) && stderr.contains("not a session of this backend's project"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());

    // A live session passes the check. Deleted afterwards, it no longer breaks actions that
    // do not use a session: sidebar_hide reaches the gateway (no UI: UNAVAILABLE).
    let session = create_session(&s).await;
    let url = s.url.clone();
    let token = s.token.clone();
    let handle = tokio::runtime::Handle::current();
    let mut cmd = screen_command(&s, elsewhere.path(), Some(&s.url));
    cmd.args(["--session", &session]);
    let doomed = session.clone();
    let (result, _) = tokio::task::spawn_blocking(move || {
        call_screen_after(cmd, json!({"action": "sidebar_hide"}), move || {
            let res = handle.block_on(
                reqwest::Client::new()
                    .delete(format!("{url}/session/{doomed}"))
                    .bearer_auth(&token)
                    .send(),
            );
            assert!(res.unwrap().status().is_success());
        })
    })
    .await
    .unwrap();
    assert_eq!(
        result["structuredContent"],
        json!({"ok": false, "error": {"code": "UNAVAILABLE", "message": "no ui client"}}),
        "{result}"
    );
}

#[tokio::test]
async fn no_credential_reaches_a_log_even_at_trace() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("serve.log");
    let mut cmd = Command::new(AX);
    cmd.args(["serve", "--port", "0"])
        .current_dir(project.path())
        .env("AX_CODE_DATA_DIR", data.path())
        .env("RUST_LOG", "trace")
        .env_remove("AX_CODE_SERVER_PASSWORD")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let (child, url, token) = spawn_control_ui(cmd, &mut Vec::new(), Some(&log));
    let s = ControlServe {
        child,
        url,
        token,
        project,
        data,
    };
    let screen = ax_client::screen_credential(&s.token).expose().to_owned();

    // The Control UI's handshake (the full credential) and a request.
    let options =
        ConnectOptions::new(&s.token, ClientMode::Ui, vec![Scope::Read]).with_caps(["ui-commands"]);
    let ui = GatewayClient::connect(&s.url, options).await.unwrap();
    ui.request(Method::Ping, json!({})).await.unwrap();
    // `mcp screen` (the screen credential), logging at trace too.
    let mut cmd = screen_command(&s, s.project.path(), Some(&s.url));
    cmd.env("RUST_LOG", "trace");
    let (result, mcp_log) = tokio::task::spawn_blocking(move || {
        call_screen_after(cmd, json!({"action": "sidebar_show"}), || {})
    })
    .await
    .unwrap();
    // The UI got the command but does not answer: no_answer, after the wait.
    assert_eq!(result["structuredContent"]["delivered"], 1, "{result}");
    ui.close().await;

    let serve_log = std::fs::read_to_string(&log).unwrap();
    // Both logs are live at trace level (so the check below can fail).
    assert!(serve_log.contains("TRACE"), "serve logged nothing at trace");
    assert!(
        mcp_log.contains("TRACE"),
        "mcp screen logged nothing at trace"
    );
    for (name, text) in [("serve", &serve_log), ("mcp screen", &mcp_log)] {
        assert!(!text.contains(&s.token), "{name} logged the credential");
        assert!(
            !text.contains(&screen),
            "{name} logged the screen credential"
        );
    }
}

#[tokio::test]
async fn the_screen_credential_cannot_pose_as_the_control_ui() {
    let s = ControlServe::start();
    let screen = ax_client::screen_credential(&s.token).expose().to_owned();
    let options = ConnectOptions::new(&screen, ClientMode::Ui, vec![Scope::Read, Scope::Write])
        .with_caps(["ui-commands"]);
    let err = GatewayClient::connect(&s.url, options).await.err().unwrap();
    assert_eq!(err.code(), ErrorCode::Forbidden, "{err}");
    // As an agent it works, and with no browser open it hears UNAVAILABLE.
    let options = ConnectOptions::new(&screen, ClientMode::Agent, vec![Scope::Write]);
    let agent = GatewayClient::connect(&s.url, options).await.unwrap();
    let params =
        serde_json::from_value(json!({"command": {"kind": "sidebar", "visible": true}})).unwrap();
    let err = agent.ui_command(&params).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unavailable, "{err}");
}

#[tokio::test]
async fn an_oversized_frame_is_answered_and_closed_with_1009() {
    let s = ControlServe::start();
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url(&s.url))
        .await
        .unwrap();
    assert_eq!(first_frame(&mut ws).await["event"], "connect.challenge");
    let connect = json!({"type": "req", "id": "c", "method": "connect", "params": {
        "minProtocol": 1, "maxProtocol": 1,
        "client": {"id": "t", "version": "1", "platform": "linux", "mode": "cli"},
        "role": "operator", "scopes": ["operator.read"], "auth": {"token": s.token}}});
    ws.send(Message::text(connect.to_string())).await.unwrap();
    assert_eq!(first_frame(&mut ws).await["ok"], true);
    // Just over the limit the backend announces in hello-ok (256 KiB).
    let pad = "p".repeat(ax_gateway::MAX_PAYLOAD + 100);
    let ping = json!({"type": "req", "id": "p", "method": "ping", "params": {"pad": pad}});
    ws.send(Message::text(ping.to_string())).await.unwrap();
    let res = first_frame(&mut ws).await;
    assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{res}");
    let close = loop {
        match tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("in time")
        {
            Some(Ok(Message::Close(f))) => break f.expect("a close frame with a code"),
            Some(Ok(_)) => continue,
            other => panic!("closed without a close frame: {other:?}"),
        }
    };
    assert_eq!(u16::from(close.code), 1009);
    assert_eq!(close.reason.as_str(), "frame too large");
}
