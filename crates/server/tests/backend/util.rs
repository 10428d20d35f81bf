//! Helpers: start a backend in temp dirs, wait for events with a timeout.

use std::{future::Future, path::Path, time::Duration};

use ax_client::{Client, EventStream};
use ax_protocol::{Event, EventEnvelope, Message, SessionId, SessionStatus};
use ax_server::{RunningServer, ServerConfig};
use tempfile::TempDir;

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(15);

pub struct Backend {
    pub project: TempDir,
    pub data: TempDir,
    pub server: RunningServer,
    pub client: Client,
}

impl Backend {
    pub async fn start() -> Backend {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut ServerConfig)) -> Backend {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::new(project.path(), data.path());
        config.register = false;
        adjust(&mut config);
        let server = ax_server::start(config).await.expect("backend starts");
        let client = Client::new(server.url(), server.token()).unwrap();
        Backend {
            project,
            data,
            server,
            client,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }

    /// A raw HTTP client for requests the typed client would never send.
    pub fn raw(&self) -> reqwest::Client {
        reqwest::Client::builder().no_proxy().build().unwrap()
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.server.token())
    }

    /// An event stream that is connected (so no event of what follows is missed).
    pub async fn events(&self) -> EventStream {
        let events = self.client.events(None);
        within(async {
            while !events.is_connected() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        events
    }

    pub async fn session(&self) -> SessionId {
        self.client.create_session(Some("test")).await.unwrap().id
    }

    pub fn project_path(&self) -> &Path {
        self.project.path()
    }
}

/// Runs `f` with the test-wide timeout.
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .expect("timed out waiting")
}

/// The next event matching `pred`, skipping others.
pub async fn next_matching(
    events: &mut EventStream,
    mut pred: impl FnMut(&Event) -> bool,
) -> EventEnvelope {
    within(async {
        loop {
            let e = events.next().await.expect("stream open").expect("no error");
            if pred(&e.event) {
                return e;
            }
        }
    })
    .await
}

pub async fn wait_status(events: &mut EventStream, id: &SessionId, status: SessionStatus) {
    next_matching(events, |e| {
        matches!(e, Event::SessionStatus { session_id, status: s } if session_id == id && *s == status)
    })
    .await;
}

/// The assistant message of the last prompt.
pub fn last_reply(messages: &[Message]) -> &Message {
    messages.last().expect("a reply message")
}

/// Polls `check` until it holds, within the timeout.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let ok = tokio::time::timeout(WAIT, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ok.is_ok(), "timed out waiting for: {what}");
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
