//! Other origins against a real `ax-code serve` (SECURITY.md: "web pages in the person's
//! browser").
//!
//! - In headless Chromium (tests/python/adv_origin_browser.py with the page
//!   tests/python/adv_origin_evil.html): a page of another origin tries fetch() with and
//!   without credentials, a no-cors POST, a form POST, a WebSocket to `/gateway` with a
//!   connect frame and framing the Control UI, without the token and with a leaked one; every
//!   attempt fails, the backend's own request log shows it refused them (403), no session is
//!   created; a rebound name (`evil.example` mapped to 127.0.0.1 in the browser) gets 403.
//! - Raw requests with a DNS-rebinding style `Host` on every kind of route of the binary
//!   (API, Control UI page and assets, `/health`, the gateway upgrade), with the right
//!   credential, each beside a control request with the real host that succeeds.
//!
//! Already proven elsewhere and not repeated here: foreign Host/Origin on the embedded API
//! (crates/server/tests/backend/auth.rs `foreign_host_or_origin_is_refused`), foreign Origin
//! and Host on the mounted gateway through tungstenite and the Control UI's CSP
//! (crates/cli/tests/screen_gateway.rs).

mod support;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use support::*;

#[test]
fn pages_of_other_origins_cannot_use_the_api_or_the_gateway_in_a_real_browser() {
    python();
    require_browser();
    let status = run_script(
        "adv_origin_browser.py",
        &[AX.as_ref()],
        Duration::from_secs(120),
    );
    assert!(
        status.success(),
        "adv_origin_browser.py failed ({status}); its checks are printed above"
    );
}

/// Sends one raw HTTP/1.1 request to 127.0.0.1:port and returns (status, whole answer).
/// Reads until the peer closes or, after a `101`, until the head is complete.
fn raw(port: u16, head: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no full answer to {head:?}: {e}"),
        }
        let text = String::from_utf8_lossy(&answer);
        if text.starts_with("HTTP/1.1 101") && text.contains("\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    (status, text)
}

#[test]
fn a_rebound_host_name_is_refused_on_every_route_even_with_the_credential() {
    let s = ControlServe::start();
    let port = s.port();
    let token = &s.token;
    let bearer = format!("Authorization: Bearer {token}\r\n");
    let body = r#"{"title":"rebound"}"#;
    let upgrade = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
                   Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    // (method, path, extra headers, body, status with the real host)
    let routes: [(&str, &str, String, &str, u16); 6] = [
        ("GET", "/", String::new(), "", 200),
        ("GET", "/assets/app.js", String::new(), "", 200),
        ("GET", "/health", String::new(), "", 200),
        ("GET", "/session", bearer.clone(), "", 200),
        (
            "POST",
            "/session",
            format!("{bearer}Content-Type: application/json\r\n"),
            body,
            201,
        ),
        ("GET", "/gateway", upgrade.to_owned(), "", 101),
    ];
    let rebound_hosts = [
        format!("evil.example:{port}"),
        format!("EVIL.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        "evil.example".to_owned(),
    ];
    for (method, path, extra, body, good) in &routes {
        for host in &rebound_hosts {
            // A browser under a rebound name sends its own origin as Origin (on POST and the
            // upgrade); without Origin too, the Host alone must be refused.
            for origin in [None, Some(format!("http://{host}"))] {
                let origin_line = origin
                    .as_ref()
                    .map(|o| format!("Origin: {o}\r\n"))
                    .unwrap_or_default();
                let head = format!(
                    "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}{origin_line}\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let (status, answer) = raw(port, &head, body);
                assert_eq!(
                    status, 403,
                    "{method} {path} with Host {host} (Origin {origin:?}): {answer}"
                );
                assert!(answer.contains("\"forbidden\""), "{answer}");
                assert!(
                    !answer.contains(token.as_str()),
                    "the answer leaks the token"
                );
                assert!(!answer.contains("access-control-allow-origin"));
            }
        }
        // The control: the same request with the served host name succeeds.
        let close = if *good == 101 {
            ""
        } else {
            "Connection: close\r\n"
        };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\
             Content-Length: {}\r\n{close}\r\n",
            body.len()
        );
        let (status, answer) = raw(port, &head, body);
        assert_eq!(
            status, *good,
            "{method} {path} with the real host: {answer}"
        );
    }

    // Only the control POST created a session: none of the rebound ones did.
    let head = format!(
        "GET /session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{bearer}Connection: close\r\n\r\n"
    );
    let (status, answer) = raw(port, &head, "");
    assert_eq!(status, 200);
    assert_eq!(answer.matches("\"rebound\"").count(), 1, "{answer}");
}
