//! What the hub's Control UI page needs beyond the session calls (docs/hub.md §4):
//! `GET /machine/{m}/agent` (the agents a new session on that machine can run, relayed as a
//! [`Request::Agents`] and answered by the machine's own `GET /agent`).

use axum::{
    extract::{Path, State},
    response::Response,
};

use super::S;
use crate::wire::Request;

/// `GET /machine/{m}/agent`: the machine's `{default, agents}`, or its refusal.
pub(super) async fn agents(State(shared): S, Path(m): Path<String>) -> Response {
    shared.call(&m, Request::Agents {}).await
}
