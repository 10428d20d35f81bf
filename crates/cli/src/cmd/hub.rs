//! `ax-code hub --nats nats://HOST:PORT [--port 4096]`: the HTTP API over every backend that
//! joined the same NATS server (docs/hub.md §4), and the Control UI, signed in to with the
//! one-time code of the printed link. Loopback only for now.
//!
//! The credential is `$AX_CODE_HUB_PASSWORD`, else a random one made at start and written
//! (0600, in a 0700 directory) to `hub/credential-<port>` in the data directory, whose path is
//! printed; never the credential itself.

use std::{
    io::Write,
    net::{Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
};

use anyhow::Context;
use clap::Args;

/// Where the hub's credential comes from, when given.
pub const HUB_PASSWORD_ENV: &str = "AX_CODE_HUB_PASSWORD";

#[derive(Debug, Args)]
pub struct HubArgs {
    /// The NATS server the backends joined, e.g. nats://127.0.0.1:4222.
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// Port of the hub's HTTP API on 127.0.0.1 (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 4096)]
    pub port: u16,
    /// A PEM bundle of the CA(s) that signed a tls:// NATS server's certificate (a private
    /// CA); only those are trusted then, not the system's.
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
    #[command(flatten)]
    pub nats_auth: NatsAuthArgs,
}

/// Checks the `--nats-ca` bundle, when given: an unreadable or non-PEM file is refused naming
/// it, before anything connects.
pub fn check_nats_ca(ca: Option<&Path>) -> anyhow::Result<()> {
    if let Some(ca) = ca {
        ax_hub::nats::check_ca(ca).map_err(|e| anyhow::anyhow!("--nats-ca {e}"))?;
    }
    Ok(())
}

/// Where a NATS password comes from, when given (never argv: a process listing shows it).
pub const NATS_PASSWORD_ENV: &str = "AX_CODE_NATS_PASSWORD";

/// The NATS user of `serve --join` and `hub` (docs/hub.md §1). The password is read from
/// `$AX_CODE_NATS_PASSWORD` or a file, never from the command line.
#[derive(Debug, Args)]
pub struct NatsAuthArgs {
    /// The NATS user to connect as; its password is $AX_CODE_NATS_PASSWORD or the first line
    /// of --nats-password-file.
    #[arg(long, value_name = "USER")]
    pub nats_user: Option<String>,
    /// A file whose first line is the NATS user's password (keep it 0600).
    #[arg(long, value_name = "FILE", requires = "nats_user")]
    pub nats_password_file: Option<PathBuf>,
    /// A client certificate (PEM) shown to a tls:// NATS server (mutual TLS); a server with
    /// verify_and_map takes the certificate's subject as the NATS user, so no password is
    /// needed.
    #[arg(long, value_name = "FILE", requires = "nats_key")]
    pub nats_cert: Option<PathBuf>,
    /// The private key (PEM) of --nats-cert (keep it 0600).
    #[arg(long, value_name = "FILE", requires = "nats_cert")]
    pub nats_key: Option<PathBuf>,
}

impl NatsAuthArgs {
    /// The client certificate and its key, checked before anything connects (an unreadable
    /// or non-PEM file is refused naming it), or none.
    pub fn client_cert(&self) -> anyhow::Result<Option<ax_hub::nats::ClientCert>> {
        let (Some(cert), Some(key)) = (&self.nats_cert, &self.nats_key) else {
            return Ok(None);
        };
        let client = ax_hub::nats::ClientCert {
            cert: cert.clone(),
            key: key.clone(),
        };
        ax_hub::nats::check_client_cert(&client).map_err(|e| {
            let flag = if e.path == client.key {
                "--nats-key"
            } else {
                "--nats-cert"
            };
            anyhow::anyhow!("{flag} {e}")
        })?;
        Ok(Some(client))
    }

    /// The user and its password, or none; an error names where the password was looked for.
    pub fn credentials(&self) -> anyhow::Result<Option<(String, ax_core::Secret)>> {
        let Some(user) = &self.nats_user else {
            return Ok(None);
        };
        let password = match &self.nats_password_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                text.lines().next().unwrap_or_default().to_owned()
            }
            None => std::env::var(NATS_PASSWORD_ENV).unwrap_or_default(),
        };
        anyhow::ensure!(
            !password.is_empty(),
            "--nats-user {user}: no password (set ${NATS_PASSWORD_ENV} or --nats-password-file)"
        );
        let password = ax_core::Secret::new(password);
        super::redact_secret(&password);
        Ok(Some((user.clone(), password)))
    }
}

pub fn run(args: HubArgs) -> anyhow::Result<()> {
    super::serve::init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(hub(args))
}

async fn hub(args: HubArgs) -> anyhow::Result<()> {
    let given = std::env::var(HUB_PASSWORD_ENV)
        .ok()
        .filter(|p| !p.is_empty());
    let generated = given.is_none();
    let token = match given {
        Some(p) => ax_core::Secret::new(p),
        None => ax_core::Secret::new(
            ax_core::random::random_alnum(43).context("no randomness for the hub credential")?,
        ),
    };
    super::redact_secret(&token);
    let bind = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), args.port);
    let mut config = ax_hub::hub::HubConfig::new(args.nats.clone(), bind, token.clone());
    config.nats.credentials = args.nats_auth.credentials()?;
    check_nats_ca(args.nats_ca.as_deref())?;
    config.nats.ca = args.nats_ca.clone();
    config.nats.client_cert = args.nats_auth.client_cert()?;
    config
        .nats
        .check()
        .await
        .map_err(|e| anyhow::anyhow!("--nats: {e}"))?;
    let hub = ax_hub::hub::start(config)
        .await
        .map_err(|e| anyhow::anyhow!("cannot start the hub: {e}"))?;
    let credential_file = if generated {
        let data_dir = ax_server::default_data_dir()
            .context("no data directory: set AX_CODE_DATA_DIR or HOME")?;
        Some(write_credential(
            &data_dir,
            hub.local_addr().port(),
            &token,
        )?)
    } else {
        None
    };

    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ax-code hub listening on {} (NATS {})",
        hub.url(),
        args.nats
    )?;
    // A one-time code in the link, never the credential (docs/hub.md §4).
    let code = hub
        .sign_in_code()
        .context("no randomness for the sign-in code")?;
    let link = ax_server::sign_in_link(&hub.url(), code.expose())
        .context("no randomness for the sign-in link")?;
    writeln!(out, "Control UI: {link}")?;
    match &credential_file {
        Some(path) => writeln!(out, "Credential: in {}", path.display())?,
        None => writeln!(out, "Credential: ${HUB_PASSWORD_ENV}")?,
    }
    out.flush()?;
    drop(out);
    tracing::info!(url = %hub.url(), "hub ready");

    super::serve::wait_for_signal().await;
    tracing::info!("hub shutting down");
    hub.shutdown().await;
    if let Some(path) = credential_file {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// `hub/credential-<port>` in the data directory: 0600 in 0700; created new (`O_EXCL`), so
/// never through a symlink planted there.
fn write_credential(
    data_dir: &Path,
    port: u16,
    token: &ax_core::Secret,
) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let dir = data_dir.join("hub");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.display()))?;
    let path = dir.join(format!("credential-{port}"));
    let _ = std::fs::remove_file(&path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(token.expose().as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
