//! `ax-code mcp screen [--url URL] [--session ID]`.

use clap::Args;

#[derive(Debug, Args)]
pub struct McpScreenArgs {
    /// Backend URL (default: the registered backend of the current project).
    #[arg(long)]
    pub url: Option<String>,
    /// The agent's own session: the default target of session actions.
    #[arg(long)]
    pub session: Option<String>,
}

pub fn run(_args: McpScreenArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
