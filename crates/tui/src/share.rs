//! The TUI's side of TUIMCP: its session validator (the router for agent navigation is
//! `App`'s, in `app/navigator.rs`).
//!
//! The controller (in `ax_tuimcp`) decides; these two only do what it asks: the validator looks
//! a session up through the TUI's own authenticated client, the router opens it.

use ax_client::Client;
use ax_protocol::SessionId;
use ax_tuimcp::{SessionValidator, ValidationOutcome};

/// The MCP client configuration that starts the adapter for this endpoint, as the README
/// shows it, with the real path (JSON-escaped).
pub fn mcp_client_config(endpoint_path: &str) -> String {
    let path = serde_json::to_string(endpoint_path).unwrap_or_else(|_| "\"\"".into());
    format!(
        "{{\n  \"mcpServers\": {{\n    \"ax-code-tui\": {{\n      \"command\": \"ax-code\",\n      \"args\": [\"mcp\", \"tui\", \"--endpoint\", {path}]\n    }}\n  }}\n}}\n"
    )
}

/// The OSC 52 sequence that asks the terminal to put `text` on the system clipboard.
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Standard base64 with padding (RFC 4648 §4), all OSC 52 needs.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Validates a session through the TUI's authenticated backend client.
#[derive(Clone, Debug)]
pub struct BackendValidator {
    client: Client,
}

impl BackendValidator {
    /// A validator asking the backend through `client`.
    pub fn new(client: Client) -> BackendValidator {
        BackendValidator { client }
    }
}

impl SessionValidator for BackendValidator {
    async fn validate(&self, session: SessionId) -> ValidationOutcome {
        match self.client.get_session(&session).await {
            Ok(s) if s.id == session => ValidationOutcome::Valid,
            Ok(_) => ValidationOutcome::NotFound,
            // Unknown, or a session of another project: "not found" for this backend.
            Err(e) if matches!(e.status(), Some(400 | 404)) => ValidationOutcome::NotFound,
            Err(_) => ValidationOutcome::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }

    #[test]
    fn the_config_is_json_with_the_real_path() {
        let path = "/tmp/ax \"q\"/ax-tui-Ab12Cd/endpoint.json";
        let config: serde_json::Value = serde_json::from_str(&mcp_client_config(path)).unwrap();
        let server = &config["mcpServers"]["ax-code-tui"];
        assert_eq!(server["command"], "ax-code");
        assert_eq!(
            server["args"],
            serde_json::json!(["mcp", "tui", "--endpoint", path])
        );
    }
}
