//! `ax-mock-agent`: a deterministic ACP agent for tests, scripted by its prompt text.
//!
//! The binary `ax-mock-agent` runs [`run`]; a test binary can run it too (e.g. when started
//! as the agent by the test that spawned it).
//!
//! Built on the `agent-client-protocol` crate's agent side; needs no network, no keys and no
//! Node. Each line of a prompt is one command, run in order; the turn then ends with
//! `end_turn` (unless a command says otherwise):
//!
//! | command | what the agent does |
//! | --- | --- |
//! | `text WORDS` | one `agent_message_chunk` |
//! | `chunks N` | N chunks `c0 `, `c1 `, ... |
//! | `thought WORDS` | one `agent_thought_chunk` |
//! | `plan A\|B\|C` | a `plan` with those entries (first in progress, rest pending) |
//! | `tool ID TITLE` | a `tool_call` (kind execute, pending, `rawInput.command` = TITLE) |
//! | `tool-done ID` | `tool_call_update` status completed |
//! | `permission ID SET` | a `tool_call` ID, then `session/request_permission` with SET's options, then reports `permission ID: OPTION` (or `cancelled`) as text |
//! | `permission-bare ID SET` | the same without a prior `tool_call` (as Gemini does) |
//! | `diff PATH OLD NEW` | an edit `tool_call` with a diff and a location |
//! | `read PATH` | `fs/read_text_file`; reports `read: ok CONTENT` or `read: error CODE` |
//! | `write PATH CONTENT` | `fs/write_text_file`; reports `write: ok` or `write: error CODE` |
//! | `term LIMIT CMD` | `terminal/create` of `sh -c CMD` with `outputByteLimit` LIMIT, a `tool_call` showing it, wait, output, release; reports `term: exit=E signal=S truncated=T output=O` |
//! | `term-kill CMD` | create, kill, wait, release; reports like `term` |
//! | `env` | reports the names of its environment variables: `env: A,B,...` |
//! | `mode` | reports the current mode: `mode: ID` |
//! | `pid` | reports its process id: `pid N` (tests see whether the process was restarted) |
//! | `usage [USED SIZE [COST]]` | a `usage_update` (default 100 of 1000 tokens; COST in USD) |
//! | `config` | reports the session's config options: `config: mode=M model=X reasoning_effort=E fast=B` |
//! | `config-set ID VALUE` | changes an option itself and sends `config_option_update` with the full list (as an adapter falling back to another model does) |
//! | `title WORDS` | a `session_info_update` with that title |
//! | `commands A B ...` | an `available_commands_update` listing commands A, B, ... (none: an empty list) |
//! | `later-commands MS A B ...` | the same MS ms after the turn, between turns (as Codex's adapter may send its list after its first prompt ended) |
//! | `/NAME ARGS` | runs the agent command NAME, as an agent does for a prompt starting `/NAME`: reports `command NAME: ARGS` |
//! | `blocks` | reports the prompt's non-text blocks: `blocks: image MIME BYTES; link NAME URI; resource URI BYTES` (`blocks: none`) |
//! | `exec ID CMD` | Codex's shape: `session/request_permission` with no prior `tool_call`, the command in the title and `rawInput {command: ["bash", "-lc", CMD], cwd}`, Codex's options; reports like `permission` (`abort` ends the turn `cancelled`) |
//! | `detach SECS` | starts `sleep SECS` in a session of its own (`setsid`, as a command of Claude's Bash tool may), leaving the agent's process group; reports `detached PID` |
//! | `edit ID PATH OLD NEW` | Claude's edit: a `tool_call` with a diff of the whole fragments OLD → NEW, a permission (`claude` options), then on allow writes the file with OLD replaced by NEW; reports `edit ID: OPTION` |
//! | `unknown-update` | a `session/update` of a kind no client knows |
//! | `garbage` | prints lines that are not JSON-RPC (and not UTF-8) on stdout |
//! | `later MS MARKER write PATH CONTENT` / `later MS MARKER term CMD` | after the turn, MS ms later, `fs/write_text_file` or `terminal/create` (`sh -c CMD`); writes `ok` or `error CODE MESSAGE` to the file MARKER |
//! | `hostile-log` | sends a `session/update` of an unknown kind, a notification and a request of unknown methods, each name carrying terminal escapes ([`HOSTILE`]) |
//! | `flood N` | N text chunks written straight to stdout (for benchmarks) |
//! | `flood-timed N RATE` | N chunks at RATE per second, each text `t<unix ns> ` |
//! | `mcp TOOL JSON` | starts the session's stdio MCP server `ax-code-screen` (else the first stdio one), lists its tools and calls TOOL with arguments JSON; reports `mcp: tools=NAMES result=TEXT` (`result=error TEXT` for a refused call) |
//! | `sleep MS` | waits |
//! | `wait-cancel` | waits for `session/cancel`, then ends with `cancelled` |
//! | `ignore-cancel` | waits forever, ignoring `session/cancel` |
//! | `crash` | writes to stderr and exits with status 3 mid-turn |
//! | `crash-in MS` | the same MS ms later, whatever the turn is doing then (e.g. waiting for a permission) |
//! | `auth` | fails the prompt with -32000 (authentication required) |
//! | `stop REASON` | ends the turn with that stop reason (`max_tokens`, `refusal`, ...) |
//!
//! Permission option sets (ids and order as the real adapters send them): `claude`
//! (`allow_always`, `allow`, `reject`), `codex` (`approved`, `approved-for-session`, `abort`;
//! no `reject_always`; `abort` ends the whole turn `cancelled`), `codex-exec` (Codex's
//! command approval with two options of each of two kinds: `approved`, `approved-for-session`,
//! `approved-execpolicy-amendment`, `denied`, `abort`), `gemini` (`proceed_always`,
//! `proceed_once`, `cancel`), `full` (one of each kind), `allow-only` (`ok`, allow once only).
//!
//! Started as `ax-mock-agent --mcp-server` it is instead a trivial stdio MCP server whose one
//! tool, `screen`, echoes its arguments.
//!
//! Environment: `AX_MOCK_PROTOCOL_VERSION=N` answers `initialize` with version N;
//! `AX_MOCK_REQUIRE_AUTH=1` fails `session/new` with -32000; `AX_MOCK_INITIAL_MODE=ID`
//! starts sessions in that mode (modes: `default`, `acceptEdits`, `bypassPermissions`);
//! `AX_MOCK_STATE_DIR=DIR` keeps each session's history there, and with it
//! `AX_MOCK_LOAD=1` advertises `loadSession` (replaying the history) and `AX_MOCK_RESUME=1`
//! advertises `session/resume`. `AX_MOCK_REPLAY=gemini` replays as Gemini CLI does: each
//! turn's person text, the agent's text, then its tool calls with their old ids (completed),
//! the first update before the `session/load` answer and the rest after it.
//! `AX_MOCK_STEP_USAGE=1` sends a `usage_update` after each command (as Claude does after
//! each step). After `session/new` the agent sends `available_commands_update` (as Claude
//! does): `compact`, and `review` with the input hint `what to review`.
//! `AX_MOCK_STALE_CANCEL=1` behaves as Claude's adapter 0.23.1 after `session/cancel`
//! (docs/agents.md §10): the prompt after the cancel answers `end_turn` at once with no
//! update (the cancelled turn's queued end), and its script runs at the start of the prompt
//! after it, whose answer then carries both. `AX_MOCK_IGNORE_EOF=1` keeps running after stdin
//! closes (as Claude's and Codex's adapters do) and `AX_MOCK_IGNORE_TERM=1` ignores SIGTERM.
//! Sessions offer config options (`mode`, `model`, `reasoning_effort` selects and a boolean
//! `fast`, see [`config`]) and answer `session/set_config_option` with the full list, unless
//! `AX_MOCK_NO_CONFIG=1`. The agent advertises `promptCapabilities {image, embeddedContext}`
//! (as Claude, Codex and Gemini do) unless `AX_MOCK_NO_IMAGE=1`. `AX_MOCK_QUEUE=1` advertises
//! Claude's `_meta.claudeCode.promptQueueing` and runs a session's prompts one after the other
//! in the order they came (a prompt sent during a turn waits for it); without it a second
//! prompt runs beside the first.
//! `AX_MOCK_INPUT_LOG=PATH` appends every line the agent reads from stdin to PATH as it is
//! read, and [`INPUT_LOG_EOF`] when stdin closes: what the client sent, as the agent got it
//! (e.g. the answer to a permission request the client answered while stopping it).
//! `AX_MOCK_HOSTILE=1` puts [`HOSTILE`] (terminal escapes and a bidi override) into its name,
//! title, version, an authentication method and its error output, as a malicious agent would.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use agent_client_protocol::{
    self as acp, Agent, Client, Lines,
    schema::ProtocolVersion,
    v1::{ConnectionTo, schema},
};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// What a hostile agent puts into every string it controls: OSC 52 (writes the clipboard),
/// OSC 0 (sets the window title), `ESC [ 2 J` (clears the screen), a C1 CSI and a
/// right-to-left override.
pub const HOSTILE: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}";

