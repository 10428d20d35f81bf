//! The gateway's operator terminal with real processes behind it (the backend runs its
//! commands through the one process module): project directory, order, group kill at the
//! end and on `terminal.kill`, head and tail kept with a marker.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::util::{Backend, eventually, process_gone, within};

pub(crate) struct Operator {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next: u64,
    /// Events that arrived while a response was awaited.
    pub(crate) held: std::collections::VecDeque<Value>,
}

impl Operator {
    pub(crate) async fn connect(b: &Backend) -> Operator {
        Operator::connect_with(b, b.server.token().expose(), "operator.admin").await
    }

    /// Connects with `token`, asking for `scope`.
    pub(crate) async fn connect_with(b: &Backend, token: &str, scope: &str) -> Operator {
        let url = format!("ws://127.0.0.1:{}/gateway", b.server.local_addr().port());
        let (ws, _) = within(tokio_tungstenite::connect_async(url)).await.unwrap();
        let mut op = Operator {
            ws,
            next: 1,
            held: Default::default(),
        };
        let challenge = op.frame().await;
        assert_eq!(challenge["event"], "connect.challenge");
        let hello = op
            .request(
                "connect",
                json!({
                    "minProtocol": 1, "maxProtocol": 1,
                    "client": {"id": "test", "version": "0", "platform": "linux", "mode": "cli"},
                    "role": "operator", "scopes": [scope],
                    "auth": {"token": token}}),
            )
            .await;
        assert_eq!(hello["ok"], true, "{hello}");
        op
    }

    pub(crate) async fn frame(&mut self) -> Value {
        loop {
            let msg = within(self.ws.next()).await.unwrap().unwrap();
            if let Message::Text(t) = msg {
                return serde_json::from_str(&t).unwrap();
            }
        }
    }

    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = format!("r{}", self.next);
        let frame = json!({"type": "req", "id": id, "method": method, "params": params});
        self.ws
            .send(Message::text(frame.to_string()))
            .await
            .unwrap();
        loop {
            let f = self.frame().await;
            if f["type"] == "res" && f["id"] == id.as_str() {
                return f;
            }
            if f["type"] == "event" {
                self.held.push_back(f);
            }
        }
    }

    /// Starts `command`; its run id.
    async fn run(&mut self, command: &str) -> String {
        let res = self
            .request("terminal.run", json!({"command": command}))
            .await;
        assert_eq!(res["ok"], true, "{res}");
        res["payload"]["runId"].as_str().unwrap().to_owned()
    }

    /// The next `terminal.*` event of `run_id`.
    async fn next_event(&mut self, run_id: &str) -> Value {
        loop {
            let f = match self.held.pop_front() {
                Some(f) => f,
                None => self.frame().await,
            };
            if f["event"]
                .as_str()
                .is_some_and(|e| e.starts_with("terminal."))
            {
                assert_eq!(f["payload"]["runId"], run_id, "{f}");
                return f;
            }
        }
    }

    /// Every `terminal.*` event of `run_id` up to and including `terminal.exit`.
    async fn until_exit(&mut self, run_id: &str) -> Vec<Value> {
        let mut got = Vec::new();
        loop {
            let ev = self.next_event(run_id).await;
            let done = ev["event"] == "terminal.exit";
            got.push(ev);
            if done {
                return got;
            }
        }
    }
}

