//! `ax-mock-agent`: see the library documentation for the script syntax.

fn main() {
    ax_mock_agent::run()
}
