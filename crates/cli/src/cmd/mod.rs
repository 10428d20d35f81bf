//! One module per subcommand.

pub mod agents;
pub mod link;
pub mod mcp_screen;
pub mod mcp_tui;
pub mod serve;
pub mod session;
pub mod tui;

/// Logging for the stdio MCP servers: stdout carries JSON-RPC only, so logs go to stderr,
/// plain (no colour codes), warnings and errors unless `RUST_LOG` says otherwise.
pub fn log_for_stdio_mcp() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
}
