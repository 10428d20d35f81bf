//! `ax-code session list|create|rename|delete`: how a person or an agent learns and manages
//! session IDs.
//!
//! The project is the nearest enclosing git work tree root of the current directory, else the
//! directory itself (see `ax_server::project_root`). Without `--url` the commands use the
//! registered backend of that project (the data directory's `servers/` records, checked by
//! asking the backend); `list` with no backend running reads the local store read-only. With
//! `--url` they ask that backend, with the credential recorded for exactly that URL (or
//! `$AX_CODE_SERVER_PASSWORD` for a backend on another machine).

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use ax_client::Client;
use ax_protocol::{Session, SessionId, time::format_utc_minutes};
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List the project's sessions, most recently active first.
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
        /// Title of the session (default: taken from its first prompt).
        #[arg(long)]
        title: Option<String>,
        /// The session's agent (see `ax-code agents`); fixed for the session's life. The
        /// config file's `default_agent`, else `shell`, when absent.
        #[arg(long)]
        agent: Option<String>,
        /// Backend URL (default: the registered backend of this project).
        #[arg(long)]
        url: Option<String>,
    },
    /// Give a session a new title.
    Rename {
        /// The session's ID (`ax-code session list` shows them).
        id: String,
        /// The new title.
        title: String,
        /// Backend URL (default: the registered backend of this project).
        #[arg(long)]
        url: Option<String>,
    },
    /// Delete a session and its transcript (a running command is stopped first).
    Delete {
        /// The session's ID (`ax-code session list` shows them).
        id: String,
        /// Backend URL (default: the registered backend of this project).
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
            SessionCommand::Rename { id, title, url } => {
                let id = parse_id(&id)?;
                let session = client(url).await?.rename_session(&id, &title).await?;
                println!("{}  {}", session.id, display_title(&session));
                Ok(())
            }
            SessionCommand::Delete { id, url } => {
                let id = parse_id(&id)?;
                let session = client(url).await?.delete_session(&id).await?;
                println!("deleted {}  {}", session.id, display_title(&session));
                Ok(())
            }
        }
    })
}

fn parse_id(raw: &str) -> anyhow::Result<SessionId> {
    raw.parse()
        .map_err(|e: ax_protocol::SessionIdError| anyhow!("{raw:?} is not a session ID: {e}"))
}

fn data_dir() -> anyhow::Result<PathBuf> {
    ax_server::default_data_dir().context("no data directory: set AX_CODE_DATA_DIR or HOME")
}

/// The project of the current directory (its git work tree root, else itself).
fn project() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    ax_server::project_root(&cwd).with_context(|| format!("project of {}", cwd.display()))
}

/// A client for `--url`: the URL checked, then the credential looked up.
async fn client_for_url(url: &str) -> anyhow::Result<Client> {
    let url = super::tui::check_backend_url(url)?;
    super::tui::check_reachable(&url).await?;
    let token = ax_client::credential_for_url(ax_client::Kind::Full, &url)
        .ok_or_else(|| anyhow!("{}", no_credential(&url)))?;
    Ok(Client::new(url, token)?)
}

/// Why no credential was found for `url`, and what to do.
pub fn no_credential(url: &str) -> String {
    format!(
        "no credential for {url}: no backend registered exactly this URL in the data directory \
         (use the URL `ax-code serve` printed, and run this as the same user); \
         AX_CODE_SERVER_PASSWORD is sent only to a registered backend or one on another machine"
    )
}

/// The registered backend of the project, if one answers.
async fn registered(project: &std::path::Path) -> anyhow::Result<Option<Client>> {
    Ok(
        match ax_client::discover(ax_client::Kind::Full, project, &data_dir()?).await {
            Some(found) => Some(Client::new(found.url, found.credential)?),
            None => None,
        },
    )
}

/// `--url`'s backend, else the project's running one.
async fn client(url: Option<String>) -> anyhow::Result<Client> {
    match url {
        Some(url) => client_for_url(&url).await,
        None => {
            let project = project()?;
            registered(&project).await?.ok_or_else(|| {
                anyhow!(
                    "no running backend for the project {}: start one with `ax-code serve` \
                     there, or pass --url",
                    project.display()
                )
            })
        }
    }
}

async fn list(url: Option<String>, json: bool) -> anyhow::Result<()> {
    let (sessions, source) = match url {
        Some(url) => {
            let client = client_for_url(&url).await?;
            (client.list_sessions().await?, client.url().to_owned())
        }
        None => {
            let project = project()?;
            let shown = project.display().to_string();
            match registered(&project).await? {
                Some(client) => (client.list_sessions().await?, shown),
                None => {
                    let data = data_dir()?;
                    let sessions = tokio::task::spawn_blocking(move || {
                        ax_server::list_sessions_offline(&data, &project)
                    })
                    .await?
                    .context("cannot read the session store")?;
                    (sessions, shown)
                }
            }
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
    } else if sessions.is_empty() {
        eprintln!("no sessions yet in {source}: create one with `ax-code session create`");
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
    let session = client(url)
        .await?
        .create_session_with(title.as_deref(), agent.as_deref())
        .await?;
    println!("{}", session.id);
    Ok(())
}

/// A title as printed: one stored before titles refused bidi controls still cannot reorder
/// the line (control and bidi characters escaped, docs/SECURITY.md).
fn display_title(s: &Session) -> std::borrow::Cow<'_, str> {
    if s.title.is_empty() {
        "(untitled)".into()
    } else {
        ax_core::text::escape_controls(&s.title)
    }
}

/// One line per session: ID, last activity, agent, title.
fn print_table(sessions: &[Session]) {
    for row in table_rows(sessions) {
        println!("{row}");
    }
}

/// The rows of `session list`: the agent named on every row (sessions of different agents
/// look alike otherwise), padded to the longest name; control characters in agent names
/// never reach the terminal.
fn table_rows(sessions: &[Session]) -> Vec<String> {
    let agents: Vec<String> = sessions
        .iter()
        .map(|s| ax_tui::markdown::sanitize(&s.agent))
        .collect();
    let w = agents.iter().map(|a| a.chars().count()).max().unwrap_or(0);
    sessions
        .iter()
        .zip(agents)
        .map(|(s, agent)| {
            format!(
                "{}  {} UTC  {agent:<w$}  {}",
                s.id,
                format_utc_minutes(s.updated),
                display_title(s)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_its_agent() {
        let session = |n: u32, agent: &str, title: &str| Session {
            id: format!("ses_0000000000{n:02}ABCDEFGHIJKLMN")
                .parse()
                .unwrap(),
            title: title.into(),
            created: 0,
            updated: 1_764_450_000_000,
            status: ax_protocol::SessionStatus::Idle,
            agent: agent.into(),
            agent_state: None,
            standing: Vec::new(),
        };
        let rows = table_rows(&[
            session(1, "claude", "fix the parser"),
            session(2, "shell", "list the files"),
        ]);
        assert_eq!(
            rows,
            [
                "ses_000000000001ABCDEFGHIJKLMN  2025-11-29 21:00 UTC  claude  fix the parser",
                "ses_000000000002ABCDEFGHIJKLMN  2025-11-29 21:00 UTC  shell   list the files",
            ]
        );
    }
}
