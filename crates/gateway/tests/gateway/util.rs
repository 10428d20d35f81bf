//! Helpers: a gateway on a real port and a small protocol client.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use ax_gateway::{
    ClientMode, ConnectOptions, Gateway, GatewayClient, GatewayConfig, LimitedToken, Scope,
    SessionDirectory, TerminalEvent, TerminalHost, TerminalStartError, TerminalStream, Tuning,
};
use axum::{
    Router,
    extract::{State, ws::WebSocketUpgrade},
    routing::get,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::{
    MaybeTlsStream, WebSocketStream,
    tungstenite::{Message, protocol::CloseFrame},
};

pub const TOKEN: &str = "test-token-0123456789";
/// A limited token the test gateway grants at most read and write.
pub const WRITE_TOKEN: &str = "test-write-token-9876543210";
pub const SESSION_A: &str = "ses_0000000000aaAAAAAAAAAAAAAA";
pub const SESSION_B: &str = "ses_0000000000bbBBBBBBBBBBBBBB";
pub const WAIT: Duration = Duration::from_secs(5);

struct Sessions;
impl SessionDirectory for Sessions {
    fn contains(&self, id: &str) -> bool {
        id == SESSION_A || id == SESSION_B
    }
}

/// The operator terminal's host in these tests: the gateway's side of the wire is tested
/// here, the real processes behind it in the backend's tests. A command is a script of
/// space-separated steps: `out:TEXT` / `err:TEXT` (a line), `trunc:N` (a truncation marker),
/// `hang` (until stopped, then killed by signal 9), `exit:N`, `fail` (cannot start).
#[derive(Default)]
pub struct ScriptedTerminal {
    /// Every command started, with the output bound it was given.
    pub started: Mutex<Vec<(String, usize)>>,
    /// Signalled each time a `hang` step ends because the gateway stopped it.
    pub stopped: Arc<tokio::sync::Notify>,
}

impl TerminalHost for ScriptedTerminal {
    fn start(
        &self,
        command: &str,
        max_output: usize,
        stop: tokio_util::sync::CancellationToken,
    ) -> Result<tokio::sync::mpsc::Receiver<TerminalEvent>, TerminalStartError> {
        if command == "fail" {
            return Err(TerminalStartError("cannot start sh: test".into()));
        }
        self.started
            .lock()
            .unwrap()
            .push((command.to_owned(), max_output));
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let steps: Vec<String> = command.split(' ').map(str::to_owned).collect();
        let stopped = self.stopped.clone();
        tokio::spawn(async move {
            let mut dropped = 0;
            for step in steps {
                let (kind, arg) = step.split_once(':').unwrap_or((step.as_str(), ""));
                let event = match kind {
                    "out" | "err" => TerminalEvent::Output {
                        stream: if kind == "out" {
                            TerminalStream::Stdout
                        } else {
                            TerminalStream::Stderr
                        },
                        data: format!("{arg}\n"),
                    },
                    "trunc" => {
                        dropped = arg.parse().unwrap();
                        TerminalEvent::Truncated {
                            dropped_bytes: dropped,
                        }
                    }
                    "hang" => {
                        stop.cancelled().await;
                        stopped.notify_one();
                        TerminalEvent::Exit {
                            code: None,
                            signal: Some(9),
                            dropped_bytes: dropped,
                        }
                    }
                    "exit" => TerminalEvent::Exit {
                        code: Some(arg.parse().unwrap()),
                        signal: None,
                        dropped_bytes: dropped,
                    },
                    other => panic!("unknown step {other}"),
                };
                let last = matches!(event, TerminalEvent::Exit { .. });
                if tx.send(event).await.is_err() || last {
                    return;
                }
            }
        });
        Ok(rx)
    }
}

pub struct TestGateway {
    pub addr: SocketAddr,
    pub gateway: Gateway,
    pub terminal: Arc<ScriptedTerminal>,
}

pub async fn start() -> TestGateway {
    start_with(Tuning::default()).await
}

pub async fn start_with(tuning: Tuning) -> TestGateway {
    let terminal = Arc::new(ScriptedTerminal::default());
    let gateway = Gateway::with_limited_tokens(
        GatewayConfig {
            token: TOKEN.into(),
            server_version: "9.9.9-test".into(),
            sessions: Arc::new(Sessions),
            terminal: Some(terminal.clone()),
        },
        tuning,
        vec![LimitedToken {
            token: WRITE_TOKEN.into(),
            scopes: [Scope::Read, Scope::Write].into_iter().collect(),
        }],
    );
    let app = Router::new()
        .route(
            "/gateway",
            get(
                |State(g): State<Gateway>, ws: WebSocketUpgrade| async move {
                    // The backend's settings, message cap included.
                    g.configure_upgrade(ws)
                        .on_upgrade(move |socket| async move { g.serve_socket(socket).await })
                },
            ),
        )
        .with_state(gateway.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    TestGateway {
        addr,
        gateway,
        terminal,
    }
}

/// What ended a connection, as the client saw it.
#[derive(Debug)]
pub enum Ended {
    Close(Option<CloseFrame>),
    Gone,
}

pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Events read while waiting for a response.
    pub events: VecDeque<Value>,
    pub last_seq: u64,
    /// The `connId` of `hello-ok` (empty before the handshake).
    pub conn_id: String,
}

impl Client {
    pub fn from_ws(ws: WebSocketStream<MaybeTlsStream<TcpStream>>) -> Client {
        Client {
            ws,
            next_id: 1,
            events: VecDeque::new(),
            last_seq: 0,
            conn_id: String::new(),
        }
    }

    pub async fn open(addr: SocketAddr) -> Client {
        let url = format!("ws://{addr}/gateway");
        let (ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("connect timed out")
            .expect("websocket connect");
        Client {
            ws,
            next_id: 1,
            events: VecDeque::new(),
            last_seq: 0,
            conn_id: String::new(),
        }
    }

    /// A client past the handshake with the given mode, caps and scopes.
    pub async fn connected(addr: SocketAddr, mode: &str, caps: &[&str], scopes: &[&str]) -> Client {
        let mut c = Client::open(addr).await;
        let challenge = c.frame().await;
        assert_eq!(challenge["event"], "connect.challenge");
        let res = c
            .request("connect", connect_params(mode, caps, scopes, TOKEN))
            .await;
        assert_eq!(res["ok"], true, "handshake failed: {res}");
        c.conn_id = res["payload"]["server"]["connId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        c
    }

    pub async fn send_text(&mut self, text: String) {
        self.ws.send(Message::text(text)).await.expect("send");
    }

    /// The next JSON frame (pings and pongs are skipped). Panics when the connection ends.
    pub async fn frame(&mut self) -> Value {
        match self.frame_or_end().await {
            Ok(v) => v,
            Err(e) => panic!("connection ended while a frame was expected: {e:?}"),
        }
    }

    pub async fn frame_or_end(&mut self) -> Result<Value, Ended> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("timed out waiting for a frame");
            match msg {
                Some(Ok(Message::Text(t))) => {
                    let v: Value = serde_json::from_str(&t).expect("frame is JSON");
                    if v["type"] == "event" {
                        let seq = v["seq"].as_u64().expect("event has seq");
                        assert_eq!(seq, self.last_seq + 1, "seq gap: {v}");
                        self.last_seq = seq;
                    }
                    return Ok(v);
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Binary(_))) => panic!("binary frame from gateway"),
                Some(Ok(Message::Close(f))) => return Err(Ended::Close(f)),
                Some(Err(_)) | None => return Err(Ended::Gone),
            }
        }
    }

    /// Read until the connection ends; returns how it ended.
    pub async fn until_end(&mut self) -> Ended {
        loop {
            match self.frame_or_end().await {
                Ok(_) => continue,
                Err(e) => return e,
            }
        }
    }

    pub fn next_id(&mut self) -> String {
        self.next_id += 1;
        format!("r{}", self.next_id)
    }

    pub async fn send_request(&mut self, method: &str, params: Value) -> String {
        let id = self.next_id();
        let frame = json!({"type": "req", "id": id, "method": method, "params": params});
        self.send_text(frame.to_string()).await;
        id
    }

    /// Send a request and wait for its response, keeping events for later.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(&id).await
    }

    pub async fn response(&mut self, id: &str) -> Value {
        loop {
            let f = self.frame().await;
            if f["type"] == "res" && f["id"] == id {
                return f;
            }
            if f["type"] == "event" {
                self.events.push_back(f);
            }
        }
    }

    /// The next event named `name` (ticks and others are skipped).
    pub async fn event(&mut self, name: &str) -> Value {
        if let Some(pos) = self.events.iter().position(|e| e["event"] == name) {
            return self.events.remove(pos).unwrap();
        }
        loop {
            let f = self.frame().await;
            if f["type"] == "event" && f["event"] == name {
                return f;
            }
            if f["type"] == "event" {
                self.events.push_back(f);
            }
        }
    }
}

