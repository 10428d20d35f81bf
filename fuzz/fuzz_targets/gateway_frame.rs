//! The gateway's client frames, as one WebSocket text message: the reader's `parse_request`
//! (closed frame, id and method bounds), `connect` params, `ui.command` params validated
//! against a fake session directory, and `ui.command.result` params. Also the server frames
//! as a client (`ax-code mcp screen`) reads them.
//!
//! Invariants: every accepted shape survives serialize → parse unchanged; `connect` params
//! never show their token in `Debug`; a validated `ui.command` names only known sessions of
//! bounded length and never closes a panel with a dock; the event fanned out from valid
//! params parses back.
#![no_main]

use ax_gateway::{
    ConnectParams, ErrorCode, RequestFrame, ServerFrame, SessionDirectory, UiCommand,
    UiCommandEvent, UiCommandParams, UiCommandResultParams,
    frame::{MAX_ID_LEN, MAX_METHOD_LEN},
    parse_request,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Knows the session IDs whose last character is a digit.
struct FakeSessions;

impl SessionDirectory for FakeSessions {
    fn contains(&self, session_id: &str) -> bool {
        ax_protocol::SessionId::is_valid(session_id)
            && session_id
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_digit())
    }
}

fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

fn round_trips<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).expect("serializes");
    let back: T = serde_json::from_str(&text).expect("parses what it wrote");
    assert_eq!(&back, value);
}

fn check_connect(params: &ConnectParams) {
    let value = serde_json::to_value(params).expect("serializes");
    let back: ConnectParams = serde_json::from_value(value.clone()).expect("parses");
    assert_eq!(serde_json::to_value(&back).expect("serializes"), value);
    let _ = params.check_bounds();
    assert_eq!(
        format!("{:?}", params.auth),
        "ConnectAuth { token: Secret(<redacted>) }"
    );
    // The Debug output does not depend on the token at all.
    let mut other = params.clone();
    other.auth.token = "x".into();
    assert_eq!(format!("{params:?}"), format!("{other:?}"));
}

fn check_ui_command(params: &UiCommandParams) {
    round_trips(params);
    let valid = params.validate(&FakeSessions);
    if valid.is_ok() {
        for key in [params.session_key.as_deref(), params.command.session_key()]
            .into_iter()
            .flatten()
        {
            assert!(!key.is_empty() && key.len() <= 128);
            assert!(FakeSessions.contains(key));
        }
        assert!(!matches!(
            params.command,
            UiCommand::Panel {
                open: false,
                dock: Some(_),
                ..
            }
        ));
        let event = UiCommandEvent {
            command: params.command.clone(),
            session_key: params.session_key.clone(),
            command_id: "cmd_0011223344556677".into(),
            expected_revision: params.expected_revision,
        };
        round_trips(&event);
    }
}

fn check_params(value: Value) {
    if let Ok(params) = serde_json::from_value::<ConnectParams>(value.clone()) {
        check_connect(&params);
    }
    if let Ok(params) = serde_json::from_value::<UiCommandParams>(value.clone()) {
        check_ui_command(&params);
    }
    if let Ok(params) = serde_json::from_value::<UiCommandResultParams>(value) {
        round_trips(&params);
    }
}

fuzz_target!(|data: &[u8]| {
    // WebSocket text messages are UTF-8 by then.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The reader's own parser (id and method bounds, best-known id on failure).
    match parse_request(text) {
        Ok(frame) => {
            assert!(!frame.id.is_empty() && frame.id.len() <= MAX_ID_LEN);
            assert!(!frame.method.is_empty() && frame.method.len() <= MAX_METHOD_LEN);
            if !frame.params.as_ref().is_some_and(has_float) {
                round_trips(&frame);
            }
            check_params(frame.params.unwrap_or_else(|| serde_json::json!({})));
        }
        Err((id, error)) => {
            assert!(id.len() <= MAX_ID_LEN);
            assert_eq!(error.code, ErrorCode::InvalidRequest);
            // Refused only for a reason: a closed shape or a bound.
            if let Ok(frame) = serde_json::from_str::<RequestFrame>(text) {
                let in_bounds = !frame.id.is_empty()
                    && frame.id.len() <= MAX_ID_LEN
                    && !frame.method.is_empty()
                    && frame.method.len() <= MAX_METHOD_LEN;
                assert!(!in_bounds, "a well-formed frame within bounds was refused");
            }
        }
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        check_params(value);
    }
    if let Ok(frame) = serde_json::from_str::<ServerFrame>(text) {
        let value = match &frame {
            ServerFrame::Response(r) => serde_json::to_value(r),
            ServerFrame::Event(e) => serde_json::to_value(e),
        }
        .expect("serializes");
        if !has_float(&value) {
            let back: ServerFrame = serde_json::from_value(value).expect("parses what it wrote");
            assert_eq!(back, frame);
        }
    }
});
