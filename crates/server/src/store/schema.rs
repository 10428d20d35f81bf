//! The schema: the database file's name, its versioned migrations, and the connection
//! settings every connection gets.

use std::path::Path;

use rusqlite::Connection;

use super::{Result, StoreError};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "ax-code.db";

/// One step of the schema: SQL, or rows rewritten in Rust where SQL alone cannot say it.
pub(super) enum Migration {
    /// Statements run as one batch.
    Sql(&'static str),
    /// Reads and rewrites rows (inside the migration's transaction).
    Rows(fn(&Connection) -> Result<()>),
}

impl Migration {
    /// Runs the step on `conn` (the caller holds the transaction and sets the version).
    pub(super) fn apply(&self, conn: &Connection) -> Result<()> {
        match self {
            Migration::Sql(sql) => conn.execute_batch(sql)?,
            Migration::Rows(rewrite) => rewrite(conn)?,
        }
        Ok(())
    }
}

use Migration::{Rows, Sql};

/// Each entry moves the schema one version up; never edit a released entry, append one.
pub(super) const MIGRATIONS: &[Migration] = &[
    Sql(r#"
CREATE TABLE project (
    id INTEGER PRIMARY KEY,
    directory TEXT NOT NULL UNIQUE
);
CREATE TABLE session (
    id TEXT PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES project(id),
    title TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'idle',
    always_allow INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX session_by_project ON session(project_id, created DESC, id DESC);
CREATE TABLE message (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    created INTEGER NOT NULL
);
CREATE UNIQUE INDEX message_by_session ON message(session_id, seq);
CREATE TABLE part (
    message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (message_id, idx)
) WITHOUT ROWID;
CREATE TABLE permission (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    command TEXT NOT NULL,
    state TEXT NOT NULL,
    created INTEGER NOT NULL
);
CREATE INDEX permission_by_session ON permission(session_id, state);
CREATE TABLE run (
    session_id TEXT PRIMARY KEY REFERENCES session(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    started INTEGER NOT NULL
);
"#),
    Sql(r#"
ALTER TABLE run ADD COLUMN pgid INTEGER;
ALTER TABLE run ADD COLUMN pgid_start INTEGER;
ALTER TABLE run ADD COLUMN owner_pid INTEGER;
ALTER TABLE run ADD COLUMN owner_start INTEGER;
"#),
    // v3: every wire field is camelCase; truncated parts were stored as `dropped_bytes`.
    Sql(r#"
UPDATE part SET body = replace(body, '"dropped_bytes":', '"droppedBytes":')
 WHERE body LIKE '{"type":"truncated",%';
"#),
    // v4: the attachments a permission asks about, as a JSON array of project-relative paths;
    // process groups started outside a session run (the operator terminal), for crash cleanup.
    Sql(r#"
ALTER TABLE permission ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
CREATE TABLE process_group (
    pgid INTEGER PRIMARY KEY,
    pgid_start INTEGER NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_start INTEGER
);
"#),
    // v5: lists sort by last activity.
    Sql(r#"
CREATE INDEX session_by_activity ON session(project_id, updated DESC, id DESC);
"#),
    // v6: ACP agents. A session's agent (fixed at creation), the agent's own session id (to
    // reopen it), what it told us (modes, auth methods: JSON `AgentState`); an agent
    // permission's tool call, options and the option sent (JSON); an agent message's turn as
    // append-only deltas, folded on read (`ax_protocol::turn::apply`).
    Sql(r#"
ALTER TABLE session ADD COLUMN agent TEXT NOT NULL DEFAULT 'shell';
ALTER TABLE session ADD COLUMN agent_session TEXT;
ALTER TABLE session ADD COLUMN agent_state TEXT;
ALTER TABLE permission ADD COLUMN detail TEXT;
CREATE TABLE delta (
    message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (message_id, seq)
) WITHOUT ROWID;
"#),
    // v7: the standing "always" answers of a session (JSON array of `StandingGrant`), shown
    // in the UIs and revocable; NULL when there are none.
    Sql(r#"
ALTER TABLE session ADD COLUMN standing TEXT;
"#),
    // v8: when a reply's turn ended (NULL while it runs, and for the person's messages).
    Sql(r#"
ALTER TABLE message ADD COLUMN ended INTEGER;
"#),
    // v9: permission ids in turn deltas are typed (`per_…`). Before, the ACP runtime's own
    // `perm-N` ids were renamed on the way in, and an answer to one the turn no longer tracked
    // was stored as is: such a delta changed nothing when folded (no part has that id), so it
    // goes rather than making the whole transcript unreadable.
    Sql(r#"
DELETE FROM delta WHERE body LIKE '{"type":"permission_answered","permissionId":"perm-%';
"#),
    // v10: the images of a person's message (a `Part::Image` names one by `idx`), their
    // bytes as the person sent them, checked and bounded (docs/agents.md §11).
    Sql(r#"
CREATE TABLE image (
    message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    mime TEXT NOT NULL,
    data BLOB NOT NULL,
    UNIQUE (message_id, idx)
);
"#),
    // v11: a session's prompt queue (docs/backend.md §3): prompts sent while a turn ran, in
    // `pos` order, each a JSON `Prompt`; and why a queue waits for the person (one row per
    // paused queue, gone when it flows again or empties).
    Sql(r#"
CREATE TABLE queued_prompt (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    pos INTEGER NOT NULL,
    body TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE INDEX queued_prompt_by_session ON queued_prompt(session_id, pos);
CREATE TABLE queue_pause (
    session_id TEXT PRIMARY KEY REFERENCES session(id) ON DELETE CASCADE,
    reason TEXT NOT NULL
) WITHOUT ROWID;
"#),
    // v12: who gave a session its title (docs/agents.md §4): `person` (at creation, by a
    // rename, or unknown: every title stored before this version), `prompt` (its first line)
    // or `agent` (`session_info_update`). An agent may replace only a title no person gave.
    Sql(r#"
ALTER TABLE session ADD COLUMN title_from TEXT NOT NULL DEFAULT 'person';
"#),
    // v13: the `shell` agent's replies stored as `part` rows (`output`, `truncated`, `exit`,
    // `rejected`, `aborted`, `interrupted`, with the turn's `permission` row) become the
    // deltas its ACP turn stores (`shell_replies`), so they read like a live shell turn.
    Rows(super::shell_replies::rewrite),
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub(super) fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

pub(super) fn check_version(conn: &Connection, path: &Path) -> Result<i64> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(found)
}

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    // Another backend may be migrating the same fresh file right now: wait for its locks
    // rather than failing at once (this alters nothing in the file).
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // The version check comes before anything that could alter the file (even WAL mode).
    check_version(conn, path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    configure(conn)?;
    // One write transaction taken up front (BEGIN IMMEDIATE) for all steps, and the version
    // read again inside it: of two backends starting at once, the second waits, then sees the
    // schema the first wrote and runs nothing twice ("table project already exists").
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let found = check_version(&tx, path)?;
    for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        step.apply(&tx)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.commit()?;
    Ok(())
}
