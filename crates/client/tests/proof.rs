//! The server proves it holds the credential before the client sends it: a real backend
//! answers the `/health` proof, bound to its own address on the connection, and a "squatter"
//! (a plain TCP listener that records every request head and answers `/health` without a valid
//! proof, or relays it to the real backend) never receives an `Authorization` header: not from
//! ordinary requests, not from the event stream, not after the real backend died and the
//! squatter took its port, and not by relaying the check from the other loopback family.

use std::{
    future::Future,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_client::{Client, ClientError, expected_proof};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

const TOKEN: &str = "the-real-credential-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(20);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .expect("timed out waiting")
}

struct Backend {
    server: ax_server::RunningServer,
    _project: tempfile::TempDir,
    _data: tempfile::TempDir,
}

async fn backend() -> Backend {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    config.token = Some(TOKEN.into());
    config.heartbeat = Duration::from_millis(200);
    let server = ax_server::start(config).await.unwrap();
    Backend {
        server,
        _project: project,
        _data: data,
    }
}

/// What the squatter answers to `GET /health?proof=<nonce>`.
#[derive(Clone, Debug)]
enum Answer {
    /// A health record without `proof` (an old or foreign server).
    NoProof,
    /// A well-formed proof of the nonce, for another credential.
    OtherKey,
    /// A proof the real backend once gave for another nonce (a replay).
    Replay(String),
    /// Garbage in place of a proof.
    Garbage,
    /// `404` for `/health`.
    NotFound,
    /// A relay: forwards every request, `/health?proof=` included, to the real backend at
    /// this address (Host rewritten to the backend's), so it answers the backend's own proof.
    Forward(SocketAddr),
    /// Not a squatter: a holder of the credential that proves it for its own address and
    /// forwards everything else to the real backend (so the recorder shows what a client
    /// sends to a real backend).
    ProveAndForward(SocketAddr),
}

fn answers(replay: String) -> [Answer; 5] {
    [
        Answer::NoProof,
        Answer::OtherKey,
        Answer::Replay(replay),
        Answer::Garbage,
        Answer::NotFound,
    ]
}

/// A fake server: records every request head (one request per connection; it answers with
/// `Connection: close`), answers `/health` per its [`Answer`] and everything else with `[]`.
struct Squatter {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Squatter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Squatter {
    async fn start(answer: Answer) -> Squatter {
        Squatter::on(TcpListener::bind("127.0.0.1:0").await.unwrap(), answer)
    }

    /// On `ip`, any free port.
    async fn start_on(ip: &str, answer: Answer) -> Squatter {
        Squatter::on(TcpListener::bind((ip, 0)).await.unwrap(), answer)
    }

    /// Takes `addr` (a port a backend just freed), retrying briefly while it is still held.
    async fn take(addr: SocketAddr, answer: Answer) -> Squatter {
        let mut tries = 0;
        loop {
            match TcpListener::bind(addr).await {
                Ok(listener) => return Squatter::on(listener, answer),
                Err(_) if tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot take the freed port {addr}: {e}"),
            }
        }
    }

