//! The HTTP API routes (see docs/backend.md §3) and their strict input handling.

use ax_protocol::{
    AbortResult, AgentInfo, AgentKindName, AgentList, AgentOrigin, CreateSession, Event, Health,
    Message, Permission, PermissionAnswer, PermissionId, Project, PromptAccepted, RenameSession,
    Session, SessionStatus, SetConfigOption, SetMode, proof,
};
use axum::{
    Extension, Json, Router,
    extract::{
        DefaultBodyLimit, Path, Query, State,
        rejection::{JsonRejection, QueryRejection},
    },
    http::StatusCode,
    middleware,
    response::{IntoResponse, Response},
    routing::{delete, get, post},
};
use serde::Deserialize;

use ax_listen::LocalAddr;

use crate::{
    auth,
    error::Failure,
    ids,
    request::{PromptBody, body, find_session, parse_id, prompt_request, session_id},
    sse,
    state::Shared,
    store, turn,
    turn_slots::HeldFor,
};

type ApiResult<T> = Result<T, Failure>;

/// Routes that need the bearer credential.
pub fn protected(app: Shared) -> Router<Shared> {
    let limit = app.limits.body_bytes;
    Router::new()
        .route("/project", get(project))
        .route("/agent", get(agents))
        .route("/session", get(list_sessions).post(create_session))
        .route(
            "/session/{id}",
            get(get_session)
                .patch(rename_session)
                .delete(delete_session),
        )
        .route("/session/{id}/message", get(messages))
        .route(
            "/session/{id}/prompt",
            // Images make a prompt larger than other requests (docs/backend.md §3).
            post(prompt).layer(DefaultBodyLimit::max(app.limits.prompt_body_bytes)),
        )
        .route("/session/{id}/abort", post(abort))
        .route("/session/{id}/mode", post(set_mode))
        .route("/session/{id}/config", post(set_config))
        .route("/session/{id}/standing", delete(revoke_standing))
        .route("/markdown", post(crate::markdown::render))
        .route("/permission", get(permissions))
        .route("/session/{id}/permission/{pid}", post(reply_permission))
        .route("/event", get(sse::events))
        .merge(crate::files::routes())
        .merge(crate::attachments::routes())
        .merge(crate::queue_api::routes())
        .layer(DefaultBodyLimit::max(limit))
        .route_layer(middleware::from_fn_with_state(app, auth::bearer))
}

/// `GET /health?proof=<nonce>`; the query is optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthQuery {
    proof: Option<String>,
}

/// Liveness, without the credential. With `?proof=<nonce>` (64 lowercase hex characters) the
/// answer also carries `proof`, [`proof::health_proof`] of the nonce bound to this server's
/// address on the connection, so a client can tell this is the backend holding its credential,
/// listening where the client connected, before it sends the credential (see
/// `ax_protocol::Health`).
pub async fn health(
    State(app): State<Shared>,
    Extension(LocalAddr(local)): Extension<LocalAddr>,
    query: Result<Query<HealthQuery>, QueryRejection>,
) -> ApiResult<Json<Health>> {
    let Query(query) = query.map_err(|r| Failure::bad_request(r.body_text()))?;
    let (proof, screen_proof) = match query.proof {
        None => (None, None),
        Some(nonce) if proof::is_nonce(&nonce) => (
            Some(proof::health_proof(app.token.expose(), &nonce, local)),
            Some(proof::health_proof(
                app.screen_token.expose(),
                &nonce,
                local,
            )),
        ),
        Some(_) => {
            return Err(Failure::bad_request(
                "invalid proof nonce: expected 64 lowercase hex characters",
            ));
        }
    };
    Ok(Json(Health {
        ok: true,
        version: app.version.clone(),
        proof,
        screen_proof,
    }))
}

/// 64 lowercase hex characters (256 bits).
async fn project(State(app): State<Shared>) -> Json<Project> {
    Json(Project {
        directory: app.project_dir.to_string_lossy().into_owned(),
    })
}

