//! The one NATS connection code both sides share (docs/hub.md §3): how to connect (retry
//! forever, the first connect included, so a NATS server that is down is never fatal), the two
//! JetStream streams, and the publish that waits for the stream's acknowledgement.

use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

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

/// A CA bundle given with `--nats-ca` could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct CaError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// The certificates of the PEM bundle at `path` (one or more `CERTIFICATE` blocks, each a
/// well-formed X.509 certificate); anything else is refused, naming the file.
pub fn read_ca_bundle(path: &Path) -> Result<usize, CaError> {
    use async_nats::rustls::{
        RootCertStore,
        pki_types::{CertificateDer, pem::PemObject},
    };
    let refused = |reason: String| CaError {
        path: path.to_owned(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| refused(format!("cannot read it: {e}")))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| refused(format!("not a PEM CA bundle ({e})")))?;
        roots
            .add(cert)
            .map_err(|e| refused(format!("holds a certificate that cannot be used ({e})")))?;
    }
    if roots.is_empty() {
        return Err(refused(
            "not a PEM CA bundle: no \"-----BEGIN CERTIFICATE-----\" block in it".to_owned(),
        ));
    }
    Ok(roots.len())
}

/// A client certificate and its private key (`--nats-cert FILE --nats-key FILE`): mutual TLS.
/// A server with `verify_and_map` takes the certificate's subject as the NATS user, so the
/// machine holds no NATS password at all (docs/hub.md §1, "Users by client certificate").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// The certificate (PEM; the chain up to the CA may follow it).
    pub cert: PathBuf,
    /// Its private key (PEM, unencrypted: keep it 0600).
    pub key: PathBuf,
}

/// Where the NATS server is and how to sign in to it: one part of the hub's config and of a
/// joining backend's.
#[derive(Debug, Clone)]
pub struct NatsConfig {
    /// `nats://HOST:PORT` (or `tls://`).
    pub url: String,
    /// NATS user and password, when the server asks for them (docs/hub.md §1).
    pub credentials: Option<(String, Secret)>,
    /// The CA bundle a TLS NATS server's certificate must chain to (`--nats-ca`), instead of
    /// the system's CAs.
    pub ca: Option<PathBuf>,
    /// The client certificate shown to a TLS NATS server (`--nats-cert`, `--nats-key`).
    pub client_cert: Option<ClientCert>,
}

impl NatsConfig {
    /// The server at `url`, with no credentials and no TLS files.
    pub fn new(url: impl Into<String>) -> NatsConfig {
        NatsConfig {
            url: url.into(),
            credentials: None,
            ca: None,
            client_cert: None,
        }
    }

    /// The TLS files it names.
    pub fn tls(&self) -> TlsFiles<'_> {
        TlsFiles {
            ca: self.ca.as_deref(),
            client: self.client_cert.as_ref(),
        }
    }

    /// [`connect`] with these settings.
    pub async fn connect(&self, inbox_prefix: &str) -> Result<async_nats::Client, ConnectError> {
        connect(&self.url, &self.credentials, self.tls(), inbox_prefix).await
    }

    /// [`check_credentials`] with these settings.
    pub async fn check(&self) -> Result<(), ConnectError> {
        check_credentials(&self.url, &self.credentials, self.tls()).await
    }
}

/// The TLS files one connection uses: whom it trusts and how it proves itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsFiles<'a> {
    /// The CA bundle the server's certificate must chain to (`--nats-ca`), instead of the
    /// system's CAs.
    pub ca: Option<&'a Path>,
    /// The client certificate shown to the server (`--nats-cert`, `--nats-key`).
    pub client: Option<&'a ClientCert>,
}

