//! Helpers: start a backend in temp dirs, wait for events with a timeout.

use std::{future::Future, path::Path, time::Duration};

use ax_client::{Client, EventStream};
use ax_protocol::{Event, EventEnvelope, Message, SessionId, SessionStatus};
use ax_server::{RunningServer, ServerConfig};
use tempfile::TempDir;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(15);

pub struct Backend {
    pub project: TempDir,
    pub data: TempDir,
    pub server: RunningServer,
    pub client: Client,
}

impl Backend {
    pub async fn start() -> Backend {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut ServerConfig)) -> Backend {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::new(project.path(), data.path());
        config.register = false;
        adjust(&mut config);
        let server = ax_server::start(config).await.expect("backend starts");
        let client = Client::new(server.url(), server.token().expose()).unwrap();
        Backend {
            project,
            data,
            server,
            client,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }

    /// A raw HTTP client for requests the typed client would never send.
    pub fn raw(&self) -> reqwest::Client {
        reqwest::Client::builder().no_proxy().build().unwrap()
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.server.token().expose())
    }

    /// An event stream that is connected (so no event of what follows is missed).
    pub async fn events(&self) -> EventStream {
        let events = self.client.events(None);
        within(async {
            while !events.is_connected() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        events
    }

    pub async fn session(&self) -> SessionId {
        self.client.create_session(Some("test")).await.unwrap().id
    }

    pub fn project_path(&self) -> &Path {
        self.project.path()
    }
}

/// Runs `f` with the test-wide timeout.
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .expect("timed out waiting")
}

/// The next event matching `pred`, skipping others.
pub async fn next_matching(
    events: &mut EventStream,
    mut pred: impl FnMut(&Event) -> bool,
) -> EventEnvelope {
    within(async {
        loop {
            let e = events.next().await.expect("stream open").expect("no error");
            if pred(&e.event) {
                return e;
            }
        }
    })
    .await
}

pub async fn wait_status(events: &mut EventStream, id: &SessionId, status: SessionStatus) {
    next_matching(events, |e| {
        matches!(e, Event::SessionStatus { session_id, status: s } if session_id == id && *s == status)
    })
    .await;
}

/// The assistant message of the last prompt.
pub fn last_reply(messages: &[Message]) -> &Message {
    messages.last().expect("a reply message")
}

/// Polls `check` until it holds, within the timeout.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let ok = tokio::time::timeout(WAIT, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ok.is_ok(), "timed out waiting for: {what}");
}

