//! Progress of agent turns: since when each session works, how long its last turn took, a
//! spinner frame, and a notice when a session that is not on screen finishes or asks for
//! approval. Time comes from [`App::tick`] (the owner calls it every 200 ms), so drawing stays
//! side-effect free and tests choose the clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ax_protocol::{SessionId, SessionStatus};

/// Spinner frames, one per 100 ms.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Turn timing per session.
#[derive(Debug, Default, Clone)]
pub struct Progress {
    /// Sessions in a turn (busy or waiting for approval) and since when.
    running: HashMap<SessionId, Instant>,
    /// How long each session's last finished turn took.
    last_turn: HashMap<SessionId, Duration>,
}

/// What a status change meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A turn began.
    Started,
    /// The session now waits for an approval.
    AskedApproval,
    /// A turn ended after this long.
    Finished(Duration),
    /// Nothing worth telling the person.
    None,
}

impl Progress {
    /// Records a status change seen at `now`.
    pub fn observe(
        &mut self,
        id: &SessionId,
        old: Option<SessionStatus>,
        new: SessionStatus,
        now: Instant,
    ) -> Change {
        match new {
            SessionStatus::Idle | SessionStatus::NeedsAuth => match self.running.remove(id) {
                Some(since) => {
                    let took = now.saturating_duration_since(since);
                    self.last_turn.insert(id.clone(), took);
                    Change::Finished(took)
                }
                None => Change::None,
            },
            SessionStatus::Busy | SessionStatus::Pending => {
                let started = !self.running.contains_key(id);
                self.running.entry(id.clone()).or_insert(now);
                if new == SessionStatus::Pending && old != Some(SessionStatus::Pending) {
                    Change::AskedApproval
                } else if started {
                    Change::Started
                } else {
                    Change::None
                }
            }
        }
    }

    /// How long the session's current turn has run, if it is in one.
    pub fn elapsed(&self, id: &SessionId, now: Instant) -> Option<Duration> {
        self.running
            .get(id)
            .map(|since| now.saturating_duration_since(*since))
    }

    /// How long the session's last finished turn took.
    pub fn last_turn(&self, id: &SessionId) -> Option<Duration> {
        self.last_turn.get(id).copied()
    }

    /// Whether anything is running (the owner redraws on its tick so the spinner turns).
    pub fn any_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// Forgets sessions that are gone.
    pub fn retain(&mut self, keep: impl Fn(&SessionId) -> bool) {
        self.running.retain(|id, _| keep(id));
        self.last_turn.retain(|id, _| keep(id));
    }
}

/// The spinner frame for a turn that has run `elapsed`.
pub fn spinner(elapsed: Duration) -> char {
    SPINNER[(elapsed.as_millis() / 100) as usize % SPINNER.len()]
}

/// A short human duration: `0.4s`, `12s`, `3m 05s`, `1h 02m`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s < 10 {
        format!("{:.1}s", d.as_secs_f64())
    } else if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        format!("{}h {:02}m", s / 3600, (s / 60) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(format_duration(Duration::from_millis(400)), "0.4s");
        assert_eq!(format_duration(Duration::from_secs(12)), "12s");
        assert_eq!(format_duration(Duration::from_secs(185)), "3m 05s");
        assert_eq!(format_duration(Duration::from_secs(3720)), "1h 02m");
    }

    #[test]
    fn a_turn_is_timed_from_start_to_idle() {
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let t0 = Instant::now();
        let mut p = Progress::default();
        assert_eq!(
            p.observe(&id, Some(SessionStatus::Idle), SessionStatus::Pending, t0),
            Change::AskedApproval
        );
        let t1 = t0 + Duration::from_secs(2);
        assert_eq!(
            p.observe(&id, Some(SessionStatus::Pending), SessionStatus::Busy, t1),
            Change::None
        );
        assert_eq!(
            p.elapsed(&id, t1 + Duration::from_secs(1)),
            Some(Duration::from_secs(3))
        );
        assert!(p.any_running());
        let t2 = t0 + Duration::from_secs(5);
        assert_eq!(
            p.observe(&id, Some(SessionStatus::Busy), SessionStatus::Idle, t2),
            Change::Finished(Duration::from_secs(5))
        );
        assert_eq!(p.last_turn(&id), Some(Duration::from_secs(5)));
        assert!(!p.any_running());
        assert_ne!(spinner(Duration::ZERO), spinner(Duration::from_millis(100)));
    }
}
