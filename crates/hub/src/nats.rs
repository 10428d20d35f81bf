//! The one NATS connection code both sides share (docs/hub.md §3): how to connect (retry
//! forever, the first connect included, so a NATS server that is down is never fatal), the two
//! JetStream streams, and the publish that waits for the stream's acknowledgement.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::{HeaderMap, jetstream};
use ax_core::Secret;

use crate::subject::{EVENTS_STREAM, EVENTS_SUBJECTS, STATE_STREAM, STATE_SUBJECTS};

/// The URL or the options were refused (a server that is down is not: the client retries).
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to NATS at {url}: {reason}")]
pub struct ConnectError {
    /// The NATS URL.
    pub url: String,
    /// Why.
    pub reason: String,
}

/// Whether every server `url` names (one URL, or several separated by commas) is on this
/// machine's loopback: `localhost`, 127.0.0.0/8 or `::1`. Beyond it, plain TCP can be read and
/// a server without users lets anyone send a joined backend prompts and approvals, so the CLI
/// joins a server elsewhere only over TLS with a NATS user or when told the network is trusted
/// (docs/SECURITY.md, "Several machines").
pub fn is_loopback_url(url: &str) -> Result<bool, ConnectError> {
    let refused = |reason: String| ConnectError {
        url: url.to_owned(),
        reason,
    };
    let mut all = true;
    for one in url.split(',') {
        let addr: async_nats::ServerAddr = one
            .trim()
            .parse()
            .map_err(|e: std::io::Error| refused(e.to_string()))?;
        let host = addr.host();
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        all &= loopback;
    }
    Ok(all)
}

/// Connects to `url` in the background: the client is returned at once and keeps
/// reconnecting (backoff 100 ms doubling to 2 s) for as long as it lives. Requests and
/// publishes made while it is away wait in its buffer or time out.
pub async fn connect(
    url: &str,
    credentials: &Option<(String, Secret)>,
    inbox_prefix: &str,
) -> Result<async_nats::Client, ConnectError> {
    let mut opts = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(3))
        .custom_inbox_prefix(inbox_prefix)
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis((100u64 << attempts.min(5) as u32).min(2000))
        });
    if let Some((user, password)) = credentials {
        opts = opts.user_and_password(user.clone(), password.expose().to_owned());
    }
    opts.connect(url).await.map_err(|e| ConnectError {
        url: url.to_owned(),
        reason: e.to_string(),
    })
}

/// What one NATS user may do (docs/hub.md §1): the subjects it may publish and subscribe,
/// and whether it may answer the requests it receives (`allow_responses`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// Subjects it may publish on.
    pub publish: Vec<String>,
    /// Subjects it may subscribe to.
    pub subscribe: Vec<String>,
    /// May publish once to the reply subject of each request it received.
    pub allow_responses: bool,
}

/// A backend named `name`: its own three subjects, the info of the two streams (no consumer,
/// no message read: it cannot read other machines' events), its requests, its own inbox, and
/// the answers to the requests it receives.
pub fn backend_permissions(name: &crate::MachineName) -> Permissions {
    Permissions {
        publish: vec![
            name.event_subject(),
            name.machine_subject(),
            name.sessions_subject(),
            name.ui_subject(),
            format!("$JS.API.STREAM.INFO.{EVENTS_STREAM}"),
            format!("$JS.API.STREAM.INFO.{STATE_STREAM}"),
        ],
        subscribe: vec![name.request_subject(), format!("{}.>", name.inbox_prefix())],
        allow_responses: true,
    }
}

/// A hub: requests to every machine, the JetStream API (it creates the streams and reads
/// them with consumers), flow-control answers, and its own inbox.
pub fn hub_permissions() -> Permissions {
    Permissions {
        publish: vec![
            "ax.req.>".to_owned(),
            "$JS.API.>".to_owned(),
            "$JS.FC.>".to_owned(),
        ],
        // `ax.*.ui`: the machines' shared `ui.command`s (core NATS, see `ui.rs`).
        subscribe: vec!["_INBOX_HUB.>".to_owned(), "ax.*.ui".to_owned()],
        allow_responses: false,
    }
}

