//! Several machines as real processes (docs/hub.md §5): reading what `serve --join` and
//! `hub` print, starting a hub, and reading the hub's listings and server-sent events.

use std::{
    process::{Command, Stdio},
    sync::mpsc::Receiver,
    time::Duration,
};

use serde_json::Value;

use super::{Env, Reaped, line_channel};

/// Generous: a machine is shown offline after three missed 2 s heartbeats.
pub const HUB_WAIT: Duration = Duration::from_secs(45);

/// Reads stdout lines until one starts with `prefix`.
pub fn line_starting(lines: &Receiver<String>, prefix: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(HUB_WAIT)
            .unwrap_or_else(|_| panic!("no line starting {prefix:?}"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

/// The `http://` URL in a line the binary printed.
pub fn url_in(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches('/')
        .to_owned()
}

/// `ax-code hub --nats NATS --port 0` in `env` with the API credential `password`:
/// (process, hub URL).
pub fn start_hub(env: &Env, nats: &str, password: &str) -> (Reaped, String) {
    let mut command = env.command(&["hub", "--nats", nats, "--port", "0"]);
    command.env("AX_CODE_HUB_PASSWORD", password);
    spawn_hub(command)
}

/// Starts `command` (an `ax-code hub …`) and waits until it prints where it listens:
/// (process, hub URL). Its later output is read and dropped.
pub fn spawn_hub(mut command: Command) -> (Reaped, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = line_channel(child.stdout.take().unwrap());
    let child = Reaped(child);
    (
        child,
        url_in(&line_starting(&lines, "ax-code hub listening on")),
    )
}

/// Sends `request` to a hub with its API credential `password`: (status, JSON body, `null`
/// when the body is not JSON).
pub async fn hub_call(request: reqwest::RequestBuilder, password: &str) -> (u16, Value) {
    let response = request.bearer_auth(password).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A machine's entry in the hub's `GET /session`.
pub fn machine_entry<'a>(all: &'a Value, name: &str) -> Option<&'a Value> {
    all.as_array()?.iter().find(|m| m["machine"] == name)
}

/// The titles of a `GET /session` entry's sessions, in the hub's order.
pub fn session_titles(entry: &Value) -> Vec<String> {
    entry["sessions"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["title"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// One whole server-sent event of a stream read so far.
pub struct SseEvent {
    /// Its `id:` line, when it has one.
    pub id: Option<u64>,
    /// Its `event:` line, when it has one.
    pub name: Option<String>,
    /// Its `data:` lines, parsed as JSON.
    pub data: Value,
}

/// The whole events in `text` (what a stream sent so far), without comments (heartbeats) and
/// without a last event still being received.
pub fn sse_events(text: &str) -> Vec<SseEvent> {
    let whole = &text[..text.rfind("\n\n").map_or(0, |end| end + 2)];
    whole
        .split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim().to_owned())
            };
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            Some(SseEvent {
                id: field("id:").and_then(|id| id.parse().ok()),
                name: field("event:"),
                data: serde_json::from_str(&data).ok()?,
            })
        })
        .collect()
}

/// Reads `stream` into `text` until `done` finds what it waits for in the events so far,
/// within [`HUB_WAIT`]; the panic shows what was read.
pub async fn read_events_until<T, B: AsRef<[u8]>>(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<B>> + Unpin),
    what: &str,
    done: impl Fn(&[SseEvent]) -> Option<T>,
) -> T {
    use futures_util::StreamExt;
    let mut text = String::new();
    let found = tokio::time::timeout(HUB_WAIT, async {
        loop {
            if let Some(found) = done(&sse_events(&text)) {
                return found;
            }
            let chunk = stream.next().await.expect("the stream stays open").unwrap();
            text.push_str(&String::from_utf8_lossy(chunk.as_ref()));
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("{what}: not in the stream within {HUB_WAIT:?}: {text:?}"))
}
