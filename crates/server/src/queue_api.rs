//! The prompt-queue routes (docs/backend.md §3): list, add, edit, cancel, send now, resume.
//! The rules live in [`crate::queue`]; this is the strict input handling around them.

use ax_protocol::{
    Prompt, QueuedId,
    queue::{PromptQueue, QueueAnswer, QueuedPrompt},
};
use axum::{
    Json, Router,
    extract::{Path, State, rejection::JsonRejection},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, patch, post},
};

use crate::{
    error::Failure,
    queue,
    request::{PromptBody, body, find_session, parse_id, prompt_request, session_id},
    state::Shared,
};

type ApiResult<T> = Result<T, Failure>;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/session/{id}/queue", get(list).post(submit))
        .route("/session/{id}/queue/resume", post(resume))
        .route("/session/{id}/queue/{qid}", patch(edit).delete(cancel))
        .route("/session/{id}/queue/{qid}/send", post(send_now))
}

fn ids(id: &str, qid: &str) -> ApiResult<(ax_protocol::SessionId, QueuedId)> {
    Ok((session_id(id)?, parse_id(qid)?))
}

async fn list(State(app): State<Shared>, Path(id): Path<String>) -> ApiResult<Json<PromptQueue>> {
    let id = session_id(&id)?;
    find_session(&app, &id).await?;
    Ok(Json(queue::list(&app, &id).await?))
}

/// 202 with `state: "sent"` when the turn started, 201 with `state: "queued"` when it waits.
async fn submit(
    State(app): State<Shared>,
    Path(id): Path<String>,
    input: Result<Json<PromptBody>, JsonRejection>,
) -> ApiResult<Response> {
    let (id, prompt, client) = prompt_request(&id, input)?;
    find_session(&app, &id).await?;
    let answer = queue::submit(&app, &id, prompt, client.as_deref()).await?;
    let status = match answer {
        QueueAnswer::Sent { .. } => StatusCode::ACCEPTED,
        QueueAnswer::Queued { .. } => StatusCode::CREATED,
    };
    Ok((status, Json(answer)).into_response())
}

async fn edit(
    State(app): State<Shared>,
    Path((id, qid)): Path<(String, String)>,
    input: Result<Json<Prompt>, JsonRejection>,
) -> ApiResult<Json<QueuedPrompt>> {
    let (id, qid) = ids(&id, &qid)?;
    let prompt = body(input)?;
    find_session(&app, &id).await?;
    Ok(Json(queue::edit(&app, &id, &qid, prompt).await?))
}

async fn cancel(
    State(app): State<Shared>,
    Path((id, qid)): Path<(String, String)>,
) -> ApiResult<Json<PromptQueue>> {
    let (id, qid) = ids(&id, &qid)?;
    find_session(&app, &id).await?;
    Ok(Json(queue::cancel(&app, &id, &qid).await?))
}

async fn send_now(
    State(app): State<Shared>,
    Path((id, qid)): Path<(String, String)>,
) -> ApiResult<Json<PromptQueue>> {
    let (id, qid) = ids(&id, &qid)?;
    find_session(&app, &id).await?;
    Ok(Json(queue::send_now(&app, &id, &qid).await?))
}

async fn resume(State(app): State<Shared>, Path(id): Path<String>) -> ApiResult<Json<PromptQueue>> {
    let id = session_id(&id)?;
    find_session(&app, &id).await?;
    Ok(Json(queue::resume(&app, &id).await?))
}
