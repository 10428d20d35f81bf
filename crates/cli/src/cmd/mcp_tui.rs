//! `ax-code mcp tui --endpoint PATH`.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct McpTuiArgs {
    /// Absolute path of the `endpoint.json` the TUI shows in its TUIMCP bar.
    #[arg(long)]
    pub endpoint: PathBuf,
}

pub fn run(_args: McpTuiArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
