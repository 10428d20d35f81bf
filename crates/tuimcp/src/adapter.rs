//! The MCP adapter behind `ax-code mcp tui --endpoint PATH` (docs/tuimcp.md §8).
//!
//! A stdio MCP server with two tools. It holds no backend credential; per tool call it
//! re-reads and re-checks `endpoint.json`, sends one frame, reads one frame and never retries.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, LazyLock},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
        ToolAnnotations,
    },
    service::{RequestContext, ServerInitializeError},
};
use serde_json::{Value, json};

use crate::{
    client::{self, Origin},
    endpoint_file::{EndpointFileError, read_endpoint_file},
    protocol::{Code, Request, Response},
    stdio::LineTransport,
};

/// The MCP server name.
pub const SERVER_NAME: &str = "ax-code-tuimcp";

const INSTRUCTIONS: &str = "Reads and navigates one running AX Code TUI that its user chose to \
share. Call get_view_context first; pass its instanceId, generation and revision, a \
session ID and a new random UUID requestId to select_session: every attempt, retries \
included, needs a new requestId. The person stays in charge: navigation is refused while \
they are active (blocked: true); back off then (2 s, doubling up to 30 s). Never retry \
blindly: on timeout_unknown or outcome_unknown, read the context to reconcile.";

const VIEW_DESCRIPTION: &str = "Read the shared TUI's bounded view: instanceId and \
generation (its identity), revision (changes whenever anything navigation depends on \
changes), route (home or session), sessionId (only on the session route), ready, and \
blocked (true while the person is busy in the TUI: navigation will be refused). Read this \
before every select_session. While blocked is true, back off before reading again: wait \
2 s, double the wait after each read that is still blocked, at most 30 s. It never returns \
transcripts, drafts, titles, paths or credentials, and changes nothing. Rejections: \
target_unavailable with detail tui_unreachable (the TUI is gone: closed, crashed, sharing \
revoked, or the endpoint path is wrong or unsafe; the person must share again and give you \
the new path); revoked (sharing ended while you called); busy (the TUI has too many \
connections open; nothing happened, read again shortly); unauthorized (the endpoint refused \
this client: another user or a stale endpoint file); invalid_request (this tool takes no \
arguments); internal_error (a bug).";

const SELECT_DESCRIPTION: &str = "Navigate the shared TUI to a session of its project. \
Pass instanceId, generation and revision exactly as the latest get_view_context returned \
them (revision as expectedRevision), the target sessionId (ses_ and 26 letters or digits, \
from the ordinary session interfaces) and a new random UUID as requestId. Every attempt \
needs a new requestId, retries included: the TUI stores the result of each requestId, \
rejections too, and answers a reused requestId with that stored result forever (same \
arguments) or request_conflict (other arguments). Success (status applied) means the TUI's \
route is on that session; drawing and loading it may still be in progress. If that session \
was already open, applied comes back with the same revision and nothing is reloaded. \
Rejections are definitive (nothing was navigated) except timeout_unknown and \
outcome_unknown: then the navigation may have happened, so call get_view_context to \
reconcile and never retry blindly. What each code means and what to do: \
stale_revision or stale_target: the view changed, or this is another TUI; read the context \
and try again with a new requestId. user_active: the person is using the TUI (blocked: \
true); back off: read the context after 2 s, double the wait while blocked stays true (at \
most 30 s), select again only once blocked is false. not_ready: the TUI is connecting, \
syncing or still loading a session; read the context until ready is true. busy: another \
navigation is in flight or the TUI has too many connections open; this attempt did \
nothing; wait a moment and try again with a new requestId. request_limit: this TUI process \
took its 128 navigation requests; reading still works, navigating needs a restart of the \
TUI. target_unavailable: detail unknown_session means the TUI answered and that session \
does not exist in its project (pick another sessionId); detail tui_unreachable means the \
TUI is gone (closed, crashed, sharing revoked, or the endpoint path is wrong or unsafe) and \
nothing was sent. revoked: sharing ended; stop. deadline_exceeded: checking the session \
with the backend took over 4 s; nothing was navigated; try again with a new requestId. \
cancelled: you cancelled the call before anything applied. invalid_request: malformed \
arguments. unauthorized: the endpoint refused this client (another user or a stale \
endpoint file). internal_error: a bug; nothing was navigated. This tool cannot type, \
submit prompts, approve anything or start agent work.";

/// Why a `target_unavailable` came back: the two cases need different actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// The TUI answered: that session is unknown or not in its project.
    UnknownSession,
    /// The TUI could not be reached (or its endpoint file failed the checks); nothing sent.
    TuiUnreachable,
}

impl Detail {
    /// Every detail, for the tool's output schema.
    pub const ALL: [Detail; 2] = [Detail::UnknownSession, Detail::TuiUnreachable];

    /// The wire name, e.g. `tui_unreachable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Detail::UnknownSession => "unknown_session",
            Detail::TuiUnreachable => "tui_unreachable",
        }
    }
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn view_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["instanceId", "generation", "revision", "route", "ready", "blocked"],
        "properties": {
            "instanceId": {"type": "string", "format": "uuid"},
            "generation": {"type": "string", "format": "uuid"},
            "revision": {"type": "integer", "minimum": 0},
            "route": {"type": "string", "enum": ["home", "session"]},
            "sessionId": {"type": "string", "pattern": "^ses_[0-9A-Za-z]{26}$"},
            "ready": {"type": "boolean"},
            "blocked": {"type": "boolean"}
        }
    })
}