mod config;

#[derive(Default)]
struct Session {
    mode: String,
    config: config::Config,
    /// `AX_MOCK_QUEUE`: held by the running turn, so queued prompts run in order.
    turn_lock: Arc<tokio::sync::Mutex<()>>,
    mcp_servers: Vec<schema::McpServer>,
    cancelled: Arc<AtomicBool>,
    cancel: Arc<tokio::sync::Notify>,
    /// `AX_MOCK_STALE_CANCEL`: a cancel left the cancelled turn's end queued.
    stale_end: bool,
    /// `AX_MOCK_STALE_CANCEL`: the script of the prompt that got the stale end, run at the
    /// start of the next prompt.
    held: Option<String>,
}

#[derive(Default)]
struct Mock {
    sessions: Mutex<HashMap<String, Session>>,
    next: AtomicU64,
    raw: Mutex<Option<futures::channel::mpsc::UnboundedSender<Vec<u8>>>>,
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

fn state_dir() -> Option<PathBuf> {
    std::env::var_os("AX_MOCK_STATE_DIR").map(PathBuf::from)
}

fn modes(current: &str) -> schema::SessionModeState {
    schema::SessionModeState::new(
        current.to_string(),
        vec![
            schema::SessionMode::new("default", "Default"),
            schema::SessionMode::new("acceptEdits", "Accept Edits"),
            schema::SessionMode::new("bypassPermissions", "Bypass Permissions"),
        ],
    )
}

fn text(s: impl Into<String>) -> schema::ContentBlock {
    schema::ContentBlock::Text(schema::TextContent::new(s.into()))
}

impl Mock {
    fn open(&self, id: &str, mcp_servers: Vec<schema::McpServer>) {
        let mode = std::env::var("AX_MOCK_INITIAL_MODE").unwrap_or_else(|_| "default".into());
        self.sessions.lock().unwrap().insert(
            id.to_string(),
            Session {
                mode,
                mcp_servers,
                ..Session::default()
            },
        );
    }

    /// The session's mode and its config options (none with `AX_MOCK_NO_CONFIG`).
    fn config_options(&self, id: &str) -> (String, Option<Vec<schema::SessionConfigOption>>) {
        let sessions = self.sessions.lock().unwrap();
        let Some(s) = sessions.get(id) else {
            return ("default".to_owned(), None);
        };
        let options = (!env_flag("AX_MOCK_NO_CONFIG")).then(|| config::options(&s.mode, &s.config));
        (s.mode.clone(), options)
    }

    fn raw_line(&self, bytes: Vec<u8>) {
        if let Some(tx) = self.raw.lock().unwrap().as_ref() {
            let _ = tx.unbounded_send(bytes);
        }
    }

    fn record(&self, sid: &str, user: &str, agent: &str, tools: &[(String, String)]) {
        let Some(dir) = state_dir() else { return };
        let line = serde_json::json!({"user": user, "agent": agent, "tools": tools}).to_string();
        let path = dir.join(format!("{sid}.jsonl"));
        let mut old = std::fs::read_to_string(&path).unwrap_or_default();
        old.push_str(&line);
        old.push('\n');
        let _ = std::fs::write(path, old);
    }

