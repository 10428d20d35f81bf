//! The built-in `shell` agent as an ACP agent served inside the backend's process
//! (docs/backend.md §3, "One agent model"): the prompt's text is a command line for `sh -c`,
//! asked about first and run in the project directory.
//!
//! It lives here, in `ax_acp`, rather than in `ax_agents`: it is an ACP *agent* on the
//! `agent-client-protocol` crate's agent side, which this crate already depends on, and it is
//! served over this crate's in-memory transport ([`AgentHandle::start_in_memory`]), so both
//! ends of that transport are read and changed together. `ax_agents` stays what knows no
//! protocol (docs/architecture.md: agents → protocol, core only); the command itself still
//! runs through `ax_agents::process`, by way of the client's terminals.
//!
//! A turn, as every ACP agent's:
//!
//! 1. `session/prompt`: the text blocks joined with newlines are the command line; each
//!    `resource_link` a file given to it (as `"$1"`, `"$2"`, … and in `AX_ATTACHMENTS`, one
//!    path per line, checked again right before the command starts). Images are refused.
//! 2. A `tool_call` of kind `execute` titled with the command line (`rawInput`: the command
//!    and the files), then `session/request_permission` with the options [`ALLOW_ONCE`],
//!    [`ALLOW_ALWAYS`] and [`REJECT`] — unless the session allows always. "Always" is the
//!    backend's session flag: it tells the agent in the `_meta` of `session/new` and
//!    `session/load` ([`session_meta`]), and the agent keeps it for the session once the
//!    person chose it.
//! 3. Allowed: `terminal/create` of `sh -c LINE ax-code FILES…` in the session's directory,
//!    with `outputByteLimit` [`ShellConfig::output_limit`]; the client runs it through
//!    `ax_agents::process` (a process group of its own, the allowlisted environment, the
//!    agent's tag for the cleanup after a crash). The tool call shows the terminal, so the
//!    output streams into the call's content as it comes (bounded like every terminal card,
//!    `ax_protocol::turn::TERMINAL_OUTPUT_KEPT`), and the exit lands on the terminal.
//! 4. The exit is the tool call's status (`completed` for exit 0, else `failed`, with
//!    `rawOutput {exitCode, signal, truncated}`) and the turn ends `end_turn`. A rejection
//!    fails the call and ends the turn `cancelled` (nothing ran, so the person decides what
//!    comes next); `session/cancel` kills the command's process group and ends it
//!    `cancelled`.
//!
//! `session/load` is advertised and replays nothing: the transcript is the backend's, and a
//! command line carries no context to restore.

use std::{
    collections::HashMap,
    io,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use agent_client_protocol::{
    self as acp, Agent, Client, Lines,
    schema::ProtocolVersion,
    v1::{ConnectionTo, schema},
};
use ax_core::project::{self, Attachment};
use futures::{SinkExt, StreamExt};
use tokio::{io::AsyncWriteExt, sync::mpsc};
use tokio_util::sync::CancellationToken;

use crate::{
    process,
    runtime::{AcpEvent, AgentHandle, StartError, StartOptions},
};

/// The agent's name (and the session agent that is served by it).
pub const NAME: &str = "shell";
/// The option id that allows this command.
pub const ALLOW_ONCE: &str = "once";
/// The option id that allows this command and every later one of the session.
pub const ALLOW_ALWAYS: &str = "always";
/// The option id that refuses the command.
pub const REJECT: &str = "reject";
/// The `_meta` key of what the backend tells the agent at `session/new` and `session/load`.
pub const META_KEY: &str = "axCode";
/// Under [`META_KEY`]: `true` when the session allows every command without asking.
pub const META_ALWAYS: &str = "alwaysAllow";

/// How the agent runs commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellConfig {
    /// The output a command's terminal keeps (`outputByteLimit`).
    pub output_limit: u64,
}

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            output_limit: crate::agent_terminal::DEFAULT_OUTPUT_LIMIT,
        }
    }
}

/// The `_meta` that tells the agent whether the session allows always (set it as
/// [`StartOptions::session_meta`]).
pub fn session_meta(always: bool) -> schema::Meta {
    let mut meta = schema::Meta::new();
    meta.insert(
        META_KEY.to_string(),
        serde_json::json!({ META_ALWAYS: always }),
    );
    meta
}

