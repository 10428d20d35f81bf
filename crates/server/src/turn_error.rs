//! Why the run logic refused or failed something: a session's turns, their prompts, queue,
//! permissions, modes and options. A domain error, not an HTTP one: the run tasks and their
//! channels carry it, and `error.rs` maps it to the API's status and code in one place
//! (docs/backend.md §3, where the error codes are listed).

/// A refusal or failure of the run logic. Each message says what was expected; none carries a
/// credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// No such session in this project.
    #[error("no session {0} in this project")]
    SessionNotFound(String),
    /// Something the request names (a permission, a queued prompt) is not there.
    #[error("{0}")]
    NotFound(String),
    /// The session's state does not allow it now: a turn runs, the turn already ended, the
    /// agent is not ready, or it is the other kind of turn.
    #[error("{0}")]
    NotNow(String),
    /// The request itself is wrong (a bad value, an option the agent does not offer).
    #[error("{0}")]
    Invalid(String),
    /// A prompt's file is outside the project or not a readable regular file.
    #[error("{0}")]
    BadAttachment(String),
    /// A prompt's image is not a PNG, JPEG, GIF or WebP matching its type.
    #[error("{0}")]
    BadImage(String),
    /// The session's agent does not take images.
    #[error("{0}")]
    ImagesNotSupported(String),
    /// A prompt, file or image past its bound.
    #[error("{0}")]
    TooLarge(String),
    /// The session's queue holds as many prompts as it may.
    #[error("{0}")]
    QueueFull(String),
    /// The session store failed (logged where it happened).
    #[error("the session store failed; see the backend log")]
    Store,
    /// Something that should not fail did (a task or process could not start).
    #[error("{0}")]
    Internal(String),
}

impl TurnError {
    pub fn session_not_found(id: &str) -> Self {
        TurnError::SessionNotFound(id.to_owned())
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        TurnError::NotFound(message.into())
    }

    pub fn not_now(message: impl Into<String>) -> Self {
        TurnError::NotNow(message.into())
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        TurnError::Invalid(message.into())
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        TurnError::TooLarge(message.into())
    }

    pub fn internal(message: impl Into<String>) -> Self {
        TurnError::Internal(message.into())
    }
}

impl From<crate::store::StoreError> for TurnError {
    fn from(err: crate::store::StoreError) -> Self {
        tracing::error!(error = %err, "store failure");
        TurnError::Store
    }
}
