//! The event bus behind `/event`: every event gets the next ID, is kept in a bounded ring for
//! resumption, and is fanned out to live subscribers.
//!
//! IDs start at the process start time in ms × 1000, so IDs from an earlier backend process
//! are older than anything in this ring and a resume with one of them gets an explicit reset
//! instead of a silently wrong replay. (That stays below 2^53, safe for JavaScript numbers.)
//! `Last-Event-ID: 0` (no event has that ID) asks for everything since this process started:
//! the ring from its first event, or a reset once the ring dropped it. That is how the hub's
//! join reads what a restarted backend published before anyone could connect (its recovery of
//! the turns a crash cut, docs/backend.md §1).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, OnceLock},
};

use ax_protocol::{Event, MessageId, SessionId, turn::TurnDelta};
use serde::Serialize;
use tokio::sync::broadcast;

/// The `Last-Event-ID` that asks for every event since this process started (no event has
/// this ID: they start at the process start time in ms × 1000).
pub const FROM_START: u64 = 0;

/// Fan-out buffer per subscriber before it counts as lagging (and gets a reset).
const LIVE_BUFFER: usize = 4096;

/// An event as published: its ID, the event, and its `/event` JSON (the
/// [`ax_protocol::EventEnvelope`] serialised), encoded once however many subscribers send it.
#[derive(Debug)]
pub struct Published {
    /// Strictly increasing per backend process.
    pub id: u64,
    /// What happened.
    pub event: Event,
    json: OnceLock<String>,
}

/// The envelope as serde writes [`ax_protocol::EventEnvelope`], borrowing the event.
#[derive(Serialize)]
struct EnvelopeRef<'a> {
    id: u64,
    event: &'a Event,
}

/// A `message.delta` event's fields before its `seq`, in the order serde writes
/// [`Event::MessageDelta`] (the tag first).
#[derive(Serialize)]
#[serde(tag = "type", rename = "message.delta", rename_all = "camelCase")]
struct DeltaHead<'a> {
    session_id: &'a SessionId,
    message_id: &'a MessageId,
    seq: u64,
}

/// The `message.delta` events of one message: its IDs, and the start of their JSON
/// (`{"type":"message.delta","sessionId":…,"messageId":…,"seq":`), encoded once per message
/// for [`EventBus::publish_delta`].
pub struct DeltaEvents {
    session_id: SessionId,
    message_id: MessageId,
    prefix: Option<String>,
}

impl DeltaEvents {
    /// The deltas of `message_id` in `session_id`.
    pub fn new(session_id: SessionId, message_id: MessageId) -> DeltaEvents {
        let head = serde_json::to_string(&DeltaHead {
            session_id: &session_id,
            message_id: &message_id,
            seq: 0,
        });
        let prefix = head
            .ok()
            .and_then(|h| h.strip_suffix("0}").map(str::to_owned));
        DeltaEvents {
            session_id,
            message_id,
            prefix,
        }
    }

    /// The typed event of this message's delta number `seq`.
    pub fn event(&self, seq: u64, delta: TurnDelta) -> Event {
        Event::MessageDelta {
            session_id: self.session_id.clone(),
            message_id: self.message_id.clone(),
            seq,
            delta,
        }
    }
}

impl Published {
    /// `event` with `id`; its JSON is encoded when a subscriber first sends it.
    pub fn new(id: u64, event: Event) -> Published {
        Published {
            id,
            event,
            json: OnceLock::new(),
        }
    }

    /// The `/event` JSON of this event: the bytes of the serialised
    /// [`ax_protocol::EventEnvelope`], encoded on first use and then shared.
    pub fn json(&self) -> &str {
        self.json.get_or_init(|| {
            serde_json::to_string(&EnvelopeRef {
                id: self.id,
                event: &self.event,
            })
            .unwrap_or_else(|_| "{}".to_owned())
        })
    }
}

struct Ring {
    /// The ID of this process's first event.
    first_id: u64,
    next_id: u64,
    events: VecDeque<Arc<Published>>,
    capacity: usize,
}

/// Cloneable publisher and subscription point.
#[derive(Clone)]
pub struct EventBus {
    ring: Arc<Mutex<Ring>>,
    live: broadcast::Sender<Arc<Published>>,
}

