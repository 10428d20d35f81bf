//! One module per subcommand.

pub mod mcp_screen;
pub mod mcp_tui;
pub mod serve;
pub mod session;
pub mod tui;
