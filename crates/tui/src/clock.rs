//! The TUI's clock: the time the owner loop hands to [`App::tick`](crate::app::App::tick),
//! and the wall-clock time derived from it.
//!
//! The state never reads the system clock: a [`Clock`] starts at a given instant (the owner
//! loop's [`Clock::system`], or any instant a test chooses) and moves only when it is told
//! to, so spinners, elapsed times, notice expiry and turn-end times all follow the ticks.

use std::time::Instant;

/// A clock that moves only by [`Clock::advance`].
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    now: Instant,
    /// An instant and the wall-clock time (Unix ms) at it.
    anchor: (Instant, i64),
}

impl Clock {
    /// A clock that starts at the system's time now: the one read of the system clock, made
    /// when the TUI starts.
    pub fn system() -> Clock {
        Clock::starting_at(Instant::now(), ax_protocol::time::now_ms())
    }

    /// A clock that starts at `now`, when the wall clock read `wall_ms` (Unix ms).
    pub fn starting_at(now: Instant, wall_ms: i64) -> Clock {
        Clock {
            now,
            anchor: (now, wall_ms),
        }
    }

    /// The time of the last tick.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The wall-clock time at the last tick, Unix milliseconds.
    pub fn wall_ms(&self) -> i64 {
        let (at, ms) = self.anchor;
        ms + self.now.saturating_duration_since(at).as_millis() as i64
    }

    /// Moves the clock to `now`.
    pub fn advance(&mut self, now: Instant) {
        self.now = now;
    }
}