impl<'a> TlsFiles<'a> {
    /// Trusting the CA bundle `ca` (when given), with no client certificate.
    pub fn with_ca(ca: Option<&'a Path>) -> TlsFiles<'a> {
        TlsFiles { ca, client: None }
    }

    /// Whether these files ask for TLS.
    fn any(&self) -> bool {
        self.ca.is_some() || self.client.is_some()
    }
}

/// Checks a client certificate and its key before anything connects with them: the
/// certificate file holds at least one PEM certificate, the key file one PEM private key.
/// An error names the file and never shows what it holds.
pub fn check_client_cert(client: &ClientCert) -> Result<(), CaError> {
    use async_nats::rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| CaError {
            path: path.to_owned(),
            reason: format!("cannot read it: {e}"),
        })
    };
    let certs = read(&client.cert)?;
    let mut found = 0;
    for cert in CertificateDer::pem_slice_iter(&certs) {
        cert.map_err(|_| CaError {
            path: client.cert.clone(),
            reason: "not a PEM certificate".to_owned(),
        })?;
        found += 1;
    }
    if found == 0 {
        return Err(CaError {
            path: client.cert.clone(),
            reason: "not a PEM certificate: no \"-----BEGIN CERTIFICATE-----\" block in it"
                .to_owned(),
        });
    }
    // Only whether a key parses: its bytes never reach an error message.
    PrivateKeyDer::from_pem_slice(&read(&client.key)?).map_err(|_| CaError {
        path: client.key.clone(),
        reason: "not a PEM private key (PKCS#8, PKCS#1 or SEC1, unencrypted)".to_owned(),
    })?;
    Ok(())
}

/// Checks that `ca` is a usable PEM CA bundle before anything connects with it (`--nats-ca`),
/// so a wrong file is refused at start naming it. Connections given the bundle
/// ([`connect`], [`check_credentials`]) use TLS and trust only its CAs (docs/hub.md §1); it
/// is read again at each (re)connect.
pub fn check_ca(ca: &Path) -> Result<(), CaError> {
    read_ca_bundle(ca).map(|_| ())
}

/// The options every connection starts from: the connect timeout; when a CA is given, TLS
/// trusting only the CAs of that bundle (the system's CAs are not used then); when a client
/// certificate is given, TLS showing it.
fn base_options(tls: TlsFiles<'_>) -> async_nats::ConnectOptions {
    let mut opts = async_nats::ConnectOptions::new().connection_timeout(Duration::from_secs(3));
    if let Some(ca) = tls.ca {
        opts = opts.add_root_certificates(ca.to_owned());
    }
    if let Some(client) = tls.client {
        opts = opts.add_client_certificate(client.cert.clone(), client.key.clone());
    }
    if tls.any() {
        opts = opts.require_tls(true);
    }
    opts
}

