//! The `queued_prompt` and `queue_pause` tables: each session's prompt queue, in order, and
//! why a queue waits for the person (docs/backend.md §3). The caller serialises changes to one
//! session's queue (`crate::queue`); each function here is one statement batch.

use ax_protocol::{
    Millis, Prompt, QueuedId, SessionId,
    queue::{PromptQueue, QueuedPrompt},
};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Result, collect_rows, decode, decode_json};

fn read_item(row: &rusqlite::Row<'_>) -> Result<QueuedPrompt> {
    let id: String = row.get(0)?;
    let session: String = row.get(1)?;
    let body: String = row.get(2)?;
    Ok(QueuedPrompt {
        id: decode("queued_prompt", &id, "id", &id)?,
        session_id: decode("queued_prompt", &id, "session_id", &session)?,
        prompt: decode_json("queued_prompt", &id, "body", &body)?,
        created: row.get(3)?,
        updated: row.get(4)?,
    })
}

/// The session's queue, first to be sent first.
pub fn prompt_queue(conn: &Connection, session: &SessionId) -> Result<PromptQueue> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, session_id, body, created, updated FROM queued_prompt \
         WHERE session_id = ?1 ORDER BY pos, id",
    )?;
    let items = collect_rows(stmt.query([session.as_str()])?, read_item)?;
    let paused = conn
        .query_row(
            "SELECT reason FROM queue_pause WHERE session_id = ?1",
            [session.as_str()],
            |r| r.get::<_, String>(0),
        )
        .optional()?;
    Ok(PromptQueue {
        session_id: session.clone(),
        paused: paused.filter(|_| !items.is_empty()),
        items,
    })
}

/// Appends `prompt` to the session's queue unless it already holds `max` prompts; the new
/// item, `None` when full.
pub fn enqueue(
    conn: &Connection,
    session: &SessionId,
    id: &QueuedId,
    prompt: &Prompt,
    now: Millis,
    max: usize,
) -> Result<Option<QueuedPrompt>> {
    let (count, last): (i64, Option<i64>) = conn.query_row(
        "SELECT COUNT(*), MAX(pos) FROM queued_prompt WHERE session_id = ?1",
        [session.as_str()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if count as usize >= max {
        return Ok(None);
    }
    conn.execute(
        "INSERT INTO queued_prompt(id, session_id, pos, body, created, updated) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![
            id.as_str(),
            session.as_str(),
            last.map_or(0, |p| p + 1),
            serde_json::to_string(prompt)?,
            now
        ],
    )?;
    Ok(Some(QueuedPrompt {
        id: id.clone(),
        session_id: session.clone(),
        prompt: prompt.clone(),
        created: now,
        updated: now,
    }))
}

/// Replaces a queued prompt's text and attachments; the item as it now is, `None` when the
/// session has no such item (it was sent or cancelled).
pub fn edit_queued(
    conn: &Connection,
    session: &SessionId,
    id: &QueuedId,
    prompt: &Prompt,
    now: Millis,
) -> Result<Option<QueuedPrompt>> {
    let n = conn.execute(
        "UPDATE queued_prompt SET body = ?1, updated = max(updated, ?2) \
         WHERE session_id = ?3 AND id = ?4",
        params![
            serde_json::to_string(prompt)?,
            now,
            session.as_str(),
            id.as_str()
        ],
    )?;
    if n == 0 {
        return Ok(None);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT id, session_id, body, created, updated FROM queued_prompt WHERE id = ?1",
    )?;
    Ok(collect_rows(stmt.query([id.as_str()])?, read_item)?.pop())
}

/// Takes an item out of the queue (cancelled, or sent); whether it was there. An emptied queue
/// forgets its pause: a pause is about what waits, and nothing does.
pub fn remove_queued(conn: &Connection, session: &SessionId, id: &QueuedId) -> Result<bool> {
    let n = conn.execute(
        "DELETE FROM queued_prompt WHERE session_id = ?1 AND id = ?2",
        params![session.as_str(), id.as_str()],
    )?;
    conn.execute(
        "DELETE FROM queue_pause WHERE session_id = ?1 AND NOT EXISTS \
         (SELECT 1 FROM queued_prompt WHERE session_id = ?1)",
        [session.as_str()],
    )?;
    Ok(n > 0)
}

/// Makes an item the next to be sent; whether it was there.
pub fn move_to_front(conn: &Connection, session: &SessionId, id: &QueuedId) -> Result<bool> {
    let n = conn.execute(
        "UPDATE queued_prompt SET pos = \
         (SELECT MIN(pos) - 1 FROM queued_prompt WHERE session_id = ?1) \
         WHERE session_id = ?1 AND id = ?2",
        params![session.as_str(), id.as_str()],
    )?;
    Ok(n > 0)
}

/// Pauses the queue with `reason`, or lets it flow again (`None`).
pub fn set_queue_paused(
    conn: &Connection,
    session: &SessionId,
    reason: Option<&str>,
) -> Result<()> {
    match reason {
        Some(reason) => conn.execute(
            "INSERT OR REPLACE INTO queue_pause(session_id, reason) VALUES (?1, ?2)",
            params![session.as_str(), reason],
        )?,
        None => conn.execute(
            "DELETE FROM queue_pause WHERE session_id = ?1",
            [session.as_str()],
        )?,
    };
    Ok(())
}

/// At start-up: every queue of `project`'s sessions that still holds prompts waits for the
/// person (the turn it waited for ended with the backend that ran it). Other projects' queues
/// are left alone: their backends may be running on the same store. Returns the sessions whose
/// queue this paused (not those that were paused already).
pub fn pause_waiting_queues(
    conn: &Connection,
    project: i64,
    reason: &str,
) -> Result<Vec<SessionId>> {
    let mut stmt = conn.prepare(
        "INSERT OR IGNORE INTO queue_pause(session_id, reason) \
         SELECT DISTINCT q.session_id, ?2 FROM queued_prompt q \
         JOIN session s ON s.id = q.session_id WHERE s.project_id = ?1 \
         RETURNING session_id",
    )?;
    collect_rows(stmt.query(params![project, reason])?, |row| {
        let id: String = row.get(0)?;
        decode("queue_pause", &id, "session_id", &id)
    })
}
