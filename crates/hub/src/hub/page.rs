//! What the hub's Control UI page needs beyond the session calls (docs/hub.md §4):
//! `GET /machine/{m}/agent` (the agents a new session on that machine can run, relayed as a
//! [`Request::Agents`] and answered by the machine's own `GET /agent`), and `POST /markdown`,
//! which the hub answers itself with the backends' own renderer (`ax-markdown`): the same
//! tree under the same rules, for any machine's text, an offline one's too.

use ax_markdown::{MAX_TEXT_BYTES, MarkdownTree};
use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{ApiError, S};
use crate::wire::Request;

/// `GET /machine/{m}/agent`: the machine's `{default, agents}`, or its refusal.
pub(super) async fn agents(State(shared): S, Path(m): Path<String>) -> Response {
    shared.call(&m, Request::Agents {}).await
}

/// `POST /markdown` (`{"text"}`): the tree a backend's `POST /markdown` answers, with its
/// refusals: a body that is not exactly `{"text"}` is 400 `bad_request`, text over
/// [`MAX_TEXT_BYTES`] 413 `too_large`. The parse runs off the async workers.
pub(super) async fn markdown(input: Result<Json<serde_json::Value>, JsonRejection>) -> Response {
    let request = match input {
        Ok(Json(value)) => ax_markdown::parse_request(value),
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            let message = "the request body is larger than this API accepts".to_owned();
            return ApiError::new(413, "too_large", message).into_response();
        }
        Err(rejection) => Err(rejection.body_text()),
    };
    let request = match request {
        Ok(r) => r,
        Err(message) => return ApiError::new(400, "bad_request", message).into_response(),
    };
    if request.text.len() > MAX_TEXT_BYTES {
        let message = format!("Markdown text is at most {MAX_TEXT_BYTES} bytes");
        return ApiError::new(413, "too_large", message).into_response();
    }
    match tokio::task::spawn_blocking(move || ax_markdown::parse(&request.text)).await {
        Ok(blocks) => Json(MarkdownTree { blocks }).into_response(),
        Err(e) => ApiError::internal(&e).into_response(),
    }
}
