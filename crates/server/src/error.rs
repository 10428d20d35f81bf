//! The one error shape of the API: `{"error":{"code","message"}}` with a fitting status.

use ax_protocol::{ApiError, ErrorBody};
use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};

/// An API failure. Messages say what was expected; they never carry a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {code}: {message}")]
pub struct Failure {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Failure {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong credential: send `Authorization: Bearer <token>`",
        )
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn session_not_found(id: &str) -> Self {
        Self::not_found(format!("no session {id} in this project"))
    }
}

impl From<crate::store::StoreError> for Failure {
    fn from(err: crate::store::StoreError) -> Self {
        tracing::error!(error = %err, "store failure");
        Failure::internal("the session store failed; see the backend log")
    }
}

/// The one place a run-logic error becomes an API answer (docs/backend.md §3).
impl From<crate::turn_error::TurnError> for Failure {
    fn from(err: crate::turn_error::TurnError) -> Self {
        use crate::turn_error::TurnError as E;
        let message = err.to_string();
        match err {
            E::SessionNotFound(_) | E::NotFound(_) => Failure::not_found(message),
            E::NotNow(_) => Failure::conflict(message),
            E::Invalid(_) => Failure::bad_request(message),
            E::BadAttachment(_) => Failure::new(StatusCode::BAD_REQUEST, "bad_attachment", message),
            E::BadImage(_) => Failure::new(StatusCode::BAD_REQUEST, "bad_image", message),
            E::ImagesNotSupported(_) => {
                Failure::new(StatusCode::BAD_REQUEST, "images_not_supported", message)
            }
            E::TooLarge(_) => Failure::too_large(message),
            E::QueueFull(_) => Failure::new(StatusCode::TOO_MANY_REQUESTS, "queue_full", message),
            E::Store | E::Internal(_) => Failure::internal(message),
        }
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ApiError {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}
