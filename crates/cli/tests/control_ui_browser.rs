//! The Control UI's own defences, end to end (SECURITY.md: "other OS users", "web pages in the
//! person's browser", "MCP agents with only their tools"):
//!
//! - in headless Chromium against `ax-code serve` (the Python scripts do the checking):
//!   the server proof before the credential leaves the page, with a squatter on a dead
//!   backend's port (tests/python/control_ui_proof.py); human priority over the agent's layout
//!   commands (tests/python/control_ui_priority.py); one-time sign-in links and the browser's
//!   history (tests/python/control_ui_signin.py);
//! - over HTTP against an embedded backend: the sign-in code routes (`POST /signin/code`,
//!   `POST /signin`), their strictness, single use and expiry.
//!
//! The browser tests run one at a time: the 500 ms and 1.5 s windows of the priority test are
//! measured in a real browser on a machine that may be busy.

mod support;

use std::{sync::Mutex, time::Duration};

use support::*;

static ONE_BROWSER: Mutex<()> = Mutex::new(());

fn browser_script(name: &str, limit: Duration) {
    python();
    require_browser();
    let _one = ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let status = run_script(name, &[AX.as_ref()], limit);
    assert!(
        status.success(),
        "{name} failed ({status}); its checks are printed above"
    );
}

#[test]
fn the_page_proves_the_server_before_sending_the_credential_and_a_squatter_gets_nothing() {
    browser_script("control_ui_proof.py", Duration::from_secs(150));
}

#[test]
fn agent_layout_commands_never_move_what_is_under_the_persons_hands() {
    browser_script("control_ui_priority.py", Duration::from_secs(150));
}

/// A restart keeps the project's credential: an open tab proves the new process by itself;
/// `ax-code link --rotate` then a restart makes it stop and forget (tests/python/control_ui_restart.py).
#[test]
fn an_open_tab_follows_a_restart_until_the_credential_is_rotated() {
    browser_script("control_ui_restart.py", Duration::from_secs(180));
}

#[test]
fn one_time_sign_in_links_keep_the_credential_out_of_urls_and_history() {
    browser_script("control_ui_signin.py", Duration::from_secs(150));
}

async fn backend(ttl: Duration) -> (ax_server::RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let mut config = ax_server::ServerConfig::new(&project, dir.path().join("data"));
    config.register = false;
    config.sign_in_ttl = ttl;
    (ax_server::start(config).await.unwrap(), dir)
}

async fn mint(http: &reqwest::Client, url: &str, bearer: Option<&str>) -> reqwest::Response {
    let mut req = http.post(format!("{url}/signin/code"));
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    req.send().await.unwrap()
}

async fn exchange(http: &reqwest::Client, url: &str, body: &str) -> (u16, serde_json::Value) {
    let res = http
        .post(format!("{url}/signin"))
        .header("Content-Type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    if status == 200 {
        assert_eq!(
            res.headers()
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("no-store"),
            "the credential's answer is never cached"
        );
    }
    (status, res.json().await.unwrap_or(serde_json::Value::Null))
}

#[tokio::test]
async fn sign_in_codes_work_once_need_the_full_credential_and_expire() {
    let (server, _dir) = backend(Duration::from_secs(60)).await;
    let url = server.url().to_owned();
    let http = reqwest::Client::new();

    // Minting needs the full credential: not none, not a wrong one, not the screen credential.
    for bearer in [
        None,
        Some("wrong-token-0123456789".to_owned()),
        Some(server.screen_token().expose().to_owned()),
    ] {
        let res = mint(&http, &url, bearer.as_deref()).await;
        assert_eq!(res.status(), 401, "minting with {bearer:?}");
    }
    let res = mint(&http, &url, Some(server.token().expose())).await;
    assert_eq!(res.status(), 201);
    let minted: ax_protocol::SignInCode = res.json().await.unwrap();
    assert_eq!(minted.expires_in_ms, 60_000);
    assert!(!minted.code.expose().contains(server.token().expose()));

    // Strict bodies, refused without using the code up.
    let code = minted.code.expose();
    for (body, status) in [
        (format!(r#"{{"code":"{code}","extra":1}}"#), 400),
        (r#"{"code":"short"}"#.to_owned(), 400),
        (format!(r#"{{"code":"{}"}}"#, "x".repeat(2000)), 413),
        (format!(r#"["{code}"]"#), 400),
        ("not json".to_owned(), 400),
    ] {
        let (got, answer) = exchange(&http, &url, &body).await;
        assert_eq!(got, status, "{body}: {answer}");
        assert!(!answer.to_string().contains(server.token().expose()));
    }
    let as_form = http
        .post(format!("{url}/signin"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(format!("code={code}"))
        .send()
        .await
        .unwrap();
    assert!(as_form.status().is_client_error(), "a form post is refused");
    let cross_site = http
        .post(format!("{url}/signin"))
        .header("Origin", "http://evil.example")
        .json(&serde_json::json!({ "code": code }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        cross_site.status(),
        403,
        "another origin cannot exchange it"
    );

    // Once: the credential; twice: refused.
    let body = serde_json::json!({ "code": code }).to_string();
    let (status, answer) = exchange(&http, &url, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["token"], server.token().expose());
    let (status, answer) = exchange(&http, &url, &body).await;
    assert_eq!(status, 401);
    assert_eq!(answer["error"]["code"], "invalid_code");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ax-code link")
    );
    // An unknown code of the right shape.
    let unknown = serde_json::json!({ "code": "A".repeat(32) }).to_string();
    assert_eq!(exchange(&http, &url, &unknown).await.0, 401);
    server.shutdown().await;

    // Expiry: with a TTL of zero every code is dead by the time it is exchanged.
    let (server, _dir) = backend(Duration::ZERO).await;
    let url = server.url().to_owned();
    let res = mint(&http, &url, Some(server.token().expose())).await;
    let minted: ax_protocol::SignInCode = res.json().await.unwrap();
    let body = serde_json::json!({ "code": minted.code }).to_string();
    let (status, answer) = exchange(&http, &url, &body).await;
    assert_eq!(status, 401, "an expired code is refused: {answer}");
    assert_eq!(answer["error"]["code"], "invalid_code");
    // The code the backend hands out for its own link expires the same way.
    let body = serde_json::json!({ "code": server.sign_in_code().unwrap() }).to_string();
    assert_eq!(exchange(&http, &url, &body).await.0, 401);
    server.shutdown().await;
}
