//! `ax-code mcp screen [--url URL] [--session ID]`: a stdio MCP server with one tool,
//! `screen`, that arranges the browser Control UI through the gateway (SPEC-gateway §4).
//!
//! Each call opens a gateway connection asking only for `operator.write` as a `mode: agent`
//! client, sends `ui.command` with `wait: true` and returns what every Control UI did.
//!
//! It holds only the screen credential (HMAC-SHA256 of the backend credential, see
//! `ax_protocol::SCREEN_CREDENTIAL_MESSAGE`): the gateway grants it at most `operator.write`
//! (no operator terminal) and the HTTP API refuses it. It is read from the backend's `screen/`
//! record (a file of its own) for exactly the URL; without `--url`, the registered backend of
//! the current directory's project is used. Only for a backend on another machine is it
//! derived from `$AX_CODE_SERVER_PASSWORD` (the password is dropped at once). The full
//! credential is never read. It never appears in arguments, logs or results.

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use ax_gateway::{
    ClientInfo, ClientMode, ConnectAuth, ConnectParams, Dock, ErrorCode, PROTOCOL, PanelKind,
    RequestFrame, Role, Scope, ServerFrame, SplitDirection, UiCommand, UiCommandParams,
    UiCommandResponse,
};
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
        ToolAnnotations,
    },
    service::RequestContext,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};

#[derive(Debug, Args)]
pub struct McpScreenArgs {
    /// Backend URL (default: the registered backend of the current project).
    #[arg(long)]
    pub url: Option<String>,
    /// The agent's own session: the default target of session actions.
    #[arg(long)]
    pub session: Option<String>,
}

const SERVER_NAME: &str = "ax-code-screen";
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

const INSTRUCTIONS: &str = "Arranges the AX Code Control UI (browser) for the person: split, \
focus, close or navigate session panes, show or hide the sidebar, the operator terminal and \
the browser panel. Every connected Control UI applies the command; the result says what each \
did. Session IDs come from `ax-code session list`. It changes presentation only: it cannot \
read the screen, click, type, or approve anything.";

const DESCRIPTION: &str = "Change the layout of every connected AX Code Control UI. \
Actions: split_right / split_down (open the target session in a new pane beside or below \
the pane of the agent's own session, else the active pane), close_pane (close the pane \
showing the target session; the last pane stays), focus (activate the pane showing the \
target session), navigate (show the target session in the active pane), sidebar_show / \
sidebar_hide, terminal_show / terminal_hide and browser_show / browser_hide (the operator \
terminal and browser panels; dock \"bottom\" or \"right\" only when showing). sessionKey (a \
session ID, ses_…) is the target for split, close_pane, focus and navigate; it defaults to \
the current session. The result lists, per UI (connId), outcome applied, ignored (with a \
reason) or no_answer. Fails with UNAVAILABLE when no Control UI is connected.";

/// The 11 actions, as the tool's input names them.
const ACTIONS: [&str; 11] = [
    "split_right",
    "split_down",
    "close_pane",
    "focus",
    "navigate",
    "sidebar_show",
    "sidebar_hide",
    "terminal_show",
    "terminal_hide",
    "browser_show",
    "browser_hide",
];

/// The tool's arguments (closed).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScreenInput {
    action: String,
    #[serde(default)]
    session_key: Option<String>,
    #[serde(default)]
    dock: Option<Dock>,
}

/// A tool-level failure: the gateway's error code (or the same vocabulary for local causes).
struct ToolError {
    code: ErrorCode,
    message: String,
}

impl ToolError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        ToolError::new(ErrorCode::InvalidRequest, message)
    }

    fn unavailable(message: impl Into<String>) -> Self {
        ToolError::new(ErrorCode::Unavailable, message)
    }
}

