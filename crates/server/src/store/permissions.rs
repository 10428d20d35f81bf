//! The `permission` table: approval requests, their answers, and an agent permission's tool
//! call and options.

use ax_protocol::{Permission, PermissionId, PermissionState, turn};
use rusqlite::{Connection, params};

use super::{Result, collect_rows, decode, decode_json};

/// Stores a new permission request.
pub fn insert_permission(conn: &Connection, p: &Permission) -> Result<()> {
    conn.execute(
        "INSERT INTO permission(id, session_id, command, state, created, attachments, detail) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            p.id.as_str(),
            p.session_id.as_str(),
            p.command,
            p.state.as_str(),
            p.created,
            serde_json::to_string(&p.attachments)?,
            encode_detail(p)?
        ],
    )?;
    Ok(())
}

/// An agent permission's tool call, options and sent option, as stored in `detail`.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    #[serde(default)]
    tool_call: Option<turn::ToolCallPart>,
    #[serde(default)]
    options: Vec<turn::PermissionChoice>,
    #[serde(default)]
    option_id: Option<String>,
}

fn encode_detail(p: &Permission) -> Result<Option<String>> {
    if p.tool_call.is_none() && p.options.is_empty() && p.option_id.is_none() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string(&Detail {
        tool_call: p.tool_call.clone(),
        options: p.options.clone(),
        option_id: p.option_id.clone(),
    })?))
}

/// Stores an agent permission's answer: its state and the option that was sent.
pub fn answer_permission(conn: &Connection, p: &Permission) -> Result<()> {
    conn.execute(
        "UPDATE permission SET state = ?1, detail = ?2 WHERE id = ?3",
        params![p.state.as_str(), encode_detail(p)?, p.id.as_str()],
    )?;
    Ok(())
}

/// Records the answer (or cancellation) of a permission request.
pub fn set_permission_state(
    conn: &Connection,
    id: &PermissionId,
    state: PermissionState,
) -> Result<()> {
    conn.execute(
        "UPDATE permission SET state = ?1 WHERE id = ?2",
        params![state.as_str(), id.as_str()],
    )?;
    Ok(())
}

/// The columns [`read_permission`] reads, in order.
const PERMISSION_COLUMNS: &str = "id, session_id, command, state, created, attachments, detail";

/// The one reader of a `permission` row (selected with [`PERMISSION_COLUMNS`]).
fn read_permission(row: &rusqlite::Row<'_>) -> Result<Permission> {
    let id: String = row.get(0)?;
    let (sid, state): (String, String) = (row.get(1)?, row.get(3)?);
    let (attachments, detail): (String, Option<String>) = (row.get(5)?, row.get(6)?);
    let detail = match detail {
        Some(text) => decode_json("permission", &id, "detail", &text)?,
        None => Detail {
            tool_call: None,
            options: Vec::new(),
            option_id: None,
        },
    };
    Ok(Permission {
        id: decode("permission", &id, "id", &id)?,
        session_id: decode("permission", &id, "session_id", &sid)?,
        command: row.get(2)?,
        attachments: decode_json("permission", &id, "attachments", &attachments)?,
        state: decode("permission", &id, "state", &state)?,
        created: row.get(4)?,
        tool_call: detail.tool_call,
        options: detail.options,
        option_id: detail.option_id,
    })
}

/// The permission request, if it belongs to `session`.
pub fn get_permission(
    conn: &Connection,
    session: &str,
    id: &PermissionId,
) -> Result<Option<Permission>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PERMISSION_COLUMNS} FROM permission WHERE session_id = ?1 AND id = ?2"
    ))?;
    Ok(collect_rows(stmt.query(params![session, id.as_str()])?, read_permission)?.pop())
}

/// Pending approvals of the project's sessions, oldest first.
pub fn pending_permissions(conn: &Connection, project: i64) -> Result<Vec<Permission>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {PERMISSION_COLUMNS} FROM permission WHERE state = 'pending' \
         AND session_id IN (SELECT id FROM session WHERE project_id = ?1) ORDER BY created, id"
    ))?;
    collect_rows(stmt.query([project])?, read_permission)
}
