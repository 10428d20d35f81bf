//! A session's standing answers: the "always" grants kept on its `session` row (the
//! `standing` and `always_allow` columns), shown in the UIs and revocable.

use ax_protocol::{Millis, Session, StandingGrant};
use rusqlite::{Connection, OptionalExtension, params};

use super::{Result, get_session, malformed};

/// Most standing grants a session keeps; a further one with a title already kept refreshes
/// nothing, and beyond the bound the oldest are merged into one "and N earlier" entry so the
/// person still sees that more exist.
const MAX_STANDING: usize = 32;

/// Records a standing "always" for the session (`title` says what it covers); a grant with
/// the same title is kept once. Returns the session as stored after.
pub fn add_standing(
    conn: &Connection,
    project: i64,
    id: &str,
    title: &str,
    granted: Millis,
) -> Result<Option<Session>> {
    let Some(session) = get_session(conn, project, id)? else {
        return Ok(None);
    };
    let mut standing = session.standing;
    if standing.iter().any(|g| g.title == title) {
        return Ok(Some(Session {
            standing,
            ..session
        }));
    }
    standing.push(StandingGrant {
        title: title.to_owned(),
        granted,
    });
    if standing.len() > MAX_STANDING {
        let merged = standing.len() - MAX_STANDING + 1;
        let oldest = standing[0].granted;
        standing.drain(..merged);
        standing.insert(
            0,
            StandingGrant {
                title: format!("{merged} earlier standing answers"),
                granted: oldest,
            },
        );
    }
    let text =
        serde_json::to_string(&standing).map_err(|e| malformed("session", id, "standing", e))?;
    conn.execute(
        "UPDATE session SET standing = ?2 WHERE id = ?1",
        params![id, text],
    )?;
    get_session(conn, project, id)
}

/// Forgets every standing "always" of the session, the shell agent's included. Returns the
/// session as stored after, or `None` if the project has no such session.
pub fn revoke_standing(conn: &Connection, project: i64, id: &str) -> Result<Option<Session>> {
    conn.execute(
        "UPDATE session SET standing = NULL, always_allow = 0 WHERE project_id = ?1 AND id = ?2",
        params![project, id],
    )?;
    get_session(conn, project, id)
}

/// Whether the session allows its agent's commands without asking again.
pub fn always_allowed(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT always_allow FROM session WHERE id = ?1",
            [id],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .unwrap_or(0)
        != 0)
}

/// Every later command of the session runs without asking (the person answered "always").
pub fn set_always_allowed(conn: &Connection, id: &str) -> Result<()> {
    conn.execute("UPDATE session SET always_allow = 1 WHERE id = ?1", [id])?;
    Ok(())
}
