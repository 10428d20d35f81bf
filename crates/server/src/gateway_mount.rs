//! `GET /gateway`: the WebSocket gateway. Host and Origin are checked by the layer every
//! route gets; the bearer header is not required here because the gateway checks the token in
//! its connect frame.

use axum::{Router, routing::get};

use crate::{error::Failure, state::Shared};

pub fn router(_app: Shared) -> Router<Shared> {
    Router::new().route(
        "/gateway",
        get(|| async {
            Failure::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the gateway is not built into this backend yet",
            )
        }),
    )
}