/// `GET /agent`: what a new session can run, the default first.
async fn agents(State(app): State<Shared>) -> Json<AgentList> {
    let default = app.agents.default_agent().to_owned();
    let mut agents: Vec<AgentInfo> = app
        .agents
        .iter()
        .map(|e| AgentInfo {
            name: e.name.clone(),
            kind: match e.kind {
                ax_acp::config::AgentKind::Shell => AgentKindName::Shell,
                ax_acp::config::AgentKind::Acp(_) => AgentKindName::Acp,
            },
            origin: match e.origin {
                ax_acp::config::Origin::Builtin => AgentOrigin::Builtin,
                ax_acp::config::Origin::ConfigFile => AgentOrigin::Config,
            },
        })
        .collect();
    agents.sort_by_key(|a| a.name != default);
    Json(AgentList { default, agents })
}

/// `GET /session?limit=N` (optional, newest first).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<u32>,
}

async fn list_sessions(
    State(app): State<Shared>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> ApiResult<Json<Vec<Session>>> {
    let Query(query) = query.map_err(|r| Failure::bad_request(r.body_text()))?;
    Ok(Json(app.sessions().list(query.limit).await?))
}

async fn create_session(
    State(app): State<Shared>,
    input: Result<Json<CreateSession>, JsonRejection>,
) -> ApiResult<Response> {
    let input = body(input)?;
    let title = check_title(&app, &input.title.unwrap_or_default())?;
    let agent = match input.agent {
        Some(name) => {
            if app.agents.get(&name).is_none() {
                let known: Vec<String> = app.agents.iter().map(|e| e.name.clone()).collect();
                return Err(Failure::bad_request(format!(
                    "unknown agent `{}`; configured agents: {} (see `ax-code agents`)",
                    name.chars().take(64).collect::<String>(),
                    known.join(", ")
                )));
            }
            name
        }
        None => app.agents.default_agent().to_owned(),
    };
    let now = ids::now_ms();
    let session = Session {
        id: ids::session_id()?,
        title,
        created: now,
        updated: now,
        status: SessionStatus::Idle,
        agent,
        agent_state: None,
        standing: Vec::new(),
    };
    let session = app.sessions().create(session).await?;
    Ok((StatusCode::CREATED, Json(session)).into_response())
}

/// A title as stored: trimmed, bounded, without control characters or bidi controls (which
/// would let a title read differently from what it is, docs/SECURITY.md).
fn check_title(app: &Shared, title: &str) -> ApiResult<String> {
    if title.chars().count() > app.limits.title_chars {
        return Err(Failure::bad_request(format!(
            "a title has at most {} characters",
            app.limits.title_chars
        )));
    }
    if title.chars().any(char::is_control) {
        return Err(Failure::bad_request(
            "a title may not contain control characters",
        ));
    }
    if let Some(c) = title.chars().find(|&c| ax_core::text::is_bidi_control(c)) {
        return Err(Failure::bad_request(format!(
            "a title may not contain bidirectional control characters (it holds U+{:04X}), \
             which make text read differently from what it is",
            c as u32
        )));
    }
    Ok(title.trim().to_owned())
}

/// `PATCH /session/{id}` with `{"title"}`: renames; `session.updated` goes to everyone.
async fn rename_session(
    State(app): State<Shared>,
    Path(id): Path<String>,
    input: Result<Json<RenameSession>, JsonRejection>,
) -> ApiResult<Json<Session>> {
    let id = session_id(&id)?;
    let input = body(input)?;
    let title = check_title(&app, &input.title)?;
    if title.is_empty() {
        return Err(Failure::bad_request("a title may not be empty"));
    }
    let now = ids::now_ms();
    let session = app
        .update_session(&id, move |c, project, sid| {
            store::rename_session(c, project, sid, &title, now)
        })
        .await?
        .ok_or_else(|| Failure::session_not_found(id.as_str()))?;
    Ok(Json(session))
}

async fn get_session(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> ApiResult<Json<Session>> {
    let id = session_id(&id)?;
    Ok(Json(find_session(&app, &id).await?))
}

async fn delete_session(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> ApiResult<Json<Session>> {
    let id = session_id(&id)?;
    let session = find_session(&app, &id).await?;
    // A running command is killed first; its run then ends before the rows go (a run that
    // does not end keeps its session). The slot is then held, so a prompt that arrives
    // meanwhile cannot start a turn in a session whose rows are going.
    let mut tries = 0;
    let _held = loop {
        turn::abort(&app, &id).await?;
        match turn::hold_slot(&app, &id, HeldFor::Deleting) {
            Ok(held) => break held,
            // A prompt started between the abort and the hold: stop that one too, a few times.
            Err(_) if tries < 3 => tries += 1,
            Err(busy) => return Err(busy.into()),
        }
    };
    if !app.sessions().delete(&id).await? {
        return Err(Failure::session_not_found(id.as_str()));
    }
    crate::turn::acp::stop_agent(&app, &id).await;
    app.queue_gates.forget(&id);
    app.bus.publish(Event::SessionDeleted { session_id: id });
    Ok(Json(session))
}

async fn messages(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Message>>> {
    let id = session_id(&id)?;
    find_session(&app, &id).await?;
    let sid = id.clone();
    Ok(Json(
        app.store.read(move |c| store::messages(c, &sid)).await?,
    ))
}

async fn prompt(
    State(app): State<Shared>,
    Path(id): Path<String>,
    input: Result<Json<PromptBody>, JsonRejection>,
) -> ApiResult<Response> {
    let (id, input, client) = prompt_request(&id, input)?;
    // Before the queue is read: another project's session is not found, whatever it holds.
    find_session(&app, &id).await?;
    let accepted: PromptAccepted =
        crate::queue::start_direct(&app, &id, input, client.as_deref()).await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)).into_response())
}

async fn abort(State(app): State<Shared>, Path(id): Path<String>) -> ApiResult<Json<AbortResult>> {
    let id = session_id(&id)?;
    find_session(&app, &id).await?;
    crate::queue::pause_for_abort(&app, &id).await?;
    let aborted = turn::abort(&app, &id).await?;
    Ok(Json(AbortResult { aborted }))
}

async fn set_mode(
    State(app): State<Shared>,
    Path(id): Path<String>,
    input: Result<Json<SetMode>, JsonRejection>,
) -> ApiResult<Json<Session>> {
    let id = session_id(&id)?;
    let input = body(input)?;
    find_session(&app, &id).await?;
    Ok(Json(
        crate::turn::acp::set_mode(&app, &id, &input.mode_id).await?,
    ))
}

async fn set_config(
    State(app): State<Shared>,
    Path(id): Path<String>,
    input: Result<Json<SetConfigOption>, JsonRejection>,
) -> ApiResult<Json<Session>> {
    let id = session_id(&id)?;
    let input = body(input)?;
    find_session(&app, &id).await?;
    Ok(Json(
        crate::agent_config::set_config(&app, &id, &input.config_id, &input.value).await?,
    ))
}

async fn permissions(State(app): State<Shared>) -> ApiResult<Json<Vec<Permission>>> {
    Ok(Json(app.sessions().pending_permissions().await?))
}

async fn reply_permission(
    State(app): State<Shared>,
    Path((id, pid)): Path<(String, String)>,
    input: Result<Json<PermissionAnswer>, JsonRejection>,
) -> ApiResult<Json<Permission>> {
    let id = session_id(&id)?;
    let pid: PermissionId = parse_id(&pid)?;
    let answer = body(input)?;
    let answered = turn::reply(&app, &id, &pid, answer.reply, answer.option_id).await?;
    Ok(Json(answered))
}

/// `DELETE /session/{id}/standing`: forgets every standing "always" of the session. An ACP
/// agent keeps its own "always" rules in its process, so its process is stopped (the next
/// prompt starts it again and reopens the session); refused while a turn runs.
async fn revoke_standing(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> ApiResult<Json<Session>> {
    let id = session_id(&id)?;
    find_session(&app, &id).await?;
    // Held until the answers are gone: a prompt arriving meanwhile gets a 409 instead of
    // starting a turn whose agent this revoke then stops.
    let _held = turn::hold_slot(&app, &id, HeldFor::Revoking)?;
    // The `shell` agent too: it keeps an "always" for the rest of its session.
    crate::turn::acp::stop_agent(&app, &id).await;
    let revoked = app
        .update_session(&id, move |c, project, sid| {
            store::revoke_standing(c, project, sid)
        })
        .await?
        .ok_or_else(|| Failure::session_not_found(id.as_str()))?;
    Ok(Json(revoked))
}

pub async fn not_found() -> Failure {
    Failure::not_found("no such route; see the API table in the documentation")
}

pub async fn method_not_allowed() -> Failure {
    Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}

/// Debug log of every request: method, path (never the query or headers, so no credential),
/// status and time.
pub async fn log_request(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    tracing::debug!(
        %method,
        %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "request"
    );
    response
}
