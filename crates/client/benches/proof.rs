//! Cost of the server proof (see docs/PERFORMANCE-client-proof.md):
//! - computing one proof (HMAC-SHA256 over the prefix and a 64-character nonce);
//! - one `verify()` round trip (`GET /health?proof=`) to a real backend on 127.0.0.1;
//! - an authenticated request while verified (no proof cost) and the first request of a fresh
//!   client (proof check + request, new connections).
//!
//! Run: `cargo bench -p ax-client --bench proof` (release).

use std::time::{Duration, Instant};

use ax_client::{Client, expected_proof};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: n={} median={:.3} ms p99={:.3} ms",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3
    );
}

async fn timed<T>(f: impl Future<Output = T>) -> Duration {
    let t = Instant::now();
    f.await;
    t.elapsed()
}

fn main() {
    let nonce = "0123456789abcdef".repeat(4);
    let token = ax_server::generate_token().unwrap();
    let n = 200_000u32;
    let addr: std::net::SocketAddr = "127.0.0.1:4096".parse().unwrap();
    let t = Instant::now();
    let mut sink = 0usize;
    for _ in 0..n {
        sink += expected_proof(token.expose(), &nonce, addr).len();
    }
    let per = t.elapsed() / n;
    println!(
        "expected_proof: n={n} {:.2} µs each ({sink})",
        per.as_secs_f64() * 1e6
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut config = ax_server::ServerConfig::new(project.path(), data.path());
        config.register = false;
        let server = ax_server::start(config).await.unwrap();
        let client = Client::new(server.url(), server.token().expose()).unwrap();
        client.project().await.unwrap();

        let iters = 2000;
        let mut verify = Vec::with_capacity(iters);
        for _ in 0..iters {
            verify.push(timed(async { client.verify().await.unwrap() }).await);
        }
        report("verify() round trip", verify);

        let mut verified = Vec::with_capacity(iters);
        for _ in 0..iters {
            verified.push(timed(async { client.project().await.unwrap() }).await);
        }
        report("GET /project while verified", verified);

        let mut first = Vec::with_capacity(500);
        for _ in 0..500 {
            let fresh = Client::new(server.url(), server.token().expose()).unwrap();
            first.push(timed(async { fresh.project().await.unwrap() }).await);
        }
        report(
            "first GET /project of a fresh client (proof + request)",
            first,
        );

        server.shutdown().await;
    });
}