/// Whether `url` names a `tls://` server.
fn tls_url(url: &str) -> bool {
    url.split(',')
        .any(|one| one.trim().to_ascii_lowercase().starts_with("tls://"))
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
/// publishes made while it is away wait in its buffer or time out. `tls`: the CA bundle a TLS
/// server's certificate must chain to ([`check_ca`]) and the client certificate
/// ([`check_client_cert`]).
pub async fn connect(
    url: &str,
    credentials: &Option<(String, Secret)>,
    tls: TlsFiles<'_>,
    inbox_prefix: &str,
) -> Result<async_nats::Client, ConnectError> {
    let mut opts = base_options(tls)
        .retry_on_initial_connect()
        .max_reconnects(None)
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

/// A backend named `name`: its own subjects (events, record, sessions, `ui.command`s, the
/// output of its terminals), the info of the two streams (no consumer,
/// no message read: it cannot read other machines' events), its requests, its own inbox, and
/// the answers to the requests it receives.
pub fn backend_permissions(name: &crate::MachineName) -> Permissions {
    Permissions {
        publish: vec![
            name.event_subject(),
            name.machine_subject(),
            name.sessions_subject(),
            name.ui_subject(),
            name.terminal_subjects(),
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
        // `ax.*.ui`: the machines' shared `ui.command`s (core NATS, see `ui.rs`);
        // `ax.*.term.*`: the output of the terminals it opened (`terminal.rs`).
        subscribe: vec![
            "_INBOX_HUB.>".to_owned(),
            "ax.*.ui".to_owned(),
            "ax.*.term.*".to_owned(),
        ],
        allow_responses: false,
    }
}

/// One connection attempt with `credentials`, to refuse at start, with a clear error, what
/// the background connection (which retries forever) would only log: wrong credentials, and a
/// TLS server whose certificate is not vouched for (by the CA bundle `tls.ca`, else the
/// system's CAs), and a client certificate the server refuses or maps to no user. A server
/// that cannot be reached is not an error here: the join waits for it. Without credentials,
/// TLS files or a `tls://` URL there is nothing to check.
pub async fn check_credentials(
    url: &str,
    credentials: &Option<(String, Secret)>,
    tls: TlsFiles<'_>,
) -> Result<(), ConnectError> {
    if credentials.is_none() && !tls.any() && !tls_url(url) {
        return Ok(());
    }
    let ca = tls.ca;
    let mut opts = base_options(tls);
    if let Some((user, password)) = credentials {
        opts = opts.user_and_password(user.clone(), password.expose().to_owned());
    }
    let refused = |reason: String| ConnectError {
        url: url.to_owned(),
        reason,
    };
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
            Err(refused(match (credentials, tls.client) {
                (Some((user, _)), _) => format!(
                    "the server refused NATS user {user:?} (authorization violation: check the user and its password)"
                ),
                (None, Some(client)) => format!(
                    "the server refused the client certificate {} (authorization violation: does its subject name a NATS user of the server's authorization block?)",
                    client.cert.display()
                ),
                (None, None) => "the server asks for a NATS user (authorization violation: pass --nats-user, or a client certificate with --nats-cert and --nats-key)".to_owned(),
            }))
        }
        Err(e) if tls_alert(&e) => Err(refused(match tls.client {
            Some(client) => format!(
                "the server refused the client certificate {} in the TLS handshake (is it signed by a CA the server trusts, for client authentication?) ({e})",
                client.cert.display()
            ),
            None => format!(
                "the server ended the TLS handshake: it probably asks for a client certificate (pass --nats-cert FILE and --nats-key FILE) ({e})"
            ),
        })),
        Err(e) if e.kind() == async_nats::ConnectErrorKind::Tls || rustls_error(&e).is_some() => {
            let trusted = match ca {
                Some(ca) => format!("the CA bundle {}", ca.display()),
                None => {
                    "the system's CAs (pass the server's CA bundle with --nats-ca FILE)".to_owned()
                }
            };
            let what = match rustls_error(&e) {
                Some(async_nats::rustls::Error::InvalidCertificate(_)) => {
                    format!("the server's certificate is not vouched for by {trusted}")
                }
                Some(_) => format!(
                    "the TLS handshake failed (does the server speak TLS?), trusting {trusted}"
                ),
                None => format!("cannot verify the server, trusting {trusted}"),
            };
            Err(refused(format!("TLS verification failed: {what} ({e})")))
        }
        Err(_) => Ok(()),
    }
}

/// Whether the server ended the TLS handshake with an alert (with mutual TLS: it asks for a
/// client certificate, or refused the one it got).
fn tls_alert(e: &async_nats::ConnectError) -> bool {
    matches!(
        rustls_error(e),
        Some(async_nats::rustls::Error::AlertReceived(_))
    )
}

/// The rustls error a connection failed with in the TLS handshake (the server's certificate
/// refused, or the handshake itself), if it did.
fn rustls_error(e: &async_nats::ConnectError) -> Option<&async_nats::rustls::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        let inner = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => Some(err),
        };
        if let Some(found) = inner.and_then(|i| i.downcast_ref::<async_nats::rustls::Error>()) {
            return Some(found);
        }
        source = err.source();
    }
    None
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
    use super::{TlsFiles, check_ca, check_credentials, is_loopback_url, read_ca_bundle};
    use crate::testing::{NatsServer, NatsUser, TestCa};
    use ax_core::Secret;

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

    #[test]
    fn a_ca_bundle_that_is_not_readable_pem_certificates_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing-ca.pem");
        let err = read_ca_bundle(&missing).unwrap_err().to_string();
        assert!(
            err.starts_with(&missing.display().to_string()) && err.contains("cannot read it"),
            "{err}"
        );
        for (name, text) in [
            ("empty.pem", ""),
            ("text.pem", "not a certificate\n"),
            (
                "key.pem",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            ),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let err = read_ca_bundle(&path).unwrap_err().to_string();
            assert!(
                err.starts_with(&path.display().to_string()) && err.contains("not a PEM CA bundle"),
                "{name}: {err}"
            );
        }
        let path = dir.path().join("broken.pem");
        std::fs::write(
            &path,
            "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = read_ca_bundle(&path).unwrap_err().to_string();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        let path = dir.path().join("garbage-der.pem");
        std::fs::write(
            &path,
            "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = read_ca_bundle(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&path.display().to_string()) && err.contains("cannot be used"),
            "{err}"
        );
        // Refused by check_ca too, before anything connects.
        assert!(check_ca(&path).is_err());

        let ca = TestCa::new();
        assert_eq!(read_ca_bundle(&ca.ca_pem()).unwrap(), 1);
        let bundle = dir.path().join("bundle.pem");
        let other = TestCa::new();
        let both = [ca.ca_pem(), other.ca_pem()].map(|p| std::fs::read_to_string(p).unwrap());
        std::fs::write(&bundle, both.concat()).unwrap();
        assert_eq!(read_ca_bundle(&bundle).unwrap(), 2);
    }

    /// The start-up check against a real TLS nats-server: with the server's CA it passes; with
    /// another CA, or none (the system's CAs), it fails saying TLS verification failed.
    #[tokio::test]
    async fn the_start_up_check_refuses_a_tls_server_its_ca_does_not_vouch_for() {
        let ca = TestCa::new();
        let nats = NatsServer::start_tls_with_users(
            &[NatsUser {
                user: "laptop".into(),
                password: "pw-laptop-tls".into(),
                permissions: super::backend_permissions(
                    &crate::MachineName::new("laptop").unwrap(),
                ),
            }],
            &ca,
        );
        let url = nats.url();
        assert!(url.starts_with("tls://127.0.0.1:"), "{url}");
        let creds = Some(("laptop".to_owned(), Secret::new("pw-laptop-tls".to_owned())));

        let err = check_credentials(&url, &creds, TlsFiles::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("TLS verification failed") && err.contains("--nats-ca"),
            "{err}"
        );
        let other = TestCa::new();
        let err = check_credentials(&url, &creds, TlsFiles::with_ca(Some(&other.ca_pem())))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("TLS verification failed")
                && err.contains(&other.ca_pem().display().to_string()),
            "{err}"
        );

        let right = ca.ca_pem();
        check_credentials(&url, &creds, TlsFiles::with_ca(Some(&right)))
            .await
            .unwrap();
        let wrong = Some(("laptop".to_owned(), Secret::new("wrong".to_owned())));
        let err = check_credentials(&url, &wrong, TlsFiles::with_ca(Some(&right)))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refused NATS user \"laptop\""), "{err}");
        // And the background connection gets through.
        let client = super::connect(
            &url,
            &creds,
            TlsFiles::with_ca(Some(&right)),
            "_INBOX_laptop",
        )
        .await
        .unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(20), async {
            while client.connection_state() != async_nats::connection::State::Connected {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("connected over TLS");

        // A CA given for a server that does not speak TLS: refused, never joined in clear.
        let plain = NatsServer::start();
        let err = check_credentials(&plain.url(), &None, TlsFiles::with_ca(Some(&right)))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("TLS verification failed") && err.contains("does the server speak TLS"),
            "{err}"
        );
    }
}
