//! Client errors: transport, API (status + `{"error":{code,message}}`), decoding, and a server
//! that could not prove it holds the credential.

use ax_protocol::ApiError;

/// Why a call to the backend failed. Messages never hold the credential.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The backend answered with an API error.
    #[error("the backend answered {status}: {error}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The backend's code and message.
        error: ApiError,
    },
    /// The backend answered with an error status and no API error body.
    #[error("the backend answered HTTP {status}")]
    Status {
        /// The HTTP status.
        status: u16,
    },
    /// The backend could not be reached or the connection broke.
    #[error("cannot reach the backend: {0}")]
    Transport(String),
    /// A response did not have the expected shape.
    #[error("unexpected response from the backend: {0}")]
    Decode(String),
    /// The URL does not parse, or is not `http://HOST:PORT`.
    #[error("bad backend URL {0}")]
    BadUrl(String),
    /// The server at `url` did not answer the `/health` proof check with a proof of the
    /// credential, so the credential was not sent. Whoever listens there is not the backend
    /// this credential belongs to (another program took its port, or the backend runs with
    /// another credential). `reason` says what it answered; it never holds a secret.
    #[error(
        "the server at {url} could not prove it holds the credential; the credential was not \
         sent ({reason})"
    )]
    NotProven {
        /// The server that was checked.
        url: String,
        /// What it answered instead of a valid proof.
        reason: String,
    },
}

impl ClientError {
    pub(crate) fn transport(err: reqwest::Error) -> Self {
        // reqwest's message names the URL, never a header, so the credential cannot leak here.
        let mut message = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        ClientError::Transport(message)
    }

    /// The HTTP status, for API and status errors.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } | ClientError::Status { status } => Some(*status),
            _ => None,
        }
    }

    /// The API error body, when the backend sent one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            ClientError::Api { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Whether this is [`ClientError::NotProven`]: the credential was withheld.
    pub fn is_not_proven(&self) -> bool {
        matches!(self, ClientError::NotProven { .. })
    }
}