    fn history(&self, sid: &str) -> Option<Vec<Recorded>> {
        let text = std::fs::read_to_string(state_dir()?.join(format!("{sid}.jsonl"))).ok()?;
        Some(
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .map(|v| Recorded {
                    user: v["user"].as_str().unwrap_or_default().to_string(),
                    agent: v["agent"].as_str().unwrap_or_default().to_string(),
                    tools: serde_json::from_value(v["tools"].clone()).unwrap_or_default(),
                })
                .collect(),
        )
    }
}

/// One recorded turn of a session's history.
struct Recorded {
    user: String,
    agent: String,
    tools: Vec<(String, String)>,
}

struct Turn {
    cx: ConnectionTo<Client>,
    sid: schema::SessionId,
    mock: Arc<Mock>,
    /// The prompt's non-text blocks, described for `blocks`.
    blocks: Vec<String>,
    said: String,
    /// The tool calls of the turn (id, title), for the history a load replays.
    tools: Vec<(String, String)>,
    /// Tokens "used" so far (`AX_MOCK_STEP_USAGE`).
    used: u64,
}

fn permission_options(set: &str) -> Vec<schema::PermissionOption> {
    use schema::PermissionOptionKind as K;
    let o = |id: &str, name: &str, kind| schema::PermissionOption::new(id.to_string(), name, kind);
    match set {
        "codex" => vec![
            o("approved", "Yes", K::AllowOnce),
            o(
                "approved-for-session",
                "Yes, for this session",
                K::AllowAlways,
            ),
            o(
                "abort",
                "No, and tell Codex what to do differently",
                K::RejectOnce,
            ),
        ],
        "codex-exec" => vec![
            o("approved", "Yes, proceed", K::AllowOnce),
            o(
                "approved-for-session",
                "Yes, and don't ask again for this command in this session",
                K::AllowAlways,
            ),
            o(
                "approved-execpolicy-amendment",
                "Yes, and remember this command pattern",
                K::AllowAlways,
            ),
            o("denied", "No, continue without running it", K::RejectOnce),
            o(
                "abort",
                "No, and tell Codex what to do differently",
                K::RejectOnce,
            ),
        ],
        "gemini" => vec![
            o("proceed_always", "Always allow", K::AllowAlways),
            o("proceed_once", "Allow", K::AllowOnce),
            o("cancel", "Reject", K::RejectOnce),
        ],
        "allow-only" => vec![o("ok", "OK", K::AllowOnce)],
        "full" => vec![
            o("o1", "Allow once", K::AllowOnce),
            o("o2", "Allow always", K::AllowAlways),
            o("o3", "Reject once", K::RejectOnce),
            o("o4", "Reject always", K::RejectAlways),
        ],
        _ => vec![
            o("allow_always", "Always Allow", K::AllowAlways),
            o("allow", "Allow", K::AllowOnce),
            o("reject", "Reject", K::RejectOnce),
        ],
    }
}

impl Turn {
    fn update(&self, update: schema::SessionUpdate) -> Result<(), acp::Error> {
        self.cx
            .send_notification(schema::SessionNotification::new(self.sid.clone(), update))
    }

    fn say(&mut self, s: impl Into<String>) -> Result<(), acp::Error> {
        let s = s.into();
        self.said.push_str(&s);
        self.update(schema::SessionUpdate::AgentMessageChunk(
            schema::ContentChunk::new(text(s)),
        ))
    }

    fn tool_call(&mut self, id: &str, title: &str) -> Result<(), acp::Error> {
        self.tools.push((id.to_string(), title.to_string()));
        self.update(schema::SessionUpdate::ToolCall(
            schema::ToolCall::new(id.to_string(), title)
                .kind(schema::ToolKind::Execute)
                .raw_input(serde_json::json!({ "command": title })),
        ))
    }

    fn tool_status(&self, id: &str, status: schema::ToolCallStatus) -> Result<(), acp::Error> {
        self.update(schema::SessionUpdate::ToolCallUpdate(
            schema::ToolCallUpdate::new(
                id.to_string(),
                schema::ToolCallUpdateFields::new().status(status),
            ),
        ))
    }

    fn cancelled(&self) -> (Arc<AtomicBool>, Arc<tokio::sync::Notify>) {
        let sessions = self.mock.sessions.lock().unwrap();
        let s = &sessions[&*self.sid.0];
        (s.cancelled.clone(), s.cancel.clone())
    }

