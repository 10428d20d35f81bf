//! `ax-code [DIR]` and `ax-code attach URL`: the terminal UI.
//!
//! `ax-code [DIR]` serves the project of DIR (its git work tree root, else DIR itself). When a
//! backend for that project already runs (`ax-code serve` there, found in the data
//! directory's `servers/` registry after it proved it holds the recorded credential), the TUI
//! attaches to it: one backend per project. Otherwise it starts an embedded backend on
//! `127.0.0.1:0` with a fresh random credential (registered, so `ax-code session list|create`
//! run there find it). `ax-code attach URL` takes the credential from
//! `AX_CODE_SERVER_PASSWORD` or the local credential file, and re-reads that file when a
//! restarted backend no longer proves the old one; it never appears on a command line.
//! No logs are written while the TUI owns the terminal.

use std::time::Duration;

use anyhow::{Context, bail};
use ax_client::{Client, ClientError};
use ax_server::ServerConfig;
use ax_tuimcp::EndpointOptions;
use clap::Args;

use crate::TuiArgs;

/// How long a TUI attached to a running backend waits for it to answer again.
const DEFAULT_GIVE_UP: Duration = Duration::from_secs(300);

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Backend URL, e.g. http://localhost:4096
    pub url: String,
    /// Share this TUI with an external agent over MCP (opt-in, revocable).
    #[arg(long)]
    pub tui_mcp: bool,
    /// Give up (exit with a message) after the backend has not answered for this many
    /// seconds; 0 waits forever.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub give_up_after: u64,
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn check_sharing_supported(tui_mcp: bool) -> anyhow::Result<()> {
    if tui_mcp && !cfg!(unix) {
        bail!("--tui-mcp is supported on Linux and macOS only");
    }
    Ok(())
}

fn require_terminal() -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("the TUI needs a terminal; for a headless backend run `ax-code serve`");
    }
    Ok(())
}

/// A backend URL as typed, checked: `http://HOST:PORT`. Says what is wrong otherwise (a
/// missing scheme gets the URL it probably meant).
pub fn check_backend_url(raw: &str) -> anyhow::Result<String> {
    let raw = raw.trim();
    if !raw.contains("://") {
        let looks_like_host = raw.contains(':') || raw.contains('.') || raw == "localhost";
        if looks_like_host && !raw.contains(char::is_whitespace) {
            bail!("{raw:?} has no scheme: did you mean http://{raw} ?");
        }
        bail!(
            "{raw:?} is not a backend URL: expected http://HOST:PORT, e.g. http://localhost:4096"
        );
    }
    match Client::new(raw, "") {
        Ok(client) => Ok(client.url().to_owned()),
        Err(ClientError::BadUrl(detail)) => {
            bail!("not a backend URL: {detail} (expected http://HOST:PORT)")
        }
        Err(e) => Err(e.into()),
    }
}

/// Fails with a plain "nothing answers" when no server listens at `url` (before any credential
/// lookup, so that is not blamed). No credential is sent: the check asks `/health` only.
pub async fn check_reachable(url: &str) -> anyhow::Result<()> {
    let probe = Client::new(url, "")?;
    match probe.verify().await {
        Err(ClientError::Transport(cause)) => {
            bail!("nothing answers at {url} ({cause}); is `ax-code serve` running there?")
        }
        // An answer of any kind (a proof for another credential included) means someone
        // listens; whether it is our backend is checked with the real credential later.
        _ => Ok(()),
    }
}

/// The credential re-reader for a backend found through local records: the same lookup as at
/// start, so a restarted `serve` with a newly generated credential is followed.
fn refresher(url: String) -> ax_tui::CredentialSource {
    Box::new(move || ax_client::credential_for_url(ax_client::Kind::Full, &url))
}

pub fn run_embedded(args: TuiArgs) -> anyhow::Result<()> {
    check_sharing_supported(args.tui_mcp)?;
    require_terminal()?;
    let (project, data_dir) = super::serve::project_and_data_dir(args.dir)?;
    runtime()?.block_on(async move {
        // A backend already serves this project: attach to it instead of opening the same
        // database a second time (`discover` made it prove the recorded credential).
        if let Some(found) = ax_client::discover(ax_client::Kind::Full, &project, &data_dir).await {
            let url = found.url;
            let client = Client::new(url.as_str(), found.credential)?;
            return ax_tui::run(ax_tui::Options {
                client,
                share: args.tui_mcp,
                endpoint: EndpointOptions::default(),
                on_exit: None,
                refresh_credential: Some(refresher(url)),
                // The other backend may stop for good (e.g. its TUI quit).
                give_up_after: Some(DEFAULT_GIVE_UP),
            })
            .await;
        }
        // Port 0 and no token: a free loopback port and a fresh random credential.
        let mut config = ServerConfig::new(project.clone(), data_dir);
        config.agents = ax_acp::AgentsConfig::load_default().map_err(|e| anyhow::anyhow!("{e}"))?;
        let server = ax_server::start(config)
            .await
            .with_context(|| format!("cannot start the backend for {}", project.display()))?;
        let client = Client::new(server.url(), server.token())?;
        ax_tui::run(ax_tui::Options {
            client,
            share: args.tui_mcp,
            endpoint: EndpointOptions::default(),
            // The backend stops while the exit overlay shows.
            on_exit: Some(Box::pin(server.shutdown())),
            refresh_credential: None,
            give_up_after: None,
        })
        .await
    })
}

pub fn run_attach(args: AttachArgs) -> anyhow::Result<()> {
    check_sharing_supported(args.tui_mcp)?;
    // What is wrong is said in order: the URL, then nothing listening, then no credential.
    let url = check_backend_url(&args.url)?;
    let runtime = runtime()?;
    runtime.block_on(check_reachable(&url))?;
    let token = ax_client::credential_for_url(ax_client::Kind::Full, &url)
        .with_context(|| super::session::no_credential(&url))?;
    require_terminal()?;
    let client = Client::new(url.as_str(), token)?;
    // A server that answers without proving it holds the credential (another program on the
    // port) is refused before the TUI starts; one that is merely down is waited for inside.
    if let Err(e) = runtime.block_on(client.verify())
        && e.is_not_proven()
    {
        return Err(e.into());
    }
    runtime.block_on(ax_tui::run(ax_tui::Options {
        client,
        share: args.tui_mcp,
        endpoint: EndpointOptions::default(),
        on_exit: None,
        refresh_credential: Some(refresher(url)),
        give_up_after: (args.give_up_after > 0).then(|| Duration::from_secs(args.give_up_after)),
    }))
}
