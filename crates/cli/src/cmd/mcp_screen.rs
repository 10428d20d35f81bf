//! `ax-code mcp screen [--url URL] [--session ID]`: the `screen` MCP server of the gateway
//! crate ([`ax_gateway::screen`], docs/gateway.md §4) on stdio, wired to the local backend.
//!
//! This file only finds and proves the backend: each call opens a gateway connection asking
//! only for `operator.write` as a `mode: agent` client. `--session` is checked against the
//! backend once at start.
//!
//! It holds only the screen credential (HMAC-SHA256 of the backend credential, see
//! `ax_protocol::SCREEN_CREDENTIAL_MESSAGE`): the gateway grants it at most `operator.write`
//! (no operator terminal) and the HTTP API refuses it. It is read from the backend's `screen/`
//! record (a file of its own) for exactly the URL; without `--url`, the registered backend of
//! the current directory's project is used. Only for a backend on another machine is it
//! derived from `$AX_CODE_SERVER_PASSWORD` (the password is dropped at once). The full
//! credential is never read. It never appears in arguments, logs or results.
//!
//! `--from-env` is the session-scoped server a backend hands each ACP agent (docs/agents.md
//! §8): URL, session and a per-session credential come from `AX_CODE_SCREEN_URL`,
//! `AX_CODE_SCREEN_SESSION` and `AX_CODE_SCREEN_TOKEN` (never arguments). The gateway grants
//! that credential `operator.write` at most, for its session only, and refuses its
//! `ui.command` unless the session's current turn came from a Control UI. The tool is always
//! listed (the real agents list an MCP server's tools once, when their session starts,
//! docs/agents.md §10); before each call the server asks the gateway (`screen.gate`) and
//! refuses the call while the gate is closed.

use anyhow::Context;
use std::sync::Arc;

use ax_gateway::{
    ClientMode, ConnectOptions, GatewayClient, Method, Scope,
    screen::{Connector, SERVER_NAME, ScreenError, ScreenGate, ScreenServer},
};
use clap::Args;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
        ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use tokio::sync::{Mutex, watch};

#[derive(Debug, Args)]
pub struct McpScreenArgs {
    /// Backend URL (default: the registered backend of the current project).
    #[arg(long)]
    pub url: Option<String>,
    /// The agent's own session: the default target of session actions.
    #[arg(long)]
    pub session: Option<String>,
    /// Session-scoped (started by a backend for its agent): URL, session and credential from
    /// the AX_CODE_SCREEN_* environment variables.
    #[arg(long, conflicts_with_all = ["url", "session"])]
    pub from_env: bool,
}

/// Where the backend is and how to prove it; resolved on first use and kept. `token` is the
/// screen credential, never the full one.
#[derive(Clone)]
struct Target {
    url: String,
    token: ax_client::Secret,
}

impl Target {
    /// The server proves it holds the screen credential (`screenProof` of `/health`) before
    /// the connect frame carries it: whoever took a dead backend's port never receives it.
    async fn verify(&self) -> Result<(), ScreenError> {
        let client = ax_client::Client::new(&self.url, &self.token)
            .map_err(|e| ScreenError::invalid(e.to_string()))?;
        client
            .verify_screen()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(e.to_string()))
    }
}

/// Finds the backend (once), proves it, then opens a gateway connection per call.
struct LocalBackend {
    url: Option<String>,
    target: Mutex<Option<Target>>,
}

fn unavailable(message: impl Into<String>) -> ScreenError {
    ScreenError::unavailable(message)
}

