//! `GET /machine/{m}/session/{id}/message` with the transcripts the hub served kept (docs/hub.md
//! §4): a session of a machine that went away still opens, as last seen, instead of a 503.
//!
//! A cache like the rest of the hub's state: in memory, bounded ([`MAX_TRANSCRIPTS`] and
//! [`MAX_BYTES`], the least recently used go first), rebuilt by nothing but use. A transcript
//! is kept once the hub served it from its machine, and kept up to date while the machine is
//! online: when the machine's session snapshot shows the session changed (its `updated` or
//! `status`), the hub asks for the transcript again ([`keep_fresh`]), so what a page saw live
//! is what it finds after the machine is gone. While the machine is away (offline in `GET
//! /machine`, or not answering) a kept transcript is the answer, `200` with the header
//! [`LAST_SEEN_HEADER`] (when the hub got it, ms since the epoch); without one, the 503 as
//! before. A session its machine says is gone (404) is dropped.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use ax_protocol::{Millis, SessionId, SessionStatus};
use axum::{
    extract::{Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use serde_json::value::RawValue;

use super::{ApiError, S, Shared};
use crate::{
    MachineName,
    nats::now_ms,
    wire::{Reply, Request},
};

/// At most this many transcripts are kept.
pub const MAX_TRANSCRIPTS: usize = 64;
/// At most this many bytes of transcripts are kept (one is at most 1 MiB: `wire::MAX_MESSAGE`).
pub const MAX_BYTES: usize = 64 * 1024 * 1024;
/// The header of a transcript served as last seen: when the hub got it (ms since the epoch).
pub const LAST_SEEN_HEADER: &str = "ax-last-seen-ms";
/// How often the kept transcripts are checked against the machines' snapshots.
const REFRESH_EVERY: Duration = Duration::from_millis(500);
/// A kept transcript is asked for again at most this often while its session only grows (a
/// change of its status, a turn starting or ending, is followed at once): a transcript may be
/// 1 MiB, and a busy machine's snapshot changes every heartbeat.
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(5);

type Key = (MachineName, SessionId);
/// What a session looked like in its machine's snapshot when its transcript was fetched.
type Version = Option<(Millis, SessionStatus)>;

struct Entry {
    body: Bytes,
    seen_ms: u64,
    version: Version,
    /// When it was stored, for [`REFRESH_AT_MOST_EVERY`].
    stored: Instant,
    /// The cache's clock when last stored or served (the least recent goes first).
    used: u64,
}

/// The kept transcripts (see the module docs).
#[derive(Default)]
pub struct Transcripts {
    entries: HashMap<Key, Entry>,
    bytes: usize,
    clock: u64,
}

impl Transcripts {
    fn put(&mut self, key: Key, body: Bytes, seen_ms: u64, version: Version) {
        if body.len() > MAX_BYTES {
            self.remove(&key);
            return;
        }
        self.clock += 1;
        let entry = Entry {
            body,
            seen_ms,
            version,
            stored: Instant::now(),
            used: self.clock,
        };
        self.bytes += entry.body.len();
        if let Some(old) = self.entries.insert(key, entry) {
            self.bytes -= old.body.len();
        }
        while self.entries.len() > MAX_TRANSCRIPTS || self.bytes > MAX_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.remove(&oldest);
        }
    }

    /// The kept transcript and when the hub got it; it counts as used.
    fn get(&mut self, key: &Key) -> Option<(Bytes, u64)> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(key)?;
        entry.used = clock;
        Some((entry.body.clone(), entry.seen_ms))
    }

    fn remove(&mut self, key: &Key) {
        if let Some(old) = self.entries.remove(key) {
            self.bytes -= old.body.len();
        }
    }

    /// The kept transcript of `machine`'s `session`, as JSON (for tests).
    pub fn peek(&self, machine: &str, session: &SessionId) -> Option<serde_json::Value> {
        let machine = MachineName::new(machine).ok()?;
        let entry = self.entries.get(&(machine, session.clone()))?;
        serde_json::from_slice(&entry.body).ok()
    }
}

impl Shared {
    /// Whether the hub knows `machine` and sees it online; `None` when it never joined.
    fn online(&self, machine: &MachineName) -> Option<bool> {
        let machines = self.machines.read().unwrap_or_else(|p| p.into_inner());
        let cached = machines.get(machine)?;
        self.view(machine, cached).map(|v| v.online)
    }

    /// The session as `machine`'s last snapshot shows it.
    fn version(&self, (machine, session): &Key) -> Version {
        let machines = self.machines.read().unwrap_or_else(|p| p.into_inner());
        let s = machines
            .get(machine)?
            .sessions
            .as_ref()?
            .iter()
            .find(|s| &s.id == session)?;
        Some((s.updated, s.status))
    }

    fn kept(&self) -> MutexGuard<'_, Transcripts> {
        self.transcripts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the machine for the transcript and keeps it; a refusal is the machine's error (a
    /// 404 drops what was kept), a machine away the 503 `offline`.
    async fn fetch(&self, key: &Key) -> Result<Bytes, ApiError> {
        let version = self.version(key);
        let request = Request::Messages {
            session: key.1.clone(),
        };
        match self.request::<Box<RawValue>>(&key.0, &request).await? {
            Reply::Ok(raw) => {
                let body = Bytes::from(String::from(Box::<str>::from(raw)));
                self.kept()
                    .put(key.clone(), body.clone(), now_ms(), version);
                Ok(body)
            }
            Reply::Error(e) => {
                if e.status == 404 {
                    self.kept().remove(key);
                }
                Err(ApiError::new(e.status, &e.code, e.message))
            }
        }
    }
}

