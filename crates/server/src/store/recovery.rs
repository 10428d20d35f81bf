//! Crash recovery: the runs a dead backend left behind are marked interrupted, their open
//! tool calls and pending approvals cancelled.

use ax_protocol::{MessageId, Millis, Part, PermissionId, SessionId, turn};
use rusqlite::{Connection, params};

use super::{Owner, Result, append_deltas, begin_write, decode, decode_json};
use super::{messages::encode_part, runs::end_reply};

/// An agent's turn cut by a crash (its reply is made of delta rows): each permission still
/// pending gets a `cancelled` answer delta, so the reloaded transcript shows no approval that
/// can no longer be answered. The deltas appended, with their `seq`.
fn cancel_permission_parts(tx: &Connection, session: &str, message: &str) -> Result<Deltas> {
    let last: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM delta WHERE message_id = ?1",
        [message],
        |r| r.get(0),
    )?;
    if last == 0 {
        return Ok(Vec::new());
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
        .enumerate()
        .map(|(i, id)| {
            let delta = turn::TurnDelta::PermissionAnswered {
                permission_id: decode("permission", id, "id", id)?,
                outcome: turn::PermissionOutcome::Cancelled,
            };
            Ok((last as u64 + 1 + i as u64, delta))
        })
        .collect::<Result<Deltas>>()?;
    append_deltas(tx, &message, answers.iter().map(|(seq, d)| (*seq, d)))?;
    Ok(answers)
}

/// Turn deltas appended to one message, each with its `seq`.
type Deltas = Vec<(u64, turn::TurnDelta)>;

/// An agent's turn cut by a crash: each tool call still open (pending, in progress) gets a
/// `cancelled` status delta, so no reloaded card shows work that runs no more
/// (docs/agents.md §2). The deltas appended, with their `seq`.
fn cancel_open_tool_calls(tx: &Connection, message: &str) -> Result<Deltas> {
    let rows: Vec<(String, i64)> = {
        let mut stmt =
            tx.prepare("SELECT body, seq FROM delta WHERE message_id = ?1 ORDER BY seq")?;
        stmt.query_map([message], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let Some(&(_, last)) = rows.last() else {
        return Ok(Vec::new());
    };
    let mut parts = Vec::new();
    for (body, _) in &rows {
        turn::apply(&mut parts, decode_json("delta", message, "body", body)?);
    }
    let closes: Deltas = parts
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
        .enumerate()
        .map(|(i, d)| (last as u64 + 1 + i as u64, d))
        .collect();
    let message: MessageId = decode("message", message, "id", message)?;
    append_deltas(tx, &message, closes.iter().map(|(seq, d)| (*seq, d)))?;
    Ok(closes)
}

/// What [`recover_interrupted`] found, and what it changed: what a client that watched the
/// cut turns must be told (`crate::recovered` publishes it once the event bus exists).
#[derive(Debug, Default)]
pub struct Recovered {
    /// Runs marked interrupted.
    pub runs: usize,
    /// Process groups those runs were running as, with their leaders' start times.
    pub process_groups: Vec<(u32, u64)>,
    /// Each run ended, in the order it was ended.
    pub ended: Vec<EndedRun>,
    /// Approvals cancelled: (session, permission).
    pub cancelled: Vec<(SessionId, PermissionId)>,
    /// Sessions whose status was set back to idle (those of `ended` among them).
    pub idled: Vec<SessionId>,
}

/// One run [`recover_interrupted`] ended.
#[derive(Debug)]
pub struct EndedRun {
    /// Its session.
    pub session: SessionId,
    /// Its reply, which now ends with an `interrupted` part.
    pub message: MessageId,
    /// The turn deltas appended to the reply (open tool calls and pending approvals
    /// cancelled), each with its `seq`.
    pub deltas: Vec<(u64, turn::TurnDelta)>,
    /// The reply's end as now stored, when it had none.
    pub ended: Option<Millis>,
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
        ..Recovered::default()
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
        let mut deltas = cancel_open_tool_calls(&tx, message)?;
        deltas.extend(cancel_permission_parts(&tx, session, message)?);
        recovered.cancelled.extend(cancel_pending(
            &tx,
            "UPDATE permission SET state = 'cancelled' WHERE session_id = ?1 AND state = 'pending' \
             RETURNING session_id, id",
            session,
        )?);
        let ended = end_reply(&tx, session, now)?.map(|(_, ended)| ended);
        tx.execute("DELETE FROM run WHERE session_id = ?1", [session])?;
        recovered.ended.push(EndedRun {
            session: decode("run", session, "session_id", session)?,
            message: decode("run", session, "message_id", message)?,
            deltas,
            ended,
        });
    }
    // A status left non-idle without a run row (e.g. a crash between two writes) is reset too;
    // the remaining run rows belong to live backends.
    let idled: Vec<String> = tx
        .prepare(
            "UPDATE session SET status = 'idle', updated = max(updated, ?2) \
             WHERE project_id = ?1 AND status IN ('busy', 'pending') \
             AND id NOT IN (SELECT session_id FROM run) RETURNING id",
        )?
        .query_map(params![project, now], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in &idled {
        recovered.idled.push(decode("session", id, "id", id)?);
    }
    recovered.cancelled.extend(cancel_pending(
        &tx,
        "UPDATE permission SET state = 'cancelled' WHERE state = 'pending' AND session_id IN \
         (SELECT id FROM session WHERE project_id = ?1 AND id NOT IN (SELECT session_id FROM run)) \
         RETURNING session_id, id",
        project,
    )?);
    tx.commit()?;
    Ok(recovered)
}

/// Runs `update` (a permission `UPDATE … RETURNING session_id, id` with one parameter): the
/// approvals it cancelled.
fn cancel_pending(
    tx: &Connection,
    update: &str,
    param: impl rusqlite::ToSql,
) -> Result<Vec<(SessionId, PermissionId)>> {
    let rows: Vec<(String, String)> = tx
        .prepare(update)?
        .query_map([param], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    rows.iter()
        .map(|(session, id)| {
            Ok((
                decode("permission", id, "session_id", session)?,
                decode("permission", id, "id", id)?,
            ))
        })
        .collect()
}
