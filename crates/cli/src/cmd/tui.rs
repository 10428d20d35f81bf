//! `ax-code [DIR]` and `ax-code attach URL`: the terminal UI.
//!
//! `ax-code [DIR]` starts an embedded backend for DIR on `127.0.0.1:0` with a fresh random
//! credential (registered in the data directory, so `ax-code session list|create` run in DIR
//! find it), then the TUI on it. `ax-code attach URL` takes the credential from
//! `AX_CODE_SERVER_PASSWORD` or the local credential file; it never appears on a command line.
//! No logs are written while the TUI owns the terminal.

use anyhow::{Context, bail};
use ax_client::Client;
use ax_server::ServerConfig;
use ax_tuimcp::EndpointOptions;
use clap::Args;

use crate::TuiArgs;

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// Backend URL, e.g. http://localhost:4096
    pub url: String,
    /// Share this TUI with an external agent over MCP (opt-in, revocable).
    #[arg(long)]
    pub tui_mcp: bool,
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

pub fn run_embedded(args: TuiArgs) -> anyhow::Result<()> {
    check_sharing_supported(args.tui_mcp)?;
    require_terminal()?;
    let project = match args.dir {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let data_dir =
        ax_server::default_data_dir().context("no data directory: set AX_CODE_DATA_DIR or HOME")?;
    runtime()?.block_on(async move {
        // Port 0 and no token: a free loopback port and a fresh random credential.
        let mut config = ServerConfig::new(project.clone(), data_dir);
        config.agents =
            ax_acp::AgentsConfig::load_default().map_err(|e| anyhow::anyhow!("{e}"))?;
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
        })
        .await
    })
}

pub fn run_attach(args: AttachArgs) -> anyhow::Result<()> {
    check_sharing_supported(args.tui_mcp)?;
    require_terminal()?;
    let token = ax_client::credential_for_url(&args.url).with_context(|| {
        format!(
            "no credential for {}: set AX_CODE_SERVER_PASSWORD, or start that backend with \
             `ax-code serve` as this user so its credential file is found",
            args.url
        )
    })?;
    let client = Client::new(args.url.as_str(), token)?;
    let runtime = runtime()?;
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
    }))
}
