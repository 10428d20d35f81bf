//! `ax-code serve [--hostname H] [--port 4096] [--dir DIR] [--allow-remote] [--allow-host NAME]`:
//! a headless backend with the gateway and the Control UI.
//!
//! It listens on the requested address and its loopback sibling (`127.0.0.1` and `[::1]`) on
//! the same port, and refuses to start when another program holds the sibling. The Host header
//! must always name the backend: the loopback names, the bound address, or a `--allow-host`
//! name; `--allow-remote` does not turn that off.
//!
//! The credential is `$AX_CODE_SERVER_PASSWORD`, else the project's kept credential
//! (`ax_server::kept`: random, made at the first start, the same at every restart until
//! `ax-code link --rotate`), also written with the URL to `credentials/<host>_<port>.json`
//! (0600) in the data directory while it runs, so `ax-code attach` run by the same OS user
//! finds it. stdout gets the addresses (the Control UI one with a
//! one-time sign-in code in the URL fragment, never the credential); logs go to stderr.
//!
//! `--join nats://HOST:PORT [--name NAME]` also joins a hub (docs/hub.md): the backend works
//! the same with NATS away.

use std::{
    io::Write,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::PathBuf,
};

use anyhow::{Context, bail};
use ax_protocol::local::{CredentialRecord, PASSWORD_ENV};
use clap::Args;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to bind (an IP address or `localhost`).
    #[arg(long, default_value = "127.0.0.1")]
    pub hostname: String,
    /// Port to bind (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 4096)]
    pub port: u16,
    /// Project directory (default: the current directory); the project is its nearest
    /// enclosing git work tree root, else the directory itself.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Allow a non-loopback --hostname. Anyone who can reach the port then only needs the
    /// credential.
    #[arg(long)]
    pub allow_remote: bool,
    /// Also accept this name in the Host header (repeatable), e.g. the name a TLS-terminating
    /// proxy in front of the backend forwards.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Also join the hub's NATS server, e.g. nats://127.0.0.1:4222 (docs/hub.md): publish this
    /// backend's sessions and events there and answer the hub's requests.
    #[arg(long, value_name = "URL")]
    pub join: Option<String>,
    /// This machine's name on the hub (default: the host name): a-z, 0-9, '-', '_'.
    #[arg(long, value_name = "NAME", requires = "join")]
    pub name: Option<String>,
    /// Join a NATS server beyond this machine's loopback over plain TCP or without a NATS
    /// user: whoever can reach or watch that network can then prompt this backend's agents
    /// and answer their approvals (docs/SECURITY.md, "Several machines"). Not needed for a
    /// tls:// URL with --nats-user or --nats-cert.
    #[arg(long, requires = "join")]
    pub trust_nats_network: bool,
    /// Also send the hub each `ui.command` this backend's agents send to its Control UIs and
    /// its gateway accepted (docs/hub.md §3), so a Control UI on the hub sees them too.
    #[arg(long, requires = "join")]
    pub share_ui_commands: bool,
    /// A PEM bundle of the CA(s) that signed the tls:// NATS server's certificate (a private
    /// CA); only those are trusted then, not the system's.
    #[arg(long, value_name = "FILE", requires = "join")]
    pub nats_ca: Option<PathBuf>,
    #[command(flatten)]
    pub nats_auth: super::hub::NatsAuthArgs,
}

/// Printed (and logged) when the backend listens beyond loopback.
pub const REMOTE_WARNING: &str = "warning: --allow-remote serves plain HTTP: the credential \
travels in clear to anyone who can watch the network between the browser or client and this \
machine. Put a TLS-terminating reverse proxy in front of the backend and pass its name with \
--allow-host NAME.";

/// Logs to stderr (`RUST_LOG` overrides the `info` default), credentials redacted.
pub fn init_logging() {
    super::init_logging("info", std::io::IsTerminal::is_terminal(&std::io::stderr()));
}

fn parse_host(hostname: &str) -> anyhow::Result<IpAddr> {
    if hostname.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let trimmed = hostname.trim_start_matches('[').trim_end_matches(']');
    trimmed.parse().with_context(|| {
        format!("--hostname {hostname:?}: expected an IP address such as 127.0.0.1, or localhost")
    })
}

