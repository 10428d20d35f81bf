//! `ax-code mcp tui --endpoint PATH`.

use std::path::PathBuf;

use anyhow::Context;
use ax_tuimcp::adapter::ServeError;
use clap::Args;

#[derive(Debug, Args)]
pub struct McpTuiArgs {
    /// Absolute path of the `endpoint.json` the TUI shows in its TUIMCP bar.
    #[arg(long)]
    pub endpoint: PathBuf,
}

pub fn run(args: McpTuiArgs) -> anyhow::Result<()> {
    super::log_for_stdio_mcp();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match runtime.block_on(ax_tuimcp::adapter::serve_stdio(&args.endpoint)) {
        Ok(()) => Ok(()),
        // Only a bad endpoint file is the path's fault; a client that left is not.
        Err(e @ ServeError::Endpoint(_)) => Err(e).context(
            "cannot serve the shared TUI (copy the endpoint path from the TUIMCP bar of a TUI started with --tui-mcp)",
        ),
        Err(e) => Err(e.into()),
    }
}
