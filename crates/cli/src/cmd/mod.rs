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
        .with_env_filter(quiet_frames(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        ))
        .try_init();
}

/// Caps the WebSocket library's logs, which print whole frames (a gateway `connect` carries
/// the credential) at trace level: see `ax_gateway::LOG_DIRECTIVES`.
pub fn quiet_frames(mut filter: tracing_subscriber::EnvFilter) -> tracing_subscriber::EnvFilter {
    for directive in ax_gateway::LOG_DIRECTIVES {
        if let Ok(d) = directive.parse() {
            filter = filter.add_directive(d);
        }
    }
    filter
}