impl LocalBackend {
    async fn target(&self) -> Result<Target, ScreenError> {
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
                    return Err(unavailable(format!(
                        "no screen credential for {url}: no backend registered exactly this URL \
                         (use the URL `ax-code serve` printed; restart a backend of an older \
                         version); AX_CODE_SERVER_PASSWORD is used only for a backend on \
                         another machine"
                    )));
                }
            },
            None => {
                let cwd = std::env::current_dir()
                    .map_err(|e| unavailable(format!("current directory: {e}")))?;
                let data = ax_protocol::local::data_dir().ok_or_else(|| {
                    unavailable("no data directory: set AX_CODE_DATA_DIR or HOME")
                })?;
                match ax_client::discover(ax_client::Kind::Screen, &cwd, &data).await {
                    Some(found) => Target {
                        url: found.url,
                        token: found.credential,
                    },
                    None => {
                        return Err(unavailable(
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
}

impl Connector for LocalBackend {
    async fn connect(&self) -> Result<GatewayClient, ScreenError> {
        let target = self.target().await?;
        target.verify().await?;
        let options = ConnectOptions::new(target.token, ClientMode::Agent, vec![Scope::Write])
            .with_client_id(SERVER_NAME);
        Ok(GatewayClient::connect(&target.url, options).await?)
    }
}

/// The session-scoped server's backend: a credential of one session, no proof (the backend
/// that started us gave us its own address; the credential dies with that backend process).
struct SessionBackend {
    url: String,
    token: ax_client::Secret,
    gate: watch::Sender<bool>,
}

impl SessionBackend {
    fn options(&self) -> ConnectOptions {
        ConnectOptions::new(self.token.clone(), ClientMode::Agent, vec![Scope::Write])
            .with_client_id(SERVER_NAME)
    }

    async fn refresh_on(&self, client: &GatewayClient) {
        let enabled = client
            .request(Method::ScreenGate, serde_json::json!({}))
            .await
            .ok()
            .and_then(|v| v.get("enabled").and_then(serde_json::Value::as_bool))
            .unwrap_or(false);
        self.gate
            .send_if_modified(|g| std::mem::replace(g, enabled) != enabled);
    }
}

/// The connector of the session-scoped server.
struct SessionConnector(Arc<SessionBackend>);

impl Connector for SessionConnector {
    async fn connect(&self) -> Result<GatewayClient, ScreenError> {
        Ok(GatewayClient::connect(&self.0.url, self.0.options()).await?)
    }

    async fn refresh_gate(&self) {
        let backend = &self.0;
        if let Ok(client) = GatewayClient::connect(&backend.url, backend.options()).await {
            backend.refresh_on(&client).await;
            client.close().await;
        } else {
            backend
                .gate
                .send_if_modified(|g| std::mem::replace(g, false));
        }
    }
}

fn env_var(name: &str) -> anyhow::Result<String> {
    std::env::var(name).map_err(|_| {
        anyhow::anyhow!(
            "--from-env: {name} is not set (this mode is started by a backend for its agent)"
        )
    })
}

fn run_session_scoped() -> anyhow::Result<()> {
    let url = env_var("AX_CODE_SCREEN_URL")?;
    let session = env_var("AX_CODE_SCREEN_SESSION")?;
    let token = ax_client::Secret::new(env_var("AX_CODE_SCREEN_TOKEN")?);
    if !ax_protocol::SessionId::is_valid(&session) {
        anyhow::bail!("AX_CODE_SCREEN_SESSION is not a session ID");
    }
    super::redact_secret(&token);
    let (gate, rx) = watch::channel(false);
    let backend = Arc::new(SessionBackend { url, token, gate });
    let screen = SessionScreen::new(ScreenServer::new(
        SessionConnector(backend),
        Some(session),
        ScreenGate::Switch(rx),
    ));
    runtime()?.block_on(serve_stdio(screen))
}

/// What the session-scoped tool adds to the shared description.
const SESSION_NOTE: &str = " Works only during a turn the person started from the AX Code \
Control UI; in any other turn the call is refused (FORBIDDEN) and changes nothing.";

/// The session-scoped server as the agent sees it (docs/agents.md §8): `screen` is always
/// listed, and a call is refused while the session's gate is closed. The real agents list an
/// MCP server's tools once, when their session starts, and do not list again (Claude, Codex)
/// or not before the turn's first model request (Gemini) on `notifications/tools/list_changed`
/// (docs/agents.md §10): a tool listed only during a Control UI turn never reached them.
struct SessionScreen {
    inner: ScreenServer<SessionConnector>,
    tool: Tool,
}

impl SessionScreen {
    fn new(inner: ScreenServer<SessionConnector>) -> Self {
        let mut tool = ScreenServer::new(NoConnection, None, ScreenGate::Always)
            .tools()
            .remove(0);
        let description = format!("{}{SESSION_NOTE}", tool.description.unwrap_or_default());
        tool.description = Some(description.into());
        SessionScreen { inner, tool }
    }
}

/// Stands in for a connection where only the tool's definition is wanted.
struct NoConnection;

impl Connector for NoConnection {
    async fn connect(&self) -> Result<GatewayClient, ScreenError> {
        Err(unavailable("no connection"))
    }
}

impl ServerHandler for SessionScreen {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.inner.get_info();
        // The list never changes, so nothing is announced.
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Asks the gateway for the gate first, and refuses while it is closed.
        self.inner.call_tool(request, context).await
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Serves `screen` on stdin/stdout until the client goes away.
async fn serve_stdio<S: ServerHandler>(screen: S) -> anyhow::Result<()> {
    let service = screen
        .serve(rmcp::transport::stdio_pipes())
        .await
        .context("MCP initialization failed")?;
    service.waiting().await.context("MCP service failed")?;
    Ok(())
}

pub fn run(args: McpScreenArgs) -> anyhow::Result<()> {
    super::log_for_stdio_mcp();
    if args.from_env {
        return run_session_scoped();
    }
    if let Some(s) = &args.session
        && !ax_protocol::SessionId::is_valid(s)
    {
        anyhow::bail!(
            "--session {s:?}: expected a session ID (ses_ followed by 26 letters or digits)"
        );
    }
    if let Some(url) = &args.url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        anyhow::bail!("--url must start with http:// or https://, got {url}");
    }
    let backend = LocalBackend {
        url: args.url,
        target: Mutex::new(None),
    };
    let session = args.session.clone();
    let screen = ScreenServer::new(backend, args.session, ScreenGate::Always);
    runtime()?.block_on(async move {
        if let Some(session) = session {
            screen
                .check_default_session()
                .await
                .map_err(|e| anyhow::anyhow!("--session {session}: {}", e.message))?;
        }
        serve_stdio(screen).await
    })
}
