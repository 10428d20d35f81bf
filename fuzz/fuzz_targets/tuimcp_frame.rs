//! The TUIMCP socket, as the TUI reads it: frame splitting, the `{token, request}` envelope,
//! the request shapes, `select_session` signatures; and the responses as the adapter reads them.
//!
//! Invariants: a split frame is exactly the bytes before its only `\n`; nothing authenticates
//! with a token other than the one in the frame; an accepted request survives
//! serialize → frame → split → authenticate unchanged, with the same signature; a parsed
//! response survives the same round trip and its view is consistent.
#![no_main]

use ax_tuimcp::{
    Code, Request, Response,
    frame::{FrameError, split_frame},
    protocol::{MAX_FRAME, request_frame},
    server::authenticate,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The token the seeds carry, so mutations reach the request parser.
const TOKEN: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// A different valid token: must never accept what `TOKEN` accepts.
const OTHER: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

fn check_request(request: &Request) {
    let value = request.to_value();
    let back = Request::from_value(value).expect("a serialized request parses");
    assert_eq!(&back, request);
    let frame = request_frame(TOKEN, request);
    assert!(frame.len() <= MAX_FRAME, "a request frame fits the limit");
    let body = split_frame(&frame).expect("a request frame splits");
    assert_eq!(
        authenticate(body, &ax_tuimcp::Secret::new(TOKEN.to_owned())).as_ref(),
        Ok(request)
    );
    assert_eq!(
        authenticate(body, &ax_tuimcp::Secret::new(OTHER.to_owned())),
        Err(Code::Unauthorized)
    );
    if let (Request::SelectSession(a), Request::SelectSession(b)) = (request, &back) {
        assert_eq!(a.signature(), b.signature());
        assert_eq!(a.signature().split('|').count(), 5);
    }
}

fn check_response(response: &Response) {
    if let Response::Context(view) | Response::Applied(view) = response {
        assert!(view.is_consistent(), "a parsed view is consistent");
    }
    let frame = response.to_frame();
    let body = split_frame(&frame).expect("a response frame splits");
    let value: Value = serde_json::from_slice(body).expect("a response frame is JSON");
    let back = Response::from_value(value).expect("a serialized response parses");
    assert_eq!(&back, response);
}

fuzz_target!(|data: &[u8]| {
    // Frame splitting.
    let body = match split_frame(data) {
        Ok(body) => {
            assert!(body.len() < MAX_FRAME);
            assert!(!body.contains(&b'\n'));
            assert_eq!(body.len() + 1, data.len());
            assert_eq!(data[body.len()], b'\n');
            body
        }
        Err(FrameError::Eof) => {
            assert!(!data.contains(&b'\n') && data.len() < MAX_FRAME);
            data
        }
        Err(_) => data,
    };

    // The envelope and the request, as the TUI's endpoint sees them.
    match authenticate(body, &ax_tuimcp::Secret::new(TOKEN.to_owned())) {
        Ok(request) => {
            assert_eq!(
                authenticate(body, &ax_tuimcp::Secret::new(OTHER.to_owned())),
                Err(Code::Unauthorized)
            );
            check_request(&request);
        }
        Err(code) => assert!(matches!(code, Code::Unauthorized | Code::InvalidRequest)),
    }

    // The bare shapes, so the fuzzer need not get through the envelope to reach them.
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        if let Ok(request) = Request::from_value(value.clone()) {
            check_request(&request);
        }
        if let Ok(response) = Response::from_value(value) {
            check_response(&response);
        }
    }
});