/// Whether a process is gone (or only a zombie left for its reaper).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// A TCP proxy in front of a backend that can cut every connection and hold new ones back,
/// to test the client's reconnect. It rewrites the first request's Host header to the
/// backend's, which the Host check requires.
pub struct Proxy {
    pub url: String,
    cut: tokio::sync::watch::Sender<u64>,
    open: tokio::sync::watch::Sender<bool>,
    pub heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Proxy {
    /// A proxy to `backend` that holds its credential `token`: it answers the `/health`
    /// proof itself, for its own address (a relay of the backend's answer would be refused,
    /// since that proof is bound to the backend's address), and forwards everything else.
    pub async fn start(backend: std::net::SocketAddr, token: &str) -> Proxy {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let own = listener.local_addr().unwrap();
        let port = own.port();
        let token = token.to_owned();
        let (cut, _) = tokio::sync::watch::channel(0u64);
        let (open, _) = tokio::sync::watch::channel(true);
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (cut_tx, open_tx, heads2) = (cut.clone(), open.clone(), heads.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let mut cut_rx = cut_tx.subscribe();
                let mut open_rx = open_tx.subscribe();
                let heads = heads2.clone();
                let token = token.clone();
                tokio::spawn(async move {
                    let _ = open_rx.wait_for(|open| *open).await;
                    cut_rx.borrow_and_update();
                    // Read the request head and fix its Host header. Only a connection's first
                    // head is read, so ask for `Connection: close`: the client's next request
                    // (the event stream after its `/health` proof check) takes a new connection.
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if inbound.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    if let Some(rest) = text.strip_prefix("GET /health?proof=") {
                        let nonce = rest.split(' ').next().unwrap_or("");
                        let body = serde_json::json!({
                            "ok": true,
                            "version": "proxy",
                            "proof": ax_protocol::proof::health_proof(&token, nonce, own),
                        })
                        .to_string();
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = inbound.write_all(answer.as_bytes()).await;
                        return;
                    }
                    let mut lines: Vec<String> = text
                        .split("\r\n")
                        .filter(|line| !line.to_ascii_lowercase().starts_with("connection:"))
                        .map(|line| {
                            if line.to_ascii_lowercase().starts_with("host:") {
                                format!("host: {backend}")
                            } else {
                                line.to_owned()
                            }
                        })
                        .collect();
                    lines.insert(1, "connection: close".to_owned());
                    let fixed = lines.join("\r\n");
                    heads.lock().unwrap().push(text);
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(backend).await else {
                        return;
                    };
                    if outbound.write_all(fixed.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut_rx.changed() => {}
                    }
                });
            }
        });
        Proxy {
            url: format!("http://127.0.0.1:{port}"),
            cut,
            open,
            heads,
        }
    }

    /// Drops every proxied connection; new ones wait until [`Proxy::resume`].
    pub fn cut_and_hold(&self) {
        self.open.send_replace(false);
        self.cut.send_modify(|n| *n += 1);
    }

    pub fn resume(&self) {
        self.open.send_replace(true);
    }
}

/// The `execute` call of a `shell` turn's reply: the command line it ran, or was asked about.
pub fn shell_call(parts: &[ax_protocol::Part]) -> &ax_protocol::turn::ToolCallPart {
    use ax_protocol::turn::{ToolKind, TurnPart};
    parts
        .iter()
        .find_map(|p| match p {
            ax_protocol::Part::Turn(TurnPart::ToolCall(t)) if t.kind == ToolKind::Execute => {
                Some(t)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no execute call in {parts:?}"))
}

/// The terminal of a `shell` turn's command: its kept output, the bytes dropped before it,
/// and its exit (`None` when no terminal was shown: the command did not start).
pub fn shell_terminal(
    parts: &[ax_protocol::Part],
) -> Option<(&str, u64, Option<&ax_protocol::turn::TerminalExit>)> {
    shell_call(parts).content.iter().find_map(|c| match c {
        ax_protocol::turn::ToolContent::Terminal {
            output,
            dropped_bytes,
            exit,
            ..
        } => Some((output.as_str(), *dropped_bytes, exit.as_ref())),
        _ => None,
    })
}

/// What a `shell` turn's command printed (stdout and stderr are one stream in a terminal).
pub fn shell_output(parts: &[ax_protocol::Part]) -> String {
    shell_terminal(parts)
        .map(|(o, _, _)| o.to_owned())
        .unwrap_or_default()
}

/// How a `shell` turn's command exited: `(code, signal)`; `None` if it did not end on its
/// own (not started, or killed by an abort before it could report).
pub fn shell_exit(parts: &[ax_protocol::Part]) -> Option<(Option<u32>, Option<String>)> {
    shell_terminal(parts)
        .and_then(|(_, _, e)| e)
        .map(|e| (e.exit_code, e.signal.clone()))
}

/// The text a `shell` turn's call shows besides its terminal (why the command did not run).
pub fn shell_said(parts: &[ax_protocol::Part]) -> String {
    shell_call(parts)
        .content
        .iter()
        .filter_map(|c| match c {
            ax_protocol::turn::ToolContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The permission part of a `shell` turn's reply (its question about the command).
pub fn shell_permission(parts: &[ax_protocol::Part]) -> &ax_protocol::turn::PermissionPart {
    parts
        .iter()
        .find_map(|p| match p {
            ax_protocol::Part::Turn(ax_protocol::turn::TurnPart::Permission(p)) => Some(p),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no permission in {parts:?}"))
}
