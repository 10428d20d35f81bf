//! `ax-code [DIR]` and `ax-code attach URL`: the terminal UI.

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

pub fn run_embedded(_args: TuiArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}

pub fn run_attach(_args: AttachArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