/// The output schema: the success shape (`status` = `success`) or a rejection.
fn output_schema(success: &str) -> Value {
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let details: Vec<&str> = Detail::ALL.iter().map(|d| d.as_str()).collect();
    json!({
        "type": "object",
        "oneOf": [
            {
                "type": "object",
                "additionalProperties": false,
                "required": ["status", "context"],
                "properties": {
                    "status": {"const": success},
                    "context": view_schema()
                }
            },
            {
                "type": "object",
                "additionalProperties": false,
                "required": ["status", "code"],
                "properties": {
                    "status": {"const": "rejected"},
                    "code": {"type": "string", "enum": codes},
                    "detail": {"type": "string", "enum": details}
                }
            }
        ]
    })
}

fn uuid_property(description: &str) -> Value {
    json!({"type": "string", "format": "uuid", "description": description})
}

static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let view = Tool::new(
        "get_view_context",
        VIEW_DESCRIPTION,
        object(json!({"type": "object", "properties": {}, "additionalProperties": false})),
    )
    .with_title("Read the shared TUI's view")
    .with_raw_output_schema(object(output_schema("context")))
    .with_annotations(
        ToolAnnotations::with_title("Read the shared TUI's view")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    let select = Tool::new(
        "select_session",
        SELECT_DESCRIPTION,
        object(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["requestId", "instanceId", "generation", "expectedRevision", "sessionId"],
            "properties": {
                "requestId": uuid_property("A fresh random UUID for this navigation."),
                "instanceId": uuid_property("instanceId from get_view_context."),
                "generation": uuid_property("generation from get_view_context."),
                "expectedRevision": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "revision from the latest get_view_context."
                },
                "sessionId": {
                    "type": "string",
                    "pattern": "^ses_[0-9A-Za-z]{26}$",
                    "description": "The session to show, e.g. from `ax-code session list`."
                }
            }
        })),
    )
    .with_title("Show a session in the shared TUI")
    .with_raw_output_schema(object(output_schema("applied")))
    .with_annotations(
        ToolAnnotations::with_title("Show a session in the shared TUI")
            .read_only(false)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    vec![view, select]
});

/// The two tools, in order, as listed.
pub fn tools() -> Vec<Tool> {
    TOOLS.clone()
}

/// Checks tool arguments in code (schemas are advisory). `None` means `invalid_request`.
pub fn parse_arguments(tool: &str, arguments: Option<JsonObject>) -> Option<Request> {
    match tool {
        "get_view_context" => arguments
            .is_none_or(|args| args.is_empty())
            .then_some(Request::GetViewContext),
        "select_session" => {
            let mut args = arguments?;
            if args.contains_key("operation") {
                return None;
            }
            args.insert("operation".into(), "select_session".into());
            Request::from_value(Value::Object(args)).ok()
        }
        _ => None,
    }
}

/// The tool result for a response: structured content, the same JSON as text, and
/// `isError` exactly for rejections. A `target_unavailable` carries a `detail` saying
/// whether the TUI answered it (unknown session) or could not be reached.
pub fn tool_result(response: &Response, origin: Origin) -> CallToolResult {
    let mut value = response.to_value();
    match response {
        Response::Rejected(code) => {
            if *code == Code::TargetUnavailable {
                let detail = match origin {
                    Origin::Tui => Detail::UnknownSession,
                    Origin::Adapter => Detail::TuiUnreachable,
                };
                value["detail"] = detail.as_str().into();
            }
            CallToolResult::structured_error(value)
        }
        _ => CallToolResult::structured(value),
    }
}

/// The MCP server for one endpoint.
#[derive(Clone, Debug)]
pub struct Adapter {
    endpoint: PathBuf,
}

impl Adapter {
    /// An adapter that reads the endpoint file at `endpoint` again on every tool call.
    pub fn new(endpoint: PathBuf) -> Self {
        Self { endpoint }
    }
}

impl ServerHandler for Adapter {
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
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if !matches!(name, "get_view_context" | "select_session") {
            let shown: String = name.chars().take(64).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {shown}"),
                None,
            ));
        }
        let (response, origin) = match parse_arguments(name, request.arguments) {
            Some(call) => {
                client::call_with_origin(&self.endpoint, &call, context.ct.cancelled()).await
            }
            None => (Response::Rejected(Code::InvalidRequest), Origin::Adapter),
        };
        Ok(tool_result(&response, origin).into())
    }
}

/// Why the adapter stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The endpoint file is missing or unsafe: the person should copy the path again.
    #[error(transparent)]
    Endpoint(#[from] EndpointFileError),
    /// stdin closed before `initialize`: the MCP client went away; nothing is wrong here.
    #[error("the MCP client went away before it initialized the session (stdin closed)")]
    ClientGone,
    /// The MCP session could not start or ended abnormally.
    #[error("the MCP session failed")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Runs the adapter on stdin/stdout until stdin closes. Fails at once, with the reason, when
/// the endpoint file is missing or unsafe.
pub async fn serve_stdio(endpoint: &Path) -> Result<(), ServeError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    serve(endpoint, read, write).await
}

/// [`serve_stdio`] over any pair of streams (tests).
pub async fn serve<R, W>(endpoint: &Path, read: R, write: W) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    read_endpoint_file(endpoint)?;
    let transport = LineTransport::new(read, write);
    let service = match Adapter::new(endpoint.to_owned()).serve(transport).await {
        Ok(service) => service,
        Err(ServerInitializeError::ConnectionClosed(_)) => return Err(ServeError::ClientGone),
        Err(e) => return Err(ServeError::Session(Box::new(e))),
    };
    service
        .waiting()
        .await
        .map_err(|e| ServeError::Session(Box::new(e)))?;
    Ok(())
}
