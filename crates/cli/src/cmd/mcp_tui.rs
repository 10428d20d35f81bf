//! `ax-code mcp tui --endpoint PATH`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Debug, Args)]
pub struct McpTuiArgs {
    /// Absolute path of the `endpoint.json` the TUI shows in its TUIMCP bar.
    #[arg(long)]
    pub endpoint: PathBuf,
}

pub fn run(args: McpTuiArgs) -> anyhow::Result<()> {
    // stdout carries JSON-RPC only: logs go to stderr.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime
        .block_on(ax_tuimcp::adapter::serve_stdio(&args.endpoint))
        .context("cannot serve the shared TUI (copy the endpoint path from the TUIMCP bar of a TUI started with --tui-mcp)")
}
