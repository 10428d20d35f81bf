//! `ax-code agents` lists the configured agents and whether each command is found;
//! `ax-code agents check NAME` starts one, runs `initialize`, prints what it says about
//! itself (name, version, capabilities, authentication methods) and stops it.
//!
//! Everything the agent says is printed through [`shown`]: its control and bidi characters
//! escaped, so an agent cannot write the clipboard, retitle or clear the person's terminal
//! (docs/SECURITY.md, "The agent hosted in a session").

use std::io::Write;

use anyhow::{Context, anyhow, bail};
use ax_acp::{
    AgentHandle, AgentKind, AgentsConfig, StartError, StartOptions,
    config::{Origin, find_command},
};
use ax_core::text::escape_controls as shown;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: Option<AgentsCommand>,
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// Start an agent, print its name, version, capabilities and authentication methods,
    /// then stop it.
    Check {
        /// The agent's name (see `ax-code agents`).
        name: String,
    },
}

pub fn run(args: AgentsArgs) -> anyhow::Result<()> {
    let config = AgentsConfig::load_default().map_err(|e| anyhow!("{e}"))?;
    match args.command {
        None => list(&config),
        Some(AgentsCommand::Check { name }) => check(&config, &name),
    }
}

/// How to install a preset's adapter (we never install anything ourselves).
fn install_hint(name: &str) -> Option<&'static str> {
    match name {
        "claude" => Some("npm install -g @zed-industries/claude-agent-acp"),
        "codex" => Some("npm install -g @zed-industries/codex-acp"),
        "gemini" => Some("npm install -g @google/gemini-cli"),
        _ => None,
    }
}

fn list(config: &AgentsConfig) -> anyhow::Result<()> {
    let path = std::env::var_os("PATH");
    let mut out = std::io::stdout().lock();
    for entry in config.iter() {
        let marker = if entry.name == config.default_agent() {
            "*"
        } else {
            " "
        };
        let (command, status) = match &entry.kind {
            AgentKind::Shell => ("(built in)".to_string(), "ready".to_string()),
            AgentKind::Acp(spec) => {
                let line = std::iter::once(spec.command.as_str())
                    .chain(spec.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                let status = match find_command(&spec.command, path.as_deref()) {
                    Some(p) => format!("found: {}", p.display()),
                    None => match (entry.origin, install_hint(&entry.name)) {
                        (Origin::Builtin, Some(hint)) => format!("not found (install: {hint})"),
                        _ => "not found".to_string(),
                    },
                };
                (line, status)
            }
        };
        writeln!(out, "{marker} {:<12} {:<32} {status}", entry.name, command)?;
    }
    match &config.source {
        Some(p) => writeln!(out, "config: {}", p.display())?,
        None => writeln!(out, "config: none (built-in presets only)")?,
    }
    writeln!(out, "* = default agent for new sessions")?;
    Ok(())
}

fn check(config: &AgentsConfig, name: &str) -> anyhow::Result<()> {
    let entry = config.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.iter().map(|e| e.name.as_str()).collect();
        anyhow!("no agent named {name:?} (configured: {})", known.join(", "))
    })?;
    let spec = match &entry.kind {
        AgentKind::Shell => {
            println!(
                "shell: built in; each prompt runs as a shell command in the project after \
                 you approve it"
            );
            return Ok(());
        }
        AgentKind::Acp(spec) => spec.clone(),
    };
    if find_command(&spec.command, std::env::var_os("PATH").as_deref()).is_none() {
        let hint = install_hint(name)
            .map(|h| format!("; install it with `{h}`"))
            .unwrap_or_default();
        bail!("agent {name:?}: command {:?} not found{hint}", spec.command);
    }
    let project = std::env::current_dir().context("cannot read the current directory")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let mut options = StartOptions::new(project);
        options.request_timeout = std::time::Duration::from_secs(60);
        let (agent, _events) = match AgentHandle::start(&spec, options).await {
            Ok(started) => started,
            Err(e) => {
                let tail = match &e {
                    StartError::Handshake { stderr_tail, .. }
                    | StartError::ProtocolVersion { stderr_tail, .. } => stderr_tail.clone(),
                    _ => String::new(),
                };
                if !tail.trim().is_empty() {
                    eprintln!("--- the agent's error output (end) ---");
                    for line in tail.trim_end().lines() {
                        eprintln!("{}", shown(line));
                    }
                }
                bail!("{}", shown(&e.to_string()));
            }
        };
        let info = agent.info().clone();
        agent.stop().await;
        println!("agent:        {name}");
        println!(
            "name:         {}{}",
            shown(&info.name),
            info.title
                .as_deref()
                .map(|t| format!(" ({})", shown(t)))
                .unwrap_or_default()
        );
        println!(
            "version:      {}",
            if info.version.is_empty() {
                "(not given)".into()
            } else {
                shown(&info.version)
            }
        );
        println!("protocol:     ACP {}", info.protocol_version);
        println!(
            "load session: {}",
            if info.load_session { "yes" } else { "no" }
        );
        println!(
            "resume:       {}",
            if info.resume_session { "yes" } else { "no" }
        );
        // JSON escapes C0 controls but not DEL, C1 or bidi controls.
        println!(
            "capabilities: {}",
            shown(&serde_json::to_string(&info.capabilities)?)
        );
        if info.auth_methods.is_empty() {
            println!("auth methods: none");
        } else {
            println!("auth methods:");
            for m in &info.auth_methods {
                let (name, id) = (shown(&m.name), shown(&m.id));
                match &m.description {
                    Some(d) => println!("  - {name} ({id}): {}", shown(d)),
                    None => println!("  - {name} ({id})"),
                }
            }
        }
        Ok(())
    })
}