    /// Runs one command; `Some(reason)` ends the turn early.
    async fn run(&mut self, line: &str) -> Result<Option<schema::StopReason>, acp::Error> {
        let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match cmd {
            "text" => self.say(rest)?,
            "chunks" => {
                let n: usize = rest.parse().unwrap_or(0);
                for i in 0..n {
                    self.say(format!("c{i} "))?;
                }
            }
            "thought" => self.update(schema::SessionUpdate::AgentThoughtChunk(
                schema::ContentChunk::new(text(rest)),
            ))?,
            "plan" => {
                let entries = rest
                    .split('|')
                    .enumerate()
                    .map(|(i, e)| {
                        schema::PlanEntry::new(
                            e.trim(),
                            schema::PlanEntryPriority::Medium,
                            if i == 0 {
                                schema::PlanEntryStatus::InProgress
                            } else {
                                schema::PlanEntryStatus::Pending
                            },
                        )
                    })
                    .collect();
                self.update(schema::SessionUpdate::Plan(schema::Plan::new(entries)))?;
            }
            "tool" => {
                let (id, title) = rest.split_once(' ').unwrap_or((rest, "tool"));
                self.tool_call(id, title)?;
            }
            "tool-done" => self.tool_status(rest, schema::ToolCallStatus::Completed)?,
            "permission" | "permission-bare" => {
                let (id, set) = rest.split_once(' ').unwrap_or((rest, "claude"));
                let title = format!("run step {id}\nwith a second line");
                if cmd == "permission" {
                    self.tool_call(id, &title)?;
                }
                let request = schema::RequestPermissionRequest::new(
                    self.sid.clone(),
                    schema::ToolCallUpdate::new(
                        id.to_string(),
                        schema::ToolCallUpdateFields::new()
                            .title(title.clone())
                            .kind(schema::ToolKind::Execute)
                            .raw_input(serde_json::json!({ "command": title })),
                    ),
                    permission_options(set),
                );
                let answer = self.cx.send_request(request).block_task().await?;
                match answer.outcome {
                    schema::RequestPermissionOutcome::Selected(s) => {
                        let option = s.option_id.0.to_string();
                        self.say(format!("permission {id}: {option}\n"))?;
                        let allowed = !matches!(
                            option.as_str(),
                            "reject" | "abort" | "denied" | "cancel" | "o3" | "o4"
                        );
                        self.tool_status(
                            id,
                            if allowed {
                                schema::ToolCallStatus::Completed
                            } else {
                                schema::ToolCallStatus::Failed
                            },
                        )?;
                        if option == "abort" {
                            return Ok(Some(schema::StopReason::Cancelled));
                        }
                    }
                    _ => {
                        self.say(format!("permission {id}: cancelled\n"))?;
                        if self.cancelled().0.load(Ordering::SeqCst) {
                            return Ok(Some(schema::StopReason::Cancelled));
                        }
                    }
                }
            }
            "exec" => {
                // Codex: no tool_call first; the command is the title, an array in rawInput.
                let (id, command) = rest.split_once(' ').unwrap_or((rest, "true"));
                let cwd = std::env::current_dir().unwrap_or_default();
                let request = schema::RequestPermissionRequest::new(
                    self.sid.clone(),
                    schema::ToolCallUpdate::new(
                        id.to_string(),
                        schema::ToolCallUpdateFields::new()
                            .title(command.to_string())
                            .kind(schema::ToolKind::Execute)
                            .status(schema::ToolCallStatus::Pending)
                            .raw_input(serde_json::json!({
                                "command": ["bash", "-lc", command],
                                "cwd": cwd,
                            })),
                    ),
                    permission_options("codex"),
                );
                let answer = self.cx.send_request(request).block_task().await?;
                let option = match answer.outcome {
                    schema::RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
                    _ => "cancelled".into(),
                };
                if option == "abort" || option == "cancelled" {
                    // Codex ends the whole turn; it sends nothing more about the call.
                    return Ok(Some(schema::StopReason::Cancelled));
                }
                self.tool_call(id, command)?;
                self.tool_status(id, schema::ToolCallStatus::Completed)?;
                self.say(format!("exec {id}: {option}\n"))?;
            }
            "detach" => {
                let secs: u64 = rest.parse().unwrap_or(600);
                let out = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!(
                        "setsid sleep {secs} </dev/null >/dev/null 2>&1 & echo $!"
                    ))
                    .stderr(std::process::Stdio::null())
                    .output();
                let pid = out
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .unwrap_or_default();
                self.say(format!("detached {pid}\n"))?;
            }
            "edit" => {
                let mut words = rest.splitn(4, ' ');
                let (id, path, old, new) = (
                    words.next().unwrap_or("e1"),
                    words.next().unwrap_or("f"),
                    words.next().unwrap_or(""),
                    words.next().unwrap_or(""),
                );
                let diff = schema::ToolCallContent::Diff(
                    schema::Diff::new(path, new).old_text(old.to_string()),
                );
                self.tools.push((id.to_string(), format!("Edit {path}")));
                self.update(schema::SessionUpdate::ToolCall(
                    schema::ToolCall::new(id.to_string(), format!("Edit {path}"))
                        .kind(schema::ToolKind::Edit)
                        .content(vec![diff.clone()]),
                ))?;
                let request = schema::RequestPermissionRequest::new(
                    self.sid.clone(),
                    schema::ToolCallUpdate::new(
                        id.to_string(),
                        schema::ToolCallUpdateFields::new().content(vec![diff]),
                    ),
                    permission_options("claude"),
                );
                let answer = self.cx.send_request(request).block_task().await?;
                let option = match answer.outcome {
                    schema::RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
                    _ => "cancelled".into(),
                };
                if option.starts_with("allow") {
                    let file = self
                        .cx
                        .send_request(schema::ReadTextFileRequest::new(self.sid.clone(), path))
                        .block_task()
                        .await?;
                    self.cx
                        .send_request(schema::WriteTextFileRequest::new(
                            self.sid.clone(),
                            path,
                            file.content.replacen(old, new, 1),
                        ))
                        .block_task()
                        .await?;
                    self.tool_status(id, schema::ToolCallStatus::Completed)?;
                } else {
                    self.tool_status(id, schema::ToolCallStatus::Failed)?;
                }
                self.say(format!("edit {id}: {option}\n"))?;
            }
            "diff" => {
                let mut words = rest.splitn(3, ' ');
                let (path, old, new) = (
                    words.next().unwrap_or("f"),
                    words.next().unwrap_or(""),
                    words.next().unwrap_or(""),
                );
                self.update(schema::SessionUpdate::ToolCall(
                    schema::ToolCall::new("edit-1", format!("Edit {path}"))
                        .kind(schema::ToolKind::Edit)
                        .status(schema::ToolCallStatus::Completed)
                        .content(vec![schema::ToolCallContent::Diff(
                            schema::Diff::new(path, new).old_text(old.to_string()),
                        )])
                        .locations(vec![schema::ToolCallLocation::new(path).line(1)]),
                ))?;
            }
            "read" => {
                let r = self
                    .cx
                    .send_request(schema::ReadTextFileRequest::new(self.sid.clone(), rest))
                    .block_task()
                    .await;
                match r {
                    Ok(r) => self.say(format!("read: ok {}", r.content))?,
                    Err(e) => self.say(format!("read: error {}", e.code.value()))?,
                }
            }
            "write" => {
                let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
                let r = self
                    .cx
                    .send_request(schema::WriteTextFileRequest::new(
                        self.sid.clone(),
                        path,
                        content,
                    ))
                    .block_task()
                    .await;
                match r {
                    Ok(_) => self.say("write: ok")?,
                    Err(e) => self.say(format!("write: error {}", e.code.value()))?,
                }
            }
            "term" | "term-kill" => {
                let (limit, command) = if cmd == "term" {
                    let (l, c) = rest.split_once(' ').unwrap_or(("1000", rest));
                    (l.parse::<u64>().ok(), c)
                } else {
                    (None, rest)
                };
                let created = self
                    .cx
                    .send_request(
                        schema::CreateTerminalRequest::new(self.sid.clone(), "sh")
                            .args(vec!["-c".into(), command.into()])
                            .output_byte_limit(limit),
                    )
                    .block_task()
                    .await?;
                let tid = created.terminal_id.clone();
                self.update(schema::SessionUpdate::ToolCall(
                    schema::ToolCall::new("term-call", command)
                        .kind(schema::ToolKind::Execute)
                        .status(schema::ToolCallStatus::InProgress)
                        .content(vec![schema::ToolCallContent::Terminal(
                            schema::Terminal::new(tid.clone()),
                        )]),
                ))?;
                if cmd == "term-kill" {
                    self.cx
                        .send_request(schema::KillTerminalRequest::new(
                            self.sid.clone(),
                            tid.clone(),
                        ))
                        .block_task()
                        .await?;
                }
                let exit = self
                    .cx
                    .send_request(schema::WaitForTerminalExitRequest::new(
                        self.sid.clone(),
                        tid.clone(),
                    ))
                    .block_task()
                    .await?;
                let out = self
                    .cx
                    .send_request(schema::TerminalOutputRequest::new(
                        self.sid.clone(),
                        tid.clone(),
                    ))
                    .block_task()
                    .await?;
                self.cx
                    .send_request(schema::ReleaseTerminalRequest::new(self.sid.clone(), tid))
                    .block_task()
                    .await?;
                self.tool_status("term-call", schema::ToolCallStatus::Completed)?;
                self.say(format!(
                    "term: exit={} signal={} truncated={} output={}",
                    exit.exit_status
                        .exit_code
                        .map_or("-".to_string(), |c| c.to_string()),
                    exit.exit_status.signal.as_deref().unwrap_or("-"),
                    out.truncated,
                    out.output
                ))?;
            }
            "env" => {
                let mut names: Vec<String> = std::env::vars_os()
                    .map(|(k, _)| k.to_string_lossy().into_owned())
                    .collect();
                names.sort();
                self.say(format!("env: {}", names.join(",")))?;
            }
            "pid" => self.say(format!("pid {}", std::process::id()))?,
            "mode" => {
                let mode = self.mock.sessions.lock().unwrap()[&*self.sid.0]
                    .mode
                    .clone();
                self.say(format!("mode: {mode}"))?;
            }
            "config" => {
                let sessions = self.mock.sessions.lock().unwrap();
                let s = &sessions[&*self.sid.0];
                let report = config::describe(&s.mode, &s.config);
                drop(sessions);
                self.say(report)?;
            }
            "config-set" => {
                let (id, value) = rest.split_once(' ').unwrap_or((rest, ""));
                let options = {
                    let mut sessions = self.mock.sessions.lock().unwrap();
                    let s = sessions.get_mut(&*self.sid.0).expect("the turn's session");
                    config::set_from_script(&mut s.mode, &mut s.config, id, value.trim())
                        .map(|()| config::options(&s.mode, &s.config))
                };
                match options {
                    Ok(options) => self.update(schema::SessionUpdate::ConfigOptionUpdate(
                        schema::ConfigOptionUpdate::new(options),
                    ))?,
                    Err(why) => self.say(format!("config-set: {why}"))?,
                }
            }
            "title" => self.update(schema::SessionUpdate::SessionInfoUpdate(
                schema::SessionInfoUpdate::new().title(rest.to_owned()),
            ))?,
            "blocks" => {
                let report = if self.blocks.is_empty() {
                    "none".to_owned()
                } else {
                    self.blocks.join("; ")
                };
                self.say(format!("blocks: {report}"))?;
            }
            "usage" => {
                let mut words = rest.split_whitespace();
                let used = words.next().and_then(|w| w.parse().ok()).unwrap_or(100);
                let size = words.next().and_then(|w| w.parse().ok()).unwrap_or(1000);
                let cost = words.next().and_then(|w| w.parse::<f64>().ok());
                self.update(schema::SessionUpdate::UsageUpdate(
                    schema::UsageUpdate::new(used, size)
                        .cost(cost.map(|c| schema::Cost::new(c, "USD"))),
                ))?;
            }
            "unknown-update" => self.mock.raw_line(
                serde_json::json!({
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": &*self.sid.0,
                        "update": { "sessionUpdate": "mystery_kind", "x": 1 }
                    }
                })
                .to_string()
                .into_bytes(),
            ),
            "later" => {
                let mut words = rest.splitn(4, ' ');
                let ms: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let marker = PathBuf::from(words.next().unwrap_or_default());
                let (what, arg) = (
                    words.next().unwrap_or_default().to_string(),
                    words.next().unwrap_or_default().to_string(),
                );
                let (cx, sid) = (self.cx.clone(), self.sid.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let result = if what == "write" {
                        let (path, content) = arg.split_once(' ').unwrap_or((&arg, ""));
                        cx.send_request(schema::WriteTextFileRequest::new(sid, path, content))
                            .block_task()
                            .await
                            .map(|_| ())
                    } else {
                        cx.send_request(
                            schema::CreateTerminalRequest::new(sid, "sh")
                                .args(vec!["-c".into(), arg.clone()]),
                        )
                        .block_task()
                        .await
                        .map(|_| ())
                    };
                    let report = match result {
                        Ok(()) => "ok".to_string(),
                        Err(e) => format!("error {} {}", e.code.value(), e.message),
                    };
                    let _ = std::fs::write(marker, report);
                });
            }
            "hostile-log" => {
                let sid = &*self.sid.0;
                for line in [
                    serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                        "sessionId": sid, "update": {"sessionUpdate": format!("kind{HOSTILE}")}}}),
                    serde_json::json!({"jsonrpc": "2.0", "method": format!("x/note{HOSTILE}"),
                        "params": {"sessionId": sid}}),
                    serde_json::json!({"jsonrpc": "2.0", "id": "hostile-1",
                        "method": format!("x/ask{HOSTILE}"), "params": {"sessionId": sid}}),
                ] {
                    self.mock.raw_line(line.to_string().into_bytes());
                }
            }
            "garbage" => {
                self.mock.raw_line(b"this is not json {".to_vec());
                self.mock.raw_line(b"\xff\xfe not utf-8".to_vec());
                self.mock.raw_line(b"[1,2,3]".to_vec());
            }
            "flood" | "flood-timed" => {
                // Pre-formatted lines straight to stdout: measures the client, not our SDK.
                let mut words = rest.split_whitespace();
                let n: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let rate: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let sid = serde_json::to_string(&*self.sid.0).unwrap_or_default();
                let start = std::time::Instant::now();
                for i in 0..n {
                    let text = if cmd == "flood-timed" {
                        let due = start + Duration::from_secs_f64(i as f64 / rate.max(1) as f64);
                        tokio::time::sleep_until(due.into()).await;
                        let now = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .unwrap_or_default()
                            .as_nanos();
                        format!("t{now} ")
                    } else {
                        format!("c{i} ")
                    };
                    self.mock.raw_line(
                        format!(
                            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":{sid},\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"{text}\"}}}}}}}}"
                        )
                        .into_bytes(),
                    );
                }
            }
            "mcp" => {
                let (tool, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
                let server = self.mock.sessions.lock().unwrap()[&*self.sid.0]
                    .mcp_servers
                    .iter()
                    .filter_map(|s| match s {
                        schema::McpServer::Stdio(s) => Some(s.clone()),
                        _ => None,
                    })
                    .min_by_key(|s| s.name != "ax-code-screen");
                let report = match server {
                    None => "mcp: error no stdio MCP server was given".to_string(),
                    Some(server) => match call_mcp_tool(&server, tool, args).await {
                        Ok((tools, result)) => format!("mcp: tools={tools} result={result}"),
                        Err(e) => format!("mcp: error {e}"),
                    },
                };
                self.say(report)?;
            }
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(rest.parse().unwrap_or(0))).await;
            }
            "wait-cancel" => {
                let (flag, notify) = self.cancelled();
                while !flag.load(Ordering::SeqCst) {
                    let wait = notify.notified();
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    wait.await;
                }
                return Ok(Some(schema::StopReason::Cancelled));
            }
            "ignore-cancel" => std::future::pending::<()>().await,
            "crash-in" => {
                // Dies in the middle of whatever comes next (e.g. a permission request that
                // is still waiting for its answer).
                let ms = rest.parse().unwrap_or(0);
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    eprintln!("mock-agent: crashing on purpose while waiting");
                    std::process::exit(3);
                });
            }
            "crash" => {
                eprintln!("mock-agent: crashing on purpose mid-turn");
                // Let what was already said reach the client first.
                tokio::time::sleep(Duration::from_millis(200)).await;
                std::process::exit(3);
            }
            "auth" => return Err(acp::Error::auth_required()),
            "stop" => {
                let reason = match rest {
                    "max_tokens" => schema::StopReason::MaxTokens,
                    "max_turn_requests" => schema::StopReason::MaxTurnRequests,
                    "refusal" => schema::StopReason::Refusal,
                    "cancelled" => schema::StopReason::Cancelled,
                    _ => schema::StopReason::EndTurn,
                };
                return Ok(Some(reason));
            }
            "later-commands" => {
                let mut words = rest.split_whitespace();
                let ms: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
                let list: Vec<_> = words
                    .map(|name| schema::AvailableCommand::new(name, format!("The {name} command")))
                    .collect();
                let (cx, sid) = (self.cx.clone(), self.sid.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    let _ = cx.send_notification(schema::SessionNotification::new(
                        sid,
                        schema::SessionUpdate::AvailableCommandsUpdate(
                            schema::AvailableCommandsUpdate::new(list),
                        ),
                    ));
                });
            }
            "commands" => {
                let list = rest
                    .split_whitespace()
                    .map(|name| schema::AvailableCommand::new(name, format!("The {name} command")))
                    .collect();
                self.update(schema::SessionUpdate::AvailableCommandsUpdate(
                    schema::AvailableCommandsUpdate::new(list),
                ))?
            }
            "" => {}
            other if other.len() > 1 && other.starts_with('/') => {
                self.say(format!("command {}: {rest}", &other[1..]))?
            }
            other => self.say(format!("unknown command {other:?}\n"))?,
        }
        Ok(None)
    }
}

