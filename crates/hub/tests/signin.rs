//! The hub's Control UI and sign-in (docs/hub.md §4), over real HTTP to a real hub on a real
//! nats-server: the page and its assets, the `/health` proof bound to the hub's address, the
//! one-time code (wrong ones refused, single use), and the Host/Origin checks.

mod support;

use ax_hub::{testing::NatsServer, web::HubHealth};
use ax_protocol::{SignInCode, SignInGrant, proof};
use support::{HUB_TOKEN, HubClient, start_hub};

fn nonce() -> String {
    ax_core::random::random_hex(32).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_serves_the_control_ui_and_proves_it_holds_its_credential() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());

    let page = api.http.get(hub.url()).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert_eq!(page.headers()["cache-control"], "no-store");
    let body = page.text().await.unwrap();
    assert!(body.contains("/assets/app.js"), "{body}");
    for asset in ["app.js", "api.js", "hubapi.js", "proof.js", "style.css"] {
        let res = api.get(&format!("/assets/{asset}")).await;
        assert_eq!(res.status(), 200, "{asset}");
    }
    assert_eq!(api.get("/assets/../Cargo.toml").await.status(), 404);

    // The proof: HMAC of the hub's credential over the nonce and the hub's address.
    let n = nonce();
    let health: HubHealth = api.json(&format!("/health?proof={n}")).await;
    assert!(health.hub && health.ok);
    let expected = proof::health_proof(HUB_TOKEN, &n, hub.local_addr());
    assert_eq!(health.proof.as_deref(), Some(expected.as_str()));
    let other = proof::health_proof("some-other-credential-0123456789", &n, hub.local_addr());
    assert_ne!(health.proof.as_deref(), Some(other.as_str()));
    let elsewhere = proof::health_proof(HUB_TOKEN, &n, "127.0.0.1:1".parse().unwrap());
    assert_ne!(health.proof.as_deref(), Some(elsewhere.as_str()));
    assert_eq!(api.get("/health?proof=zz").await.status(), 400);
    let plain: HubHealth = api.json("/health").await;
    assert_eq!(plain.proof, None);
}

async fn exchange(api: &HubClient, body: serde_json::Value) -> (u16, serde_json::Value) {
    let res = api
        .http
        .post(format!("{}/signin", api.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let cache = res
        .headers()
        .get("cache-control")
        .map(|v| v.to_str().unwrap().to_owned());
    let value: serde_json::Value = res.json().await.unwrap_or(serde_json::Value::Null);
    if status == 200 || status == 401 {
        assert_eq!(cache.as_deref(), Some("no-store"), "{status}: {value}");
    }
    (status, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_code_is_exchanged_once_and_wrong_codes_are_refused() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());

    // Unknown (well formed), malformed, and not an object.
    let unknown = "A".repeat(32);
    let (status, body) = exchange(&api, serde_json::json!({ "code": unknown })).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "invalid_code");
    let (status, _) = exchange(&api, serde_json::json!({ "code": "short" })).await;
    assert_eq!(status, 400);
    let (status, _) = exchange(&api, serde_json::json!([unknown])).await;
    assert_eq!(status, 400);
    let (status, _) = exchange(&api, serde_json::json!({ "code": unknown, "x": 1 })).await;
    assert_eq!(status, 400);

    // The code the hub prints: once, for the hub's credential.
    let code = hub.sign_in_code().unwrap();
    let (status, body) = exchange(&api, serde_json::json!({ "code": code.expose() })).await;
    assert_eq!(status, 200, "{body}");
    let grant: SignInGrant = serde_json::from_value(body).unwrap();
    assert_eq!(grant.token.expose(), HUB_TOKEN);
    let (status, body) = exchange(&api, serde_json::json!({ "code": code.expose() })).await;
    assert_eq!(status, 401, "second use: {body}");

    // A fresh code needs the credential.
    let res = api
        .http
        .post(format!("{}/signin/code", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let res = api.post("/signin/code", serde_json::json!({})).await;
    assert_eq!(res.status(), 201);
    let minted: SignInCode = res.json().await.unwrap();
    assert_eq!(minted.expires_in_ms, 60_000);
    let (status, _) = exchange(&api, serde_json::json!({ "code": minted.code.expose() })).await;
    assert_eq!(status, 200);

    // Another hub's code signs in to that hub only.
    let other = start_hub(&nats).await;
    let theirs = other.sign_in_code().unwrap();
    let (status, _) = exchange(&api, serde_json::json!({ "code": theirs.expose() })).await;
    assert_eq!(status, 401);
    let (status, _) = exchange(
        &HubClient::new(other.url()),
        serde_json::json!({ "code": theirs.expose() }),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_hosts_and_origins_are_refused() {
    let nats = NatsServer::start();
    let hub = start_hub(&nats).await;
    let api = HubClient::new(hub.url());
    let port = hub.local_addr().port();
    let code = hub.sign_in_code().unwrap();
    let url = format!("{}/signin", hub.url());
    let body = serde_json::json!({ "code": code.expose() });

    // DNS rebinding: the Host is another name.
    let res = api
        .http
        .get(format!("{}/health", hub.url()))
        .header("host", format!("evil.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    // A cross-site page posting the code: refused, and the code is not used up.
    let res = api
        .http
        .post(&url)
        .header("origin", "http://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    // The sign-in link's own origin is served.
    let host = format!("k3j4a9.localhost:{port}");
    let res = api
        .http
        .post(&url)
        .header("host", &host)
        .header("origin", format!("http://{host}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}
