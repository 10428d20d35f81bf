//! A failed `screen` tool call: the gateway's error code (or the same vocabulary for a local
//! cause) and a message.
//!
//! It has a module of its own because both `screen` (the tool) and `screen_args` (mapping the
//! arguments) return it; with it here, `screen` imports `screen_args` and not the other way
//! round. `screen` re-exports it as `screen::ScreenError`.

use crate::{client::ClientError, frame::ErrorCode};

/// A failed call: the gateway's error code (or the same vocabulary for local causes).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ScreenError {
    /// The gateway's error code, or the same vocabulary for a local cause.
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
}

impl ScreenError {
    /// An error with this code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ScreenError {
            code,
            message: message.into(),
        }
    }

    /// An `INVALID_REQUEST` error (bad arguments; the agent can fix them).
    pub fn invalid(message: impl Into<String>) -> Self {
        ScreenError::new(ErrorCode::InvalidRequest, message)
    }

    /// An `UNAVAILABLE` error (no gateway or no Control UI; retrying later may help).
    pub fn unavailable(message: impl Into<String>) -> Self {
        ScreenError::new(ErrorCode::Unavailable, message)
    }
}

impl From<ClientError> for ScreenError {
    fn from(e: ClientError) -> Self {
        match e {
            // The gateway's own message, without a code prefix.
            ClientError::Gateway(shape) => ScreenError::new(shape.code, shape.message),
            other => ScreenError::new(other.code(), other.to_string()),
        }
    }
}