/// Calls `tool` on a stdio MCP server the way an agent would: start it, `initialize`,
/// `notifications/initialized`, `tools/list`, `tools/call`; returns the tool names and the
/// call's text.
async fn call_mcp_tool(
    server: &schema::McpServerStdio,
    tool: &str,
    args: &str,
) -> Result<(String, String), String> {
    let arguments: serde_json::Value = serde_json::from_str(args).map_err(|e| e.to_string())?;
    let mut child = tokio::process::Command::new(&server.command)
        .args(&server.args)
        .envs(server.env.iter().map(|e| (&e.name, &e.value)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", server.command.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut next_id = 0;
    let mut call = async |method: &str,
                          params: serde_json::Value|
           -> Result<serde_json::Value, String> {
        if method.starts_with("notifications/") {
            let msg = serde_json::json!({"jsonrpc": "2.0", "method": method});
            stdin
                .write_all(format!("{msg}\n").as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            return Ok(serde_json::Value::Null);
        }
        next_id += 1;
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params});
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        loop {
            let line = lines
                .next_line()
                .await
                .map_err(|e| e.to_string())?
                .ok_or("the MCP server closed its output")?;
            let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if v["id"] == next_id {
                if let Some(err) = v.get("error") {
                    return Err(err.to_string());
                }
                return Ok(v["result"].clone());
            }
        }
    };
    call(
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "ax-mock-agent", "version": env!("CARGO_PKG_VERSION")}}),
    )
    .await?;
    call("notifications/initialized", serde_json::Value::Null).await?;
    let tools = call("tools/list", serde_json::json!({})).await?;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let names = names.join(",");
    let result = call(
        "tools/call",
        serde_json::json!({"name": tool, "arguments": arguments}),
    )
    .await?;
    let text: String = result["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["text"].as_str()).collect())
        .unwrap_or_default();
    let text = if result["isError"] == true {
        format!("error {text}")
    } else {
        text
    };
    let _ = child.kill().await;
    Ok((names, text))
}

