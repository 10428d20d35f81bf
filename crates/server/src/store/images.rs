//! The `image` table: the bytes of the images a person attached to a message, which the
//! message's `Part::Image { index }` names (docs/agents.md §11). Kept apart from the parts so
//! a transcript read never carries megabytes; deleted with their message.

use ax_protocol::MessageId;
use rusqlite::{Connection, OptionalExtension, params};

use super::Result;

/// Stores image `index` of `message_id`. Call it inside the transaction that inserts the
/// message, so a message never names an image that is not there.
pub fn insert_image(
    tx: &Connection,
    message_id: &MessageId,
    index: u32,
    mime: &str,
    data: &[u8],
) -> Result<()> {
    tx.prepare_cached("INSERT INTO image(message_id, idx, mime, data) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![message_id.as_str(), index, mime, data])?;
    Ok(())
}

/// Image `index` of message `message_id`, when that message belongs to session `session_id`
/// of `project`: its MIME type and bytes.
pub fn image(
    conn: &Connection,
    project: i64,
    session_id: &str,
    message_id: &str,
    index: u32,
) -> Result<Option<(String, Vec<u8>)>> {
    Ok(conn
        .prepare_cached(
            "SELECT image.mime, image.data FROM image \
             JOIN message ON message.id = image.message_id \
             JOIN session ON session.id = message.session_id \
             WHERE session.project_id = ?1 AND session.id = ?2 AND image.message_id = ?3 \
             AND image.idx = ?4",
        )?
        .query_row(params![project, session_id, message_id, index], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .optional()?)
}
