//! `GET /gateway`: the WebSocket gateway. Host and Origin are checked by the layer every
//! route gets; the bearer header is not required here because the gateway checks the token in
//! its connect frame. Besides the full credential it accepts the screen credential, granting at
//! most `operator.read` and `operator.write`.

use std::sync::Mutex;

use ax_gateway::{Gateway, GatewayConfig, LimitedToken, Scope, Scopes, SessionDirectory, Tuning};
use axum::{
    Extension, Router,
    extract::{State, ws::WebSocketUpgrade},
    response::Response,
    routing::get,
};
use rusqlite::Connection;

use ax_listen::{Conn, SocketPlace};

use crate::{state::Shared, store};

/// Session lookups for `ui.command` targets, on a connection of their own (the trait is
/// synchronous and a primary-key lookup takes microseconds).
struct Directory {
    conn: Mutex<Connection>,
    project: i64,
}

impl SessionDirectory for Directory {
    fn contains(&self, session_id: &str) -> bool {
        if !ax_protocol::SessionId::is_valid(session_id) {
            return false;
        }
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        store::session_exists(&conn, self.project, session_id).unwrap_or(false)
    }
}

/// Builds the gateway for this backend.
pub fn gateway(app: &Shared) -> Result<Gateway, store::StoreError> {
    let directory = Directory {
        conn: Mutex::new(app.store.extra_reader()?),
        project: app.project_id,
    };
    // The screen credential (`ax-code mcp screen`) may arrange the Control UI, never run
    // operator-terminal commands.
    let screen = LimitedToken {
        token: app.screen_token.clone(),
        scopes: [Scope::Read, Scope::Write].into_iter().collect::<Scopes>(),
    };
    Ok(Gateway::with_limited_tokens(
        GatewayConfig {
            token: app.token.clone(),
            server_version: app.version.clone(),
            sessions: std::sync::Arc::new(directory),
            terminal: Some(std::sync::Arc::new(crate::operator_terminal::Terminal {
                project_dir: app.project_dir.clone(),
                store: app.store.clone(),
                shutdown: app.shutdown.clone(),
            })),
        },
        Tuning::default(),
        vec![screen],
    ))
}

async fn upgrade(
    State((app, gateway)): State<(Shared, Gateway)>,
    conn: Option<Extension<Conn>>,
    ws: WebSocketUpgrade,
) -> Response {
    let shutdown = app.shutdown.clone();
    // The socket keeps its place in the connection cap (docs/SECURITY.md): unauthenticated
    // until its `connect` succeeds, evicted like an idle connection before that.
    let place = SocketPlace::of(conn.as_ref().map(|Extension(c)| c));
    // Small buffers keep an idle connection at a few KiB; the message cap stops a client from
    // making us buffer megabytes, yet lets the gateway's own size check answer first.
    gateway.configure_upgrade(ws).on_upgrade(move |socket| {
        // The socket goes straight into the gateway's future; an `async move` block that
        // captured it would keep a moved-out copy for the connection's whole life.
        let serve = gateway.serve_socket_then(socket, place.on_authenticated());
        place.run(async move {
            tokio::select! {
                () = serve => {}
                () = shutdown.cancelled() => {}
            }
        })
    })
}

pub fn router(app: Shared, gateway: Gateway) -> Router<Shared> {
    Router::new()
        .route("/gateway", get(upgrade))
        .with_state((app, gateway))
}