/// A well-behaved client past the handshake: the crate's own typed client.
pub async fn typed(
    addr: SocketAddr,
    mode: ClientMode,
    caps: &[&str],
    scopes: &[Scope],
    token: &str,
) -> Result<GatewayClient, ax_gateway::ClientError> {
    let options = ConnectOptions::new(token, mode, scopes.to_vec()).with_caps(caps.iter().copied());
    tokio::time::timeout(
        WAIT,
        GatewayClient::connect(&format!("ws://{addr}/gateway"), options),
    )
    .await
    .expect("typed connect timed out")
}

pub fn connect_params(mode: &str, caps: &[&str], scopes: &[&str], token: &str) -> Value {
    json!({
        "minProtocol": 1,
        "maxProtocol": 1,
        "client": {"id": "test", "version": "0.0.1", "platform": "linux", "mode": mode},
        "caps": caps,
        "role": "operator",
        "scopes": scopes,
        "auth": {"token": token},
    })
}

pub const ALL: &[&str] = &["operator.read", "operator.write", "operator.admin"];

/// Poll `f` until it holds or `WAIT` passes.
pub async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

/// Every log line of this test binary, at trace level with the filter directives a process
/// hosting the gateway adds ([`ax_gateway::LOG_DIRECTIVES`]), the `log` records of the
/// WebSocket library included. Installed on first use.
pub fn logs() -> &'static Logs {
    static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs(Arc::new(std::sync::Mutex::new(Vec::new())));
        let mut filter = tracing_subscriber::EnvFilter::new("trace");
        for d in ax_gateway::LOG_DIRECTIVES {
            filter = filter.add_directive(d.parse().unwrap());
        }
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(logs.clone())
            .try_init()
            .expect("the log capture is the only subscriber of this binary");
        logs
    })
}

#[derive(Clone)]
pub struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}
