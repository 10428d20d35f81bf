//! One module per subcommand, and the one logging setup they share.

pub mod agents;
pub mod hub;
pub mod link;
pub mod mcp_screen;
pub mod mcp_tui;
pub mod serve;
pub mod session;
pub mod tui;

use std::{
    io::{self, Write},
    sync::RwLock,
};

/// Logging for the stdio MCP servers: stdout carries JSON-RPC only, so logs go to stderr,
/// plain (no colour codes), warnings and errors unless `RUST_LOG` says otherwise.
pub fn log_for_stdio_mcp() {
    init_logging("warn", false);
}

/// Our crates' log targets (the binary's and the libraries').
const OUR_TARGETS: &[&str] = &[
    "ax_code",
    "ax_cli",
    "ax_server",
    "ax_gateway",
    "ax_hub",
    "ax_client",
    "ax_acp",
    "ax_agents",
    "ax_tui",
    "ax_tuimcp",
    "ax_protocol",
    "ax_core",
];

/// The filter without `RUST_LOG`: our crates at `level`, every dependency at warn (the
/// WebSocket library, hyper and the others log their own details at debug).
fn default_directives(level: &str) -> String {
    let ours: Vec<String> = OUR_TARGETS.iter().map(|t| format!("{t}={level}")).collect();
    format!("warn,{}", ours.join(","))
}

/// Whether a `RUST_LOG` value may turn on trace level somewhere: a `trace` (or `5`) level, or
/// a directive naming a target without a level (which means every level).
fn may_trace(spec: &str) -> bool {
    spec.split(',').map(str::trim).any(|d| {
        let d = d.to_ascii_lowercase();
        let level = d.rsplit_once('=').map_or(d.as_str(), |(_, l)| l);
        d.contains("trace")
            || level == "5"
            || (!d.is_empty()
                && !d.contains('=')
                && ![
                    "off", "error", "warn", "info", "debug", "0", "1", "2", "3", "4",
                ]
                .contains(&d.as_str()))
    })
}

/// Logs to stderr through [`Redacting`] at every level, with every field escaped by
/// [`EscapingFields`]: [`default_directives`] of `default` unless `RUST_LOG` says otherwise.
/// Crates that log whole WebSocket messages at trace level (a connect frame carries a
/// credential) are capped at debug when `RUST_LOG` may ask for trace (the cap is never
/// applied otherwise: it would raise them to debug).
pub fn init_logging(default: &str, ansi: bool) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => {
            match tracing_subscriber::EnvFilter::try_new(&spec) {
                Ok(filter) if may_trace(&spec) => quiet_frames(filter),
                Ok(filter) => filter,
                Err(_) => tracing_subscriber::EnvFilter::new(default_directives(default)),
            }
        }
        _ => tracing_subscriber::EnvFilter::new(default_directives(default)),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .fmt_fields(EscapingFields)
        .with_writer(|| Redacting(io::stderr()))
        .with_ansi(ansi)
        .try_init();
}

/// The one place agent-supplied text is made safe for a log (docs/SECURITY.md, "The agent
/// hosted in a session"): every field of every event and span (the message too) is formatted
/// as the default formatter does, then its control and bidi characters are escaped
/// (`ax_core::text::escape_controls`). An agent's update kind, method name or error text can
/// then neither drive the terminal that shows the log nor forge a log line.
pub struct EscapingFields;

impl<'w> tracing_subscriber::fmt::FormatFields<'w> for EscapingFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        mut writer: tracing_subscriber::fmt::format::Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        let mut plain = String::new();
        tracing_subscriber::fmt::format::DefaultFields::new().format_fields(
            tracing_subscriber::fmt::format::Writer::new(&mut plain),
            fields,
        )?;
        writer.write_str(&ax_core::text::escape_controls(&plain))
    }
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

/// Secrets this process knows (and their hex forms), replaced in every log line.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Never log `secret`: every later log line has it (or its lowercase hex) replaced.
pub fn redact_secret(secret: &ax_client::Secret) {
    let secret = secret.expose();
    if secret.len() < 8 {
        return;
    }
    let hex = ax_protocol::proof::to_hex(secret.as_bytes());
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    for s in [secret.to_owned(), hex] {
        if !secrets.contains(&s) {
            secrets.push(s);
        }
    }
}

const REDACTED: &str = "<redacted>";

/// `line` with the registered secrets replaced, and with whatever follows a credential marker
/// (`Bearer `, `token=`, `"token":"`, `password=`) up to the next delimiter.
pub fn redact(line: &str) -> String {
    let mut out = line.to_owned();
    for secret in SECRETS.read().unwrap_or_else(|e| e.into_inner()).iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    for marker in [
        "bearer ",
        "token=",
        "\"token\":\"",
        "\"token\": \"",
        "password=",
    ] {
        out = redact_after(&out, marker);
    }
    out
}

/// Replaces the value after each (ASCII case-insensitive) `marker`, up to whitespace, a quote,
/// `&`, `,`, `;` or the end.
fn redact_after(line: &str, marker: &str) -> String {
    let lower = line.to_ascii_lowercase();
    let mut out = String::with_capacity(line.len());
    let mut rest = 0;
    while let Some(found) = lower[rest..].find(marker) {
        let start = rest + found + marker.len();
        out.push_str(&line[rest..start]);
        let end = line[start..]
            .find(|c: char| c.is_whitespace() || "\"'&,;\\".contains(c))
            .map_or(line.len(), |n| start + n);
        if end > start && &line[start..end] != REDACTED {
            out.push_str(REDACTED);
        } else {
            out.push_str(&line[start..end]);
        }
        rest = end;
    }
    out.push_str(&line[rest..]);
    out
}

/// A writer that redacts what it writes (the formatter writes one whole event per call).
pub struct Redacting<W: Write>(pub W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_registered_secrets_are_redacted() {
        redact_secret(&"s3cret-registered-value".into());
        let line = "auth Authorization: Bearer abc.def-123 next \
                    url=http://h/#token=zzzz&x=1 frame {\"token\":\"qqqq\",\"a\":1} \
                    also s3cret-registered-value and 73336372";
        let out = redact(line);
        for leaked in ["abc.def-123", "zzzz", "qqqq", "s3cret-registered-value"] {
            assert!(!out.contains(leaked), "{leaked} in {out}");
        }
        assert!(out.contains("Bearer <redacted> next"), "{out}");
        assert!(out.contains("&x=1"), "{out}");
        assert!(out.contains(",\"a\":1}"), "{out}");
        let hex = ax_protocol::proof::to_hex(b"s3cret-registered-value");
        assert!(!redact(&format!("payload: 0x00{hex}ff")).contains(&hex));
        // Idempotent.
        assert_eq!(redact(&out), out);
    }

    #[test]
    fn the_frame_cap_applies_only_where_trace_may_be_asked_for() {
        for spec in [
            "trace",
            "TRACE",
            "info,tungstenite=trace",
            "tungstenite",
            "ax_server=5",
            "warn,hyper",
        ] {
            assert!(may_trace(spec), "{spec}");
        }
        for spec in [
            "info",
            "debug",
            "warn,ax_server=debug",
            "off",
            "",
            "ax_cli=info,4",
        ] {
            assert!(!may_trace(spec), "{spec}");
        }
        let d = default_directives("info");
        assert!(
            d.starts_with("warn,") && d.contains("ax_server=info"),
            "{d}"
        );
        assert!(
            d.contains("ax_code=info") && !d.contains("tungstenite"),
            "{d}"
        );
    }
}