fn output(events: &[Value], stream: &str) -> String {
    events
        .iter()
        .filter(|e| e["event"] == "terminal.output" && e["payload"]["stream"] == stream)
        .map(|e| e["payload"]["data"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn runs_in_the_project_dir_and_streams_in_order() {
    let b = Backend::start().await;
    std::fs::write(b.project_path().join("marker.txt"), "here").unwrap();
    let mut op = Operator::connect(&b).await;
    let run = op.run("cat marker.txt; echo; echo oops >&2; exit 3").await;
    let events = op.until_exit(&run).await;
    assert_eq!(output(&events, "stdout"), "here\n");
    assert_eq!(output(&events, "stderr"), "oops\n");
    let exit = &events.last().unwrap()["payload"];
    assert_eq!(exit["code"], 3);
    assert_eq!(exit["truncated"], false);
}

#[tokio::test]
async fn a_background_child_neither_keeps_the_terminal_busy_nor_outlives_it() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    // Before: the background `sleep` kept the pipe and the terminal's one slot for 300 s.
    let run = op.run("sleep 300 & echo $!").await;
    let events = op.until_exit(&run).await;
    assert_eq!(events.last().unwrap()["payload"]["code"], 0);
    let child: i32 = output(&events, "stdout").trim().parse().unwrap();
    eventually("the background child is killed", || process_gone(child)).await;
    // The slot is free at once.
    let run = op.run("echo next").await;
    assert_eq!(output(&op.until_exit(&run).await, "stdout"), "next\n");
}

#[tokio::test]
async fn kill_ends_the_whole_group() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    let run = op.run("sleep 300 & echo $!; wait; echo never").await;
    let first = op.next_event(&run).await;
    let child: i32 = first["payload"]["data"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(child));
    // While it runs, its group is recorded for crash cleanup; once it ended, no longer.
    let group = process_group_of(child);
    let recorded = || recorded_groups(&b).contains(&group);
    eventually("the group is recorded", recorded).await;
    let res = op.request("terminal.kill", json!({})).await;
    assert_eq!(res["payload"], json!({"ok": true, "killed": true}));
    let events = op.until_exit(&run).await;
    assert_eq!(events.last().unwrap()["payload"]["signal"], 9);
    assert!(!output(&events, "stdout").contains("never"));
    eventually("the child is killed", || process_gone(child)).await;
    eventually("the record is gone", || !recorded()).await;
}

/// The process group `pid` belongs to (`/proc/PID/stat` field 5).
pub(crate) fn process_group_of(pid: i32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// The process groups the backend has recorded for crash cleanup, read from its database.
pub(crate) fn recorded_groups(b: &Backend) -> Vec<i64> {
    let db = b.data.path().join(ax_server::store::DB_FILE);
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn.prepare("SELECT pgid FROM process_group").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test]
async fn output_keeps_head_and_tail_with_a_marker_between() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    // About 2.2 MB of numbered lines: more than the 1 MiB kept.
    let full: String = (1..=300_000).map(|i| format!("{i}\n")).collect();
    let run = op.run("seq 1 300000").await;
    let events = op.until_exit(&run).await;
    let marker = events
        .iter()
        .position(|e| e["event"] == "terminal.truncated")
        .expect("a marker");
    let head = output(&events[..marker], "stdout");
    let tail = output(&events[marker..], "stdout");
    assert!(head.starts_with("1\n2\n3\n"));
    assert!(full.starts_with(&head));
    assert!(
        tail.ends_with("299999\n300000\n"),
        "{}",
        &tail[tail.len() - 20..]
    );
    assert!(full.ends_with(&tail));
    let kept = head.len() + tail.len();
    assert!(kept <= ax_gateway::TERMINAL_MAX_OUTPUT, "{kept}");
    let dropped = events[marker]["payload"]["droppedBytes"].as_u64().unwrap() as usize;
    assert_eq!(kept + dropped, full.len());
    let exit = &events.last().unwrap()["payload"];
    assert_eq!(exit["truncated"], true);
    assert_eq!(exit["droppedBytes"].as_u64().unwrap() as usize, dropped);
    assert_eq!(exit["code"], 0);
}

/// A backend that died while a terminal command ran left its group recorded; the next
/// backend on the same data directory kills it (and only because its owner is gone).
#[tokio::test]
async fn a_restarted_backend_kills_a_terminal_group_a_dead_one_left() {
    use std::{io::BufRead, os::unix::process::CommandExt};
    let data = tempfile::tempdir().unwrap();
    // The orphan: a real process group with a background child.
    let mut leader = std::process::Command::new("sh")
        .args(["-c", "sleep 300 & echo $!; wait"])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(leader.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let child: i32 = line.trim().parse().unwrap();
    let pgid = leader.id();
    let start = ax_agents::process::process_start_time(pgid).unwrap();
    // Its owner: a backend process that is gone.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let store = ax_server::store::Store::open(data.path()).unwrap();
    store
        .write_blocking(|c| {
            ax_server::store::record_process_group(c, pgid, start, (dead_pid, Some(1)))
        })
        .unwrap();
    drop(store);
    assert!(!process_gone(child));

    let data_dir = data.path().to_path_buf();
    let _b = Backend::start_with(|c| c.data_dir = data_dir).await;
    eventually("the orphaned group is killed", || {
        process_gone(child) && process_gone(pgid as i32)
    })
    .await;
    let _ = leader.wait();
}