fn always_of(meta: Option<&schema::Meta>) -> bool {
    meta.and_then(|m| m.get(META_KEY))
        .and_then(|v| v.get(META_ALWAYS))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// Starts the agent inside this process and runs `initialize` (see
/// [`AgentHandle::start_in_memory`]).
pub async fn start(
    options: StartOptions,
    config: ShellConfig,
) -> Result<(AgentHandle, mpsc::UnboundedReceiver<AcpEvent>), StartError> {
    AgentHandle::start_in_memory(NAME, options, move |io| serve(io, config)).await
}

struct Session {
    cwd: PathBuf,
    always: bool,
    /// The running turn's cancel (replaced at each prompt).
    cancel: CancellationToken,
}

struct Shell {
    config: ShellConfig,
    sessions: Mutex<HashMap<String, Session>>,
    next: AtomicU64,
}

impl Shell {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self, id: &str, cwd: PathBuf, always: bool) {
        self.lock().insert(
            id.to_string(),
            Session {
                cwd,
                always,
                cancel: CancellationToken::new(),
            },
        );
    }

    /// A prompt arrives: its directory and a fresh cancel, in order with the messages around
    /// it (a `session/cancel` right behind it reaches this turn).
    fn begin(&self, id: &str) -> Option<(PathBuf, CancellationToken)> {
        let mut sessions = self.lock();
        let session = sessions.get_mut(id)?;
        session.cancel = CancellationToken::new();
        Some((session.cwd.clone(), session.cancel.clone()))
    }

    fn cancel(&self, id: &str) {
        if let Some(s) = self.lock().get(id) {
            s.cancel.cancel();
        }
    }

    fn always(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(|s| s.always)
    }

    fn allow_always(&self, id: &str) {
        if let Some(s) = self.lock().get_mut(id) {
            s.always = true;
        }
    }
}

