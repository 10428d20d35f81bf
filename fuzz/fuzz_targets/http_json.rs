//! The backend's JSON inputs: request bodies (`Prompt`, `CreateSession`, `PermissionAnswer`),
//! session IDs from paths and bodies, and the `/event` stream items the client and the TUI
//! read (`EventEnvelope`, `Event`), plus the answers they parse, `/health` (with its proof)
//! included.
//!
//! Invariants: every accepted value survives serialize → parse unchanged; a parsed session ID
//! has the documented shape, and the backend and TUIMCP agree on which strings are session IDs.
#![no_main]

use ax_protocol::{
    CreateSession, ErrorBody, Event, EventEnvelope, Health, Message, PermissionAnswer, Prompt,
    PromptAccepted, Session, SessionId,
};
use libfuzzer_sys::fuzz_target;

fn round_trips<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = serde_json::to_vec(value).expect("serializes");
    let back: T = serde_json::from_slice(&bytes).expect("parses what it wrote");
    assert_eq!(&back, value);
}

fn try_shape<T>(data: &[u8])
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    if let Ok(value) = serde_json::from_slice::<T>(data) {
        round_trips(&value);
    }
}

fn check_session_id(text: &str) {
    // One SessionId type (ax-core) serves the backend and TUIMCP alike.
    let backend = text.parse::<SessionId>();
    assert_eq!(backend.is_ok(), SessionId::is_valid(text));
    if let Ok(id) = backend {
        assert_eq!(id.as_str(), text);
        assert_eq!(id.as_str().len(), 30);
        assert!(id.as_str().starts_with("ses_"));
        assert!(id.as_str()[4..].bytes().all(|b| b.is_ascii_alphanumeric()));
        round_trips(&id);
    }
}

fuzz_target!(|data: &[u8]| {
    // A path segment (`/session/{id}`) arrives as text.
    if let Ok(text) = std::str::from_utf8(data) {
        check_session_id(text);
        if let Some(rest) = text.strip_prefix("ses_") {
            // Bias towards the interesting length.
            let mut padded = String::from("ses_");
            padded.extend(rest.chars().chain(std::iter::repeat('0')).take(26));
            check_session_id(&padded);
        }
    }
    if let Ok(id) = serde_json::from_slice::<SessionId>(data) {
        check_session_id(id.as_str());
    }
    // Request bodies.
    try_shape::<Prompt>(data);
    try_shape::<CreateSession>(data);
    try_shape::<PermissionAnswer>(data);
    // What the client reads back.
    try_shape::<EventEnvelope>(data);
    try_shape::<Event>(data);
    try_shape::<Session>(data);
    try_shape::<Message>(data);
    try_shape::<PromptAccepted>(data);
    try_shape::<ErrorBody>(data);
    // What the client reads from whoever answers on the port before it sends the credential.
    try_shape::<Health>(data);
});
