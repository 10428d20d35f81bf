//! What travels over NATS (docs/hub.md §2): JSON, strict (unknown fields refused), bounded
//! (a message over [`MAX_MESSAGE`] is refused before it is parsed).

use ax_protocol::{
    EventEnvelope, MessageId, PermissionId, PermissionReply, Prompt, QueuedId, Session, SessionId,
};
use serde::{Deserialize, Serialize};

use crate::MachineName;

/// Largest message either side accepts (NATS' default payload limit is 1 MiB).
pub const MAX_MESSAGE: usize = 1024 * 1024;
/// At most this many sessions in a snapshot (the most recently active).
pub const MAX_SNAPSHOT_SESSIONS: u32 = 1000;
/// Largest piece of an image one [`Request::ImagePiece`] asks for: base64 in its JSON answer,
/// it stays under [`MAX_MESSAGE`].
pub const IMAGE_PIECE_BYTES: u32 = 512 * 1024;

/// A backend's machine record, published when it joins, at every heartbeat and when it
/// leaves (`online: false`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachineRecord {
    /// The machine.
    pub name: MachineName,
    /// The project directory the backend serves, on that machine.
    pub project: String,
    /// Random per join process: events of one boot share it.
    pub boot: String,
    /// False when the backend left cleanly.
    pub online: bool,
    /// When this record was sent (ms since the epoch, the backend's clock).
    pub sent_ms: u64,
    /// How often the backend sends its record; a hub shows it offline after three missed.
    pub heartbeat_ms: u64,
}

/// The backend's most recently active sessions, as last seen (shown while it is offline).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionsSnapshot {
    /// The machine.
    pub machine: MachineName,
    /// The sessions, most recent activity first.
    pub sessions: Vec<Session>,
}

/// One backend event as kept in JetStream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachineEvent {
    /// The machine it happened on.
    pub machine: MachineName,
    /// The backend boot (see [`MachineRecord::boot`]); `event.id` increases within it.
    pub boot: String,
    /// The event as the backend's `/event` gave it.
    pub event: EventEnvelope,
}

/// A request from the hub to one backend (`ax.req.<machine>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", deny_unknown_fields)]
pub enum Request {
    /// The sessions, most recent first.
    ListSessions {},
    /// A new session.
    CreateSession {
        /// Its title.
        #[serde(default)]
        title: Option<String>,
        /// Its agent (none: the backend's default).
        #[serde(default)]
        agent: Option<String>,
    },
    /// A session's messages.
    Messages {
        /// The session.
        session: SessionId,
    },
    /// A prompt.
    Prompt {
        /// The session.
        session: SessionId,
        /// What the person typed.
        prompt: Prompt,
    },
    /// Stop the session's run.
    Abort {
        /// The session.
        session: SessionId,
    },
    /// The pending permissions.
    Permissions {},
    /// An answer to a permission request.
    ReplyPermission {
        /// The session.
        session: SessionId,
        /// The request.
        permission: PermissionId,
        /// The answer.
        reply: PermissionReply,
        /// The agent's exact option, when the person chose one.
        #[serde(default)]
        option_id: Option<String>,
    },
    /// Give the session a new title.
    RenameSession {
        /// The session.
        session: SessionId,
        /// The new title.
        title: String,
    },
    /// Delete the session (its backend stops its agent first).
    DeleteSession {
        /// The session.
        session: SessionId,
    },
    /// Switch the session's agent mode.
    SetMode {
        /// The session.
        session: SessionId,
        /// The mode.
        mode_id: String,
    },
    /// A `screen` method on the machine's own gateway (docs/hub.md §2).
    Screen {
        /// Which one.
        method: ScreenMethod,
        /// Its params, passed as they are: the backend's gateway checks them.
        params: serde_json::Value,
    },
    /// An operator terminal on the machine, relayed by the hub's gateway (`crate::terminal`,
    /// docs/hub.md §2).
    Terminal {
        /// The terminal, by the ID the hub chose.
        terminal: crate::terminal::TerminalId,
        /// What to do with it.
        action: crate::terminal::TerminalAction,
    },
    /// A hub Control UI's acknowledgement of a `ui.command` the machine shared (docs/hub.md
    /// §2, §3): the params of the gateway's `ui.command.result`, passed as they are to the
    /// machine's relay connection, whose gateway checks them.
    UiCommandResult {
        /// `{commandId, outcome, reason?, revision?, notApplied?}`.
        params: serde_json::Value,
    },