    fn on(listener: TcpListener, answer: Answer) -> Squatter {
        let own = listener.local_addr().unwrap();
        let url = format!("http://{own}");
        let heads = Arc::new(Mutex::new(Vec::new()));
        let recorded = heads.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let recorded = recorded.clone();
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tokio::time::timeout(WAIT, conn.read(&mut buf)).await {
                            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
                            _ => return,
                        }
                        if head.len() > 64 * 1024 {
                            return;
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    recorded.lock().unwrap().push(text.clone());
                    match answer {
                        Answer::Forward(backend) => {
                            forward(conn, &text, backend).await;
                            return;
                        }
                        Answer::ProveAndForward(backend) if !text.starts_with("GET /health") => {
                            forward(conn, &text, backend).await;
                            return;
                        }
                        _ => {}
                    }
                    let response = respond(&text, &answer, own);
                    let _ = conn.write_all(response.as_bytes()).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        Squatter { url, heads, task }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// Fails when any recorded request carried the credential.
    fn assert_never_got_the_credential(&self) {
        let heads = self.heads();
        for head in &heads {
            assert!(
                !head.to_ascii_lowercase().contains("authorization:"),
                "the squatter received an Authorization header:\n{head}"
            );
            assert!(!head.contains(TOKEN), "the squatter saw the credential");
        }
    }

    /// Fails unless the client did come and ask for a proof (so the test saw real traffic).
    fn assert_was_asked_for_a_proof(&self) {
        let heads = self.heads();
        assert!(
            heads.iter().any(|h| h.starts_with("GET /health?proof=")),
            "the client never asked for a proof: {heads:?}"
        );
    }
}

/// Sends one GET request (its head, Host fixed, `Connection: close`) to `backend` and pipes
/// the answer back.
async fn forward(mut conn: tokio::net::TcpStream, head: &str, backend: SocketAddr) {
    let Some((head, _)) = head.split_once("\r\n\r\n") else {
        return;
    };
    let mut lines: Vec<String> = head
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .map(|l| {
            if l.to_ascii_lowercase().starts_with("host:") {
                format!("host: {backend}")
            } else {
                l.to_owned()
            }
        })
        .collect();
    lines.push("connection: close".to_owned());
    let fixed = format!("{}\r\n\r\n", lines.join("\r\n"));
    let Ok(mut upstream) = tokio::net::TcpStream::connect(backend).await else {
        return;
    };
    if upstream.write_all(fixed.as_bytes()).await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(
        WAIT,
        tokio::io::copy_bidirectional(&mut conn, &mut upstream),
    )
    .await;
}

fn respond(head: &str, answer: &Answer, own: SocketAddr) -> String {
    let target = head.split(' ').nth(1).unwrap_or("/");
    let (status, body) = if let Some(query) = target.strip_prefix("/health") {
        let nonce = query.strip_prefix("?proof=").unwrap_or("");
        let proof = match answer {
            Answer::NoProof => None,
            Answer::OtherKey => Some(expected_proof("another-credential-0123456789", nonce, own)),
            Answer::ProveAndForward(_) => Some(expected_proof(TOKEN, nonce, own)),
            Answer::Replay(proof) => Some(proof.clone()),
            Answer::Garbage => Some("z".repeat(64)),
            Answer::Forward(_) => unreachable!("forwarded before"),
            Answer::NotFound => {
                return http(
                    "404 Not Found",
                    r#"{"error":{"code":"not_found","message":"no"}}"#,
                );
            }
        };
        let mut health = serde_json::json!({"ok": true, "version": "0.1.0"});
        if let Some(p) = proof {
            health["proof"] = p.into();
        }
        ("200 OK", health.to_string())
    } else {
        ("200 OK", "[]".to_owned())
    };
    http(status, &body)
}

fn http(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A proof the real backend gave for a nonce of our choosing (what a replay would reuse).
async fn captured_proof(url: &str) -> String {
    let nonce = "ab".repeat(32);
    let health: ax_protocol::Health = reqwest::get(format!("{url}/health?proof={nonce}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    health.proof.expect("a proof")
}

fn assert_not_proven(result: Result<impl std::fmt::Debug, ClientError>, url: &str) {
    match result {
        Err(e @ ClientError::NotProven { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(&format!(
                    "the server at {url} could not prove it holds the credential; the \
                     credential was not sent"
                )),
                "{text}"
            );
            assert!(!text.contains(TOKEN));
        }
        other => panic!("expected NotProven, got {other:?}"),
    }
}

#[tokio::test]
async fn a_real_backend_answers_a_valid_proof() {
    let b = backend().await;
    let url = b.server.url();
    let raw = reqwest::Client::new();
    let nonce = "0123456789abcdef".repeat(4);
    let health: ax_protocol::Health = raw
        .get(format!("{url}/health?proof={nonce}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(health.ok);
    let addr = b.server.local_addr();
    assert_eq!(health.proof, Some(expected_proof(TOKEN, &nonce, addr)));
    assert_ne!(
        health.proof,
        Some(expected_proof(
            "another-credential-0123456789",
            &nonce,
            addr
        ))
    );

    // Without a nonce, /health is what it was: no proof.
    let plain: ax_protocol::Health = raw
        .get(format!("{url}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(plain.proof, None);

    // The client verifies and then works; its clones share the verified state.
    let client = Client::new(url, TOKEN).unwrap();
    assert!(!client.is_verified());
    let clone = client.clone();
    within(client.verify()).await.unwrap();
    assert!(clone.is_verified());
    within(clone.create_session(Some("proven"))).await.unwrap();
    assert_eq!(within(client.list_sessions()).await.unwrap().len(), 1);

    // A client holding another credential is refused by the proof, before any 401.
    let wrong = Client::new(url, "another-credential-0123456789").unwrap();
    assert_not_proven(within(wrong.list_sessions()).await, url);
    b.server.shutdown().await;
}

#[tokio::test]
async fn bad_proof_nonces_are_refused_with_400() {
    let b = backend().await;
    let url = b.server.url();
    let raw = reqwest::Client::new();
    for query in [
        "proof=".to_owned(),
        format!("proof={}", "A".repeat(64)),
        format!("proof={}", "a".repeat(63)),
        format!("proof={}", "a".repeat(65)),
        format!("proof={}g", "a".repeat(63)),
        format!("proof={}&other=1", "a".repeat(64)),
    ] {
        let response = raw
            .get(format!("{url}/health?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{query}");
        let body: ax_protocol::ErrorBody = response.json().await.unwrap();
        assert_eq!(body.error.code, "bad_request");
    }
    b.server.shutdown().await;
}

#[tokio::test]
async fn a_squatter_never_receives_the_credential_from_requests() {
    let b = backend().await;
    let replay = captured_proof(b.server.url()).await;
    for answer in answers(replay) {
        let squatter = Squatter::start(answer.clone()).await;
        // Control: the recorder does see an Authorization header when one is sent.
        reqwest::Client::new()
            .get(format!("{}/control", squatter.url))
            .header("authorization", "Bearer control")
            .send()
            .await
            .unwrap();
        assert!(squatter.heads().iter().any(|h| {
            h.to_ascii_lowercase()
                .contains("authorization: bearer control")
        }));
        squatter.heads.lock().unwrap().clear();

        let client = Client::new(&squatter.url, TOKEN).unwrap();
        assert_not_proven(within(client.list_sessions()).await, &squatter.url);
        assert_not_proven(within(client.create_session(None)).await, &squatter.url);
        assert_not_proven(within(client.project()).await, &squatter.url);
        assert_not_proven(within(client.health()).await, &squatter.url);
        assert!(!client.is_verified());
        squatter.assert_was_asked_for_a_proof();
        squatter.assert_never_got_the_credential();
        let heads = squatter.heads();
        assert!(
            heads.iter().all(|h| h.starts_with("GET /health?proof=")),
            "{answer:?}: only proof checks went out: {heads:?}"
        );
        // Every check used a fresh nonce.
        let mut nonces: Vec<&str> = heads.iter().filter_map(|h| h.split(' ').nth(1)).collect();
        let all = nonces.len();
        nonces.sort_unstable();
        nonces.dedup();
        assert_eq!(nonces.len(), all, "{answer:?}: a nonce was reused");
    }
    b.server.shutdown().await;
}

#[tokio::test]
async fn a_squatter_never_receives_the_credential_from_the_event_stream() {
    let b = backend().await;
    let replay = captured_proof(b.server.url()).await;
    for answer in answers(replay) {
        let squatter = Squatter::start(answer.clone()).await;
        let client = Client::new(&squatter.url, TOKEN).unwrap();
        let mut events = client.events(None);
        match within(events.next()).await {
            Some(Err(e)) => assert_not_proven(Err::<(), _>(e), &squatter.url),
            other => panic!("{answer:?}: expected a NotProven error, got {other:?}"),
        }
        assert!(within(events.next()).await.is_none(), "the stream ended");
        squatter.assert_was_asked_for_a_proof();
        squatter.assert_never_got_the_credential();
        assert!(
            !squatter.heads().iter().any(|h| h.starts_with("GET /event")),
            "{answer:?}: no /event request went out"
        );
    }
    b.server.shutdown().await;
}

#[tokio::test]
async fn a_squatter_on_a_dead_backends_port_never_receives_the_credential() {
    let b = backend().await;
    let addr = b.server.local_addr();
    let url = b.server.url().to_owned();
    let client = Client::new(&url, TOKEN).unwrap();
    let mut events = client.events(None);
    within(async {
        while !events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    within(client.create_session(Some("before"))).await.unwrap();
    assert!(client.is_verified());

    // The backend dies; the connected stream notices at once and marks the client unverified.
    b.server.shutdown().await;
    within(async {
        while events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(!client.is_verified());

    let squatter = Squatter::take(addr, Answer::OtherKey).await;
    assert_not_proven(within(client.list_sessions()).await, &url);
    assert_not_proven(within(client.create_session(None)).await, &url);
    // The stream's reconnect asks the squatter for a proof and gives up with the same error.
    let error = within(async {
        loop {
            match events.next().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => break e,
                None => panic!("the stream ended without an error"),
            }
        }
    })
    .await;
    assert_not_proven(Err::<(), _>(error), &url);
    squatter.assert_was_asked_for_a_proof();
    squatter.assert_never_got_the_credential();
}

#[tokio::test]
async fn after_a_transport_error_the_client_proves_the_server_again() {
    let b = backend().await;
    let addr = b.server.local_addr();
    let url = b.server.url().to_owned();
    let client = Client::new(&url, TOKEN).unwrap();
    within(client.list_sessions()).await.unwrap();
    assert!(client.is_verified());

    // No event stream here: the first request after the death meets a closed port.
    b.server.shutdown().await;
    let failed = within(client.list_sessions()).await;
    assert!(
        matches!(failed, Err(ClientError::Transport(_))),
        "{failed:?}"
    );
    assert!(!client.is_verified());

    let squatter = Squatter::take(addr, Answer::NoProof).await;
    assert_not_proven(within(client.list_sessions()).await, &url);
    squatter.assert_was_asked_for_a_proof();
    squatter.assert_never_got_the_credential();
}

#[tokio::test]
async fn one_proof_check_then_no_cost_per_request_while_verified() {
    let b = backend().await;
    let recorder = Squatter::start(Answer::ProveAndForward(b.server.local_addr())).await;
    let client = Client::new(&recorder.url, TOKEN).unwrap();
    for _ in 0..5 {
        within(client.list_sessions()).await.unwrap();
    }
    within(client.project()).await.unwrap();
    let heads = recorder.heads();
    let lines: Vec<&str> = heads.iter().filter_map(|h| h.lines().next()).collect();
    assert_eq!(lines.len(), 7, "{lines:?}");
    assert!(lines[0].starts_with("GET /health?proof="), "{lines:?}");
    assert!(
        lines[1..6].iter().all(|l| l.starts_with("GET /session ")),
        "{lines:?}"
    );
    assert!(lines[6].starts_with("GET /project "), "{lines:?}");
    assert!(
        !heads[0].to_ascii_lowercase().contains("authorization:"),
        "the proof check itself carries no credential"
    );
    assert!(
        heads[1]
            .to_ascii_lowercase()
            .contains("authorization: bearer")
    );

    // The event stream checks again, right before it connects, though the client is verified.
    recorder.heads.lock().unwrap().clear();
    let events = client.events(None);
    within(async {
        while !events.is_connected() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let heads = recorder.heads();
    let lines: Vec<&str> = heads.iter().filter_map(|h| h.lines().next()).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("GET /health?proof="), "{lines:?}");
    assert!(lines[1].starts_with("GET /event "), "{lines:?}");
    drop(events);
    b.server.shutdown().await;
}

/// The attack of the red-team report: a process on another address (the other loopback family,
/// or another port) relays `/health?proof=` to the real backend and returns its answer. The
/// backend's proof is bound to the backend's own address, so the client refuses it and sends
/// nothing carrying the credential, from requests or from the event stream.
#[tokio::test]
async fn a_relay_of_the_proof_from_another_address_never_receives_the_credential() {
    let b = backend().await;
    for ip in ["::1", "127.0.0.1"] {
        let relay = Squatter::start_on(ip, Answer::Forward(b.server.local_addr())).await;
        // Control: through the relay, /health does carry a valid proof, for the backend's address.
        let nonce = "cd".repeat(32);
        let health: ax_protocol::Health =
            reqwest::get(format!("{}/health?proof={nonce}", relay.url))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        assert_eq!(
            health.proof,
            Some(expected_proof(TOKEN, &nonce, b.server.local_addr()))
        );
        relay.heads.lock().unwrap().clear();

        let client = Client::new(&relay.url, TOKEN).unwrap();
        assert_not_proven(within(client.list_sessions()).await, &relay.url);
        assert_not_proven(within(client.create_session(None)).await, &relay.url);
        let mut events = client.events(None);
        match within(events.next()).await {
            Some(Err(e)) => assert_not_proven(Err::<(), _>(e), &relay.url),
            other => panic!("expected a NotProven error, got {other:?}"),
        }
        relay.assert_was_asked_for_a_proof();
        relay.assert_never_got_the_credential();
        assert!(
            relay
                .heads()
                .iter()
                .all(|h| h.starts_with("GET /health?proof=")),
            "only proof checks went out: {:?}",
            relay.heads()
        );
    }
    b.server.shutdown().await;
}

/// The backend takes the other loopback family on its port too, answers there with a proof
/// for that address, and a fixed port whose sibling another program holds refuses to start.
#[tokio::test]
async fn the_backend_holds_both_loopback_families_or_does_not_start() {
    let b = backend().await;
    let port = b.server.local_addr().port();
    let v6 = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
    match TcpListener::bind(v6).await {
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {}
        Err(e) if e.kind() == std::io::ErrorKind::AddrNotAvailable => {
            eprintln!("no IPv6 loopback on this machine: nothing to squat, nothing to check");
            return;
        }
        other => panic!("[::1]:{port} should be the backend's, got {other:?}"),
    }
    // Over IPv6 it is the same backend, proving itself for [::1]:PORT.
    let client = Client::new(format!("http://[::1]:{port}"), TOKEN).unwrap();
    within(client.list_sessions()).await.unwrap();
    b.server.shutdown().await;

    // A squatter that took [::1]:P first: the backend refuses to start on 127.0.0.1:P.
    let squatter = TcpListener::bind((std::net::Ipv6Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let port = squatter.local_addr().unwrap().port();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut config = ax_server::ServerConfig::new(project.path(), data.path());
    config.register = false;
    config.bind = SocketAddr::from(([127, 0, 0, 1], port));
    let err = ax_server::start(config).await.unwrap_err().to_string();
    assert!(
        err.contains(&format!("[::1]:{port} is taken by another program")),
        "{err}"
    );
}
