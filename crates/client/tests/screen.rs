//! The screen credential as `ax-code mcp screen` finds and checks it: a real registered
//! backend writes it into its `servers/` record and credential file, proves it in
//! `screenProof`, and the lookups never hand out the full credential.

use std::{future::Future, time::Duration};

use ax_client::{
    Client, ScreenDiscovery, ScreenLookup, discover_screen, expected_proof, screen_credential,
    screen_credential_for_url_in,
};
use ax_protocol::local::{CredentialFile, CredentialRecord, ServerRecord};

const TOKEN: &str = "the-real-credential-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(20);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .expect("timed out waiting")
}

struct Backend {
    server: ax_server::RunningServer,
    project: tempfile::TempDir,
    data: tempfile::TempDir,
}

async fn backend(register: bool) -> Backend {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = register;
    config.token = Some(TOKEN.to_owned());
    let server = ax_server::start(config).await.unwrap();
    Backend {
        server,
        project,
        data,
    }
}

#[tokio::test]
async fn health_proves_the_screen_credential_too() {
    let b = backend(false).await;
    let url = b.server.url();
    let screen = screen_credential(TOKEN);
    assert_eq!(screen, b.server.screen_token());
    assert_eq!(screen, ax_server::screen_credential(TOKEN));
    assert_eq!(screen.len(), 64);
    assert_ne!(screen, TOKEN);

    let nonce = "0123456789abcdef".repeat(4);
    let health: ax_protocol::Health = within(async {
        reqwest::get(format!("{url}/health?proof={nonce}"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(health.screen_proof, Some(expected_proof(&screen, &nonce)));
    assert_eq!(health.proof, Some(expected_proof(TOKEN, &nonce)));
    assert_ne!(health.screen_proof, health.proof);

    // The typed checks: each credential is proven by its own field only.
    let screen_client = Client::new(url, &screen).unwrap();
    within(screen_client.verify_screen()).await.unwrap();
    assert!(
        within(screen_client.verify())
            .await
            .unwrap_err()
            .is_not_proven()
    );
    let full_client = Client::new(url, TOKEN).unwrap();
    assert!(
        within(full_client.verify_screen())
            .await
            .unwrap_err()
            .is_not_proven()
    );
    // An API client holding the screen credential sends nothing: the server cannot prove
    // the full credential for it (the API would answer 401 anyway; see ax-server's tests).
    let err = within(screen_client.list_sessions()).await.unwrap_err();
    assert!(err.is_not_proven(), "{err}");
}

#[tokio::test]
async fn the_records_carry_only_a_screen_credential_to_mcp_screen() {
    let b = backend(true).await;
    let url = b.server.url().to_owned();
    let screen = screen_credential(TOKEN);

    let record: ServerRecord = serde_json::from_slice(
        &std::fs::read(b.server.registration_path().expect("registered")).unwrap(),
    )
    .unwrap();
    assert_eq!(record.screen_token.as_deref(), Some(screen.as_str()));

    match screen_credential_for_url_in(&url, b.data.path()) {
        ScreenLookup::Found(t) => assert_eq!(t, screen),
        other => panic!("expected the screen credential, got {other:?}"),
    }
    match within(discover_screen(b.project.path(), b.data.path())).await {
        ScreenDiscovery::Found {
            url: u,
            screen_token,
        } => {
            assert_eq!(u, url);
            assert_eq!(screen_token, screen);
        }
        other => panic!("expected the backend, got {other:?}"),
    }

    // The credential file `serve` writes carries it too.
    let other_data = tempfile::tempdir().unwrap();
    let port = b.server.local_addr().port();
    let path = ax_server::registry::write_credential(
        other_data.path(),
        "127.0.0.1",
        port,
        &CredentialRecord {
            url: url.clone(),
            token: TOKEN.into(),
        },
    )
    .unwrap();
    let file: CredentialFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(file.screen_token.as_deref(), Some(screen.as_str()));
    assert_eq!(
        screen_credential_for_url_in(&url, other_data.path()),
        ScreenLookup::Found(screen.clone())
    );
    // The full-credential lookup still reads the new file.
    assert_eq!(
        ax_client::credential_for_url_in(&url, other_data.path()).as_deref(),
        Some(TOKEN)
    );
}

#[tokio::test]
async fn records_of_an_older_backend_ask_for_a_restart() {
    let b = backend(false).await;
    let url = b.server.url().to_owned();
    let project = std::fs::canonicalize(b.project.path()).unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data.path().join("servers")).unwrap();
    // A record as an older backend wrote it: no screenToken.
    let old = serde_json::json!({
        "project": project.to_string_lossy(),
        "url": url,
        "token": TOKEN,
        "pid": std::process::id(),
    });
    let path = data.path().join("servers/1-1.json");
    std::fs::write(&path, old.to_string()).unwrap();
    let parsed: ServerRecord = serde_json::from_value(old).unwrap();
    assert_eq!(parsed.screen_token, None);

    assert_eq!(
        screen_credential_for_url_in(&url, data.path()),
        ScreenLookup::OldRecord
    );
    assert_eq!(
        within(discover_screen(b.project.path(), data.path())).await,
        ScreenDiscovery::OldRecord
    );
    // The full-credential lookup still reads it (for the other commands).
    assert_eq!(
        ax_client::credential_for_url_in(&url, data.path()).as_deref(),
        Some(TOKEN)
    );
    // Nothing at all for another URL.
    assert_eq!(
        screen_credential_for_url_in("http://127.0.0.1:1", data.path()),
        ScreenLookup::Missing
    );
}