/// Map validated input to the gateway command.
fn command_for(input: &ScreenInput) -> Result<UiCommand, ToolError> {
    let session_key = input.session_key.clone();
    if let Some(key) = &session_key
        && !ax_protocol::SessionId::is_valid(key)
    {
        return Err(ToolError::invalid(
            "sessionKey must be a session ID (ses_ followed by 26 letters or digits)",
        ));
    }
    let showing = matches!(input.action.as_str(), "terminal_show" | "browser_show");
    if input.dock.is_some() && !showing {
        return Err(ToolError::invalid(
            "dock is allowed only with terminal_show or browser_show",
        ));
    }
    let session_action = matches!(
        input.action.as_str(),
        "split_right" | "split_down" | "close_pane" | "focus" | "navigate"
    );
    if session_key.is_some() && !session_action {
        return Err(ToolError::invalid(format!(
            "sessionKey does not apply to {}",
            input.action
        )));
    }
    let panel = |panel, open| UiCommand::Panel {
        panel,
        open,
        dock: if open { input.dock } else { None },
    };
    Ok(match input.action.as_str() {
        "split_right" => UiCommand::Split {
            direction: SplitDirection::Right,
            session_key,
        },
        "split_down" => UiCommand::Split {
            direction: SplitDirection::Down,
            session_key,
        },
        "close_pane" => UiCommand::ClosePane { session_key },
        "focus" => UiCommand::Focus { session_key },
        "navigate" => UiCommand::Navigate { session_key },
        "sidebar_show" => UiCommand::Sidebar { visible: true },
        "sidebar_hide" => UiCommand::Sidebar { visible: false },
        "terminal_show" => panel(PanelKind::Terminal, true),
        "terminal_hide" => panel(PanelKind::Terminal, false),
        "browser_show" => panel(PanelKind::Browser, true),
        "browser_hide" => panel(PanelKind::Browser, false),
        other => {
            let shown: String = other.chars().take(40).collect();
            return Err(ToolError::invalid(format!(
                "unknown action {shown:?}: expected one of {}",
                ACTIONS.join(", ")
            )));
        }
    })
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": ACTIONS, "description": "What to change."},
            "sessionKey": {
                "type": "string",
                "pattern": "^ses_[0-9A-Za-z]{26}$",
                "description": "Target session for split_*, close_pane, focus, navigate (default: the current session)."
            },
            "dock": {
                "type": "string",
                "enum": ["bottom", "right"],
                "description": "Where to dock the panel; only with terminal_show or browser_show."
            }
        }
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["ok"],
        "properties": {
            "ok": {"type": "boolean"},
            "delivered": {"type": "integer", "minimum": 0, "description": "Control UIs the command was sent to."},
            "outcomes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["connId", "outcome"],
                    "properties": {
                        "connId": {"type": "string"},
                        "outcome": {"type": "string", "enum": ["applied", "ignored", "no_answer"]},
                        "reason": {"type": "string"}
                    }
                }
            },
            "error": {
                "type": "object",
                "additionalProperties": false,
                "required": ["code", "message"],
                "properties": {
                    "code": {
                        "type": "string",
                        "enum": ["INVALID_REQUEST", "FORBIDDEN", "UNAVAILABLE", "NOT_FOUND", "INTERNAL"]
                    },
                    "message": {"type": "string"}
                }
            }
        }
    })
}

fn tool() -> Tool {
    Tool::new("screen", DESCRIPTION, object(input_schema()))
        .with_title("Arrange the Control UI")
        .with_raw_output_schema(object(output_schema()))
        .with_annotations(
            ToolAnnotations::with_title("Arrange the Control UI")
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        )
}

fn error_result(e: ToolError) -> CallToolResult {
    CallToolResult::structured_error(json!({
        "ok": false,
        "error": {"code": e.code.as_str(), "message": e.message},
    }))
}

/// Where the backend is and how to prove it; resolved on first use and kept. `token` is the
/// screen credential, never the full one.
#[derive(Clone)]
struct Target {
    url: String,
    token: String,
}

impl Target {
    /// The server proves it holds the screen credential (`screenProof` of `/health`) before
    /// the connect frame carries it: whoever took a dead backend's port never receives it.
    async fn verify(&self) -> Result<(), ToolError> {
        let client = ax_client::Client::new(&self.url, &self.token)
            .map_err(|e| ToolError::invalid(e.to_string()))?;
        client
            .verify_screen()
            .await
            .map(|_| ())
            .map_err(|e| ToolError::unavailable(e.to_string()))
    }
}

struct Screen {
    url: Option<String>,
    session: Option<String>,
    target: Mutex<Option<Target>>,
}