    // ---- what the hub's Control UI page asks of a machine (docs/hub.md §4) ----
    /// The agents a new session can run, the default first (the backend's `GET /agent`).
    Agents {},
    /// A prompt sent now when the session is free and nothing waits, else queued behind the
    /// running turn (the backend's `POST /session/{id}/queue`).
    QueuePrompt {
        /// The session.
        session: SessionId,
        /// What the person typed.
        prompt: Prompt,
    },
    /// The session's prompt queue, next first.
    Queue {
        /// The session.
        session: SessionId,
    },
    /// Replace a queued prompt.
    EditQueued {
        /// The session.
        session: SessionId,
        /// The queued prompt.
        queued: QueuedId,
        /// Its new content.
        prompt: Prompt,
    },
    /// Cancel a queued prompt.
    CancelQueued {
        /// The session.
        session: SessionId,
        /// The queued prompt.
        queued: QueuedId,
    },
    /// Send a queued prompt now: the running turn stops and this one goes next.
    SendQueuedNow {
        /// The session.
        session: SessionId,
        /// The queued prompt.
        queued: QueuedId,
    },
    /// Let a paused queue flow again.
    ResumeQueue {
        /// The session.
        session: SessionId,
    },
    /// `length` bytes (at most [`IMAGE_PIECE_BYTES`]) from `offset` of image `index` of a
    /// person's message: an image is up to 5 MiB, a NATS message 1 MiB, so the hub reads it
    /// in pieces ([`ImagePiece`]).
    ImagePiece {
        /// The session.
        session: SessionId,
        /// The message.
        message: MessageId,
        /// Which of the message's images.
        index: u32,
        /// The first byte.
        offset: u64,
        /// How many bytes at most.
        length: u32,
    },
}

/// The answer to [`Request::ImagePiece`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImagePiece {
    /// The image's type, as the backend serves it.
    pub mime_type: String,
    /// The whole image's size in bytes.
    pub total: u64,
    /// The piece, base64 (standard alphabet, padded); empty from `total` on.
    pub data: String,
}

/// The gateway methods a hub may relay: the two of the `screen` tool (docs/gateway.md §4).
/// What each one asks of the gateway is `screen.rs`'s (its `impl ScreenMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScreenMethod {
    /// `ui.layout`: the layouts the machine's Control UIs reported (read).
    Layout,
    /// `ui.command`: arrange the machine's Control UIs (write).
    Command,
}

/// A backend's answer: exactly one of `ok` and `error`. `T` is the answer's type where the
/// reader knows it (a listing is read straight into sessions), else any JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Reply<T = serde_json::Value> {
    /// The backend API's JSON answer.
    Ok(T),
    /// What went wrong, as the backend API said it.
    Error(ReplyError),
}

/// An error answer: the HTTP status and `{"code","message"}` the backend gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplyError {
    /// The HTTP status (502 when the backend could not be reached).
    pub status: u16,
    /// Machine-readable.
    pub code: String,
    /// Human-readable.
    pub message: String,
}