/// Where a new subscriber starts.
pub struct Subscription {
    /// Events to send first (the replayed gap), oldest first.
    pub replay: Vec<Arc<Published>>,
    /// Whether the gap could not be replayed: the subscriber must resync (a reset event).
    pub reset: bool,
    /// The newest ID published before the subscription (what a reset is stamped with).
    pub last_id: u64,
    /// Live events; those with IDs at or below `last_id` are duplicates to skip.
    pub live: broadcast::Receiver<Arc<Published>>,
}

impl EventBus {
    pub fn new(capacity: usize) -> EventBus {
        let first = (crate::ids::now_ms().max(1) as u64) * 1000;
        EventBus {
            ring: Arc::new(Mutex::new(Ring {
                first_id: first,
                next_id: first,
                events: VecDeque::with_capacity(capacity.min(1 << 16)),
                capacity: capacity.max(1),
            })),
            live: broadcast::channel(LIVE_BUFFER).0,
        }
    }

    /// Publishes `event` and returns its ID.
    pub fn publish(&self, event: Event) -> u64 {
        self.push(|id| Published::new(id, event))
    }

    /// Publishes a `message.delta` event of `of`'s message whose delta is already encoded:
    /// `delta_json` is `delta` serialised (the body of its stored row), and goes into the
    /// event's JSON as it is, so a delta is serialised once for the store and every
    /// subscriber.
    pub fn publish_delta(
        &self,
        of: &DeltaEvents,
        seq: u64,
        delta: TurnDelta,
        delta_json: &str,
    ) -> u64 {
        let event = of.event(seq, delta);
        let Some(prefix) = &of.prefix else {
            return self.publish(event);
        };
        let seq = seq.to_string();
        self.push(|id| {
            let id_text = id.to_string();
            let mut json = String::with_capacity(prefix.len() + seq.len() + delta_json.len() + 40);
            for piece in [
                "{\"id\":",
                &id_text,
                ",\"event\":",
                prefix,
                &seq,
                ",\"delta\":",
                delta_json,
                "}}",
            ] {
                json.push_str(piece);
            }
            Published {
                id,
                event,
                json: OnceLock::from(json),
            }
        })
    }

    /// Gives the next ID to the event `make` builds, keeps it in the ring and sends it live.
    fn push(&self, make: impl FnOnce(u64) -> Published) -> u64 {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let id = ring.next_id;
        ring.next_id += 1;
        let published = Arc::new(make(id));
        if ring.events.len() == ring.capacity {
            ring.events.pop_front();
        }
        ring.events.push_back(published.clone());
        // Sent under the lock so live order equals ID order; no receivers is fine.
        let _ = self.live.send(published);
        id
    }

    /// The newest ID handed out so far.
    pub fn newest(&self) -> u64 {
        self.ring.lock().unwrap_or_else(|e| e.into_inner()).next_id - 1
    }

    /// Subscribes, replaying what came after `last_event_id` when the ring still holds it
    /// ([`FROM_START`]: everything since this process started).
    pub fn subscribe(&self, last_event_id: Option<u64>) -> Subscription {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let live = self.live.subscribe();
        let newest = ring.next_id - 1;
        let Some(seen) = last_event_id else {
            return Subscription {
                replay: Vec::new(),
                reset: false,
                last_id: newest,
                live,
            };
        };
        let oldest = ring.events.front().map_or(ring.next_id, |e| e.id);
        // "Seen nothing": the whole ring, when it still starts with this process's first event.
        let seen = if seen == FROM_START && oldest == ring.first_id {
            ring.first_id - 1
        } else {
            seen
        };
        // Replayable when nothing between `seen` and the ring's start was dropped and `seen`
        // is not from the future (another process, or a forged header).
        if seen > newest || seen + 1 < oldest {
            return Subscription {
                replay: Vec::new(),
                reset: true,
                last_id: newest,
                live,
            };
        }
        let replay = ring
            .events
            .iter()
            .filter(|e| e.id > seen)
            .cloned()
            .collect();
        Subscription {
            replay,
            reset: false,
            last_id: newest,
            live,
        }
    }
}

#[cfg(test)]
mod tests {
    use ax_protocol::{
        EventEnvelope,
        turn::{
            Notice, NoticeKind, PlanEntry, PlanPriority, PlanStatus, ToolCallFields, ToolStatus,
        },
    };

    use super::*;