/// Serves the agent on `io` (its end of the transport) until the client closes it.
pub async fn serve(io: tokio::io::DuplexStream, config: ShellConfig) {
    let (read, mut write) = tokio::io::split(io);
    let (out_tx, mut out_rx) = futures::channel::mpsc::unbounded::<String>();
    let writer = tokio::spawn(async move {
        while let Some(line) = out_rx.next().await {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if write.write_all(&bytes).await.is_err() {
                break;
            }
        }
        // The client reads the end of the output as the agent's end.
        let _ = write.shutdown().await;
    });
    let sink = out_tx.sink_map_err(|_| io::Error::other("the client's end is closed"));
    let incoming = process::bounded_lines(read, process::MAX_LINE_BYTES);
    let shell = Arc::new(Shell {
        config,
        sessions: Mutex::new(HashMap::new()),
        next: AtomicU64::new(0),
    });
    let (s1, s2, s3, s4) = (shell.clone(), shell.clone(), shell.clone(), shell);
    let result = Agent
        .v1()
        .name(NAME)
        .on_receive_request(
            async move |_req: schema::InitializeRequest,
                        responder: acp::v1::Responder<schema::InitializeResponse>,
                        _cx| {
                responder.respond(
                    schema::InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(schema::AgentCapabilities::new().load_session(true))
                        .agent_info(
                            schema::Implementation::new(NAME, env!("CARGO_PKG_VERSION"))
                                .title("ax-code shell".to_string()),
                        ),
                )
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::NewSessionRequest, responder, _cx: ConnectionTo<Client>| {
                let n = s1.next.fetch_add(1, Ordering::SeqCst) + 1;
                let id = format!("shell-{n}");
                s1.open(&id, req.cwd, always_of(req.meta.as_ref()));
                responder.respond(schema::NewSessionResponse::new(id))
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::LoadSessionRequest, responder, _cx: ConnectionTo<Client>| {
                // Nothing to replay: the transcript is the backend's.
                s2.open(&req.session_id.0, req.cwd, always_of(req.meta.as_ref()));
                responder.respond(schema::LoadSessionResponse::new())
            },
            acp::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: schema::PromptRequest, responder, cx: ConnectionTo<Client>| {
                let Some((cwd, cancel)) = s3.begin(&req.session_id.0) else {
                    return responder.respond_with_error(
                        schema::Error::session_not_found(req.session_id).into(),
                    );
                };
                let (shell, turn_cx) = (s3.clone(), cx.clone());
                cx.spawn(async move {
                    let turn = Turn {
                        shell,
                        cx: turn_cx,
                        sid: req.session_id.clone(),
                        cwd,
                        cancel,
                    };
                    match turn.run(&req.prompt).await {
                        Ok(r) => responder.respond(r),
                        Err(e) => responder.respond_with_error(e),
                    }
                })
            },
            acp::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: schema::CancelNotification, _cx| {
                s4.cancel(&n.session_id.0);
                Ok(())
            },
            acp::on_receive_notification!(),
        )
        .connect_to(Lines::new(sink, incoming))
        .await;
    if let Err(e) = result {
        tracing::debug!(error = %e, "the shell agent's connection ended with an error");
    }
    let _ = writer.await;
}

/// One prompt of one session.
struct Turn {
    shell: Arc<Shell>,
    cx: ConnectionTo<Client>,
    sid: schema::SessionId,
    cwd: PathBuf,
    cancel: CancellationToken,
}

fn invalid(message: impl Into<String>) -> acp::Error {
    acp::Error::invalid_params().data(message.into())
}

fn end(reason: schema::StopReason) -> Result<schema::PromptResponse, acp::Error> {
    Ok(schema::PromptResponse::new(reason))
}

impl Turn {
    fn update(&self, update: schema::SessionUpdate) -> Result<(), acp::Error> {
        self.cx
            .send_notification(schema::SessionNotification::new(self.sid.clone(), update))
    }

    fn call_update(
        &self,
        id: &str,
        fields: schema::ToolCallUpdateFields,
    ) -> Result<(), acp::Error> {
        self.update(schema::SessionUpdate::ToolCallUpdate(
            schema::ToolCallUpdate::new(id.to_string(), fields),
        ))
    }

    /// The call failed before its command ran: `why` is its content.
    fn failed(&self, id: &str, why: String) -> Result<(), acp::Error> {
        self.call_update(
            id,
            schema::ToolCallUpdateFields::new()
                .status(schema::ToolCallStatus::Failed)
                .content(vec![schema::ToolCallContent::from(why)]),
        )
    }

    async fn run(
        &self,
        prompt: &[schema::ContentBlock],
    ) -> Result<schema::PromptResponse, acp::Error> {
        let mut lines = Vec::new();
        let mut files = Vec::new();
        for block in prompt {
            match block {
                schema::ContentBlock::Text(t) => lines.push(t.text.as_str()),
                schema::ContentBlock::ResourceLink(link) => {
                    let Some(path) = link.uri.strip_prefix("file://") else {
                        return Err(invalid(format!("not a file: {}", link.uri)));
                    };
                    files.push(Attachment {
                        shown: link.name.clone(),
                        resolved: PathBuf::from(path),
                    });
                }
                _ => {
                    return Err(invalid(
                        "the shell agent takes a command line and files, nothing else",
                    ));
                }
            }
        }
        let line = lines.join("\n");
        if line.trim().is_empty() {
            return Err(invalid("a prompt needs a non-empty command line"));
        }
        let n = self.shell.next.fetch_add(1, Ordering::SeqCst) + 1;
        let call = format!("cmd-{n}");
        let shown: Vec<&str> = files.iter().map(|f| f.shown.as_str()).collect();
        self.update(schema::SessionUpdate::ToolCall(
            schema::ToolCall::new(call.clone(), line.clone())
                .kind(schema::ToolKind::Execute)
                .status(schema::ToolCallStatus::Pending)
                .raw_input(serde_json::json!({ "command": line, "attachments": shown })),
        ))?;
        if !self.shell.always(&self.sid.0) {
            let option = |id: &str, name: &str, kind| {
                schema::PermissionOption::new(id.to_string(), name, kind)
            };
            use schema::PermissionOptionKind as K;
            let asked = self
                .cx
                .send_request(schema::RequestPermissionRequest::new(
                    self.sid.clone(),
                    schema::ToolCallUpdate::new(call.clone(), schema::ToolCallUpdateFields::new()),
                    vec![
                        option(ALLOW_ONCE, "Allow once", K::AllowOnce),
                        option(ALLOW_ALWAYS, "Allow always in this session", K::AllowAlways),
                        option(REJECT, "Reject", K::RejectOnce),
                    ],
                ))
                .block_task()
                .await?;
            let chosen = match asked.outcome {
                schema::RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
                // Cancelled: the turn is being cancelled (the client marks the call).
                _ => return end(schema::StopReason::Cancelled),
            };
            match chosen.as_str() {
                ALLOW_ONCE => {}
                ALLOW_ALWAYS => self.shell.allow_always(&self.sid.0),
                _ => {
                    self.call_update(
                        &call,
                        schema::ToolCallUpdateFields::new().status(schema::ToolCallStatus::Failed),
                    )?;
                    return end(schema::StopReason::Cancelled);
                }
            }
        }
        if self.cancel.is_cancelled() {
            return end(schema::StopReason::Cancelled);
        }
        // Checked again now: a file swapped for a symlink since the prompt is refused.
        let mut paths = Vec::with_capacity(files.len());
        for file in &files {
            match project::recheck(&self.cwd, file) {
                Ok(path) => paths.push(path),
                Err(e) => {
                    self.failed(&call, format!("{e}; the command did not run"))?;
                    return end(schema::StopReason::EndTurn);
                }
            }
        }
        let mut listing = String::new();
        let mut args = vec!["-c".to_string(), line.clone(), "ax-code".to_string()];
        for path in &paths {
            // `recheck` refused anything that is not UTF-8 without control characters.
            let path = path.to_string_lossy();
            listing.push_str(&path);
            listing.push('\n');
            args.push(path.into_owned());
        }
        let created = self
            .cx
            .send_request(
                schema::CreateTerminalRequest::new(self.sid.clone(), "sh")
                    .args(args)
                    .env(vec![schema::EnvVariable::new("AX_ATTACHMENTS", listing)])
                    .cwd(self.cwd.clone())
                    .output_byte_limit(Some(self.shell.config.output_limit)),
            )
            .block_task()
            .await;
        let terminal = match created {
            Ok(c) => c.terminal_id,
            Err(e) => {
                self.failed(&call, format!("the command could not start: {}", e.message))?;
                return end(schema::StopReason::EndTurn);
            }
        };
        self.call_update(
            &call,
            schema::ToolCallUpdateFields::new()
                .status(schema::ToolCallStatus::InProgress)
                .content(vec![schema::ToolCallContent::Terminal(
                    schema::Terminal::new(terminal.clone()),
                )]),
        )?;
        // Awaited to the end, never dropped (a dropped request is a `$/cancel_request`).
        let wait = self
            .cx
            .send_request(schema::WaitForTerminalExitRequest::new(
                self.sid.clone(),
                terminal.clone(),
            ))
            .block_task();
        tokio::pin!(wait);
        let mut killed = false;
        let exit = loop {
            tokio::select! {
                exit = &mut wait => break exit,
                () = self.cancel.cancelled(), if !killed => {
                    killed = true;
                    let _ = self
                        .cx
                        .send_request(schema::KillTerminalRequest::new(
                            self.sid.clone(),
                            terminal.clone(),
                        ))
                        .block_task()
                        .await;
                }
            }
        };
        let output = self
            .cx
            .send_request(schema::TerminalOutputRequest::new(
                self.sid.clone(),
                terminal.clone(),
            ))
            .block_task()
            .await;
        let _ = self
            .cx
            .send_request(schema::ReleaseTerminalRequest::new(
                self.sid.clone(),
                terminal,
            ))
            .block_task()
            .await;
        if killed {
            // The client marks the call cancelled itself.
            return end(schema::StopReason::Cancelled);
        }
        let status = exit?.exit_status;
        let ok = status.exit_code == Some(0) && status.signal.is_none();
        self.call_update(
            &call,
            schema::ToolCallUpdateFields::new()
                .status(if ok {
                    schema::ToolCallStatus::Completed
                } else {
                    schema::ToolCallStatus::Failed
                })
                .raw_output(serde_json::json!({
                    "exitCode": status.exit_code,
                    "signal": status.signal,
                    "truncated": output.map(|o| o.truncated).unwrap_or(false),
                })),
        )?;
        end(schema::StopReason::EndTurn)
    }
}
