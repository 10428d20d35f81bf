//! A session's prompt queue (docs/backend.md §3, docs/agents.md §4): prompts the person sent
//! while a turn ran, kept in order in the store and sent one at a time as turns end.

use serde::{Deserialize, Serialize};

use crate::{Millis, Prompt, PromptAccepted, QueuedId, SessionId};

/// One prompt waiting for its session's turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueuedPrompt {
    /// The item, for editing, cancelling and sending it now.
    pub id: QueuedId,
    /// The session it waits in.
    pub session_id: SessionId,
    /// What will be sent, exactly as a `POST /session/{id}/prompt` body.
    pub prompt: Prompt,
    /// When it was queued.
    pub created: Millis,
    /// When it was last edited (equals `created` until then).
    pub updated: Millis,
}

/// `GET /session/{id}/queue` answer and the `queue.updated` event: the whole queue, first to
/// be sent first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromptQueue {
    /// The session of the queue.
    pub session_id: SessionId,
    /// Why the queue waits for the person instead of sending its next prompt when the session
    /// is free (the last turn failed, was stopped, or the backend restarted); `None` while it
    /// flows. Never set on an empty queue. `POST /session/{id}/queue/resume` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<String>,
    /// In the order they will be sent.
    pub items: Vec<QueuedPrompt>,
}

/// `POST /session/{id}/queue` answer: sent at once (the session was free and nothing waited
/// before it) or queued behind the running turn and the prompts already waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase", deny_unknown_fields)]
pub enum QueueAnswer {
    /// The turn started, as `POST /session/{id}/prompt` would have answered.
    Sent {
        /// What the turn stored.
        accepted: Box<PromptAccepted>,
    },
    /// It waits behind the running turn.
    Queued {
        /// The stored item.
        item: QueuedPrompt,
        /// Its place in the queue, from 0 (the next to be sent).
        position: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PromptPart;

    #[test]
    fn the_wire_shape_is_camel_case_and_tagged() {
        let item = QueuedPrompt {
            id: "que_0123456789abABCDEFGHIJKLMN".parse().unwrap(),
            session_id: "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap(),
            prompt: Prompt {
                parts: vec![PromptPart::Text { text: "hi".into() }],
            },
            created: 1,
            updated: 2,
        };
        let answer = QueueAnswer::Queued {
            item: item.clone(),
            position: 0,
        };
        let json = serde_json::to_value(&answer).unwrap();
        assert_eq!(json["state"], "queued");
        assert_eq!(json["item"]["sessionId"], "ses_0123456789abABCDEFGHIJKLMN");
        assert_eq!(serde_json::from_value::<QueueAnswer>(json).unwrap(), answer);
        let queue = PromptQueue {
            session_id: item.session_id.clone(),
            paused: None,
            items: vec![item],
        };
        let json = serde_json::to_value(&queue).unwrap();
        assert!(json.get("paused").is_none());
        assert!("que_x".parse::<QueuedId>().is_err());
    }
}