    /// A delta published with its stored body goes out as the same bytes serde gives the
    /// whole envelope (what every subscriber used to encode for itself), with the body inside
    /// it unchanged; and any other event's JSON is serde's too, encoded once and shared.
    #[test]
    fn a_delta_event_carries_its_stored_body_as_serde_would_write_it() {
        let bus = EventBus::new(16);
        let mut live = bus.subscribe(None).live;
        let session_id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let message_id: MessageId = "msg_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let deltas = [
            TurnDelta::TextAppended {
                text: "quote \" backslash \\ newline \n tab \t nul \u{0} é ☃ 😀 </script>".into(),
            },
            TurnDelta::ThoughtAppended {
                text: String::new(),
            },
            TurnDelta::ToolCallUpdated {
                tool_call_id: "t\"1".into(),
                fields: ToolCallFields {
                    status: Some(ToolStatus::Completed),
                    title: Some("ls -l".into()),
                    ..Default::default()
                },
            },
            TurnDelta::PlanReplaced {
                entries: vec![PlanEntry {
                    content: "a".into(),
                    priority: PlanPriority::High,
                    status: PlanStatus::InProgress,
                }],
            },
            TurnDelta::Notice {
                notice: Notice {
                    kind: NoticeKind::Stop,
                    message: "max_tokens".into(),
                },
            },
            TurnDelta::TerminalOutput {
                terminal_id: "term".into(),
                text: "out\r\n".into(),
                dropped_bytes: 7,
            },
        ];
        let of = DeltaEvents::new(session_id.clone(), message_id.clone());
        for (seq, delta) in [1, 2, 9, 10, 100, u64::MAX].into_iter().zip(deltas) {
            let body = crate::store::encode_delta(&delta).unwrap();
            let id = bus.publish_delta(&of, seq, delta.clone(), &body);
            let sent = live.try_recv().unwrap();
            let event = Event::MessageDelta {
                session_id: session_id.clone(),
                message_id: message_id.clone(),
                seq,
                delta,
            };
            assert_eq!((sent.id, &sent.event), (id, &event));
            let envelope = serde_json::to_string(&EventEnvelope { id, event }).unwrap();
            assert_eq!(sent.json(), envelope);
            assert!(
                sent.json().ends_with(&format!(",\"delta\":{body}}}}}")),
                "{} carries {body}",
                sent.json()
            );
        }
        let event = Event::MessageEnded {
            session_id,
            message_id,
            ended: 42,
        };
        let mut second = bus.subscribe(None).live;
        let id = bus.publish(event.clone());
        let sent = live.try_recv().unwrap();
        let envelope = serde_json::to_string(&EventEnvelope { id, event }).unwrap();
        assert_eq!(sent.json(), envelope);
        // Encoded once: another subscriber, and a replay, send the same JSON.
        assert!(std::ptr::eq(second.try_recv().unwrap().json(), sent.json()));
        let replayed = bus.subscribe(Some(id - 1)).replay;
        assert!(Arc::ptr_eq(&replayed[0], &sent));
        assert!(std::ptr::eq(replayed[0].json(), sent.json()));
    }

    #[test]
    fn resume_replays_the_gap_or_resets() {
        let bus = EventBus::new(4);
        let ids: Vec<u64> = (0..6).map(|_| bus.publish(Event::Reset)).collect();
        let sub = bus.subscribe(Some(ids[3]));
        assert!(!sub.reset);
        assert_eq!(
            sub.replay.iter().map(|e| e.id).collect::<Vec<_>>(),
            vec![ids[4], ids[5]]
        );
        // ids[1] is the last seen; ids[2] is still in the ring (capacity 4: ids 2..=5).
        assert!(!bus.subscribe(Some(ids[1])).reset);
        assert!(bus.subscribe(Some(ids[0])).reset);
        assert!(bus.subscribe(Some(ids[5] + 10)).reset);
        assert!(bus.subscribe(Some(ids[5])).replay.is_empty());
        // From the start: only while the ring still holds the first event.
        assert!(bus.subscribe(Some(FROM_START)).reset);
        let fresh = EventBus::new(4);
        let sub = fresh.subscribe(Some(FROM_START));
        assert!(!sub.reset && sub.replay.is_empty());
        let ids: Vec<u64> = (0..4).map(|_| fresh.publish(Event::Reset)).collect();
        let sub = fresh.subscribe(Some(FROM_START));
        assert!(!sub.reset);
        assert_eq!(sub.replay.iter().map(|e| e.id).collect::<Vec<_>>(), ids);
        fresh.publish(Event::Reset);
        assert!(fresh.subscribe(Some(FROM_START)).reset);
    }
}