fn json(body: Bytes) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn last_seen(body: Bytes, seen_ms: u64) -> Response {
    let mut response = json(body);
    response
        .headers_mut()
        .insert(LAST_SEEN_HEADER, HeaderValue::from(seen_ms));
    response
}

/// `GET /machine/{m}/session/{id}/message`: the machine's answer, kept; while the machine is
/// away, the kept one as last seen.
pub(super) async fn messages(
    State(shared): S,
    Path((m, session)): Path<(String, SessionId)>,
) -> Response {
    let machine = match MachineName::new(&m) {
        Ok(m) => m,
        Err(e) => return ApiError::new(400, "bad_request", e.to_string()).into_response(),
    };
    let key = (machine, session);
    // Known to be away: no request to wait out.
    if shared.online(&key.0) == Some(false)
        && let Some((body, seen_ms)) = shared.kept().get(&key)
    {
        return last_seen(body, seen_ms);
    }
    match shared.fetch(&key).await {
        Ok(body) => json(body),
        Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => match shared.kept().get(&key) {
            Some((body, seen_ms)) => last_seen(body, seen_ms),
            None => e.into_response(),
        },
        Err(e) => e.into_response(),
    }
}

/// Keeps the kept transcripts of online machines up to date: one whose session the machine's
/// snapshot shows changed since it was fetched is fetched again (one at a time; at once when
/// its status changed, else at most every [`REFRESH_AT_MOST_EVERY`]).
pub(super) async fn keep_fresh(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(REFRESH_EVERY).await;
        let keys: Vec<(Key, Version, Duration)> = shared
            .kept()
            .entries
            .iter()
            .map(|(k, e)| (k.clone(), e.version, e.stored.elapsed()))
            .collect();
        for (key, version, age) in keys {
            let now = shared.version(&key);
            let status_changed = now.map(|v| v.1) != version.map(|v| v.1);
            let due = status_changed || age >= REFRESH_AT_MOST_EVERY;
            if now.is_some() && now != version && due && shared.online(&key.0) == Some(true) {
                // A failure leaves what was kept; the next round tries again.
                let _ = shared.fetch(&key).await;
            }
        }
    }
}

/// The cache, shared by the hub's routes and its handle ([`super::RunningHub::kept_transcripts`]).
pub type Kept = Arc<Mutex<Transcripts>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(m: &str, s: &SessionId) -> Key {
        (MachineName::new(m).unwrap(), s.clone())
    }

    #[test]
    fn kept_transcripts_are_bounded_and_the_least_recently_used_go_first() {
        let ids: Vec<SessionId> = (0..MAX_TRANSCRIPTS + 1)
            .map(|_| SessionId::mint().unwrap())
            .collect();
        let mut t = Transcripts::default();
        for id in &ids[..MAX_TRANSCRIPTS] {
            t.put(key("m", id), Bytes::from("[]"), 1, None);
        }
        // ids[0] served again: ids[1] is now the least recently used.
        assert!(t.get(&key("m", &ids[0])).is_some());
        t.put(key("m", &ids[MAX_TRANSCRIPTS]), Bytes::from("[]"), 2, None);
        assert_eq!(t.entries.len(), MAX_TRANSCRIPTS);
        assert!(t.get(&key("m", &ids[1])).is_none(), "the least recent went");
        assert!(t.get(&key("m", &ids[0])).is_some());
        assert!(t.get(&key("m", &ids[MAX_TRANSCRIPTS])).is_some());

        // The byte bound: big transcripts push out the oldest until the total fits.
        let big = Bytes::from(vec![b' '; 1024 * 1024]);
        for id in &ids[..MAX_BYTES / big.len() / 2 + 3] {
            t.put(key("b", id), big.clone(), 3, None);
            t.put(key("c", id), big.clone(), 3, None);
            assert!(t.bytes <= MAX_BYTES && t.entries.len() <= MAX_TRANSCRIPTS);
        }
        assert_eq!(
            t.bytes,
            t.entries.values().map(|e| e.body.len()).sum::<usize>()
        );
        assert!(
            t.get(&key("b", &ids[0])).is_none(),
            "the first big one went"
        );
        // Replacing one keeps the count right; removing one frees its bytes.
        let last = &ids[MAX_BYTES / big.len() / 2 + 2];
        t.put(key("b", last), Bytes::from("[1]"), 4, None);
        assert_eq!(
            t.bytes,
            t.entries.values().map(|e| e.body.len()).sum::<usize>()
        );
        let before = t.bytes;
        t.remove(&key("b", last));
        assert_eq!(t.bytes, before - 3);
        // One over the whole bound is never kept.
        t.put(
            key("x", last),
            Bytes::from(vec![b' '; MAX_BYTES + 1]),
            5,
            None,
        );
        assert!(t.get(&key("x", last)).is_none());
    }
}