/// One connection attempt with `credentials`, to refuse wrong ones at start with a clear
/// error (the background connection retries forever and would only log them). A server that
/// cannot be reached is not an error here: the join waits for it.
pub async fn check_credentials(
    url: &str,
    credentials: &Option<(String, Secret)>,
) -> Result<(), ConnectError> {
    let Some((user, password)) = credentials else {
        return Ok(());
    };
    let opts = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(3))
        .user_and_password(user.clone(), password.expose().to_owned());
    match opts.connect(url).await {
        Ok(client) => {
            drop(client);
            Ok(())
        }
        Err(e)
            if matches!(
                e.kind(),
                async_nats::ConnectErrorKind::AuthorizationViolation
                    | async_nats::ConnectErrorKind::Authentication
            ) =>
        {
            Err(ConnectError {
                url: url.to_owned(),
                reason: format!(
                    "the server refused NATS user {user:?} (authorization violation: check the user and its password)"
                ),
            })
        }
        Err(_) => Ok(()),
    }
}

/// Creates the two streams if missing. Both sides try, whichever reaches NATS first; with
/// subject permissions only the hub may (docs/hub.md §5).
pub async fn ensure_streams(js: &jetstream::Context) -> Result<(), String> {
    js.get_or_create_stream(jetstream::stream::Config {
        name: EVENTS_STREAM.to_owned(),
        subjects: vec![EVENTS_SUBJECTS.to_owned()],
        // Kept a week, at most 1 GiB: the replay a hub or a reloaded UI can ask for.
        max_age: Duration::from_secs(7 * 24 * 3600),
        max_bytes: 1 << 30,
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    js.get_or_create_stream(jetstream::stream::Config {
        name: STATE_STREAM.to_owned(),
        subjects: STATE_SUBJECTS.iter().map(|s| (*s).to_owned()).collect(),
        max_messages_per_subject: 1,
        max_bytes: 256 << 20,
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Publishes into JetStream until the stream acknowledges, retrying the same message (with
/// the same `Nats-Msg-Id`, so JetStream drops a retry whose first try had landed) every
/// 500 ms.
pub async fn publish_acked(
    js: &jetstream::Context,
    subject: &str,
    msg_id: Option<&str>,
    payload: bytes::Bytes,
) {
    loop {
        let mut headers = HeaderMap::new();
        if let Some(id) = msg_id {
            headers.insert("Nats-Msg-Id", id);
        }
        let sent = js
            .publish_with_headers(subject.to_owned(), headers, payload.clone())
            .await;
        match sent {
            Ok(ack) => match ack.await {
                Ok(_) => return,
                Err(e) => tracing::debug!(%subject, error = %e, "no ack yet; retrying"),
            },
            Err(e) => tracing::debug!(%subject, error = %e, "cannot publish yet; retrying"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Milliseconds since the epoch (0 before it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::is_loopback_url;

    #[test]
    fn only_loopback_servers_count_as_loopback() {
        for url in [
            "nats://127.0.0.1:4222",
            "nats://localhost:4222",
            "nats://[::1]:4222",
            "127.0.0.2:4222",
            "nats://127.0.0.1:1,nats://localhost:2",
        ] {
            assert!(is_loopback_url(url).unwrap(), "{url}");
        }
        for url in [
            "nats://10.0.0.5:4222",
            "nats://example.org:4222",
            "nats://127.0.0.1:1,nats://10.0.0.5:2",
            "tls://192.168.1.2",
        ] {
            assert!(!is_loopback_url(url).unwrap(), "{url}");
        }
        assert!(is_loopback_url("nats://[bad").is_err());
    }
}
