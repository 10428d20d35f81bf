//! What a restart's recovery ended, told as events: a backend restarted after a crash marks
//! the turns the crash cut interrupted in its store ([`store::recover_interrupted`]), then
//! publishes, once its event bus exists and before it serves, the events a turn's normal end
//! publishes (docs/backend.md §1). They are the first events of the new process, so a
//! client that reads `/event` from this process's start (`Last-Event-ID: 0`, as the hub's join
//! does) learns of the end without reloading. The queues the start paused are told the same
//! way, after the turns' ends ([`paused_queues`]).

use std::collections::BTreeSet;

use ax_protocol::{Event, Part, PermissionState, SessionId, SessionStatus};
use rusqlite::Connection;

use crate::store::{self, Recovered};

/// The events telling `recovered`, in the order a turn's end publishes them, per session:
/// approvals cancelled, the reply's deltas and its `interrupted` part, its end, then the
/// session as stored and its idle status. Read from the store right after the recovery, so
/// each part's index and each session are what a reload shows.
pub(crate) fn events(
    conn: &Connection,
    project: i64,
    recovered: &Recovered,
) -> store::Result<Vec<Event>> {
    let mut out = Vec::new();
    let mut told: BTreeSet<&SessionId> = BTreeSet::new();
    let ended_sessions = recovered.ended.iter().map(|r| &r.session);
    let sessions: Vec<&SessionId> = ended_sessions
        .chain(&recovered.idled)
        .chain(recovered.cancelled.iter().map(|(s, _)| s))
        .filter(|s| told.insert(s))
        .collect();
    for session in sessions {
        for (_, permission) in recovered.cancelled.iter().filter(|(s, _)| s == session) {
            out.push(Event::PermissionReplied {
                session_id: session.clone(),
                permission_id: permission.clone(),
                state: PermissionState::Cancelled,
            });
        }
        let runs: Vec<_> = recovered
            .ended
            .iter()
            .filter(|r| &r.session == session)
            .collect();
        let transcript = if runs.is_empty() {
            Vec::new()
        } else {
            store::messages(conn, session)?
        };
        for run in runs {
            for (seq, delta) in &run.deltas {
                out.push(Event::MessageDelta {
                    session_id: session.clone(),
                    message_id: run.message.clone(),
                    seq: *seq,
                    delta: delta.clone(),
                });
            }
            // The part recovery appended is the reply's last `interrupted`, as a reload reads
            // it (an agent's reply: its folded deltas, then its plain parts).
            let index = transcript
                .iter()
                .find(|m| m.id == run.message)
                .and_then(|m| m.parts.iter().rposition(|p| *p == Part::Interrupted));
            if let Some(index) = index {
                out.push(Event::MessagePart {
                    session_id: session.clone(),
                    message_id: run.message.clone(),
                    index: index as u32,
                    part: Part::Interrupted,
                });
            }
            if let Some(ended) = run.ended {
                out.push(Event::MessageEnded {
                    session_id: session.clone(),
                    message_id: run.message.clone(),
                    ended,
                });
            }
        }
        if let Some(stored) = store::get_session(conn, project, session.as_str())? {
            let status = stored.status;
            out.push(Event::SessionUpdated { session: stored });
            if status == SessionStatus::Idle {
                out.push(Event::SessionStatus {
                    session_id: session.clone(),
                    status,
                });
            }
        }
    }
    Ok(out)
}

/// One `queue.updated` per session whose prompt queue the start paused (docs/backend.md §3),
/// the queue as stored: a client that followed the queue sees it wait without reloading.
pub(crate) fn paused_queues(conn: &Connection, paused: &[SessionId]) -> store::Result<Vec<Event>> {
    paused
        .iter()
        .map(|session| {
            Ok(Event::QueueUpdated {
                queue: store::prompt_queue(conn, session)?,
            })
        })
        .collect()
}
