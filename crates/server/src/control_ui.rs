//! The browser Control UI: static files from `web/`, embedded in the binary.
//! (Owned by the gateway/Control UI work; the server only mounts [`router`].)

use axum::Router;

/// Routes for `/` and the UI's static assets. They need no credential.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
}
