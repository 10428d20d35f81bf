//! A session's prompt queue through the hub (docs/hub.md §4), each route relayed as a request
//! answered by the machine's own queue API (docs/backend.md §3), so its rules (one queue per
//! session, edits and cancels only while waiting, the pause after an abort) hold unchanged:
//! `GET|POST /machine/{m}/session/{id}/queue`, `PATCH|DELETE
//! /machine/{m}/session/{id}/queue/{qid}`, `POST /machine/{m}/session/{id}/queue/{qid}/send`,
//! `POST /machine/{m}/session/{id}/queue/resume`. The queue's changes reach the page as the
//! machine's `queue.updated` events, in the hub's event stream like every other.

use ax_protocol::{Prompt, QueuedId, SessionId};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};

use super::{ApiError, S};
use crate::{
    MachineName,
    wire::{Reply, Request},
};

/// `GET`: the queue, next first.
pub(super) async fn list(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
) -> Response {
    shared.call(&m, Request::Queue { session }).await
}

/// `POST`: sent at once (202, `state: "sent"`) or queued (201, `state: "queued"`), as the
/// machine answered.
pub(super) async fn submit(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
    Json(prompt): Json<Prompt>,
) -> Response {
    let machine = match MachineName::new(&m) {
        Ok(m) => m,
        Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
    };
    let request = Request::QueuePrompt { session, prompt };
    match shared
        .request::<serde_json::Value>(&machine, &request)
        .await
    {
        Ok(Reply::Ok(answer)) => {
            let status = match answer["state"].as_str() {
                Some("queued") => StatusCode::CREATED,
                _ => StatusCode::ACCEPTED,
            };
            (status, Json(answer)).into_response()
        }
        Ok(Reply::Error(e)) => ApiError::new(e.status, &e.code, e.message).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `PATCH`: a waiting prompt's new content.
pub(super) async fn edit(
    State(shared): S,
    Path((m, session, queued)): Path<(String, SessionId, QueuedId)>,
    Json(prompt): Json<Prompt>,
) -> Response {
    let request = Request::EditQueued {
        session,
        queued,
        prompt,
    };
    shared.call(&m, request).await
}

/// `DELETE`: a waiting prompt cancelled.
pub(super) async fn cancel(
    State(shared): S,
    Path((m, session, queued)): Path<(String, SessionId, QueuedId)>,
) -> Response {
    shared
        .call(&m, Request::CancelQueued { session, queued })
        .await
}

/// `POST …/send`: the running turn stopped, this prompt next.
pub(super) async fn send_now(
    State(shared): S,
    Path((m, session, queued)): Path<(String, SessionId, QueuedId)>,
) -> Response {
    shared
        .call(&m, Request::SendQueuedNow { session, queued })
        .await
}

/// `POST …/resume`: a paused queue flows again.
pub(super) async fn resume(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
) -> Response {
    shared.call(&m, Request::ResumeQueue { session }).await
}