impl Screen {
    async fn target(&self) -> Result<Target, ToolError> {
        let mut cached = self.target.lock().await;
        if let Some(t) = cached.as_ref() {
            return Ok(t.clone());
        }
        let t = match &self.url {
            Some(url) => match ax_client::credential_for_url(ax_client::Kind::Screen, url) {
                Some(token) => Target {
                    url: url.clone(),
                    token,
                },
                None => {
                    return Err(ToolError::unavailable(format!(
                        "no screen credential for {url}: no backend registered exactly this URL \
                         (use the URL `ax-code serve` printed; restart a backend of an older \
                         version); AX_CODE_SERVER_PASSWORD is used only for a backend on \
                         another machine"
                    )));
                }
            },
            None => {
                let cwd = std::env::current_dir()
                    .map_err(|e| ToolError::unavailable(format!("current directory: {e}")))?;
                let data = ax_protocol::local::data_dir().ok_or_else(|| {
                    ToolError::unavailable("no data directory: set AX_CODE_DATA_DIR or HOME")
                })?;
                match ax_client::discover(ax_client::Kind::Screen, &cwd, &data).await {
                    Some(found) => Target {
                        url: found.url,
                        token: found.credential,
                    },
                    None => {
                        return Err(ToolError::unavailable(
                            "no running backend for this project: start `ax-code serve` (or \
                             restart one of an older version) or pass --url",
                        ));
                    }
                }
            }
        };
        super::redact_secret(&t.token);
        *cached = Some(t.clone());
        Ok(t)
    }

    async fn call(&self, arguments: Option<JsonObject>) -> Result<UiCommandResponse, ToolError> {
        let input: ScreenInput =
            serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
                .map_err(|e| ToolError::invalid(format!("invalid screen arguments: {e}")))?;
        let command = command_for(&input)?;
        let params = UiCommandParams {
            command,
            session_key: self.session.clone(),
            wait: Some(true),
        };
        let target = self.target().await?;
        tokio::time::timeout(CALL_TIMEOUT, async {
            target.verify().await?;
            send_ui_command(&target, &params).await
        })
        .await
        .map_err(|_| ToolError::unavailable("the gateway did not answer in time"))?
    }
}

fn gateway_url(base: &str) -> Result<String, ToolError> {
    let base = base.trim_end_matches('/');
    let rest = if let Some(r) = base.strip_prefix("http://") {
        format!("ws://{r}")
    } else if let Some(r) = base.strip_prefix("https://") {
        format!("wss://{r}")
    } else {
        return Err(ToolError::invalid(format!(
            "--url must start with http:// or https://, got {base}"
        )));
    };
    Ok(format!("{rest}/gateway"))
}

fn unexpected(what: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Internal,
        format!("unexpected gateway frame: {what}"),
    )
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The next JSON frame; a close or an error ends the call as `UNAVAILABLE`.
async fn next_frame(ws: &mut Socket) -> Result<ServerFrame, ToolError> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => {
                return serde_json::from_str(&t).map_err(|_| unexpected("not a frame"));
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            Some(Ok(Message::Binary(_))) => return Err(unexpected("binary")),
            Some(Ok(Message::Close(f))) => {
                let why = f.map(|f| f.reason.to_string()).unwrap_or_default();
                return Err(ToolError::unavailable(
                    format!("the gateway closed the connection {why}")
                        .trim_end()
                        .to_string(),
                ));
            }
            Some(Err(e)) => return Err(ToolError::unavailable(format!("gateway: {e}"))),
            None => return Err(ToolError::unavailable("the gateway closed the connection")),
        }
    }
}