/// A trivial stdio MCP server with one tool, `screen`, that echoes its arguments; for tests
/// of the MCP servers a session hands its agent.
pub fn run_mcp_server() -> ! {
    use std::io::{BufRead, Write};
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue;
        };
        let result = match msg["method"].as_str() {
            Some("initialize") => serde_json::json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "mock-screen", "version": "1"}}),
            Some("tools/list") => serde_json::json!({"tools": [{"name": "screen",
                "description": "echo", "inputSchema": {"type": "object"}}]}),
            Some("tools/call") => serde_json::json!({"content": [{"type": "text",
                "text": format!("{} called with {}", msg["params"]["name"].as_str().unwrap_or("?"),
                    msg["params"]["arguments"])}]}),
            _ => serde_json::json!({}),
        };
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    std::process::exit(0)
}

async fn run_turn(
    mock: Arc<Mock>,
    cx: ConnectionTo<Client>,
    req: schema::PromptRequest,
) -> Result<schema::PromptResponse, acp::Error> {
    let script: String = req
        .prompt
        .iter()
        .filter_map(|b| match b {
            schema::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let blocks = req.prompt.iter().filter_map(describe_block).collect();
    let Some(turn_lock) = mock
        .sessions
        .lock()
        .unwrap()
        .get(&*req.session_id.0)
        .map(|s| s.turn_lock.clone())
    else {
        return Err(schema::Error::session_not_found(req.session_id.clone()).into());
    };
    // With queueing, a prompt that came during a turn waits for it (docs/agents.md §10).
    let _queued = if env_flag("AX_MOCK_QUEUE") {
        Some(turn_lock.lock_owned().await)
    } else {
        None
    };
    // Claude's adapter after a cancel (docs/agents.md §10): one prompt late.
    let script = if env_flag("AX_MOCK_STALE_CANCEL") {
        let mut sessions = mock.sessions.lock().unwrap();
        let Some(s) = sessions.get_mut(&*req.session_id.0) else {
            return Err(schema::Error::session_not_found(req.session_id.clone()).into());
        };
        if std::mem::take(&mut s.stale_end) {
            s.held = Some(script);
            return Ok(schema::PromptResponse::new(schema::StopReason::EndTurn));
        }
        match s.held.take() {
            Some(held) => format!("{held}\n{script}"),
            None => script,
        }
    } else {
        script
    };
    let mut turn = Turn {
        cx,
        sid: req.session_id.clone(),
        mock: mock.clone(),
        blocks,
        said: String::new(),
        tools: Vec::new(),
        used: 0,
    };
    let mut stop = schema::StopReason::EndTurn;
    let step_usage = env_flag("AX_MOCK_STEP_USAGE");
    for line in script.lines() {
        let end = turn.run(line.trim()).await?;
        if step_usage {
            // As Claude does after each step: the context grows, the cost adds up.
            turn.used += 1000;
            let cost = turn.used as f64 / 100_000.0;
            turn.update(schema::SessionUpdate::UsageUpdate(
                schema::UsageUpdate::new(turn.used, 200_000).cost(schema::Cost::new(cost, "USD")),
            ))?;
        }
        if let Some(reason) = end {
            stop = reason;
            break;
        }
    }
    mock.record(&req.session_id.0, &script, &turn.said, &turn.tools);
    Ok(schema::PromptResponse::new(stop))
}

/// A prompt block other than text, as `blocks` reports it.
fn describe_block(block: &schema::ContentBlock) -> Option<String> {
    match block {
        schema::ContentBlock::Text(_) => None,
        schema::ContentBlock::Image(i) => {
            Some(format!("image {} {}", i.mime_type, base64_len(&i.data)))
        }
        schema::ContentBlock::ResourceLink(l) => Some(format!("link {} {}", l.name, l.uri)),
        schema::ContentBlock::Resource(r) => Some(match &r.resource {
            schema::EmbeddedResourceResource::TextResourceContents(t) => {
                format!("resource {} {}", t.uri, t.text.len())
            }
            schema::EmbeddedResourceResource::BlobResourceContents(b) => {
                format!("resource {} {}", b.uri, base64_len(&b.blob))
            }
            _ => "resource (unknown kind)".to_owned(),
        }),
        _ => Some("other".to_owned()),
    }
}

/// The number of bytes a base64 text decodes to (padding aware; whitespace not expected).
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4) * 3 - padding.min(2)
}

