//! The `session` table (and the `project` rows sessions belong to): a session's title,
//! status, agent and what the agent told us about itself.

use ax_protocol::{AgentState, Millis, Session, SessionStatus, StandingGrant};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Result, collect_rows, decode, decode_json};

/// The columns [`read_session`] reads, in order.
const SESSION_COLUMNS: &str = "id, title, created, updated, status, agent, agent_state, standing";

/// The one reader of a `session` row (selected with [`SESSION_COLUMNS`]).
fn read_session(row: &rusqlite::Row<'_>) -> Result<Session> {
    let id: String = row.get(0)?;
    let status: String = row.get(4)?;
    let agent_state: Option<String> = row.get(6)?;
    let standing: Option<String> = row.get(7)?;
    Ok(Session {
        id: decode("session", &id, "id", &id)?,
        title: row.get(1)?,
        created: row.get(2)?,
        updated: row.get(3)?,
        status: decode("session", &id, "status", &status)?,
        agent: row.get(5)?,
        agent_state: agent_state
            .map(|text| decode_json::<AgentState>("session", &id, "agent_state", &text))
            .transpose()?,
        standing: standing
            .map(|text| decode_json::<Vec<StandingGrant>>("session", &id, "standing", &text))
            .transpose()?
            .unwrap_or_default(),
    })
}

/// The project's row ID, inserting it on first use.
pub fn project_id(conn: &Connection, directory: &str) -> Result<i64> {
    conn.execute(
        "INSERT INTO project(directory) VALUES (?1) ON CONFLICT(directory) DO NOTHING",
        [directory],
    )?;
    Ok(conn.query_row(
        "SELECT id FROM project WHERE directory = ?1",
        [directory],
        |r| r.get(0),
    )?)
}

/// The project's row ID if it was ever stored (read-only callers).
pub fn find_project(conn: &Connection, directory: &str) -> Result<Option<i64>> {
    Ok(conn
        .query_row(
            "SELECT id FROM project WHERE directory = ?1",
            [directory],
            |r| r.get(0),
        )
        .optional()?)
}

/// Stores a new session of `project`.
pub fn insert_session(conn: &Connection, project: i64, session: &Session) -> Result<()> {
    conn.execute(
        "INSERT INTO session(id, project_id, title, created, updated, status, agent) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            session.id.as_str(),
            project,
            session.title,
            session.created,
            session.updated,
            session.status.as_str(),
            session.agent
        ],
    )?;
    Ok(())
}

/// Most recent activity (`updated`) first; the TUI sorts the same way.
pub fn list_sessions(conn: &Connection, project: i64, limit: Option<u32>) -> Result<Vec<Session>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {SESSION_COLUMNS} FROM session WHERE project_id = ?1 \
         ORDER BY updated DESC, id DESC LIMIT ?2"
    ))?;
    let limit = limit.map_or(-1, i64::from);
    collect_rows(stmt.query(params![project, limit])?, read_session)
}

/// The session, if it belongs to `project`.
pub fn get_session(conn: &Connection, project: i64, id: &str) -> Result<Option<Session>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {SESSION_COLUMNS} FROM session WHERE project_id = ?1 AND id = ?2"
    ))?;
    Ok(collect_rows(stmt.query(params![project, id])?, read_session)?.pop())
}

/// Whether the project has this session.
pub fn session_exists(conn: &Connection, project: i64, id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM session WHERE project_id = ?1 AND id = ?2")?
        .exists(params![project, id])?)
}

/// Sets the status and bumps `updated`; returns the session as it is now.
pub fn set_status(
    conn: &Connection,
    project: i64,
    id: &str,
    status: SessionStatus,
    now: Millis,
) -> Result<Option<Session>> {
    conn.execute(
        "UPDATE session SET status = ?1, updated = max(updated, ?2) WHERE id = ?3",
        params![status.as_str(), now, id],
    )?;
    get_session(conn, project, id)
}

/// Stores what the agent told us about itself for this session.
pub fn set_agent_state(conn: &Connection, id: &str, state: &AgentState) -> Result<()> {
    conn.execute(
        "UPDATE session SET agent_state = ?1 WHERE id = ?2",
        params![serde_json::to_string(state)?, id],
    )?;
    Ok(())
}

/// The agent's own session id, kept to reopen the agent's session later.
pub fn agent_session(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT agent_session FROM session WHERE id = ?1",
            [id],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()?
        .flatten())
}

/// Remembers the agent's own session id, so a restarted backend can reopen it.
pub fn set_agent_session(conn: &Connection, id: &str, agent_session: &str) -> Result<()> {
    conn.execute(
        "UPDATE session SET agent_session = ?1 WHERE id = ?2",
        params![agent_session, id],
    )?;
    Ok(())
}

/// Sets the title and bumps `updated`; the session as it is now, `None` when unknown.
pub fn rename_session(
    conn: &Connection,
    project: i64,
    id: &str,
    title: &str,
    now: Millis,
) -> Result<Option<Session>> {
    conn.execute(
        "UPDATE session SET title = ?1, title_from = 'person', updated = max(updated, ?2) \
         WHERE project_id = ?3 AND id = ?4",
        params![title, now, project, id],
    )?;
    get_session(conn, project, id)
}

/// Who offers a session a title that no person gave (docs/agents.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferedTitle {
    /// Its first prompt's first line: taken only by an untitled session.
    Prompt,
    /// Its agent (`session_info_update`): replaces any title but a person's.
    Agent,
}

/// Gives the session `title` if `from` may replace the title it has (see [`OfferedTitle`]);
/// `None` when it kept its title.
pub fn offer_title(
    conn: &Connection,
    project: i64,
    id: &str,
    title: &str,
    from: OfferedTitle,
) -> Result<Option<Session>> {
    let sql = match from {
        OfferedTitle::Prompt => {
            "UPDATE session SET title = ?1, title_from = 'prompt' \
             WHERE project_id = ?2 AND id = ?3 AND title = ''"
        }
        OfferedTitle::Agent => {
            "UPDATE session SET title = ?1, title_from = 'agent' \
             WHERE project_id = ?2 AND id = ?3 AND title != ?1 \
               AND (title = '' OR title_from != 'person')"
        }
    };
    let n = conn.execute(sql, params![title, project, id])?;
    changed(conn, project, id, n)
}

/// The session as stored after an update that changed `rows` rows; `None` when it changed none.
fn changed(conn: &Connection, project: i64, id: &str, rows: usize) -> Result<Option<Session>> {
    if rows == 0 {
        return Ok(None);
    }
    get_session(conn, project, id)
}

/// Deletes the session (its messages, parts and permissions go with it); whether it existed.
pub fn delete_session(conn: &mut Connection, project: i64, id: &str) -> Result<bool> {
    let n = conn.execute(
        "DELETE FROM session WHERE project_id = ?1 AND id = ?2",
        params![project, id],
    )?;
    Ok(n > 0)
}
