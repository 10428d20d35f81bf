//! The hub's `screen` routes (docs/hub.md §4): `POST /machine/{m}/screen/layout` (the params
//! of `ui.layout`) and `POST /machine/{m}/screen/command` (the params of `ui.command`), each
//! relayed as a [`Request::Screen`] and answered by the machine's own gateway; a gateway
//! error keeps its code (`INVALID_REQUEST`, `FORBIDDEN`, `UNAVAILABLE`, ...) with its HTTP
//! status ([`crate::screen::status_of`]).

use axum::{
    Json,
    extract::{Path, State},
    response::Response,
};

use super::S;
use crate::wire::{Request, ScreenMethod};

pub(super) async fn layout(
    State(shared): S,
    Path(m): Path<String>,
    Json(params): Json<serde_json::Value>,
) -> Response {
    let request = Request::Screen {
        method: ScreenMethod::Layout,
        params,
    };
    shared.call(&m, request).await
}

pub(super) async fn command(
    State(shared): S,
    Path(m): Path<String>,
    Json(params): Json<serde_json::Value>,
) -> Response {
    let request = Request::Screen {
        method: ScreenMethod::Command,
        params,
    };
    shared.call(&m, request).await
}
