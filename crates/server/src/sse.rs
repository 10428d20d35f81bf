//! `GET /event`: Server-Sent Events. Each SSE event has `id: <n>` and `data: <EventEnvelope
//! JSON>` (no `event:` line, so a plain `onmessage` sees everything). Heartbeat comment lines
//! keep idle connections alive. `Last-Event-ID` resumes from the ring; when the gap is gone,
//! the first event is `{"type":"reset"}`, stamped with the newest ID, and the client resyncs.

use std::{collections::VecDeque, convert::Infallible, sync::Arc};

use ax_protocol::Event;
use axum::{
    extract::State,
    http::HeaderMap,
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
};
use futures_util::stream;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use crate::{error::Failure, events::Published, state::Shared};

struct Cursor {
    queue: VecDeque<Arc<Published>>,
    live: broadcast::Receiver<Arc<Published>>,
    last_sent: u64,
    shutdown: CancellationToken,
    bus: crate::events::EventBus,
}

/// The event's SSE frame; its JSON is encoded once for all subscribers ([`Published::json`]).
fn encode(published: &Published) -> SseEvent {
    SseEvent::default()
        .id(published.id.to_string())
        .data(published.json())
}

pub async fn events(State(app): State<Shared>, headers: HeaderMap) -> Response {
    let last = match headers.get("last-event-id") {
        None => None,
        Some(v) => match v.to_str().ok().and_then(|s| s.trim().parse::<u64>().ok()) {
            Some(id) => Some(id),
            None => {
                return Failure::bad_request("Last-Event-ID must be a decimal event ID")
                    .into_response();
            }
        },
    };
    let sub = app.bus.subscribe(last);
    let mut queue: VecDeque<Arc<Published>> = sub.replay.into();
    if sub.reset {
        queue.push_front(Arc::new(Published::new(sub.last_id, Event::Reset)));
    }
    let cursor = Cursor {
        queue,
        live: sub.live,
        last_sent: sub.last_id,
        shutdown: app.shutdown.clone(),
        bus: app.bus.clone(),
    };
    let stream = stream::unfold(cursor, |mut c| async move {
        if let Some(e) = c.queue.pop_front() {
            return Some((Ok::<_, Infallible>(encode(&e)), c));
        }
        loop {
            tokio::select! {
                received = c.live.recv() => match received {
                    Ok(e) if e.id <= c.last_sent => continue,
                    Ok(e) => {
                        c.last_sent = e.id;
                        return Some((Ok(encode(&e)), c));
                    }
                    Err(RecvError::Lagged(_)) => {
                        // Too slow to keep up: what was missed is gone, so say so.
                        let newest = c.bus.newest();
                        c.last_sent = newest;
                        let reset = Published::new(newest, Event::Reset);
                        return Some((Ok(encode(&reset)), c));
                    }
                    Err(RecvError::Closed) => return None,
                },
                () = c.shutdown.cancelled() => return None,
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(app.heartbeat).text("heartbeat"))
        .into_response()
}
