//! `ax-code`: the one binary. Parses what the user typed and hands it to the crate that owns
//! the concern; each subcommand lives in its own module under `cmd/`.

use std::{path::PathBuf, process::ExitCode};

use clap::{Args, Parser, Subcommand};

mod cmd;

/// A local, multi-session agent workspace whose live interfaces agents can drive safely.
#[derive(Debug, Parser)]
#[command(name = "ax-code", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    tui: TuiArgs,
}

/// `ax-code [DIR] [--tui-mcp]`: the TUI with an embedded backend.
#[derive(Debug, Args)]
pub struct TuiArgs {
    /// Project directory (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Share this TUI with an external agent over MCP (opt-in, revocable).
    #[arg(long)]
    pub tui_mcp: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a headless backend, gateway and Control UI.
    Serve(cmd::serve::ServeArgs),
    /// Run the TUI against a running backend.
    Attach(cmd::tui::AttachArgs),
    /// Stdio MCP servers for agents.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// The project's sessions.
    #[command(subcommand)]
    Session(cmd::session::SessionCommand),
    /// Print a fresh one-time sign-in link for the Control UI.
    Link(cmd::link::LinkArgs),
    /// The configured agents; `agents check NAME` starts one and prints what it offers.
    Agents(cmd::agents::AgentsArgs),
    /// The HTTP API over every backend that joined a NATS server (`serve --join`).
    Hub(cmd::hub::HubArgs),
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Share one running TUI (tools get_view_context, select_session).
    Tui(cmd::mcp_tui::McpTuiArgs),
    /// The `screen` tool: arrange the browser Control UI through the gateway.
    Screen(cmd::mcp_screen::McpScreenArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => cmd::tui::run_embedded(cli.tui),
        Some(Command::Serve(args)) => cmd::serve::run(args),
        Some(Command::Attach(args)) => cmd::tui::run_attach(args),
        Some(Command::Mcp(McpCommand::Tui(args))) => cmd::mcp_tui::run(args),
        Some(Command::Mcp(McpCommand::Screen(args))) => cmd::mcp_screen::run(args),
        Some(Command::Session(command)) => cmd::session::run(command),
        Some(Command::Link(args)) => cmd::link::run(args),
        Some(Command::Agents(args)) => cmd::agents::run(args),
        Some(Command::Hub(args)) => cmd::hub::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line per cause, printed once, to stderr (stdout may belong to JSON-RPC).
            eprintln!("ax-code: {err:#}");
            ExitCode::FAILURE
        }
    }
}
