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
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    client,
    endpoint_file::read_endpoint_file,
    protocol::{Code, Request, Response},
};

/// The MCP server name.
pub const SERVER_NAME: &str = "ax-code-tuimcp";

const INSTRUCTIONS: &str = "Reads and navigates one running AX Code TUI that its user chose to \
share. Call get_view_context first; pass its instanceId, generation and revision, a \
session ID and a fresh UUID requestId to select_session. The person stays in charge: \
navigation is refused while they are active. Never retry blindly: on timeout_unknown or \
outcome_unknown, read the context to reconcile.";

const VIEW_DESCRIPTION: &str = "Read the shared TUI's bounded view: instanceId and \
generation (its identity), revision (changes whenever anything navigation depends on \
changes), route (home or session), sessionId (only on the session route), ready, and \
blocked (true while the person is busy in the TUI: navigation will be refused). Read this \
before every select_session. It never returns transcripts, drafts, titles, paths or \
credentials. Changes nothing.";

const SELECT_DESCRIPTION: &str = "Navigate the shared TUI to a session of its project. \
Pass instanceId, generation and revision exactly as the latest get_view_context returned \
them (as expectedRevision), the target sessionId (ses_ and 26 letters or digits, from the \
ordinary session interfaces) and a fresh random UUID as requestId. Repeating the same \
requestId with the same arguments returns the original result; with other arguments it is \
request_conflict. Success (status applied) means the TUI's route changed; drawing and \
loading the session may still be in progress. Rejections are definitive (nothing was \
navigated) except timeout_unknown and outcome_unknown: then the navigation may have \
happened, so call get_view_context to reconcile and never retry blindly. stale_revision or \
stale_target: read the context again. user_active: the person is using the TUI; wait and \
read the context again. revoked: sharing ended. This tool cannot type, submit prompts, \
approve anything or start agent work.";

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
                    "code": {"type": "string", "enum": codes}
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
/// `isError` exactly for rejections.
pub fn tool_result(response: &Response) -> CallToolResult {
    let value = response.to_value();
    match response {
        Response::Rejected(_) => CallToolResult::structured_error(value),
        _ => CallToolResult::structured(value),
    }
}

/// The MCP server for one endpoint.
#[derive(Clone, Debug)]
pub struct Adapter {
    endpoint: PathBuf,
}

impl Adapter {
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
        let response = match parse_arguments(name, request.arguments) {
            Some(call) => client::call(&self.endpoint, &call, context.ct.cancelled()).await,
            None => Response::Rejected(Code::InvalidRequest),
        };
        Ok(tool_result(&response).into())
    }
}

/// Runs the adapter on stdin/stdout until stdin closes. Fails at once, with the reason, when
/// the endpoint file is missing or unsafe.
pub async fn serve_stdio(endpoint: &Path) -> anyhow::Result<()> {
    read_endpoint_file(endpoint)?;
    let service = Adapter::new(endpoint.to_owned())
        .serve(rmcp::transport::stdio_pipes())
        .await?;
    service.waiting().await?;
    Ok(())
}
