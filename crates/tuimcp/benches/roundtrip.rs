//! Round trips over the endpoint socket beside a bare Unix-socket JSON round trip, and the
//! adapter's cold start. Prints median and p99.
//!
//! `cargo bench -p ax-tuimcp --bench roundtrip` (set `AX_CODE_BIN` to the `ax-code` binary
//! for the cold start; default `target/release/ax-code`).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use ax_tuimcp::{
    Request, Response, SelectSession, SessionId, WireUuid, client,
    fake::{FakeOptions, FakeTui},
    frame::read_frame,
};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{UnixListener, UnixStream},
    process::Command,
};

const ROUNDS: usize = 2000;
const WARMUP: usize = 200;

fn sid(n: u32) -> SessionId {
    format!("ses_{n:026}").parse::<SessionId>().unwrap()
}

fn report(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    let median = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    println!(
        "{name:<40} n={:<5} median {:>8.1} µs   p99 {:>8.1} µs",
        samples.len(),
        median.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    median
}

fn private_root() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let root = std::env::temp_dir().join(format!("axbench-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
    root
}

/// The baseline: one JSON request per connection, parsed and answered, nothing else.
async fn bare_server(socket: PathBuf) {
    let listener = UnixListener::bind(&socket).unwrap();
    let answer = br#"{"status":"context","context":{"instanceId":"00000000-0000-4000-8000-000000000001","generation":"00000000-0000-4000-8000-000000000002","revision":1,"route":"home","ready":true,"blocked":false}}
"#;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(frame) = read_frame(&mut stream).await else {
                    return;
                };
                let _: serde_json::Value = serde_json::from_slice(&frame).unwrap();
                let _ = stream.write_all(answer).await;
                let _ = stream.shutdown().await;
            });
        }
    });
}

async fn bare_call(socket: &Path, frame: &[u8]) {
    let mut stream = UnixStream::connect(socket).await.unwrap();
    stream.write_all(frame).await.unwrap();
    let reply = read_frame(&mut stream).await.unwrap();
    let _: serde_json::Value = serde_json::from_slice(&reply).unwrap();
}

/// The baseline with the adapter's own connect-and-send (`client::connect_and_send`).
async fn bare_call_direct(socket: &Path, frame: &[u8]) {
    let mut stream = client::connect_and_send(socket, frame).await.unwrap();
    let reply = read_frame(&mut stream).await.unwrap();
    let _: serde_json::Value = serde_json::from_slice(&reply).unwrap();
}

async fn view_revision(path: &Path) -> (ax_tuimcp::View, u64) {
    match client::call(path, &Request::GetViewContext, std::future::pending()).await {
        Response::Context(view) => {
            let revision = view.revision;
            (view, revision)
        }
        other => panic!("context expected, got {other:?}"),
    }
}

