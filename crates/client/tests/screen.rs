//! The screen credential as `ax-code mcp screen` finds and checks it: a real registered
//! backend writes it into a `screen/` record of its own (not beside the full credential),
//! proves it in `screenProof`, and the screen lookups read only those records.

use std::{future::Future, time::Duration};

use ax_client::{
    Client, Found, Kind, credential_for_url_in, discover, expected_proof, screen_credential,
};
use ax_protocol::local::{CredentialRecord, ScreenRecord, ServerRecord};

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
    config.token = Some(TOKEN.into());
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
    let screen = screen_credential(TOKEN).expose().to_owned();
    assert_eq!(screen, b.server.screen_token().expose().to_owned());
    assert_eq!(screen, ax_server::screen_credential(TOKEN).expose());
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
    let addr = b.server.local_addr();
    assert_eq!(
        health.screen_proof,
        Some(expected_proof(&screen, &nonce, addr))
    );
    assert_eq!(health.proof, Some(expected_proof(TOKEN, &nonce, addr)));
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
async fn the_screen_credential_lives_in_a_file_of_its_own() {
    let b = backend(true).await;
    let url = b.server.url().to_owned();
    let screen = screen_credential(TOKEN).expose().to_owned();

    // The full record has no screen credential; the screen record has nothing but it.
    let full = std::fs::read_to_string(b.server.registration_path().expect("registered")).unwrap();
    let record: ServerRecord = serde_json::from_str(&full).unwrap();
    assert_eq!(record.token.expose(), TOKEN);
    assert!(!full.contains(&screen));
    let screen_path = b.server.screen_record_path().expect("registered");
    assert_ne!(
        screen_path.parent(),
        b.server.registration_path().unwrap().parent()
    );
    let text = std::fs::read_to_string(screen_path).unwrap();
    assert!(
        !text.contains(TOKEN),
        "the screen record holds the full credential"
    );
    let record: ScreenRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(record.screen_token.expose(), screen);
    assert_eq!(record.url, url);

    assert_eq!(
        credential_for_url_in(Kind::Screen, &url, b.data.path()),
        Some(screen.clone().into())
    );
    assert_eq!(
        credential_for_url_in(Kind::Full, &url, b.data.path()),
        Some(TOKEN.into())
    );
    assert_eq!(
        within(discover(Kind::Screen, b.project.path(), b.data.path())).await,
        Some(Found {
            url: url.clone(),
            credential: screen.clone().into(),
        })
    );
    // Only the exact URL matches: another loopback name for the same port is another URL.
    let port = b.server.local_addr().port();
    for other in [
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        assert_eq!(
            credential_for_url_in(Kind::Screen, &other, b.data.path()),
            None
        );
        assert_eq!(
            credential_for_url_in(Kind::Full, &other, b.data.path()),
            None
        );
    }

    // The screen lookup reads `screen/` only: with the screen records gone it finds nothing,
    // though the full credential is still recorded.
    std::fs::remove_dir_all(b.data.path().join("screen")).unwrap();
    assert_eq!(
        credential_for_url_in(Kind::Screen, &url, b.data.path()),
        None
    );
    assert_eq!(
        within(discover(Kind::Screen, b.project.path(), b.data.path())).await,
        None
    );
    assert!(credential_for_url_in(Kind::Full, &url, b.data.path()).is_some());

    // The credential file `serve` writes holds the URL and the full credential only.
    let other_data = tempfile::tempdir().unwrap();
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
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(&screen));
    assert_eq!(
        credential_for_url_in(Kind::Full, &url, other_data.path()),
        Some(TOKEN.into())
    );
    assert_eq!(
        credential_for_url_in(Kind::Screen, &url, other_data.path()),
        None
    );
}
