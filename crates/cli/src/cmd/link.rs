//! `ax-code link [--url URL]`: prints a fresh one-time sign-in link for the Control UI.
//! `ax-code link --rotate`: replaces the credential `serve` keeps for this project (used from
//! its next start).
//!
//! The link `http://<label>.localhost:PORT/#code=CODE` (a fresh origin for each link, see
//! `ax_server::sign_in_link`; `URL/#code=CODE` for a backend not on this machine), printed
//! alone on stdout with its note on stderr, carries a code the page exchanges once, within 60 s, for the
//! credential; the credential itself never appears in a URL or the browser's history. Without
//! `--url` it asks the registered backend of the current directory's project; with `--url`,
//! that backend, with the credential from `$AX_CODE_SERVER_PASSWORD` or the local credential
//! files. The backend proves it holds the credential before the request carries it.

use anyhow::{Context, anyhow};
use ax_client::Client;
use clap::Args;

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// Backend URL (default: the registered backend of this project).
    #[arg(long)]
    pub url: Option<String>,
    /// Instead of a link: replace the credential `ax-code serve` keeps for this project with a
    /// new one. The running backend keeps the old credential until it stops; after its
    /// restart every Control UI tab and client holding the old one must sign in again.
    #[arg(long, conflicts_with = "url")]
    pub rotate: bool,
}

pub fn run(args: LinkArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(link(args))
}

/// `--rotate`: a new kept credential for the current directory's project.
fn rotate() -> anyhow::Result<()> {
    let (project, data) = super::serve::project_and_data_dir(None)?;
    let path = ax_server::kept::path(&data, &project);
    ax_server::kept::rotate(&data, &project)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    println!(
        "New credential for {} (in {}). A running `ax-code serve` keeps the old one until it \
         stops: restart it, then sign in again with `ax-code link`.",
        project.display(),
        path.display()
    );
    Ok(())
}

async fn link(args: LinkArgs) -> anyhow::Result<()> {
    if args.rotate {
        return rotate();
    }
    let client = match args.url {
        Some(url) => {
            let token = ax_client::credential_for_url(ax_client::Kind::Full, &url)
                .ok_or_else(|| anyhow!("{}", super::session::no_credential(&url)))?;
            Client::new(url, token)?
        }
        None => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            let data = ax_server::default_data_dir()
                .context("no data directory: set AX_CODE_DATA_DIR or HOME")?;
            let found = ax_client::discover(ax_client::Kind::Full, &cwd, &data)
                .await
                .ok_or_else(|| {
                    anyhow!(
                        "no running backend for this project: start one with `ax-code serve` \
                         here, or pass --url"
                    )
                })?;
            Client::new(found.url, found.credential)?
        }
    };
    let code = client
        .sign_in_code()
        .await
        .context("cannot get a sign-in code")?;
    let link = ax_server::sign_in_link(client.url(), code.code.expose())
        .context("cannot make the sign-in link")?;
    // The link alone on stdout, so the whole line pastes (and pipes) as it is; the note on
    // stderr.
    println!("{link}");
    eprintln!(
        "one-time sign-in link on an address of its own, valid {} s",
        code.expires_in_ms / 1000
    );
    Ok(())
}
