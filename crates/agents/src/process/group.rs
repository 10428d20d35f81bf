//! Process groups: killing one, and recording one so a backend restarted after a crash can
//! stop what the dead backend left running.
//!
//! A pid alone does not identify a process for long: pids are reused. A pid together with its
//! start time (clock ticks after boot, from `/proc/PID/stat`) does, so every record here
//! carries both and nothing is signalled unless both still match.

use std::sync::atomic::{AtomicBool, Ordering};

/// A process group as recorded for crash cleanup: the group id (the leader's pid) and the
/// leader's start time, if it could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGroup {
    /// The group id, which is the pid of the process that leads it.
    pub pgid: u32,
    /// The leader's start time (see [`process_start_time`]); `None` if `/proc` could not tell.
    pub start: Option<u64>,
}

impl ProcessGroup {
    /// Records the group led by `pgid` now, with its leader's start time.
    pub fn of_leader(pgid: u32) -> ProcessGroup {
        ProcessGroup {
            pgid,
            start: process_start_time(pgid),
        }
    }
}

/// The start time of a process (clock ticks after boot, `/proc/PID/stat` field 22): with the
/// pid it identifies a process even after the pid is reused.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses; the fields after it
    // follow the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process as the owner of recorded work: its pid and start time.
pub fn this_process() -> (u32, Option<u64>) {
    static START: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let pid = std::process::id();
    (pid, *START.get_or_init(|| process_start_time(pid)))
}

/// Whether `owner` (pid and start time) is a live process other than this one.
pub fn owner_alive(owner: (u32, Option<u64>)) -> bool {
    owner.0 != std::process::id() && owner.1.is_some() && process_start_time(owner.0) == owner.1
}

/// Kills the process group `pgid` only if its leader is still the process that started at
/// `start` (so a reused pid is never hit). Returns whether a signal was sent.
///
/// A group whose leader already exited cannot be matched this way and is left alone: its
/// leader was the command the backend ran, and the module kills the group as soon as that
/// command ends, so only a backend that died mid-command leaves a group behind.
///
/// A leader that also leads its own session (a terminal's shell, see [`crate::process::pty`])
/// gets its whole session killed: an interactive shell puts each job in a group of its own.
pub fn kill_orphaned_group(pgid: u32, start: u64) -> bool {
    if process_start_time(pgid) != Some(start) {
        return false;
    }
    if session_of(pgid) == Some(pgid) {
        kill_session(pgid)
    } else {
        kill_group(pgid)
    }
}

/// The session id of a process (`/proc/PID/stat` field 6).
fn session_of(pid: u32) -> Option<u32> {
    stat_ids(pid).map(|(_, sid)| sid)
}

/// Process group and session of a process (`/proc/PID/stat` fields 5 and 6).
fn stat_ids(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(2);
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((pgrp, session))
}

/// Sends SIGKILL to every process group of session `sid` (found through `/proc`), the
/// session leader's first. Returns whether any signal was delivered. Never touches this
/// process's own session, nor session 0 or 1.
pub fn kill_session(sid: u32) -> bool {
    if sid <= 1 || session_of(std::process::id()) == Some(sid) {
        return false;
    }
    let mut any = kill_group(sid);
    // Twice: a process forking while the first pass runs can start a group the pass missed.
    for _ in 0..2 {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return any;
        };
        let mut groups: Vec<u32> = dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(stat_ids)
            .filter(|&(_, session)| session == sid)
            .map(|(pgrp, _)| pgrp)
            .collect();
        groups.sort_unstable();
        groups.dedup();
        for pgrp in groups {
            any |= kill_group(pgrp);
        }
    }
    any
}

/// The environment variable that tags every process an ACP agent starts (docs/agents.md
/// §2): inherited by whatever the agent runs, also by a command that left the agent's
/// process group or session (`setsid`), so stopping the agent can find and stop it.
pub const AGENT_TAG: &str = "AX_CODE_AGENT_TAG";