/// Refuses oversize input before parsing it.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    if bytes.len() > MAX_MESSAGE {
        return Err(format!(
            "message of {} bytes is over the {MAX_MESSAGE}-byte limit",
            bytes.len()
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("bad message: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_strict() {
        let r: Request = decode(br#"{"op":"listSessions"}"#).unwrap();
        assert_eq!(r, Request::ListSessions {});
        assert!(decode::<Request>(br#"{"op":"listSessions","x":1}"#).is_err());
        assert!(decode::<Request>(br#"{"op":"rm"}"#).is_err());
        assert!(decode::<Request>(&vec![b' '; MAX_MESSAGE + 1]).is_err());
        // An acknowledgement carries the gateway's params as they are, and nothing else.
        let r: Request = decode(
            br#"{"op":"uiCommandResult","params":{"commandId":"cmd_1","outcome":"applied"}}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Request::UiCommandResult {
                params: serde_json::json!({"commandId": "cmd_1", "outcome": "applied"}),
            }
        );
        assert!(decode::<Request>(br#"{"op":"uiCommandResult"}"#).is_err());
        assert!(decode::<Request>(br#"{"op":"uiCommandResult","params":{},"x":1}"#).is_err());
    }

    /// The largest piece's answer, its bytes base64, still fits in one message.
    #[test]
    fn the_largest_image_piece_fits_in_a_message() {
        use base64::Engine as _;
        let piece = ImagePiece {
            mime_type: "image/webp".into(),
            total: u64::MAX,
            data: base64::engine::general_purpose::STANDARD
                .encode(vec![0xff; IMAGE_PIECE_BYTES as usize]),
        };
        let bytes = serde_json::to_vec(&Reply::Ok(piece.clone())).unwrap();
        assert!(bytes.len() < MAX_MESSAGE, "{}", bytes.len());
        assert_eq!(
            decode::<Reply<ImagePiece>>(&bytes).unwrap(),
            Reply::Ok(piece)
        );
        let sid = "ses_0123456789abABCDEFGHIJKLMN";
        let mid = "msg_0123456789abABCDEFGHIJKLMN";
        let ask = format!(
            r#"{{"op":"imagePiece","session":"{sid}","message":"{mid}","index":0,"offset":0,"length":1}}"#
        );
        assert!(matches!(
            decode::<Request>(ask.as_bytes()).unwrap(),
            Request::ImagePiece { index: 0, .. }
        ));
        for bad in [
            ask.replace(r#","length":1"#, ""),
            ask.replace(r#""index":0"#, r#""index":-1"#),
            ask.replace(mid, "msg_1"),
            ask.replace('}', r#","x":1}"#),
        ] {
            assert!(decode::<Request>(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_pages_requests_are_strict_too() {
        let r: Request = decode(br#"{"op":"agents"}"#).unwrap();
        assert_eq!(r, Request::Agents {});
        let sid = "ses_0123456789abABCDEFGHIJKLMN";
        let qid = "que_0123456789abABCDEFGHIJKLMN";
        let edit = format!(
            r#"{{"op":"editQueued","session":"{sid}","queued":"{qid}","prompt":{{"parts":[]}}}}"#
        );
        assert!(matches!(
            decode::<Request>(edit.as_bytes()).unwrap(),
            Request::EditQueued { .. }
        ));
        for bad in [
            r#"{"op":"agents","x":1}"#.to_owned(),
            format!(r#"{{"op":"queue","session":"{sid}","x":1}}"#),
            // A queued prompt's ID where a session's goes, and the other way round.
            format!(r#"{{"op":"queue","session":"{qid}"}}"#),
            format!(r#"{{"op":"cancelQueued","session":"{sid}","queued":"{sid}"}}"#),
            r#"{"op":"resumeQueue"}"#.to_owned(),
        ] {
            assert!(decode::<Request>(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn screen_requests_name_one_of_two_methods() {
        let r: Request = decode(br#"{"op":"screen","method":"layout","params":{}}"#).unwrap();
        assert_eq!(
            r,
            Request::Screen {
                method: ScreenMethod::Layout,
                params: serde_json::json!({}),
            }
        );
        // Only the `screen` tool's two methods: never the terminal's.
        for bad in [
            &br#"{"op":"screen","method":"terminal.run","params":{}}"#[..],
            br#"{"op":"screen","method":"command"}"#,
            br#"{"op":"screen","method":"command","params":{},"x":1}"#,
        ] {
            assert!(decode::<Request>(bad).is_err(), "{bad:?}");
        }
    }
}
