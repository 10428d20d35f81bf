//! The files a local client trusts: `endpoint.json` of a TUIMCP endpoint (content only; the
//! path, owner and mode checks need a real file system and are tested in the crate), and the
//! backend's `servers/*.json` and `credentials/*.json` records.
//!
//! Invariants: an accepted `endpoint.json` has version 1 and a 64-digit lowercase hex token,
//! its `Debug` hides the token, and it survives write → parse unchanged; the records survive
//! serialize → parse unchanged.
#![no_main]

use ax_protocol::local::{CredentialRecord, ServerRecord};
use ax_tuimcp::endpoint_file::{EndpointFile, MAX_FILE, parse_endpoint_content};
use libfuzzer_sys::fuzz_target;

fn round_trips<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = serde_json::to_vec(value).expect("serializes");
    let back: T = serde_json::from_slice(&bytes).expect("parses what it wrote");
    assert_eq!(&back, value);
}

fuzz_target!(|data: &[u8]| {
    if let Some(file) = parse_endpoint_content(data) {
        assert!(data.len() as u64 <= MAX_FILE);
        assert_eq!(file.version, 1);
        assert_eq!(file.token.expose().len(), 64);
        assert!(
            file.token
                .expose()
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert!(!format!("{file:?}").contains(file.token.expose()));
        // What the TUI writes (compact JSON and a newline) is what the adapter accepts.
        let mut line = serde_json::to_vec(&file).expect("serializes");
        line.push(b'\n');
        let back: EndpointFile = parse_endpoint_content(&line).expect("parses what it wrote");
        assert!(back == file);
    }
    if let Ok(record) = serde_json::from_slice::<ServerRecord>(data) {
        round_trips(&record);
    }
    if let Ok(record) = serde_json::from_slice::<CredentialRecord>(data) {
        round_trips(&record);
    }
});