/// The project a backend started from `dir` (default: the current directory) serves, and the
/// data directory: shared by `serve` and the TUI's embedded backend, so both pick the same.
pub fn project_and_data_dir(dir: Option<PathBuf>) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = match dir {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let project = ax_server::project_root(&dir)
        .with_context(|| format!("cannot use {} as a project", dir.display()))?;
    let data_dir =
        ax_server::default_data_dir().context("no data directory: set AX_CODE_DATA_DIR or HOME")?;
    Ok((project, data_dir))
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(args))
}

/// The machine name `--name` gives, else the host name.
fn machine_name(name: Option<&str>) -> anyhow::Result<ax_hub::MachineName> {
    if let Some(name) = name {
        return ax_hub::MachineName::new(name).map_err(|e| anyhow::anyhow!("--name: {e}"));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    ax_hub::MachineName::from_hostname(host.trim())
        .map_err(|e| anyhow::anyhow!("no machine name from the host name ({e}); pass --name NAME"))
}

/// Refuses `--join` to a NATS server beyond loopback unless it is reached over TLS with a
/// NATS user (docs/hub.md §1), or the person said the network is trusted: without a user
/// whoever reaches the server could send this backend prompts and approvals, and over plain
/// TCP whoever watches the network could read the password and the events.
fn check_join_url(url: &str, trusted: bool, with_user: bool) -> anyhow::Result<()> {
    let loopback =
        ax_hub::nats::is_loopback_url(url).map_err(|e| anyhow::anyhow!("--join: {e}"))?;
    let tls = url
        .split(',')
        .all(|one| one.trim().to_ascii_lowercase().starts_with("tls://"));
    if !loopback && tls && with_user {
        return Ok(());
    }
    if !loopback && !trusted {
        bail!(
            "--join {url} is not on this machine's loopback. Without TLS and a NATS user \
             (tls:// and --nats-user, or a client certificate with --nats-cert), anyone who \
             can reach or watch that server could prompt this backend's agents and answer \
             their approvals. Reach it through a tunnel (ssh -L 4222:127.0.0.1:4222 HOST, then --join nats://127.0.0.1:4222), or add \
             --trust-nats-network if only machines you trust can reach it (docs/SECURITY.md, \
             \"Several machines\")"
        );
    }
    if !loopback {
        eprintln!("{JOIN_WARNING}");
        tracing::warn!("{JOIN_WARNING}");
    }
    Ok(())
}

/// Printed (and logged) when a backend joins a NATS server beyond loopback.
pub const JOIN_WARNING: &str = "warning: --trust-nats-network: this backend answers requests \
from anyone who can reach the NATS server, and its NATS traffic is not encrypted";

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let ip = parse_host(&args.hostname)?;
    let machine = match &args.join {
        Some(url) => {
            check_join_url(
                url,
                args.trust_nats_network,
                args.nats_auth.nats_user.is_some() || args.nats_auth.nats_cert.is_some(),
            )?;
            Some(machine_name(args.name.as_deref())?)
        }
        None => None,
    };
    // Wrong NATS credentials, an unusable --nats-ca and a TLS server it does not vouch for are
    // refused now, clearly; an unreachable server is waited for.
    let nats_credentials = args.nats_auth.credentials()?;
    let nats_client_cert = args.nats_auth.client_cert()?;
    let nats = if let Some(url) = &args.join {
        super::hub::check_nats_ca(args.nats_ca.as_deref())?;
        let nats = ax_hub::nats::NatsConfig {
            url: url.clone(),
            credentials: nats_credentials,
            ca: args.nats_ca.clone(),
            client_cert: nats_client_cert,
        };
        nats.check()
            .await
            .map_err(|e| anyhow::anyhow!("--join: {e}"))?;
        Some(nats)
    } else if args.nats_auth.nats_user.is_some() || nats_client_cert.is_some() {
        bail!("--nats-user and --nats-cert are for --join: they say how to join a NATS server");
    } else {
        None
    };
    if !ip.is_loopback() && !args.allow_remote {
        bail!(
            "--hostname {} is not a loopback address; add --allow-remote to expose the backend \
             beyond this machine (it stays protected by the credential)",
            args.hostname
        );
    }
    let (project, data_dir) = project_and_data_dir(args.dir)?;
    let password = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty());
    let generated = password.is_none();
    // Known before anything can log it.
    // Without a password, the project's kept credential (made at the first start): a restart
    // keeps signed-in Control UI tabs and attached TUIs working (docs/SECURITY.md).
    let token = match password {
        Some(password) => ax_server::Secret::new(password),
        None => ax_server::kept::load_or_create(&data_dir, &project)
            .context("cannot read or keep the project's credential")?,
    };
    super::redact_secret(&token);
    super::redact_secret(&ax_server::screen_credential(token.expose()));

    let mut config = ax_server::ServerConfig::new(project, data_dir.clone());
    config.bind = SocketAddr::new(ip, args.port);
    config.token = Some(token);
    config.allow_remote = args.allow_remote;
    // The agents sessions can use; a bad config file is a clear error naming file and line.
    config.agents = ax_acp::AgentsConfig::load_default().map_err(|e| anyhow::anyhow!("{e}"))?;
    config.allowed_hosts = args.allow_host;
    if args.allow_remote {
        eprintln!("{REMOTE_WARNING}");
    }
    let server = match ax_server::start(config).await {
        Ok(server) => server,
        Err(ax_server::StartError::Bind(ax_server::BindError::Bind { addr, source }))
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            bail!(
                "cannot start the backend: port {} on {} is already in use; pick another with \
                 --port N, or --port 0 for a free one",
                addr.port(),
                addr.ip()
            )
        }
        Err(e) => return Err(anyhow::Error::new(e).context("cannot start the backend")),
    };
    let url = server.url().to_owned();
    let port = server.local_addr().port();
    let host = server.local_addr().ip().to_string();

    let credential_file = if generated {
        let record = CredentialRecord {
            url: url.clone(),
            token: server.token().clone(),
        };
        Some(
            ax_server::registry::write_credential(&data_dir, &host, port, &record)
                .context("cannot write the credential file")?,
        )
    } else {
        None
    };

    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ax-code backend for {} listening on {url}",
        server.project_dir().display()
    )?;
    // A one-time code, not the credential: a link stays in the browser's history. The link
    // alone after the label, so copying the line or the link both work; the note below.
    writeln!(out, "Control UI: {}", server.sign_in_link()?)?;
    writeln!(
        out,
        "  (one-time sign-in link on an address of its own, valid 60 s; \
         `ax-code link --url {url}` prints a fresh one)"
    )?;
    if !generated {
        writeln!(out, "Credential: ${PASSWORD_ENV}")?;
    }
    out.flush()?;
    drop(out);
    tracing::info!(%url, "backend ready");

    // The join talks to this backend through its own API on loopback (docs/hub.md §3); NATS
    // being away is not an error: it keeps reconnecting.
    let join = match (nats, machine) {
        (Some(nats), Some(name)) => {
            let nats_url = nats.url.clone();
            let mut config = ax_hub::join::JoinConfig::new(
                nats.url.clone(),
                name.clone(),
                url.clone(),
                server.token().clone(),
                server.project_dir().display().to_string(),
            );
            config.nats = nats;
            config.share_ui_commands = args.share_ui_commands;
            let join = ax_hub::join::start(config)
                .await
                .map_err(|e| anyhow::anyhow!("--join: {e}"))?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "Joined {nats_url} as machine {name}")?;
            out.flush()?;
            Some(join)
        }
        _ => None,
    };

    wait_for_signal().await;
    tracing::info!("shutting down");
    if let Some(join) = join {
        join.leave().await;
    }
    server.shutdown().await;
    if let Some(path) = credential_file {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Ctrl+C, SIGTERM or SIGHUP (its terminal closed): all end in the same clean shutdown.
pub async fn wait_for_signal() {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    async fn recv(s: &mut Option<Signal>) {
        match s.as_mut() {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hangup = signal(SignalKind::hangup()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = recv(&mut term) => {}
        () = recv(&mut hangup) => {}
    }
}
