//! The strict input handling every API route shares: bodies, IDs in paths, prompts, and the
//! session a path names. The routes are in [`crate::api`], [`crate::queue_api`] and the
//! modules they merge; nothing here knows about them.

use ax_protocol::{Prompt, Session, SessionId};
use axum::{Json, extract::rejection::JsonRejection, http::StatusCode};

use crate::{error::Failure, state::Shared};

type ApiResult<T> = Result<T, Failure>;

/// `Json<T>` with rejections mapped to the API's error shape: 413 for oversize bodies, 400
/// for everything else (bad JSON, unknown fields, wrong content type).
pub(crate) fn body<T>(input: Result<Json<T>, JsonRejection>) -> ApiResult<T> {
    match input {
        Ok(Json(value)) => Ok(value),
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(
            Failure::too_large("the request body is larger than this API accepts"),
        ),
        Err(rejection) => Err(Failure::bad_request(rejection.body_text())),
    }
}

/// A path parameter parsed into its typed ID at the edge: a malformed one is a 400 that shows
/// the expected form, so only well-formed IDs ever reach the store or a run.
pub(crate) fn parse_id<T>(raw: &str) -> ApiResult<T>
where
    T: std::str::FromStr<Err = ax_protocol::IdError>,
{
    raw.parse()
        .map_err(|e: T::Err| Failure::bad_request(e.to_string()))
}

/// A session ID from a path.
pub(crate) fn session_id(raw: &str) -> ApiResult<SessionId> {
    parse_id(raw)
}

/// The session `id`, or 404.
pub(crate) async fn find_session(app: &Shared, id: &SessionId) -> ApiResult<Session> {
    app.sessions()
        .get(id)
        .await?
        .ok_or_else(|| Failure::session_not_found(id.as_str()))
}

/// `POST /session/{id}/prompt` body: the [`Prompt`] and, from a Control UI, its gateway
/// connection id (`client`), which lets an ACP agent's turn use the screen tool
/// (docs/agents.md §8).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PromptBody {
    pub(crate) parts: Vec<ax_protocol::PromptPart>,
    #[serde(default)]
    pub(crate) client: Option<String>,
}

/// A gateway connection id: `conn_` and hex digits, bounded.
fn client_id(client: Option<String>) -> Result<Option<String>, Failure> {
    match client {
        Some(c)
            if !(c.len() <= 64
                && c.strip_prefix("conn_").is_some_and(|h| {
                    !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())
                })) =>
        {
            Err(Failure::bad_request(
                "client must be a gateway connection id (conn_ and hex digits)",
            ))
        }
        other => Ok(other),
    }
}

/// A prompt request's session, prompt and gateway connection, each checked (the same for
/// `/prompt` and `/queue`).
pub(crate) fn prompt_request(
    id: &str,
    input: Result<Json<PromptBody>, JsonRejection>,
) -> ApiResult<(SessionId, Prompt, Option<String>)> {
    let id = session_id(id)?;
    let PromptBody { parts, client } = body(input)?;
    Ok((id, Prompt { parts }, client_id(client)?))
}
