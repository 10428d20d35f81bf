//! The `message`, `part` and `delta` tables: a session's transcript, a shell reply's parts
//! and an agent reply's turn as append-only deltas, folded on read.

use ax_protocol::{Message, MessageId, Part, SessionId, turn};
use rusqlite::{Connection, params};

use super::{Result, collect_rows, decode, decode_json};

/// Appends turn deltas of an agent message (`seq` from 1, per message). Call it inside a
/// transaction: one per burst of deltas.
pub fn append_deltas<'a>(
    conn: &Connection,
    message_id: &MessageId,
    deltas: impl IntoIterator<Item = (u64, &'a turn::TurnDelta)>,
) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("INSERT INTO delta(message_id, seq, body) VALUES (?1, ?2, ?3)")?;
    for (seq, delta) in deltas {
        stmt.execute(params![
            message_id.as_str(),
            seq as i64,
            encode_delta(delta)?
        ])?;
    }
    Ok(())
}

/// A delta's stored body: its JSON, the same bytes its `message.delta` event carries.
pub fn encode_delta(delta: &turn::TurnDelta) -> Result<String> {
    Ok(serde_json::to_string(delta)?)
}

/// [`append_deltas`] with each delta already encoded ([`encode_delta`]), for a caller that
/// sends the same JSON in its event.
pub fn append_delta_bodies<'a>(
    conn: &Connection,
    message_id: &MessageId,
    bodies: impl IntoIterator<Item = (u64, &'a str)>,
) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("INSERT INTO delta(message_id, seq, body) VALUES (?1, ?2, ?3)")?;
    for (seq, body) in bodies {
        stmt.execute(params![message_id.as_str(), seq as i64, body])?;
    }
    Ok(())
}

pub(super) fn encode_part(part: &Part) -> Result<String> {
    Ok(serde_json::to_string(part)?)
}

/// Inserts a message with its parts at the end of the session's transcript.
/// Call it inside a transaction: the message and its parts belong together.
pub fn insert_message(tx: &Connection, message: &Message) -> Result<()> {
    tx.execute(
        "INSERT INTO message(id, session_id, seq, role, created) VALUES (?1, ?2, \
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM message WHERE session_id = ?2), ?3, ?4)",
        params![
            message.id.as_str(),
            message.session_id.as_str(),
            message.role.as_str(),
            message.created
        ],
    )?;
    for (i, part) in message.parts.iter().enumerate() {
        tx.execute(
            "INSERT INTO part(message_id, idx, body) VALUES (?1, ?2, ?3)",
            params![message.id.as_str(), i as i64, encode_part(part)?],
        )?;
    }
    Ok(())
}

/// Appends part `index` to a message.
pub fn append_part(
    conn: &Connection,
    message_id: &MessageId,
    index: u32,
    part: &Part,
) -> Result<()> {
    conn.prepare_cached("INSERT INTO part(message_id, idx, body) VALUES (?1, ?2, ?3)")?
        .execute(params![message_id.as_str(), index, encode_part(part)?])?;
    Ok(())
}

/// The session's transcript in order, read from one snapshot: its three reads (messages,
/// deltas, parts) see the same commits, so a turn that stores a delta and a part together is
/// never read with one and without the other. A savepoint, so that it nests in a caller's
/// transaction too.
pub fn messages(conn: &Connection, session: &SessionId) -> Result<Vec<Message>> {
    conn.execute_batch("SAVEPOINT transcript")?;
    let read = read_transcript(conn, session);
    // Nothing was written: releasing ends the snapshot, whether the reads went well or not.
    let released = conn.execute_batch("RELEASE transcript");
    let out = read?;
    released?;
    Ok(out)
}

fn read_transcript(conn: &Connection, session: &SessionId) -> Result<Vec<Message>> {
    let mut out: Vec<Message> = Vec::new();
    let mut stmt = conn.prepare_cached(
        "SELECT id, role, created, ended FROM message WHERE session_id = ?1 ORDER BY seq",
    )?;
    let mut rows = stmt.query([session.as_str()])?;
    let mut index = std::collections::HashMap::new();
    while let Some(row) = rows.next()? {
        let (id, role): (String, String) = (row.get(0)?, row.get(1)?);
        out.push(Message {
            id: decode("message", &id, "id", &id)?,
            role: decode("message", &id, "role", &role)?,
            session_id: session.clone(),
            created: row.get(2)?,
            ended: row.get(3)?,
            deltas: 0,
            parts: Vec::new(),
        });
        index.insert(id, out.len() - 1);
    }
    // An agent message's turn: its deltas folded, then any plain part (a restart's
    // `interrupted`), which can only come after them.
    let mut turns: Vec<Vec<turn::TurnPart>> = vec![Vec::new(); out.len()];
    let mut stmt = conn.prepare_cached(
        "SELECT d.message_id, d.body, d.seq FROM delta d JOIN message m ON m.id = d.message_id \
         WHERE m.session_id = ?1 ORDER BY m.seq, d.seq",
    )?;
    let rows = collect_rows(stmt.query([session.as_str()])?, |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for (mid, body, seq) in rows {
        let delta: turn::TurnDelta = decode_json("delta", &mid, "body", &body)?;
        if let Some(&i) = index.get(&mid) {
            turn::apply(&mut turns[i], delta);
            out[i].deltas = seq as u64;
        }
    }
    for (message, parts) in out.iter_mut().zip(turns) {
        message.parts.extend(parts.into_iter().map(Part::from_turn));
    }
    let mut stmt = conn.prepare_cached(
        "SELECT p.message_id, p.body FROM part p JOIN message m ON m.id = p.message_id \
         WHERE m.session_id = ?1 ORDER BY m.seq, p.idx",
    )?;
    for (mid, body) in message_bodies(&mut stmt, session)? {
        let part: Part = decode_json("part", &mid, "body", &body)?;
        if let Some(&i) = index.get(&mid) {
            out[i].parts.push(part);
        }
    }
    Ok(out)
}

/// The `(message_id, body)` rows of a session's parts or deltas, as `stmt` selects them.
fn message_bodies(
    stmt: &mut rusqlite::CachedStatement<'_>,
    session: &SessionId,
) -> Result<Vec<(String, String)>> {
    collect_rows(stmt.query([session.as_str()])?, |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}
