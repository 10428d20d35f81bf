//! Process records: the `run` row of each running turn and the `process_group` rows of work
//! started outside a run, with the backend that owns them, so a backend restarted after a
//! crash finds what was cut and what still runs.

use ax_protocol::{MessageId, Millis};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Result, begin_write, decode};

/// The backend process that owns a run: its pid and start time (see
/// [`ax_agents::process::process_start_time`]).
pub type Owner = (u32, Option<u64>);

/// Records that a run of `session` started, producing `message_id`, owned by `owner`; a backend restarted after a crash finds it and marks the run interrupted.
pub fn begin_run(
    conn: &Connection,
    session: &str,
    message_id: &MessageId,
    now: Millis,
    owner: Owner,
) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO run(session_id, message_id, started, owner_pid, owner_start) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            session,
            message_id.as_str(),
            now,
            owner.0,
            owner.1.map(|s| s as i64)
        ],
    )?;
    Ok(())
}

/// Records the process group a run's work runs as, with its leader's start time.
pub fn set_run_process(
    conn: &Connection,
    session: &str,
    pgid: u32,
    start: Option<u64>,
) -> Result<()> {
    conn.execute(
        "UPDATE run SET pgid = ?1, pgid_start = ?2 WHERE session_id = ?3",
        params![pgid, start.map(|s| s as i64), session],
    )?;
    Ok(())
}

/// Forgets the session's run: it ended, and its reply is stamped `ended` at `now`.
/// Returns the reply it stamped and its stored end, for the `message.ended` event.
pub fn end_run(
    conn: &Connection,
    session: &str,
    now: Millis,
) -> Result<Option<(MessageId, Millis)>> {
    let ended = end_reply(conn, session, now)?;
    conn.execute("DELETE FROM run WHERE session_id = ?1", [session])?;
    Ok(ended)
}

/// Stamps the end of the session's running reply (its run row names it), so a reload shows
/// how long the turn took; the reply and the end it now holds, if one was stamped.
pub(super) fn end_reply(
    conn: &Connection,
    session: &str,
    now: Millis,
) -> Result<Option<(MessageId, Millis)>> {
    let stamped: Option<(String, Millis)> = conn
        .query_row(
            "UPDATE message SET ended = max(created, ?2) \
             WHERE id = (SELECT message_id FROM run WHERE session_id = ?1) AND ended IS NULL \
             RETURNING id, ended",
            params![session, now],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    stamped
        .map(|(id, ended)| Ok((decode("message", &id, "id", &id)?, ended)))
        .transpose()
}

/// Records a process group this backend (`owner`) runs outside a session run, with its
/// leader's start time, so a backend restarted after a crash can kill it.
pub fn record_process_group(conn: &Connection, pgid: u32, start: u64, owner: Owner) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO process_group(pgid, pgid_start, owner_pid, owner_start) \
         VALUES (?1, ?2, ?3, ?4)",
        params![pgid, start as i64, owner.0, owner.1.map(|s| s as i64)],
    )?;
    Ok(())
}

/// The group ended: forget its record.
pub fn forget_process_group(conn: &Connection, pgid: u32) -> Result<()> {
    conn.execute("DELETE FROM process_group WHERE pgid = ?1", [pgid])?;
    Ok(())
}

/// Removes and returns the recorded groups (pgid, leader start time) whose owner is not
/// `is_alive`: what dead backends left running.
pub fn take_orphaned_process_groups(
    conn: &mut Connection,
    is_alive: impl Fn(Owner) -> bool,
) -> Result<Vec<(u32, u64)>> {
    let tx = begin_write(conn)?;
    let rows: Vec<(i64, i64, i64, Option<i64>)> = {
        let mut stmt =
            tx.prepare("SELECT pgid, pgid_start, owner_pid, owner_start FROM process_group")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let mut orphans = Vec::new();
    for (pgid, start, owner_pid, owner_start) in rows {
        if is_alive((owner_pid as u32, owner_start.map(|s| s as u64))) {
            continue;
        }
        tx.execute("DELETE FROM process_group WHERE pgid = ?1", [pgid])?;
        orphans.push((pgid as u32, start as u64));
    }
    tx.commit()?;
    Ok(orphans)
}