/// One connection: handshake with only `operator.write`, one `ui.command`, its response.
async fn send_ui_command(
    target: &Target,
    params: &UiCommandParams,
) -> Result<UiCommandResponse, ToolError> {
    let request = gateway_url(&target.url)?
        .into_client_request()
        .map_err(|e| ToolError::invalid(format!("bad backend URL: {e}")))?;
    let (mut ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot reach the gateway: {e}")))?;

    match next_frame(&mut ws).await? {
        ServerFrame::Event(e) if e.event == "connect.challenge" => {}
        _ => return Err(unexpected("expected connect.challenge")),
    }

    let connect = ConnectParams {
        min_protocol: PROTOCOL,
        max_protocol: PROTOCOL,
        client: ClientInfo {
            id: SERVER_NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            platform: std::env::consts::OS.into(),
            mode: ClientMode::Agent,
        },
        caps: Vec::new(),
        role: Role::Operator,
        scopes: vec![Scope::Write],
        auth: ConnectAuth {
            token: target.token.clone(),
        },
    };
    let send = |id: &str, method: &str, params: Value| {
        let frame = RequestFrame::new(id, method, params);
        Message::text(serde_json::to_string(&frame).unwrap_or_default())
    };
    let connect = serde_json::to_value(&connect).map_err(|_| unexpected("encode"))?;
    ws.send(send("connect", "connect", connect))
        .await
        .map_err(|e| ToolError::unavailable(format!("gateway: {e}")))?;
    let params = serde_json::to_value(params).map_err(|_| unexpected("encode"))?;

    let mut sent_command = false;
    let result = loop {
        let frame = match next_frame(&mut ws).await {
            Ok(f) => f,
            Err(e) => break Err(e),
        };
        let ServerFrame::Response(res) = frame else {
            continue;
        };
        if let Some(err) = res.error {
            break Err(ToolError::new(err.code, err.message));
        }
        match (res.id.as_str(), sent_command) {
            ("connect", false) => {
                ws.send(send("screen", "ui.command", params.clone()))
                    .await
                    .map_err(|e| ToolError::unavailable(format!("gateway: {e}")))?;
                sent_command = true;
            }
            ("screen", true) => {
                break serde_json::from_value::<UiCommandResponse>(
                    res.payload.unwrap_or(Value::Null),
                )
                .map_err(|_| unexpected("ui.command response"));
            }
            _ => {}
        }
    };
    let _ = ws.close(None).await;
    result
}

impl ServerHandler for Screen {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name.as_ref() != "screen" {
            let shown: String = request.name.chars().take(64).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {shown}"),
                None,
            ));
        }
        let result = match self.call(request.arguments).await {
            Ok(res) => match serde_json::to_value(&res) {
                Ok(v) => CallToolResult::structured(v),
                Err(_) => error_result(unexpected("encode")),
            },
            Err(e) => error_result(e),
        };
        Ok(result.into())
    }
}

pub fn run(args: McpScreenArgs) -> anyhow::Result<()> {
    super::log_for_stdio_mcp();
    if let Some(s) = &args.session
        && !ax_protocol::SessionId::is_valid(s)
    {
        anyhow::bail!(
            "--session {s:?}: expected a session ID (ses_ followed by 26 letters or digits)"
        );
    }
    if let Some(url) = &args.url {
        gateway_url(url).map_err(|e| anyhow::anyhow!(e.message))?;
    }
    let screen = Screen {
        url: args.url,
        session: args.session,
        target: Mutex::new(None),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let service = screen
            .serve(rmcp::transport::stdio_pipes())
            .await
            .context("MCP initialization failed")?;
        service.waiting().await.context("MCP service failed")?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(v: Value) -> Result<UiCommand, String> {
        let i: ScreenInput = serde_json::from_value(v).map_err(|e| e.to_string())?;
        command_for(&i).map_err(|e| e.message)
    }

    #[test]
    fn every_action_maps_to_its_command() {
        let s = "ses_0123456789abABCDEFGHIJKLMN";
        assert_eq!(
            input(json!({"action": "split_down", "sessionKey": s})).unwrap(),
            UiCommand::Split {
                direction: SplitDirection::Down,
                session_key: Some(s.into())
            }
        );
        assert_eq!(
            input(json!({"action": "terminal_show", "dock": "right"})).unwrap(),
            UiCommand::Panel {
                panel: PanelKind::Terminal,
                open: true,
                dock: Some(Dock::Right)
            }
        );
        assert_eq!(
            input(json!({"action": "sidebar_hide"})).unwrap(),
            UiCommand::Sidebar { visible: false }
        );
        for a in ACTIONS {
            assert!(input(json!({"action": a})).is_ok(), "{a}");
        }
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(input(json!({"action": "terminal_hide", "dock": "right"})).is_err());
        assert!(input(json!({"action": "focus", "dock": "right"})).is_err());
        assert!(
            input(
                json!({"action": "sidebar_show", "sessionKey": "ses_0123456789abABCDEFGHIJKLMN"})
            )
            .is_err()
        );
        assert!(input(json!({"action": "focus", "sessionKey": "nope"})).is_err());
        assert!(input(json!({"action": "zoom"})).is_err());
        assert!(input(json!({"action": "focus", "extra": 1})).is_err());
        assert!(input(json!({"action": "browser_show", "dock": "left"})).is_err());
    }

    #[test]
    fn gateway_url_from_base() {
        assert_eq!(
            gateway_url("http://127.0.0.1:4096/").ok().unwrap(),
            "ws://127.0.0.1:4096/gateway"
        );
        assert!(gateway_url("ftp://x").is_err());
    }
}
