//! `ax-mock-agent`: see the library documentation for the script syntax.

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--mcp-server") {
        ax_mock_agent::run_mcp_server();
    }
    ax_mock_agent::run()
}