/// The line `AX_MOCK_INPUT_LOG` ends with once stdin has closed.
pub const INPUT_LOG_EOF: &str = "<stdin closed>";

/// `AX_MOCK_INPUT_LOG=PATH`: the file every line read from stdin is appended to.
fn input_log() -> Option<std::fs::File> {
    let path = std::env::var_os("AX_MOCK_INPUT_LOG")?;
    match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("mock-agent: cannot open the input log: {e}");
            None
        }
    }
}

/// Serves ACP on this process's stdin/stdout until stdin closes, then exits the process.
pub fn run() -> ! {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let code = runtime.block_on(serve());
    std::process::exit(code)
}

async fn serve() -> i32 {
    let mock = Arc::new(Mock::default());
    if env_flag("AX_MOCK_IGNORE_TERM")
        && let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    {
        tokio::spawn(async move {
            while term.recv().await.is_some() {
                eprintln!("mock-agent: ignoring SIGTERM");
            }
        });
    }

    // stdout is one writer task: the SDK's lines and the raw lines `garbage` injects.
    let (raw_tx, mut raw_rx) = futures::channel::mpsc::unbounded::<Vec<u8>>();
    *mock.raw.lock().unwrap() = Some(raw_tx.clone());
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        let mut buf = Vec::new();
        while let Some(line) = raw_rx.next().await {
            // Everything queued goes out in one write: tokio's stdout costs a blocking-pool
            // round trip per write.
            buf.clear();
            buf.extend_from_slice(&line);
            buf.push(b'\n');
            while buf.len() < 256 * 1024 {
                match raw_rx.try_recv() {
                    Ok(more) => {
                        buf.extend_from_slice(&more);
                        buf.push(b'\n');
                    }
                    _ => break,
                }
            }
            if out.write_all(&buf).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    let sink = raw_tx
        .with(|s: String| {
            futures::future::ready(Ok::<_, futures::channel::mpsc::SendError>(s.into_bytes()))
        })
        .sink_map_err(|_| std::io::Error::other("stdout closed"));
    let stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let incoming =
        futures::stream::unfold((stdin, input_log()), |(mut lines, mut log)| async move {
            let next = lines.next_line().await;
            if let Some(log) = log.as_mut() {
                // On disk before the agent acts on the line, and the end of stdin is marked
                // before the agent can exit.
                use std::io::Write;
                let _ = match &next {
                    Ok(Some(l)) => writeln!(log, "{l}"),
                    Ok(None) => writeln!(log, "{INPUT_LOG_EOF}"),
                    Err(_) => Ok(()),
                };
            }
            match next {
                Ok(Some(l)) => Some((Ok(l), (lines, log))),
                Ok(None) => None,
                Err(e) => Some((Err(e), (lines, log))),
            }
        });

    let m = mock.clone();
    let m2 = mock.clone();
    let m3 = mock.clone();
    let m4 = mock.clone();
    let m5 = mock.clone();
    let m6 = mock.clone();
    let m7 = mock.clone();
    let m8 = mock.clone();
    let result = Agent
        .v1()
        .name("ax-mock-agent")
        .on_receive_request(
            async move |_req: schema::InitializeRequest, responder: acp::v1::Responder<schema::InitializeResponse>, _cx| {
                if env_flag("AX_MOCK_HOSTILE") {
                    eprintln!("mock-agent: starting {HOSTILE} (error output)");
                }
                let version: u16 = std::env::var("AX_MOCK_PROTOCOL_VERSION")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                if version != 1 {
                    // The SDK's v1 agent side always answers version 1; write the answer of
                    // an agent that speaks another version by hand.
                    let id = serde_json::to_value(responder.raw_id()).unwrap_or_default();
                    m7.raw_line(
                        serde_json::json!({
                            "jsonrpc": "2.0",
                            "id": id,
                            "result": {"protocolVersion": version, "agentCapabilities": {}, "authMethods": []}
                        })
                        .to_string()
                        .into_bytes(),
                    );
                    // Answered above: the SDK must not answer it again.
                    std::mem::forget(responder);
                    return Ok(());
                }
                let mut session_caps = schema::SessionCapabilities::new();
                if env_flag("AX_MOCK_RESUME") {
                    session_caps = session_caps.resume(schema::SessionResumeCapabilities::new());
                }
                let mut auth = Vec::new();
                let hostile = env_flag("AX_MOCK_HOSTILE");
                if hostile {
                    auth.push(schema::AuthMethod::Agent(
                        schema::AuthMethodAgent::new(format!("key{HOSTILE}"), format!("Key{HOSTILE}"))
                            .description(format!("set{HOSTILE}")),
                    ));
                }
                if env_flag("AX_MOCK_REQUIRE_AUTH") {
                    auth.push(schema::AuthMethod::Agent(
                        schema::AuthMethodAgent::new("mock-key", "Mock API key")
                            .description("set MOCK_API_KEY in the agent's env".to_string()),
                    ));
                }
                responder.respond(
                    schema::InitializeResponse::new(ProtocolVersion::from(version))
                        .agent_capabilities({
                            let mut caps = schema::AgentCapabilities::new()
                                .load_session(env_flag("AX_MOCK_LOAD"))
                                .session_capabilities(session_caps)
                                .prompt_capabilities(
                                    schema::PromptCapabilities::new()
                                        .image(!env_flag("AX_MOCK_NO_IMAGE"))
                                        .embedded_context(!env_flag("AX_MOCK_NO_IMAGE")),
                                );
                            if env_flag("AX_MOCK_QUEUE") {
                                // Claude's extension, where Claude's adapter puts it.
                                let meta = serde_json::json!({"claudeCode": {"promptQueueing": true}});
                                caps = caps.meta(meta.as_object().cloned());
                            }
                            caps
                        })
                        .auth_methods(auth)
                        .agent_info(if hostile {
                            schema::Implementation::new(format!("mock{HOSTILE}"), format!("1.0{HOSTILE}"))
                                .title(format!("title{HOSTILE}"))
                        } else {
                            schema::Implementation::new("ax-mock-agent", env!("CARGO_PKG_VERSION"))
                                .title("ax-code mock agent".to_string())
                        }),
                )
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                if env_flag("AX_MOCK_REQUIRE_AUTH") {
                    return responder.respond_with_error(acp::Error::auth_required());
                }
                let n = m.next.fetch_add(1, Ordering::SeqCst) + 1;
                let id = format!("mock-{}-{n}", std::process::id());
                m.open(&id, req.mcp_servers);
                if let Some(dir) = state_dir() {
                    let _ = std::fs::write(dir.join(format!("{id}.jsonl")), "");
                }
                let (mode, options) = m.config_options(&id);
                responder.respond(
                    schema::NewSessionResponse::new(id.clone())
                        .modes(modes(&mode))
                        .config_options(options),
                )?;
                // As Claude does, right after the answer.
                cx.send_notification(schema::SessionNotification::new(
                    id,
                    schema::SessionUpdate::AvailableCommandsUpdate(
                        schema::AvailableCommandsUpdate::new(vec![
                            schema::AvailableCommand::new("compact", "Clear history, keep a summary"),
                            schema::AvailableCommand::new("review", "Review the changes").input(
                                schema::AvailableCommandInput::Unstructured(
                                    schema::UnstructuredCommandInput::new("what to review"),
                                ),
                            ),
                        ]),
                    ),
                ))
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let Some(history) = m2.history(&req.session_id.0) else {
                    return responder
                        .respond_with_error(schema::Error::session_not_found(req.session_id).into());
                };
                m2.open(&req.session_id.0, req.mcp_servers.clone());
                let gemini = std::env::var("AX_MOCK_REPLAY").is_ok_and(|v| v == "gemini");
                let mut updates = Vec::new();
                for turn in history {
                    updates.push(schema::SessionUpdate::UserMessageChunk(
                        schema::ContentChunk::new(text(turn.user)),
                    ));
                    updates.push(schema::SessionUpdate::AgentMessageChunk(
                        schema::ContentChunk::new(text(turn.agent)),
                    ));
                    if gemini {
                        for (id, title) in turn.tools {
                            updates.push(schema::SessionUpdate::ToolCall(
                                schema::ToolCall::new(id, title)
                                    .kind(schema::ToolKind::Execute)
                                    .status(schema::ToolCallStatus::Completed),
                            ));
                        }
                    }
                }
                let send = |update| {
                    cx.send_notification(schema::SessionNotification::new(
                        req.session_id.clone(),
                        update,
                    ))
                };
                // Gemini CLI answers the load while its replay is still going out.
                let later = if gemini && updates.len() > 1 {
                    updates.split_off(1)
                } else {
                    Vec::new()
                };
                for update in updates {
                    send(update)?;
                }
                let (mode, options) = m2.config_options(&req.session_id.0);
                responder.respond(
                    schema::LoadSessionResponse::new()
                        .modes(modes(&mode))
                        .config_options(options),
                )?;
                for update in later {
                    send(update)?;
                }
                Ok(())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::ResumeSessionRequest, responder, _cx| {
                if m5.history(&req.session_id.0).is_none() {
                    return responder
                        .respond_with_error(schema::Error::session_not_found(req.session_id).into());
                }
                m5.open(&req.session_id.0, req.mcp_servers.clone());
                let (mode, options) = m5.config_options(&req.session_id.0);
                responder.respond(
                    schema::ResumeSessionResponse::new()
                        .modes(modes(&mode))
                        .config_options(options),
                )
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::SetSessionModeRequest, responder, _cx| {
                if let Some(s) = m6.sessions.lock().unwrap().get_mut(&*req.session_id.0) {
                    s.mode = req.mode_id.0.to_string();
                }
                responder.respond(schema::SetSessionModeResponse::new())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::SetSessionConfigOptionRequest, responder, _cx| {
                if env_flag("AX_MOCK_NO_CONFIG") {
                    return responder.respond_with_error(acp::Error::method_not_found());
                }
                let answer = {
                    let mut sessions = m8.sessions.lock().unwrap();
                    match sessions.get_mut(&*req.session_id.0) {
                        None => Err(schema::Error::session_not_found(req.session_id.clone()).into()),
                        Some(s) => config::set(&mut s.mode, &mut s.config, &req.config_id.0, &req.value)
                            .map(|()| config::options(&s.mode, &s.config))
                            .map_err(|why| acp::Error::invalid_params().data(why)),
                    }
                };
                match answer {
                    Ok(options) => responder.respond(schema::SetSessionConfigOptionResponse::new(options)),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::PromptRequest, responder, cx: ConnectionTo<Client>| {
                let mock = m3.clone();
                // Reset here, in order with the messages around it: a `session/cancel` right
                // behind this prompt must not be forgotten by the turn task starting later.
                if let Some(s) = mock.sessions.lock().unwrap().get(&*req.session_id.0) {
                    s.cancelled.store(false, Ordering::SeqCst);
                }
                let turn_cx = cx.clone();
                cx.spawn(async move {
                    match run_turn(mock, turn_cx, req).await {
                        Ok(r) => responder.respond(r),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            acp::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: schema::CancelNotification, _cx| {
                if let Some(s) = m4.sessions.lock().unwrap().get_mut(&*n.session_id.0) {
                    s.cancelled.store(true, Ordering::SeqCst);
                    s.cancel.notify_waiters();
                    s.stale_end = env_flag("AX_MOCK_STALE_CANCEL");
                }
                Ok(())
            },
            acp::on_receive_notification!(),
        )
        .connect_to(Lines::new(sink, incoming))
        .await;
    drop(mock);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    if env_flag("AX_MOCK_IGNORE_EOF") {
        // Like some real adapters: keep running after stdin closes.
        eprintln!("mock-agent: stdin closed, staying alive");
        std::future::pending::<()>().await;
    }
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mock-agent: connection ended: {e}");
            1
        }
    }
}