async fn cold_start(binary: &Path, endpoint: &Path) -> Duration {
    let init = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#,
        "\n"
    );
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["mcp", "tui", "--endpoint"])
        .arg(endpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(init.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains(r#""id":2"#) {
            break;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.wait().await;
    elapsed
}

async fn run() {
    let root = private_root();

    // Bare baseline server, and the fake TUI.
    let bare_socket = root.join("bare.sock");
    bare_server(bare_socket.clone()).await;
    let bare_frame = ax_tuimcp::protocol::request_frame(&"a".repeat(64), &Request::GetViewContext);
    let mut options = FakeOptions {
        sessions: vec![sid(1), sid(2)],
        ..FakeOptions::default()
    };
    options.endpoint.temp_root = Some(root.clone());
    let tui = FakeTui::start(options.clone()).await.unwrap();
    // The same request on the socket alone (endpoint.json read once, not per call).
    let (file, socket) = ax_tuimcp::endpoint_file::read_endpoint_file(tui.endpoint_path()).unwrap();
    let view_frame =
        ax_tuimcp::protocol::request_frame(file.token.expose(), &Request::GetViewContext);
    for _ in 0..WARMUP {
        bare_call(&bare_socket, &bare_frame).await;
        bare_call_direct(&bare_socket, &bare_frame).await;
        view_revision(tui.endpoint_path()).await;
    }

    // Interleaved: every round takes one sample of each line, so whatever else the shared
    // machine does at the time hits the baseline and the measured path alike.
    let mut bare = Vec::with_capacity(ROUNDS);
    let mut direct = Vec::with_capacity(ROUNDS);
    let mut view = Vec::with_capacity(ROUNDS);
    let mut socket_only = Vec::with_capacity(ROUNDS);
    let mut checks = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        bare_call(&bare_socket, &bare_frame).await;
        bare.push(t.elapsed());
        let t = Instant::now();
        bare_call_direct(&bare_socket, &bare_frame).await;
        direct.push(t.elapsed());
        let t = Instant::now();
        view_revision(tui.endpoint_path()).await;
        view.push(t.elapsed());
        let t = Instant::now();
        bare_call(&socket, &view_frame).await;
        socket_only.push(t.elapsed());
        let t = Instant::now();
        let _ = ax_tuimcp::endpoint_file::read_endpoint_file(tui.endpoint_path()).unwrap();
        checks.push(t.elapsed());
    }
    let bare = report("bare unix-socket JSON round trip", bare);
    let bare_direct = report("bare, adapter's connect_and_send", direct);
    let view = report("get_view_context (client::call)", view);
    let socket_only = report("get_view_context (socket only)", socket_only);
    report("endpoint.json checks alone", checks);

    // select_session: 125 per TUI (the receipt limit is 128 per process), each beside a bare
    // round trip of both kinds.
    let mut samples = Vec::new();
    let mut select_bare = Vec::new();
    let mut select_direct = Vec::new();
    for _ in 0..8 {
        let tui = FakeTui::start(options.clone()).await.unwrap();
        let (view, mut revision) = view_revision(tui.endpoint_path()).await;
        for i in 0..125u32 {
            let request = Request::SelectSession(SelectSession {
                request_id: WireUuid::random(),
                instance_id: view.instance_id,
                generation: view.generation,
                expected_revision: revision,
                session_id: sid(1 + i % 2),
            });
            let t = Instant::now();
            bare_call(&bare_socket, &bare_frame).await;
            select_bare.push(t.elapsed());
            let t = Instant::now();
            bare_call_direct(&bare_socket, &bare_frame).await;
            select_direct.push(t.elapsed());
            let t = Instant::now();
            let response =
                client::call(tui.endpoint_path(), &request, std::future::pending()).await;
            samples.push(t.elapsed());
            let Response::Applied(after) = response else {
                panic!("applied expected, got {response:?}");
            };
            revision = after.revision;
        }
        tui.shutdown().await;
    }
    let select = report("select_session (validate+navigate)", samples);
    let select_bare = report("  bare, beside select_session", select_bare);
    let select_direct = report("  bare connect_and_send, beside it", select_direct);
    println!(
        "median ratio to bare: get_view_context {:.2}x (socket only {:.2}x), select_session {:.2}x",
        view.as_secs_f64() / bare.as_secs_f64(),
        socket_only.as_secs_f64() / bare.as_secs_f64(),
        select.as_secs_f64() / select_bare.as_secs_f64()
    );
    println!(
        "median ratio to bare with the same connect_and_send: get_view_context {:.2}x, select_session {:.2}x",
        view.as_secs_f64() / bare_direct.as_secs_f64(),
        select.as_secs_f64() / select_direct.as_secs_f64()
    );

    // Adapter cold start: spawn → initialize answered → tools/list answered.
    let binary = std::env::var_os("AX_CODE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/ax-code")
        });
    if binary.exists() {
        for _ in 0..5 {
            cold_start(&binary, tui.endpoint_path()).await;
        }
        let samples = {
            let mut samples = Vec::new();
            for _ in 0..50 {
                samples.push(cold_start(&binary, tui.endpoint_path()).await);
            }
            samples
        };
        report("adapter cold start (to tools/list)", samples);
    } else {
        println!(
            "cold start skipped: {} missing (cargo build --release -p ax-cli)",
            binary.display()
        );
    }
    tui.shutdown().await;
    let _ = std::fs::remove_dir_all(&root);
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent; keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        println!("roundtrip: run with `cargo bench -p ax-tuimcp --bench roundtrip`");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}
