//! `ax-code session list|create`: how a person or an agent learns session IDs.
//!
//! Without `--url` they use the registered backend of the current directory's project (the
//! data directory's `servers/` records, checked by asking the backend); `list` with no backend
//! running reads the local store read-only. With `--url` they ask that backend, with the
//! credential from `$AX_CODE_SERVER_PASSWORD` or the local credential files.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use ax_client::Client;
use ax_protocol::{Session, time::format_utc_minutes};
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
        /// The session's agent (see `ax-code agents`); fixed for the session's life. The
        /// config file's `default_agent`, else `shell`, when absent.
        #[arg(long)]
        agent: Option<String>,
        #[arg(long)]
        url: Option<String>,
    },
}

pub fn run(command: SessionCommand) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        match command {
            SessionCommand::List { url, json } => list(url, json).await,
            SessionCommand::Create { title, agent, url } => create(title, agent, url).await,
        }
    })
}

fn data_dir() -> anyhow::Result<PathBuf> {
    ax_server::default_data_dir().context("no data directory: set AX_CODE_DATA_DIR or HOME")
}

fn client_for_url(url: &str) -> anyhow::Result<Client> {
    let token = ax_client::credential_for_url(url).ok_or_else(|| {
        anyhow!(
            "no credential for {url}: set AX_CODE_SERVER_PASSWORD, or run this as the user \
             whose `ax-code serve` wrote it"
        )
    })?;
    Ok(Client::new(url, token)?)
}

/// The registered backend of the current directory's project, if one answers.
async fn registered() -> anyhow::Result<Option<Client>> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(match ax_client::discover(&cwd, &data_dir()?).await {
        Some((url, token)) => Some(Client::new(url, token)?),
        None => None,
    })
}

async fn list(url: Option<String>, json: bool) -> anyhow::Result<()> {
    let sessions = match url {
        Some(url) => client_for_url(&url)?.list_sessions().await?,
        None => match registered().await? {
            Some(client) => client.list_sessions().await?,
            None => {
                let cwd = std::env::current_dir()?;
                let data = data_dir()?;
                tokio::task::spawn_blocking(move || ax_server::list_sessions_offline(&data, &cwd))
                    .await?
                    .context("cannot read the session store")?
            }
        },
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
    } else {
        print_table(&sessions);
    }
    Ok(())
}

async fn create(
    title: Option<String>,
    agent: Option<String>,
    url: Option<String>,
) -> anyhow::Result<()> {
    let client = match url {
        Some(url) => client_for_url(&url)?,
        None => registered().await?.ok_or_else(|| {
            anyhow!(
                "no running backend for this project: start one with `ax-code serve` here, \
                 or pass --url"
            )
        })?,
    };
    let session = client
        .create_session_with(title.as_deref(), agent.as_deref())
        .await?;
    println!("{}", session.id);
    Ok(())
}

fn print_table(sessions: &[Session]) {
    if sessions.is_empty() {
        eprintln!("no sessions yet: create one with `ax-code session create`");
        return;
    }
    for s in sessions {
        let title = if s.title.is_empty() {
            "(untitled)"
        } else {
            &s.title
        };
        println!("{}  {} UTC  {}", s.id, format_utc_minutes(s.updated), title);
    }
}
