//! The session-scoped `screen` MCP server each ACP session hands its agent (docs/agents.md §8).
//!
//! When a session's agent starts, the backend mints a random screen credential for that
//! session (this backend process only; replaced at the next agent start, dropped with the
//! session) and lists in `session/new`/`session/load` one stdio MCP server: our own binary
//! (`ax-code mcp screen --from-env`), with the gateway URL, the session and the credential in
//! its environment, never on its command line. The gateway accepts the credential with at most
//! `operator.read` + `operator.write`, bound to its session, never as a `ui` client.
//!
//! The gate (and the requester, the UI `target: "requester"` reaches): a turn whose prompt named a gateway connection that is live and receives
//! `ui.command` (a Control UI, `POST /session/{id}/prompt {"client": connId}`) opens the
//! session's gate before the prompt goes to the agent; the turn's end closes it. The gateway
//! refuses `ui.command` from the credential while the gate is closed (the check is the
//! backend's, not the MCP process's), answers `screen.gate` with the current state (the MCP
//! process asks before each call; it always lists the tool, since the real agents list an
//! MCP server's tools only once, docs/agents.md §10) and pushes the `screen.gate` event on
//! each change.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, OnceLock},
};

use ax_acp::schema;
use ax_gateway::{Gateway, SessionScreens};
use ax_protocol::SessionId;

use crate::error::Failure;

/// The environment variables the session-scoped screen server reads (`ax-code mcp screen
/// --from-env`).
pub const ENV_URL: &str = "AX_CODE_SCREEN_URL";
pub const ENV_SESSION: &str = "AX_CODE_SCREEN_SESSION";
pub const ENV_TOKEN: &str = "AX_CODE_SCREEN_TOKEN";

/// The MCP server's name in `mcpServers`.
pub const SERVER_NAME: &str = "ax-code-screen";

struct Grant {
    token: ax_core::Secret,
    enabled: bool,
    /// The Control UI (gateway connection) whose prompt started the running turn: what the
    /// screen tool's `target: "requester"` means (docs/gateway.md §3).
    requester: Option<String>,
}

/// The per-session screen credentials and gates of one backend.
pub struct AgentScreens {
    /// The binary run as the screen server; `None`: agents get no screen server.
    exe: Option<PathBuf>,
    /// The backend's own URL (the gateway is at `/gateway`).
    url: String,
    grants: Mutex<HashMap<SessionId, Grant>>,
    gateway: OnceLock<Gateway>,
}

impl AgentScreens {
    pub fn new(exe: Option<PathBuf>, url: String) -> Self {
        AgentScreens {
            exe,
            url,
            grants: Mutex::new(HashMap::new()),
            gateway: OnceLock::new(),
        }
    }

    fn grants(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Grant>> {
        self.grants.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connects the screens to the gateway (once, at start).
    pub fn attach(self: &Arc<Self>, gateway: &Gateway) {
        let _ = self.gateway.set(gateway.clone());
        gateway.set_session_screens(self.clone());
    }

    /// The `mcpServers` of `session`'s agent: the screen server with a fresh credential (the
    /// previous one of the session stops working), closed until a Control UI turn opens it.
    pub fn mcp_servers(&self, session: &SessionId) -> Result<Vec<schema::McpServer>, Failure> {
        let Some(exe) = &self.exe else {
            return Ok(Vec::new());
        };
        let token = ax_core::Secret::generate(32).map_err(|e| {
            Failure::internal(format!("cannot mint the session's screen credential: {e}"))
        })?;
        self.grants().insert(
            session.clone(),
            Grant {
                token: token.clone(),
                enabled: false,
                requester: None,
            },
        );
        let env = vec![
            schema::EnvVariable::new(ENV_URL, self.url.clone()),
            schema::EnvVariable::new(ENV_SESSION, session.to_string()),
            // The agent's env is the one place this credential goes (never argv).
            schema::EnvVariable::new(ENV_TOKEN, token.expose()),
        ];
        Ok(vec![schema::McpServer::Stdio(
            schema::McpServerStdio::new(SERVER_NAME, exe.clone())
                .args(vec!["mcp".into(), "screen".into(), "--from-env".into()])
                .env(env),
        )])
    }

    /// Whether `client` (a gateway connection id) may open the gate: a live Control UI.
    pub fn is_ui_client(&self, client: &str) -> bool {
        self.gateway.get().is_some_and(|g| g.is_ui_client(client))
    }

    /// Opens `session`'s gate for a turn `requester` (a Control UI's connection) started,
    /// or closes it (`None`); tells its screen servers when it changed.
    pub fn set_enabled(&self, session: &SessionId, requester: Option<&str>) {
        let enabled = requester.is_some();
        let changed = match self.grants().get_mut(session) {
            Some(g) => {
                g.requester = requester.map(str::to_string);
                let changed = g.enabled != enabled;
                g.enabled = enabled;
                changed
            }
            None => false,
        };
        if changed && let Some(gateway) = self.gateway.get() {
            gateway.screen_gate_changed(session.as_str(), enabled);
        }
    }

    /// Forgets `session`'s credential (session deleted, agent stopped).
    pub fn revoke(&self, session: &SessionId) {
        self.grants().remove(session);
    }
}

impl SessionScreens for AgentScreens {
    fn session_of(&self, token: &ax_core::Secret) -> Option<String> {
        let mut found = None;
        // Every credential is compared (in constant time), with no early exit on a match.
        for (session, grant) in self.grants().iter() {
            if grant.token == *token && found.is_none() {
                found = Some(session.to_string());
            }
        }
        found
    }

    fn enabled(&self, session: &str) -> bool {
        self.grants()
            .iter()
            .any(|(s, g)| s.as_str() == session && g.enabled)
    }

    fn requester(&self, session: &str) -> Option<String> {
        self.grants()
            .iter()
            .find(|(s, g)| s.as_str() == session && g.enabled)
            .and_then(|(_, g)| g.requester.clone())
    }
}
