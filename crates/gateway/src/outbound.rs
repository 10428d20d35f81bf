//! A connection's bounded outbound queue.
//!
//! Producers (fan-out, responses, the terminal) never wait on a socket: they push into the
//! queue and move on; the writer takes the whole queue per wake-up and flushes it once. When a client does not drain its queue fast enough the queue refuses the
//! frame and the connection is cancelled with a reason, so a stalled peer costs at most
//! `max_bytes` and never delays anyone else.

use std::{
    collections::VecDeque,
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::frame::EventPrefix;

/// One queued frame.
pub(crate) enum Out {
    /// A complete frame (responses).
    Text(String),
    /// An event serialised once; the writer appends this connection's `seq`.
    Event(EventPrefix),
    /// A keepalive `tick` event and a ping.
    Tick,
    /// Send a close frame after everything queued before it, then stop.
    Close(u16, String),
}

impl Out {
    fn cost(&self) -> usize {
        match self {
            Out::Text(s) => s.len(),
            Out::Event(p) => p.len() + 21,
            Out::Tick => 64,
            Out::Close(_, r) => r.len(),
        }
    }
}

/// Why a connection was cut from the server side.
#[derive(Debug, Clone)]
pub(crate) struct Kill {
    pub code: u16,
    pub reason: String,
}

struct Queue {
    items: VecDeque<Out>,
    bytes: usize,
}

pub(crate) struct Outbound {
    queue: Mutex<Queue>,
    notify: Notify,
    /// Wakes producers that wait for room ([`Outbound::room`]) when the writer took the queue.
    drained: Notify,
    max_frames: usize,
    max_bytes: usize,
    cancel: CancellationToken,
    /// Mirrors `cancel` for the hot path: the token's own check takes a lock.
    closed: AtomicBool,
    kill: Mutex<Option<Kill>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Outbound {
    /// An empty queue allocates nothing: an idle connection costs only this struct.
    pub(crate) fn new(max_frames: usize, max_bytes: usize) -> Self {
        Outbound {
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                bytes: 0,
            }),
            notify: Notify::new(),
            drained: Notify::new(),
            max_frames: max_frames.max(1),
            max_bytes,
            cancel: CancellationToken::new(),
            closed: AtomicBool::new(false),
            kill: Mutex::new(None),
        }
    }

    /// Queue a frame; `false` if the connection is gone or was just cut for being too slow.
    pub(crate) fn push(&self, out: Out) -> bool {
        if self.is_closed() {
            return false;
        }
        let cost = out.cost();
        {
            let mut q = lock(&self.queue);
            if q.items.len() >= self.max_frames || q.bytes + cost > self.max_bytes {
                drop(q);
                self.kill(1008, "slow consumer: outbound queue full");
                return false;
            }
            q.items.push_back(out);
            q.bytes += cost;
        }
        self.notify.notify_one();
        true
    }

    /// Move everything queued into `batch` (which must be empty) for the writer.
    pub(crate) fn take_all(&self, batch: &mut VecDeque<Out>) {
        let mut q = lock(&self.queue);
        std::mem::swap(&mut q.items, batch);
        q.bytes = 0;
        drop(q);
        self.drained.notify_waiters();
    }

    /// Resolves once at most `below` bytes are queued, or the connection is closed. Waits on
    /// the writer taking the queue, never by polling.
    pub(crate) async fn room(&self, below: usize) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a drain between the check and the await wakes us.
            drained.as_mut().enable();
            if self.is_closed() || self.queued_bytes() <= below {
                return;
            }
            drained.await;
        }
    }

    /// Resolves after a `push` (at once if one happened since the last wait).
    pub(crate) async fn pushed(&self) {
        self.notify.notified().await;
    }

    pub(crate) fn queued_bytes(&self) -> usize {
        lock(&self.queue).bytes
    }

    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Cut the connection now (the first reason wins).
    pub(crate) fn kill(&self, code: u16, reason: &str) {
        {
            let mut k = lock(&self.kill);
            if k.is_none() {
                *k = Some(Kill {
                    code,
                    reason: reason.to_string(),
                });
            }
        }
        self.closed.store(true, Ordering::Release);
        self.cancel.cancel();
        // Wake the writer if it waits for frames, and producers waiting for room.
        self.notify.notify_one();
        self.drained.notify_waiters();
    }

    pub(crate) fn kill_reason(&self) -> Option<Kill> {
        lock(&self.kill).clone()
    }

    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_kills_instead_of_growing() {
        let out = Outbound::new(4, 1 << 20);
        for _ in 0..4 {
            assert!(out.push(Out::Text("x".into())));
        }
        assert!(!out.push(Out::Text("x".into())));
        assert!(out.is_closed());
        assert!(out.kill_reason().unwrap().reason.contains("slow consumer"));
        assert!(!out.push(Out::Text("y".into())));
    }

    #[test]
    fn byte_bound_is_enforced() {
        let out = Outbound::new(100, 10);
        assert!(out.push(Out::Text("12345".into())));
        assert!(!out.push(Out::Text("1234567".into())));
        assert!(out.is_closed());
        assert_eq!(out.queued_bytes(), 5);
    }

    #[tokio::test]
    async fn room_waits_for_the_writer_without_polling() {
        let out = std::sync::Arc::new(Outbound::new(8, 1 << 20));
        assert!(out.push(Out::Text("x".repeat(100))));
        // Room already: at once.
        out.room(100).await;
        let waiter = tokio::spawn({
            let out = out.clone();
            async move { out.room(10).await }
        });
        // The writer takes the queue: the waiter wakes (it has no timer to wake it otherwise).
        tokio::task::yield_now().await;
        let mut batch = VecDeque::new();
        out.take_all(&mut batch);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken by the drain")
            .unwrap();
        // A closed connection never keeps a producer waiting.
        assert!(out.push(Out::Text("y".repeat(100))));
        out.kill(1000, "bye");
        out.room(0).await;
    }

    #[test]
    fn the_writer_takes_everything_at_once() {
        let out = Outbound::new(8, 1 << 20);
        assert!(out.push(Out::Text("a".into())));
        assert!(out.push(Out::Text("bc".into())));
        let mut batch = VecDeque::new();
        out.take_all(&mut batch);
        assert_eq!(batch.len(), 2);
        assert_eq!(out.queued_bytes(), 0);
        // Room again: the bound is on what waits, not on what was ever sent.
        for _ in 0..8 {
            assert!(out.push(Out::Text("x".into())));
        }
        assert!(!out.is_closed());
    }
}
