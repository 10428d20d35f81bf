//! A connection's bounded outbound queue.
//!
//! Producers (fan-out, responses, the terminal) never wait on a socket: they push into the
//! queue and move on. When a client does not drain its queue fast enough the queue refuses the
//! frame and the connection is cancelled with a reason, so a stalled peer costs at most
//! `max_bytes` and never delays anyone else.

use std::sync::{
    Mutex,
    atomic::{AtomicUsize, Ordering},
};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::frame::EventPrefix;

/// One queued frame.
pub(crate) enum Out {
    /// A complete frame (responses).
    Text(String),
    /// An event serialised once; the writer appends this connection's `seq`.
    Event(EventPrefix),
    /// Send a close frame after everything queued before it, then stop.
    Close(u16, String),
}

impl Out {
    fn cost(&self) -> usize {
        match self {
            Out::Text(s) => s.len(),
            Out::Event(p) => p.len() + 21,
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

pub(crate) struct Outbound {
    tx: mpsc::Sender<Out>,
    queued: AtomicUsize,
    max_bytes: usize,
    cancel: CancellationToken,
    kill: Mutex<Option<Kill>>,
}

impl Outbound {
    pub(crate) fn new(frames: usize, max_bytes: usize) -> (Self, mpsc::Receiver<Out>) {
        let (tx, rx) = mpsc::channel(frames.max(1));
        let out = Outbound {
            tx,
            queued: AtomicUsize::new(0),
            max_bytes,
            cancel: CancellationToken::new(),
            kill: Mutex::new(None),
        };
        (out, rx)
    }

    /// Queue a frame; `false` if the connection is gone or was just cut for being too slow.
    pub(crate) fn push(&self, out: Out) -> bool {
        if self.cancel.is_cancelled() {
            return false;
        }
        let cost = out.cost();
        let before = self.queued.fetch_add(cost, Ordering::AcqRel);
        if before + cost > self.max_bytes {
            self.queued.fetch_sub(cost, Ordering::AcqRel);
            self.kill(1008, "slow consumer: outbound queue full");
            return false;
        }
        match self.tx.try_send(out) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.queued.fetch_sub(cost, Ordering::AcqRel);
                self.kill(1008, "slow consumer: outbound queue full");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.queued.fetch_sub(cost, Ordering::AcqRel);
                false
            }
        }
    }

    /// The writer took `out` off the queue.
    pub(crate) fn taken(&self, out: &Out) {
        self.queued.fetch_sub(out.cost(), Ordering::AcqRel);
    }

    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Cut the connection now (the first reason wins).
    pub(crate) fn kill(&self, code: u16, reason: &str) {
        {
            let mut k = self.kill.lock().unwrap_or_else(|e| e.into_inner());
            if k.is_none() {
                *k = Some(Kill {
                    code,
                    reason: reason.to_string(),
                });
            }
        }
        self.cancel.cancel();
    }

    pub(crate) fn kill_reason(&self) -> Option<Kill> {
        self.kill.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_kills_instead_of_growing() {
        let (out, _rx) = Outbound::new(4, 1 << 20);
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
        let (out, _rx) = Outbound::new(100, 10);
        assert!(out.push(Out::Text("12345".into())));
        assert!(!out.push(Out::Text("1234567".into())));
        assert!(out.is_closed());
        assert_eq!(out.queued_bytes(), 5);
    }
}
