//! Crash recovery: the runs a dead backend left behind are marked interrupted, their open
//! tool calls and pending approvals cancelled.

use ax_protocol::{MessageId, Millis, Part, turn};
use rusqlite::{Connection, params};

use super::{Owner, Result, append_deltas, begin_write, decode, decode_json};
use super::{messages::encode_part, runs::end_reply};

/// An agent's turn cut by a crash (its reply is made of delta rows): each permission still
/// pending gets a `cancelled` answer delta, so the reloaded transcript shows no approval that
/// can no longer be answered.
fn cancel_permission_parts(tx: &Connection, session: &str, message: &str) -> Result<()> {
    let last: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM delta WHERE message_id = ?1",
        [message],
        |r| r.get(0),
    )?;
    if last == 0 {
        return Ok(());
    }
    let message: MessageId = decode("message", message, "id", message)?;
    let pending: Vec<String> = {
        let mut stmt = tx.prepare(
            "SELECT id FROM permission WHERE session_id = ?1 AND state = 'pending' ORDER BY id",
        )?;
        stmt.query_map([session], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    let answers = pending
        .iter()
        .map(|id| {
            Ok(turn::TurnDelta::PermissionAnswered {
                permission_id: decode("permission", id, "id", id)?,
                outcome: turn::PermissionOutcome::Cancelled,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    append_deltas(
        tx,
        &message,
        answers
            .iter()
            .enumerate()
            .map(|(i, d)| (last as u64 + 1 + i as u64, d)),
    )
}

/// An agent's turn cut by a crash: each tool call still open (pending, in progress) gets a
/// `cancelled` status delta, so no reloaded card shows work that runs no more
/// (docs/agents.md §2).
fn cancel_open_tool_calls(tx: &Connection, message: &str) -> Result<()> {
    let rows: Vec<(String, i64)> = {
        let mut stmt =
            tx.prepare("SELECT body, seq FROM delta WHERE message_id = ?1 ORDER BY seq")?;
        stmt.query_map([message], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let Some(&(_, last)) = rows.last() else {
        return Ok(());
    };
    let mut parts = Vec::new();
    for (body, _) in &rows {
        turn::apply(&mut parts, decode_json("delta", message, "body", body)?);
    }
    let closes: Vec<turn::TurnDelta> = parts
        .iter()
        .filter_map(|p| match p {
            turn::TurnPart::ToolCall(t) if t.status.is_open() => {
                Some(turn::TurnDelta::ToolCallUpdated {
                    tool_call_id: t.tool_call_id.clone(),
                    fields: turn::ToolCallFields {
                        status: Some(turn::ToolStatus::Cancelled),
                        ..turn::ToolCallFields::default()
                    },
                })
            }
            _ => None,
        })
        .collect();
    let message: MessageId = decode("message", message, "id", message)?;
    append_deltas(
        tx,
        &message,
        closes
            .iter()
            .enumerate()
            .map(|(i, d)| (last as u64 + 1 + i as u64, d)),
    )
}

/// What [`recover_interrupted`] found.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Runs marked interrupted.
    pub runs: usize,
    /// Process groups those runs were running as, with their leaders' start times.
    pub process_groups: Vec<(u32, u64)>,
}

/// Marks every run of the project that a dead backend left behind as interrupted: an
/// `Interrupted` part ends its message, pending approvals become cancelled, status idle.
/// Runs whose owner `is_alive` (another backend serving the same project right now) are left
/// alone.
pub fn recover_interrupted(
    conn: &mut Connection,
    project: i64,
    now: Millis,
    is_alive: impl Fn(Owner) -> bool,
) -> Result<Recovered> {
    let tx = begin_write(conn)?;
    type Row = (
        String,
        String,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    );
    let runs: Vec<Row> = {
        let mut stmt = tx.prepare(
            "SELECT r.session_id, r.message_id, r.pgid, r.pgid_start, r.owner_pid, r.owner_start \
             FROM run r JOIN session s ON s.id = r.session_id WHERE s.project_id = ?1",
        )?;
        stmt.query_map([project], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?
    };
    let runs: Vec<Row> = runs
        .into_iter()
        .filter(|r| match r.4 {
            Some(pid) => !is_alive((pid as u32, r.5.map(|s| s as u64))),
            None => true,
        })
        .collect();
    let mut recovered = Recovered {
        runs: runs.len(),
        process_groups: Vec::new(),
    };
    for (session, message, pgid, start, _, _) in &runs {
        if let (Some(pgid), Some(start)) = (pgid, start) {
            recovered.process_groups.push((*pgid as u32, *start as u64));
        }
        tx.execute(
            "INSERT INTO part(message_id, idx, body) SELECT ?1, COALESCE(MAX(idx), -1) + 1, ?2 \
             FROM part WHERE message_id = ?1",
            params![message, encode_part(&Part::Interrupted)?],
        )?;
        cancel_open_tool_calls(&tx, message)?;
        cancel_permission_parts(&tx, session, message)?;
        tx.execute(
            "UPDATE permission SET state = 'cancelled' WHERE session_id = ?1 AND state = 'pending'",
            [session],
        )?;
        end_reply(&tx, session, now)?;
        tx.execute("DELETE FROM run WHERE session_id = ?1", [session])?;
    }
    // A status left non-idle without a run row (e.g. a crash between two writes) is reset too;
    // the remaining run rows belong to live backends.
    tx.execute(
        "UPDATE session SET status = 'idle', updated = max(updated, ?2) \
         WHERE project_id = ?1 AND status IN ('busy', 'pending') \
         AND id NOT IN (SELECT session_id FROM run)",
        params![project, now],
    )?;
    tx.execute(
        "UPDATE permission SET state = 'cancelled' WHERE state = 'pending' AND session_id IN \
         (SELECT id FROM session WHERE project_id = ?1 AND id NOT IN (SELECT session_id FROM run))",
        [project],
    )?;
    tx.commit()?;
    Ok(recovered)
}
