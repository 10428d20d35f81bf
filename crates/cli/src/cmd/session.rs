//! `ax-code session list|create`.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List the project's sessions, newest first.
    List {
        /// Backend URL (default: the registered backend of this project, else the local store).
        #[arg(long)]
        url: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Create a session and print its ID.
    Create {
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        url: Option<String>,
    },
}

pub fn run(_command: SessionCommand) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
