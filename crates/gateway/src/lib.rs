//! The ax-code gateway: one WebSocket per client, a typed request/response/event protocol,
//! scopes, and the fan-out of `ui.command` to every connected Control UI.
//!
//! The backend owns the HTTP side (route, Host/Origin checks, the upgrade) and hands each
//! upgraded socket to [`Gateway::serve_socket`].

use std::{path::PathBuf, sync::Arc};

use axum::extract::ws::WebSocket;

/// Tells the gateway whether a session exists in the served project.
pub trait SessionDirectory: Send + Sync + 'static {
    fn contains(&self, session_id: &str) -> bool;
}

/// What the backend gives the gateway.
pub struct GatewayConfig {
    /// The backend credential; a client proves it in its `connect` frame.
    pub token: String,
    /// Reported in `hello-ok.server.version`.
    pub server_version: String,
    /// Where the operator terminal runs its commands.
    pub project_dir: PathBuf,
    /// Resolves session keys of `ui.command`.
    pub sessions: Arc<dyn SessionDirectory>,
}

/// A cheap, cloneable handle to the gateway's shared state.
#[derive(Clone)]
pub struct Gateway {
    _config: Arc<GatewayConfig>,
}

impl Gateway {
    pub fn new(config: GatewayConfig) -> Self {
        Gateway {
            _config: Arc::new(config),
        }
    }

    /// Serve one upgraded WebSocket until it closes.
    pub async fn serve_socket(&self, socket: WebSocket) {
        drop(socket);
    }
}
