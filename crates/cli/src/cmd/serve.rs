//! `ax-code serve [--hostname H] [--port 4096]`.

use clap::Args;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub hostname: String,
    /// Port to bind.
    #[arg(long, default_value_t = 4096)]
    pub port: u16,
}

pub fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
