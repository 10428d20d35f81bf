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
    sync::{Arc, Mutex},
};

use ax_protocol::{Event, EventEnvelope};
use tokio::sync::broadcast;

/// The `Last-Event-ID` that asks for every event since this process started (no event has
/// this ID: they start at the process start time in ms × 1000).
pub const FROM_START: u64 = 0;

/// Fan-out buffer per subscriber before it counts as lagging (and gets a reset).
const LIVE_BUFFER: usize = 4096;

struct Ring {
    /// The ID of this process's first event.
    first_id: u64,
    next_id: u64,
    events: VecDeque<Arc<EventEnvelope>>,
    capacity: usize,
}

/// Cloneable publisher and subscription point.
#[derive(Clone)]
pub struct EventBus {
    ring: Arc<Mutex<Ring>>,
    live: broadcast::Sender<Arc<EventEnvelope>>,
}

/// Where a new subscriber starts.
pub struct Subscription {
    /// Events to send first (the replayed gap), oldest first.
    pub replay: Vec<Arc<EventEnvelope>>,
    /// Whether the gap could not be replayed: the subscriber must resync (a reset event).
    pub reset: bool,
    /// The newest ID published before the subscription (what a reset is stamped with).
    pub last_id: u64,
    /// Live events; those with IDs at or below `last_id` are duplicates to skip.
    pub live: broadcast::Receiver<Arc<EventEnvelope>>,
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
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let id = ring.next_id;
        ring.next_id += 1;
        let envelope = Arc::new(EventEnvelope { id, event });
        if ring.events.len() == ring.capacity {
            ring.events.pop_front();
        }
        ring.events.push_back(envelope.clone());
        // Sent under the lock so live order equals ID order; no receivers is fine.
        let _ = self.live.send(envelope);
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
    use super::*;

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
