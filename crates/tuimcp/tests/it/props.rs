//! Property tests: arbitrary bytes and arbitrary request shapes never panic and never
//! navigate.

use std::time::Instant;

use ax_tuimcp::{
    Code, Commit, Controller, GuardInputs, Identity, Navigator, SessionId, ValidationOutcome,
    frame::{FrameError, read_frame, split_frame},
    protocol::MAX_FRAME,
    server::authenticate,
};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::sync::oneshot;

struct Counting(usize);

impl Navigator for Counting {
    type Error = &'static str;
    fn navigate(&mut self, _: &SessionId) -> Result<GuardInputs, &'static str> {
        self.0 += 1;
        Err("counted")
    }
}

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Runs a frame through the server pipeline and a controller; returns the navigations.
fn drive(frame: &[u8]) -> (Result<(), Code>, usize) {
    let mut controller = Controller::new(Identity::random(), GuardInputs::ready_home("/w"));
    let mut router = Counting(0);
    let now = Instant::now();
    let result = split_frame(frame)
        .map_err(|_| Code::Unauthorized)
        .and_then(|json| authenticate(json, TOKEN));
    let outcome = match result {
        Ok(request) => {
            let (tx, _rx) = oneshot::channel();
            if let Some(v) = controller.handle(request, tx, now) {
                let commit = controller.validation_finished(
                    v.ticket,
                    ValidationOutcome::Valid,
                    now,
                    &mut router,
                );
                assert!(!matches!(commit, Commit::Applied(_)));
            }
            Ok(())
        }
        Err(code) => Err(code),
    };
    (outcome, router.0)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z_]{0,12}".prop_map(Value::from),
        Just(json!("ses_0123456789abcdefghijABCDEF")),
        Just(json!("00000000-0000-4000-8000-000000000001")),
        Just(json!("get_view_context")),
        Just(json!("select_session")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("operation".to_owned()),
                    Just("requestId".to_owned()),
                    Just("instanceId".to_owned()),
                    Just("generation".to_owned()),
                    Just("expectedRevision".to_owned()),
                    Just("sessionId".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..7
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_or_navigate(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let (result, navigations) = drive(&bytes);
        prop_assert_eq!(navigations, 0);
        // Without the token, nothing gets past authentication.
        prop_assert_eq!(result, Err(Code::Unauthorized));
    }

    #[test]
    fn arbitrary_requests_with_the_token_never_panic_or_navigate(request in json_value()) {
        let mut frame = json!({"token": TOKEN, "request": request}).to_string().into_bytes();
        frame.push(b'\n');
        let (result, navigations) = drive(&frame);
        prop_assert_eq!(navigations, 0);
        if let Err(code) = result {
            prop_assert!(code == Code::InvalidRequest || frame.len() > MAX_FRAME);
        }
    }

    #[test]
    fn the_stream_reader_agrees_with_the_frame_rules(
        bytes in prop::collection::vec(prop_oneof![Just(b'\n'), any::<u8>()], 0..40),
        chunk in 1usize..8,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let read = runtime.block_on(async {
            let mut reader = tokio_test_reader(&bytes, chunk);
            read_frame(&mut reader).await
        });
        match split_frame(&bytes) {
            Ok(json) => {
                // Whole-buffer rules can only be stricter than the streaming reader.
                prop_assert_eq!(read.ok(), Some(json.to_vec()));
            }
            Err(FrameError::Trailing) => {
                // A later chunk's trailing bytes are caught by the server's probe afterwards.
                let end = bytes.iter().position(|&b| b == b'\n').unwrap();
                if let Ok(frame) = &read {
                    prop_assert_eq!(&frame[..], &bytes[..end]);
                }
            }
            Err(_) => prop_assert!(read.is_err()),
        }
    }
}

/// A reader that hands out at most `chunk` bytes per read.
fn tokio_test_reader(bytes: &[u8], chunk: usize) -> impl tokio::io::AsyncRead + Unpin {
    let (mut client, server) = tokio::io::duplex(chunk);
    let data = bytes.to_vec();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            use tokio::io::AsyncWriteExt;
            for piece in data.chunks(chunk) {
                if client.write_all(piece).await.is_err() {
                    return;
                }
            }
        });
    });
    server
}
