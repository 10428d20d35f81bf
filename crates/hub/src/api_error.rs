//! The hub's error answer, `{"error":{"code","message"}}` with a status, as the backend
//! answers. Every route answers its errors so: the API over the machines (`hub.rs`) and the
//! page's sign-in and Host check (`web.rs`) alike. It is a leaf of its own so that both name
//! it and `web` needs nothing of `hub` (docs/architecture.md, "Imports inside a crate").

use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};

use crate::subject::MachineName;

/// `{"error":{"code","message"}}` with a status, as the backend answers.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// Read by the transcript cache, which answers from what it kept when a machine is away.
    pub(crate) status: StatusCode,
    code: String,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: u16, code: &str, message: String) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            code: code.to_owned(),
            message,
        }
    }
    pub(crate) fn offline(machine: &MachineName, why: &str) -> ApiError {
        ApiError::new(503, "offline", format!("machine {machine} {why}"))
    }
    pub(crate) fn internal(e: &dyn std::fmt::Display) -> ApiError {
        ApiError::new(500, "internal", e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}
