//! A client of the operator terminal in the gateway's protocol (docs/gateway.md §6): the
//! gateway's own WebSocket client ([`GatewayClient`]) on a hub's `/machine/{m}/gateway` or on a
//! backend's `/gateway`, and what the tests read from it.

use std::time::Duration;

use ax_gateway::{
    ClientError, ClientMode, ConnectOptions, EventFrame, GatewayClient, Method, Scope,
    client::gateway_url,
};
use ax_hub::hub::RunningHub;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::{HUB_TOKEN, Machine, within};

/// One gateway connection as the operator's terminal panel uses it, with its events.
pub struct Operator {
    pub client: GatewayClient,
    events: broadcast::Receiver<EventFrame>,
}

impl Operator {
    /// Connects as a Control UI (`operator.admin`) to the gateway at `url` with `token`.
    pub async fn connect(url: &str, token: &str) -> Result<Operator, ClientError> {
        let options = ConnectOptions::new(
            token.to_owned(),
            ClientMode::Ui,
            vec![Scope::Read, Scope::Write, Scope::Admin],
        );
        let client = GatewayClient::connect(url, options).await?;
        let events = client.subscribe();
        Ok(Operator { client, events })
    }

    /// The hub's gateway for `machine`, with the hub's credential.
    pub async fn hub(hub: &RunningHub, machine: &str) -> Operator {
        Operator::connect(&hub_gateway(hub, machine), HUB_TOKEN)
            .await
            .unwrap_or_else(|e| panic!("the hub's gateway for {machine}: {e}"))
    }

    /// The machine's own gateway, with its backend's credential.
    pub async fn on_machine(machine: &Machine) -> Operator {
        let server = machine.server.as_ref().expect("a running backend");
        let url = gateway_url(server.url()).unwrap();
        Operator::connect(&url, server.token().expose())
            .await
            .expect("the machine's own gateway")
    }

    /// Opens an 80×24 terminal; its ID.
    pub async fn open(&mut self) -> String {
        let opened = self
            .client
            .request(Method::TerminalOpen, json!({"cols": 80, "rows": 24}))
            .await
            .expect("terminal.open");
        opened["terminalId"].as_str().unwrap().to_owned()
    }

    pub async fn type_in(&self, id: &str, text: &str) {
        self.client
            .request(
                Method::TerminalInput,
                json!({"terminalId": id, "data": text}),
            )
            .await
            .expect("terminal.input");
    }

    /// The gateway's `terminal.list`.
    pub async fn list(&self) -> Vec<Value> {
        let list = self
            .client
            .request(Method::TerminalList, json!({}))
            .await
            .expect("terminal.list");
        list["terminals"].as_array().unwrap().clone()
    }

    async fn event(&mut self) -> EventFrame {
        match self.events.recv().await {
            Ok(e) => e,
            Err(e) => panic!("the gateway's events: {e}"),
        }
    }

    /// Reads terminal `id`'s output into `seen` until `done(seen)` holds (an exit first
    /// fails the test).
    async fn read_until(
        &mut self,
        id: &str,
        seen: &mut String,
        what: &str,
        done: impl Fn(&str) -> bool,
    ) {
        within(&format!("{what} in the terminal"), async {
            while !done(seen) {
                let e = self.event().await;
                let Some(p) = e.payload else { continue };
                if p["terminalId"] != id {
                    continue;
                }
                match e.event.as_str() {
                    "terminal.data" => seen.push_str(p["data"].as_str().unwrap()),
                    "terminal.dropped" => {}
                    other => panic!("{other} before {what}: {p}; output {seen:?}"),
                }
            }
        })
        .await;
    }

    /// Reads terminal `id`'s output into `seen` until it holds `needle`.
    pub async fn until(&mut self, id: &str, seen: &mut String, needle: &str) {
        self.read_until(id, seen, &format!("{needle:?}"), |s| s.contains(needle))
            .await;
    }

    /// Types `echo pid-$$-end` and reads the shell's process ID back.
    pub async fn shell_pid(&mut self, id: &str) -> i32 {
        self.type_in(id, "echo pid-$$-end\r").await;
        let mut seen = String::new();
        self.read_until(id, &mut seen, "the shell's pid", |s| {
            number_between(s, "pid-", "-end").is_some()
        })
        .await;
        number_between(&seen, "pid-", "-end").unwrap()
    }

    /// Reads terminal `id` until its `terminal.exit`: the exit's payload and the output read
    /// on the way.
    pub async fn until_exit(&mut self, id: &str) -> (Value, String) {
        let mut seen = String::new();
        within("the terminal's exit", async {
            loop {
                let e = self.event().await;
                let Some(p) = e.payload else { continue };
                if p["terminalId"] != id {
                    continue;
                }
                match e.event.as_str() {
                    "terminal.data" => seen.push_str(p["data"].as_str().unwrap()),
                    "terminal.exit" => return (p, seen),
                    _ => {}
                }
            }
        })
        .await
    }
}

/// `ws://…/machine/{machine}/gateway` of a hub.
pub fn hub_gateway(hub: &RunningHub, machine: &str) -> String {
    format!("ws://{}/machine/{machine}/gateway", hub.local_addr())
}

/// The number printed between `tag` and `end` (the echo of the typed line shows the
/// unexpanded text, not digits).
pub fn number_between(seen: &str, tag: &str, end: &str) -> Option<i32> {
    seen.match_indices(tag).find_map(|(i, _)| {
        let rest = &seen[i + tag.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || !rest[digits.len()..].starts_with(end) {
            return None;
        }
        digits.parse().ok()
    })
}

/// Whether a process is gone (or only a zombie left for its reaper).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (within the test-wide bound) until `check` holds.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    within(what, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}