/// Sends SIGKILL to every process of this user (never this process) whose environment holds
/// [`AGENT_TAG`] with a value `matches` accepts. Passes repeat until one finds nobody (at
/// most a few), so a process forking meanwhile is caught too. Returns how many were signalled.
pub fn kill_tagged(matches: impl Fn(&str) -> bool) -> usize {
    let me = std::process::id();
    let prefix = format!("{AGENT_TAG}=");
    let mut killed = 0;
    for _ in 0..5 {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return killed;
        };
        let mut found = 0;
        for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
            if pid == me {
                continue;
            }
            // Unreadable for other users' processes: those are never ours.
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            let tagged = environ
                .split(|b| *b == 0)
                .filter_map(|var| std::str::from_utf8(var).ok()?.strip_prefix(prefix.as_str()))
                .any(&matches);
            let Some(p) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            else {
                continue;
            };
            if tagged && rustix::process::kill_process(p, rustix::process::Signal::KILL).is_ok() {
                found += 1;
            }
        }
        killed += found;
        if found == 0 {
            break;
        }
    }
    killed
}

/// Sends SIGKILL to every process in group `pgid`. Returns whether the signal was delivered
/// (`false` when nobody is left in the group, the normal case after a clean exit).
pub fn kill_group(pgid: u32) -> bool {
    signal_group(pgid, rustix::process::Signal::KILL)
}

/// Sends `signal` to every process in group `pgid`; the one place a group is signalled.
/// Returns whether it was delivered. Never to group 0 or 1: `kill(0)` would signal our own
/// group, and 1 is init.
pub fn signal_group(pgid: u32, signal: rustix::process::Signal) -> bool {
    let Ok(raw) = i32::try_from(pgid) else {
        return false;
    };
    if raw <= 1 {
        return false;
    }
    match rustix::process::Pid::from_raw(raw) {
        Some(pid) => rustix::process::kill_process_group(pid, signal).is_ok(),
        None => false,
    }
}

/// The group of a process this module started, shared by its handle and its driver task.
///
/// Once the driver has seen the command exit and killed what was left of its group, the group
/// is marked ended and later kills do nothing: the number may belong to someone else by then.
#[derive(Debug)]
pub(crate) struct LiveGroup {
    pub(crate) pgid: u32,
    /// The leader leads a session of its own (a terminal): kill every group in it.
    session: bool,
    ended: AtomicBool,
}

impl LiveGroup {
    pub(crate) fn new(pgid: u32) -> LiveGroup {
        LiveGroup {
            pgid,
            session: false,
            ended: AtomicBool::new(false),
        }
    }

    /// The group of a session leader: kills reach the whole session.
    pub(crate) fn session(sid: u32) -> LiveGroup {
        LiveGroup {
            session: true,
            ..LiveGroup::new(sid)
        }
    }

    fn signal(&self) -> bool {
        if self.session {
            kill_session(self.pgid)
        } else {
            kill_group(self.pgid)
        }
    }

    /// Kills the group unless it has ended; whether a signal went out.
    pub(crate) fn kill(&self) -> bool {
        if self.ended.load(Ordering::Acquire) {
            return false;
        }
        self.signal()
    }

    /// The command ended: kill what is left of the group (background children) once, then
    /// never signal this number again.
    pub(crate) fn end(&self) {
        if !self.ended.swap(true, Ordering::AcqRel) {
            self.signal();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_start_time_and_is_not_an_orphan_owner() {
        let me = this_process();
        assert_eq!(me.0, std::process::id());
        assert!(me.1.is_some());
        // A backend never counts itself as another live owner.
        assert!(!owner_alive(me));
        // A pid with the wrong start time is not alive as that owner.
        assert!(!owner_alive((1, Some(u64::MAX))));
    }

    #[test]
    fn a_wrong_start_time_is_never_signalled() {
        let me = std::process::id();
        let start = process_start_time(me).unwrap();
        assert!(!kill_orphaned_group(me, start + 1));
        assert!(!kill_group(0));
        assert!(!kill_group(1));
        assert!(!signal_group(0, rustix::process::Signal::TERM));
        assert!(!signal_group(1, rustix::process::Signal::TERM));
        // Our own session is never a target.
        assert!(!kill_session(session_of(me).unwrap()));
        assert!(!kill_session(1));
    }
}
