//! Minting IDs through the shared leaf (`ax_core::ids`), as request failures instead of panics.
//! Parsing an ID that came from outside is the type's own `FromStr` (see `request::parse_id`).
//!
//! An ID is a prefix, 12 lowercase hex digits of a monotonic (milliseconds × 16 + counter)
//! value, then 14 random characters of `[0-9A-Za-z]`. Minting fails only when the OS random
//! source does; a request then fails with a 500 that says so.

use ax_core::RandomError;
use ax_protocol::{MessageId, QueuedId, SessionId};

use crate::turn_error::TurnError;

pub use ax_protocol::time::now_ms;

/// The failure (a 500 over HTTP) a request answers with when the OS random source fails.
pub fn no_randomness(err: RandomError) -> TurnError {
    tracing::error!(error = %err, "cannot mint an ID");
    TurnError::internal("the backend cannot get random bytes from the operating system")
}

/// A fresh session ID.
pub fn session_id() -> Result<SessionId, TurnError> {
    SessionId::mint().map_err(no_randomness)
}

/// A fresh message ID.
pub fn message_id() -> Result<MessageId, TurnError> {
    MessageId::mint().map_err(no_randomness)
}

/// A fresh queued-prompt ID.
pub fn queued_id() -> Result<QueuedId, TurnError> {
    QueuedId::mint().map_err(no_randomness)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_have_the_documented_shape_and_sort_by_creation() {
        let ids: Vec<String> = (0..200)
            .map(|_| session_id().unwrap().to_string())
            .collect();
        for id in &ids {
            assert_eq!(id.len(), 30, "{id}");
            assert!(
                id[4..16]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
            assert!(id[16..].bytes().all(|b| b.is_ascii_alphanumeric()));
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
        assert!(MessageId::is_valid(message_id().unwrap().as_str()));
    }

    #[test]
    fn no_randomness_is_a_500_that_says_why() {
        let failure = crate::error::Failure::from(no_randomness(RandomError::unavailable()));
        assert_eq!(
            failure.status,
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
        assert!(failure.message.contains("random"), "{}", failure.message);
    }
}
