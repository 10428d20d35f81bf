//! Helpers shared by the integration tests.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use ax_tuimcp::{
    Request, Response, SelectSession, SessionId, View, WireUuid, client,
    fake::{FakeOptions, FakeTui},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::UnixStream,
};

/// A session ID made from a small number.
pub fn sid(n: u32) -> SessionId {
    format!("ses_{n:026}").parse::<SessionId>().unwrap()
}

/// A select request against `view`.
pub fn select(view: &View, session: &SessionId) -> SelectSession {
    SelectSession {
        request_id: WireUuid::random(),
        instance_id: view.instance_id,
        generation: view.generation,
        expected_revision: view.revision,
        session_id: session.clone(),
    }
}

/// A private temp root (0700) for endpoints of one test.
pub fn temp_root() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("axt")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in("/tmp")
        .unwrap()
}

pub async fn fake(options: FakeOptions, root: &Path) -> FakeTui {
    let mut options = options;
    options.endpoint.temp_root = Some(root.to_owned());
    FakeTui::start(options).await.unwrap()
}

pub async fn call(path: &Path, request: &Request) -> Response {
    client::call(path, request, std::future::pending()).await
}

pub async fn view(path: &Path) -> View {
    match call(path, &Request::GetViewContext).await {
        Response::Context(view) => view,
        other => panic!("expected a context, got {other:?}"),
    }
}

/// Sends raw bytes on a fresh connection and returns everything the endpoint answered
/// before closing (bounded by a timeout).
pub async fn raw_exchange(socket: &Path, bytes: &[u8]) -> Vec<u8> {
    let mut stream = UnixStream::connect(socket).await.unwrap();
    let _ = stream.write_all(bytes).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(8), stream.read_to_end(&mut answer)).await;
    answer
}

pub fn socket_of(endpoint: &Path) -> PathBuf {
    endpoint.parent().unwrap().join("s")
}

pub fn token_of(endpoint: &Path) -> String {
    let text = std::fs::read_to_string(endpoint).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["token"].as_str().unwrap().to_owned()
}

/// Waits until `check` holds (polling, bounded).
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}
