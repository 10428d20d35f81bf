//! The SQLite store: one database (WAL) in the data directory, versioned migrations, and the
//! queries the API and the runner need.
//!
//! SQLite is synchronous, so every call runs on the blocking pool. One connection writes and
//! one reads; each sits behind a std `Mutex` (held only for one short statement batch, never
//! across an await). WAL lets the reader go on while the writer commits.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use ax_protocol::{
    AgentState, Message, MessageId, Millis, Part, Permission, PermissionId, PermissionState,
    Session, SessionId, SessionStatus, StandingGrant, turn,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "ax-code.db";

/// Each entry moves the schema one version up; never edit a released entry, append one.
const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    r#"
ALTER TABLE run ADD COLUMN pgid INTEGER;
ALTER TABLE run ADD COLUMN pgid_start INTEGER;
ALTER TABLE run ADD COLUMN owner_pid INTEGER;
ALTER TABLE run ADD COLUMN owner_start INTEGER;
"#,
    // v3: every wire field is camelCase; truncated parts were stored as `dropped_bytes`.
    r#"
UPDATE part SET body = replace(body, '"dropped_bytes":', '"droppedBytes":')
 WHERE body LIKE '{"type":"truncated",%';
"#,
    // v4: the attachments a permission asks about, as a JSON array of project-relative paths;
    // process groups started outside a session run (the operator terminal), for crash cleanup.
    r#"
ALTER TABLE permission ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
CREATE TABLE process_group (
    pgid INTEGER PRIMARY KEY,
    pgid_start INTEGER NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_start INTEGER
);
"#,
    // v5: lists sort by last activity.
    r#"
CREATE INDEX session_by_activity ON session(project_id, updated DESC, id DESC);
"#,
    // v6: ACP agents. A session's agent (fixed at creation), the agent's own session id (to
    // reopen it), what it told us (modes, auth methods: JSON `AgentState`); an agent
    // permission's tool call, options and the option sent (JSON); an agent message's turn as
    // append-only deltas, folded on read (`ax_protocol::turn::apply`).
    r#"
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
"#,
    // v7: the standing "always" answers of a session (JSON array of `StandingGrant`), shown
    // in the UIs and revocable; NULL when there are none.
    r#"
ALTER TABLE session ADD COLUMN standing TEXT;
"#,
    // v8: when a reply's turn ended (NULL while it runs, and for the person's messages).
    r#"
ALTER TABLE message ADD COLUMN ended INTEGER;
"#,
    // v9: permission ids in turn deltas are typed (`per_…`). Before, the ACP runtime's own
    // `perm-N` ids were renamed on the way in, and an answer to one the turn no longer tracked
    // was stored as is: such a delta changed nothing when folded (no part has that id), so it
    // goes rather than making the whole transcript unreadable.
    r#"
DELETE FROM delta WHERE body LIKE '{"type":"permission_answered","permissionId":"perm-%';
"#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Why the store failed. A row it cannot read is an error, never a default.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite itself failed.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database was written by a newer ax-code; it is left untouched.
    #[error(
        "the database {path} has schema version {found}, newer than this ax-code supports \
         ({supported}); it was left untouched: run a newer ax-code"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this build knows ([`SCHEMA_VERSION`]).
        supported: i64,
    },
    /// The data directory could not be created or made private.
    #[error("cannot prepare the data directory {path}: {error}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The data directory cannot be read (e.g. another user's): not the same as "empty".
    #[error("cannot read the data directory {path}: {error}")]
    Unreadable {
        /// The directory.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A stored value this build cannot read: never guessed into a default.
    #[error("stored data is malformed: table {table}, row {row:?}, column {column}: {problem}")]
    Malformed {
        /// The table of the row.
        table: &'static str,
        /// The row's key, for finding it with the sqlite3 shell.
        row: String,
        /// The column that cannot be read.
        column: &'static str,
        /// What is wrong with the value.
        problem: String,
    },
    /// A part could not be serialised.
    #[error("cannot encode a part for storage: {0}")]
    Encode(#[from] serde_json::Error),
    /// The blocking task running a query failed (panicked or was cancelled).
    #[error("a store task failed: {0}")]
    Task(String),
}

/// A store result.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Cloneable handle to the database.
#[derive(Clone)]
pub struct Store {
    write: Arc<Mutex<Connection>>,
    read: Arc<Mutex<Connection>>,
    path: PathBuf,
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

fn check_version(conn: &Connection, path: &Path) -> Result<i64> {
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

fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
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
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.commit()?;
    Ok(())
}

/// Runs `open` again while SQLite answers "database is locked" without waiting, for at most
/// 10 s. The busy timeout covers ordinary lock waits, but switching a fresh file to WAL and
/// upgrading a read lock inside a transaction fail at once when another backend is opening
/// the same new file (two `serve` started together).
fn retry_while_busy<T>(mut open: impl FnMut() -> Result<T>) -> Result<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        match open() {
            Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

/// Starts a write transaction that takes the write lock at once (`BEGIN IMMEDIATE`). A deferred
/// transaction that reads first and writes later fails at once with "database is locked" when
/// another backend on the same file wrote in between; an immediate one waits its turn under the
/// busy timeout instead.
pub fn begin_write(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>> {
    Ok(conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)
}

fn create_private_db(path: &Path) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(
        path,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) {
        Ok(_) => Ok(()),
        Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl Store {
    /// Opens (creating and migrating as needed) the database in `data_dir`, made 0700.
    pub fn open(data_dir: &Path) -> Result<Store> {
        crate::secure::private_dir(data_dir).map_err(|error| StoreError::DataDir {
            path: data_dir.to_owned(),
            error,
        })?;
        let path = data_dir.join(DB_FILE);
        // Created 0600 before SQLite sees it; its -wal and -shm files inherit the mode.
        if let Err(error) = create_private_db(&path) {
            return Err(StoreError::DataDir {
                path: path.clone(),
                error,
            });
        }
        let (write, read) = retry_while_busy(|| {
            let mut write = Connection::open(&path)?;
            migrate(&mut write, &path)?;
            let read = Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            configure(&read)?;
            Ok((write, read))
        })?;
        Ok(Store {
            write: Arc::new(Mutex::new(write)),
            read: Arc::new(Mutex::new(read)),
            path,
        })
    }

    /// Opens an existing database read-only, without migrating (`session list` with no backend
    /// running). `Ok(None)` when there is no database yet.
    pub fn open_read_only(data_dir: &Path) -> Result<Option<Store>> {
        let path = data_dir.join(DB_FILE);
        // Only a database that is really absent means "no sessions": a directory this user
        // may not enter (another user's data) is an error, not an empty list.
        match path.try_exists() {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(error) => {
                return Err(StoreError::Unreadable {
                    path: data_dir.to_owned(),
                    error,
                });
            }
        }
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        check_version(&conn, &path)?;
        configure(&conn)?;
        let conn = Arc::new(Mutex::new(conn));
        Ok(Some(Store {
            write: conn.clone(),
            read: conn,
            path,
        }))
    }

    /// Another read-only connection, for a caller that must not queue behind the shared
    /// reader (the gateway's synchronous session lookups).
    pub fn extra_reader(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&conn)?;
        Ok(conn)
    }

    /// Runs `f` with the writing connection on the blocking pool.
    pub async fn write<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let conn = self.write.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut guard)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// Runs `f` with the reading connection on the blocking pool.
    pub async fn read<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let conn = self.read.clone();
        tokio::task::spawn_blocking(move || {
            let guard = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&guard)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }

    /// The same as [`Store::write`], for callers on a blocking thread.
    pub fn write_blocking<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        let mut guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// The same as [`Store::read`], for callers outside a runtime (the CLI's offline list).
    pub fn read_blocking<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let guard = self.read.lock().unwrap_or_else(|e| e.into_inner());
        f(&guard)
    }
}

/// Where a stored value that this build cannot read sits: never guessed into a default.
fn malformed(
    table: &'static str,
    row: &str,
    column: &'static str,
    problem: impl std::fmt::Display,
) -> StoreError {
    StoreError::Malformed {
        table,
        row: row.to_owned(),
        column,
        problem: problem.to_string(),
    }
}

/// Reads a stored text column through the type's one text mapping (`FromStr`); what does not
/// parse is [`StoreError::Malformed`] naming where it is, never a default.
fn decode<T>(table: &'static str, row: &str, column: &'static str, text: &str) -> Result<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e| malformed(table, row, column, e))
}

/// Reads a stored JSON column; what does not parse is [`StoreError::Malformed`].
fn decode_json<T: serde::de::DeserializeOwned>(
    table: &'static str,
    row: &str,
    column: &'static str,
    text: &str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|e| malformed(table, row, column, e))
}

/// Every row `query` gives, each turned into a value by `read` (which may find it malformed).
fn collect_rows<T>(
    mut rows: rusqlite::Rows<'_>,
    read: impl Fn(&rusqlite::Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(read(row)?);
    }
    Ok(out)
}

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
            serde_json::to_string(delta)?
        ])?;
    }
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
        "UPDATE session SET title = ?1, updated = max(updated, ?2) WHERE project_id = ?3 AND id = ?4",
        params![title, now, project, id],
    )?;
    get_session(conn, project, id)
}

/// Gives an untitled session `title` (from its first prompt); `None` when it already had one.
pub fn title_if_untitled(
    conn: &Connection,
    project: i64,
    id: &str,
    title: &str,
) -> Result<Option<Session>> {
    let n = conn.execute(
        "UPDATE session SET title = ?1 WHERE project_id = ?2 AND id = ?3 AND title = ''",
        params![title, project, id],
    )?;
    if n == 0 {
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

fn encode_part(part: &Part) -> Result<String> {
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

/// The session's transcript in order.
pub fn messages(conn: &Connection, session: &SessionId) -> Result<Vec<Message>> {
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
fn end_reply(conn: &Connection, session: &str, now: Millis) -> Result<Option<(MessageId, Millis)>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_schema_is_refused_and_left_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(DB_FILE);
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
                .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let err = Store::open(tmp.path()).err().expect("must refuse");
        assert!(
            err.to_string().contains("newer than this ax-code supports"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(Store::open_read_only(tmp.path()).is_err());
    }

    #[test]
    fn a_version_1_database_migrates_and_its_cut_run_is_recovered() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 1;
                 INSERT INTO project(id, directory) VALUES (1, '/p');
                 INSERT INTO session VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 't', 1, 1, 'busy', 0);
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'assistant', 1);
                 INSERT INTO part VALUES ('msg_0123456789abABCDEFGHIJKLMA', 0, '{\"type\":\"output\",\"stream\":\"stdout\",\"text\":\"x\"}');
                 INSERT INTO run VALUES ('ses_0123456789abABCDEFGHIJKLMN', 'msg_0123456789abABCDEFGHIJKLMA', 1);",
            )
            .unwrap();
        }
        let store = Store::open(tmp.path()).unwrap();
        let recovered = store
            .write_blocking(|c| recover_interrupted(c, 1, 2, |_| false))
            .unwrap();
        assert_eq!(recovered.runs, 1);
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let (session, msgs) = store
            .read_blocking(|c| Ok((get_session(c, 1, id.as_str())?.unwrap(), messages(c, &id)?)))
            .unwrap();
        assert_eq!(session.status, SessionStatus::Idle);
        assert_eq!(msgs[0].parts.last(), Some(&Part::Interrupted));
        assert_eq!(msgs[0].parts.len(), 2);
    }

    #[test]
    fn migrations_are_idempotent() {
        let tmp = tempfile::tempdir().unwrap();
        drop(Store::open(tmp.path()).unwrap());
        let store = Store::open(tmp.path()).unwrap();
        let v: i64 = store
            .read_blocking(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    /// A version-2 database with the given extra SQL, opened by this build.
    /// A database written by the version-5 code (the last schema before ACP agents), with
    /// every kind of row it wrote, opened by this build: nothing is lost, every session reads
    /// as a `shell` session, and a cut run is still recovered.
    #[test]
    fn a_version_5_database_migrates_with_nothing_lost() {
        let tmp = tempfile::tempdir().unwrap();
        let parts = [
            r#"{"type":"text","text":"ls -l"}"#,
            r#"{"type":"file","path":"a.txt"}"#,
            r#"{"type":"output","stream":"stdout","text":"out\n"}"#,
            r#"{"type":"output","stream":"stderr","text":"err\n"}"#,
            r#"{"type":"truncated","droppedBytes":12}"#,
            r#"{"type":"exit","code":0}"#,
            r#"{"type":"exit","signal":9}"#,
            r#"{"type":"rejected"}"#,
            r#"{"type":"aborted"}"#,
            r#"{"type":"interrupted"}"#,
        ];
        {
            let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
            for m in &MIGRATIONS[..5] {
                conn.execute_batch(m).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 5;
                 INSERT INTO project(id, directory) VALUES (1, '/p');
                 INSERT INTO session(id, project_id, title, created, updated, status, always_allow)
                   VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 'first', 1, 2, 'idle', 1);
                 INSERT INTO session(id, project_id, title, created, updated, status)
                   VALUES ('ses_1123456789abABCDEFGHIJKLMN', 1, 'cut', 3, 4, 'busy');
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMU', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'user', 1);
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 2, 'assistant', 1);
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMB', 'ses_1123456789abABCDEFGHIJKLMN', 1, 'assistant', 3);
                 INSERT INTO permission(id, session_id, command, state, created, attachments)
                   VALUES ('per_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 'ls -l', 'approved', 1, '[\"a.txt\"]');
                 INSERT INTO permission(id, session_id, command, state, created)
                   VALUES ('per_0123456789abABCDEFGHIJKLMB', 'ses_1123456789abABCDEFGHIJKLMN', 'sleep 9', 'pending', 3);
                 INSERT INTO run(session_id, message_id, started) VALUES ('ses_1123456789abABCDEFGHIJKLMN', 'msg_0123456789abABCDEFGHIJKLMB', 3);
                 INSERT INTO process_group VALUES (77, 5, 1, NULL);",
            )
            .unwrap();
            for (i, p) in parts.iter().enumerate() {
                let mid = if i < 2 {
                    "msg_0123456789abABCDEFGHIJKLMU"
                } else {
                    "msg_0123456789abABCDEFGHIJKLMA"
                };
                conn.execute(
                    "INSERT INTO part(message_id, idx, body) VALUES (?1, ?2, ?3)",
                    params![mid, i as i64, p],
                )
                .unwrap();
            }
        }
        let store = Store::open(tmp.path()).unwrap();
        let first: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let sessions = store.read_blocking(|c| list_sessions(c, 1, None)).unwrap();
        assert_eq!(sessions.len(), 2);
        for s in &sessions {
            assert_eq!(s.agent, "shell");
            assert_eq!(s.agent_state, None);
        }
        assert_eq!(sessions[1].title, "first");
        assert_eq!((sessions[1].created, sessions[1].updated), (1, 2));
        assert!(
            store
                .read_blocking(|c| always_allowed(c, first.as_str()))
                .unwrap()
        );
        let msgs = store.read_blocking(|c| messages(c, &first)).unwrap();
        let all: Vec<Part> = msgs.iter().flat_map(|m| m.parts.clone()).collect();
        let want: Vec<Part> = parts
            .iter()
            .map(|p| serde_json::from_str(p).unwrap())
            .collect();
        assert_eq!(all, want);
        assert_eq!(msgs[0].role, ax_protocol::Role::User);
        let p = store
            .read_blocking(|c| {
                get_permission(
                    c,
                    first.as_str(),
                    &"per_0123456789abABCDEFGHIJKLMA".parse().unwrap(),
                )
            })
            .unwrap()
            .unwrap();
        assert_eq!(p.attachments, vec!["a.txt".to_string()]);
        assert_eq!(p.state, PermissionState::Approved);
        assert_eq!(p.option_id, None);
        let pending = store.read_blocking(|c| pending_permissions(c, 1)).unwrap();
        assert_eq!(pending.len(), 1);
        // The cut run of the old database is recovered as before.
        let recovered = store
            .write_blocking(|c| recover_interrupted(c, 1, 10, |_| false))
            .unwrap();
        assert_eq!(recovered.runs, 1);
        let cut: SessionId = "ses_1123456789abABCDEFGHIJKLMN".parse().unwrap();
        let msgs = store.read_blocking(|c| messages(c, &cut)).unwrap();
        assert_eq!(msgs[0].parts, vec![Part::Interrupted]);
        let orphans = store
            .write_blocking(|c| take_orphaned_process_groups(c, |_| false))
            .unwrap();
        assert_eq!(orphans, vec![(77, 5)]);
    }

    /// Agent turns are stored as deltas and read back folded, before any plain part.
    #[test]
    fn agent_deltas_fold_on_read() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let deltas = [
            turn::TurnDelta::TextAppended { text: "a".into() },
            turn::TurnDelta::TextAppended { text: "b".into() },
            turn::TurnDelta::ThoughtAppended { text: "t".into() },
        ];
        store
            .write_blocking(|c| {
                let p = project_id(c, "/p")?;
                insert_session(
                    c,
                    p,
                    &Session {
                        id: id.clone(),
                        title: String::new(),
                        created: 1,
                        updated: 1,
                        status: SessionStatus::Idle,
                        agent: "mock".into(),
                        agent_state: None,
                        standing: Vec::new(),
                    },
                )?;
                insert_message(
                    c,
                    &Message {
                        id: "msg_0123456789abABCDEFGHIJKLMA".parse().unwrap(),
                        session_id: id.clone(),
                        role: ax_protocol::Role::Assistant,
                        created: 1,
                        ended: None,
                        deltas: 0,
                        parts: Vec::new(),
                    },
                )?;
                append_deltas(
                    c,
                    &"msg_0123456789abABCDEFGHIJKLMA".parse().unwrap(),
                    deltas.iter().enumerate().map(|(i, d)| (i as u64 + 1, d)),
                )?;
                append_part(
                    c,
                    &"msg_0123456789abABCDEFGHIJKLMA".parse().unwrap(),
                    0,
                    &Part::Interrupted,
                )
            })
            .unwrap();
        let msgs = store.read_blocking(|c| messages(c, &id)).unwrap();
        assert_eq!(
            msgs[0].parts,
            vec![
                Part::Text { text: "ab".into() },
                Part::Turn(turn::TurnPart::Thought { text: "t".into() }),
                Part::Interrupted
            ]
        );
        let s = store
            .read_blocking(|c| get_session(c, 1, id.as_str()))
            .unwrap()
            .unwrap();
        assert_eq!(s.agent, "mock");
    }

    /// docs/agents.md §2: a turn cut by a crash reloads with no tool call card left pending
    /// or running.
    #[test]
    fn a_cut_agent_turn_reloads_its_open_tool_calls_cancelled() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let mid: MessageId = "msg_0123456789abABCDEFGHIJKLMA".parse().unwrap();
        let call = |id: &str, status| turn::TurnDelta::ToolCallCreated {
            tool_call: turn::ToolCallPart {
                tool_call_id: id.into(),
                status,
                ..turn::ToolCallPart::default()
            },
        };
        let deltas = [
            call("run", turn::ToolStatus::InProgress),
            call("wait", turn::ToolStatus::Pending),
            call("done", turn::ToolStatus::Completed),
        ];
        store
            .write_blocking(|c| {
                let p = project_id(c, "/p")?;
                insert_session(
                    c,
                    p,
                    &Session {
                        id: id.clone(),
                        title: String::new(),
                        created: 1,
                        updated: 1,
                        status: SessionStatus::Busy,
                        agent: "mock".into(),
                        agent_state: None,
                        standing: Vec::new(),
                    },
                )?;
                insert_message(
                    c,
                    &Message {
                        id: mid.clone(),
                        session_id: id.clone(),
                        role: ax_protocol::Role::Assistant,
                        created: 1,
                        ended: None,
                        deltas: 0,
                        parts: Vec::new(),
                    },
                )?;
                append_deltas(
                    c,
                    &mid,
                    deltas.iter().enumerate().map(|(i, d)| (i as u64 + 1, d)),
                )?;
                begin_run(c, id.as_str(), &mid, 1, (1, Some(1)))
            })
            .unwrap();
        store
            .write_blocking(|c| recover_interrupted(c, 1, 2, |_| false))
            .unwrap();
        let msgs = store.read_blocking(|c| messages(c, &id)).unwrap();
        let statuses: Vec<_> = msgs[0]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Turn(turn::TurnPart::ToolCall(t)) => {
                    Some((t.tool_call_id.as_str(), t.status))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            statuses,
            vec![
                ("run", turn::ToolStatus::Cancelled),
                ("wait", turn::ToolStatus::Cancelled),
                ("done", turn::ToolStatus::Completed),
            ]
        );
        assert_eq!(msgs[0].parts.last(), Some(&Part::Interrupted));
    }

    fn v2_database_with(sql: &str) -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.execute_batch(MIGRATIONS[1]).unwrap();
            conn.execute_batch(
                "PRAGMA user_version = 2;
                 INSERT INTO project(id, directory) VALUES (1, '/p');",
            )
            .unwrap();
            conn.execute_batch(sql).unwrap();
        }
        let store = Store::open(tmp.path()).unwrap();
        (tmp, store)
    }

    #[test]
    fn an_unknown_status_is_malformed_naming_table_row_and_column() {
        let (_tmp, store) = v2_database_with(
            "INSERT INTO session VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 't', 1, 1, 'sleeping', 0);",
        );
        let err = store
            .read_blocking(|c| get_session(c, 1, "ses_0123456789abABCDEFGHIJKLMN"))
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Malformed { table: "session", column: "status", row, .. }
                if row == "ses_0123456789abABCDEFGHIJKLMN"),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("unknown SessionStatus \"sleeping\""),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_role_or_permission_state_is_malformed() {
        let (_tmp, store) = v2_database_with(
            "INSERT INTO session VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 't', 1, 1, 'idle', 0);
             INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'system', 1);
             INSERT INTO permission VALUES ('per_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 'ls', 'maybe', 1);",
        );
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let err = store.read_blocking(|c| messages(c, &id)).unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::Malformed {
                    table: "message",
                    column: "role",
                    ..
                }
            ),
            "{err:?}"
        );
        let err = store
            .read_blocking(|c| {
                get_permission(
                    c,
                    id.as_str(),
                    &"per_0123456789abABCDEFGHIJKLMA".parse().unwrap(),
                )
            })
            .unwrap_err();
        assert!(
            matches!(
                &err,
                StoreError::Malformed {
                    table: "permission",
                    column: "state",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_stored_id_of_the_wrong_shape_is_malformed_not_passed_on() {
        let (_tmp, store) = v2_database_with(
            "INSERT INTO session VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 't', 1, 1, 'idle', 0);
             INSERT INTO message VALUES ('msg_short', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'user', 1);
             INSERT INTO permission VALUES ('per_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 'ls', 'pending', 1);",
        );
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let err = store.read_blocking(|c| messages(c, &id)).unwrap_err();
        assert!(
            matches!(&err, StoreError::Malformed { table: "message", column: "id", row, .. }
                if row == "msg_short"),
            "{err:?}"
        );
        // One reader serves both permission queries.
        let pending = store.read_blocking(|c| pending_permissions(c, 1)).unwrap();
        let one = store
            .read_blocking(|c| get_permission(c, id.as_str(), &pending[0].id))
            .unwrap();
        assert_eq!(one.as_ref(), pending.first());
    }

    #[test]
    fn a_version_2_truncated_part_reads_back_after_the_camel_case_migration() {
        let (_tmp, store) = v2_database_with(
            "INSERT INTO session VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 't', 1, 1, 'idle', 0);
             INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'assistant', 1);
             INSERT INTO part VALUES ('msg_0123456789abABCDEFGHIJKLMA', 0, '{\"type\":\"output\",\"stream\":\"stdout\",\"text\":\"dropped_bytes\"}');
             INSERT INTO part VALUES ('msg_0123456789abABCDEFGHIJKLMA', 1, '{\"type\":\"truncated\",\"dropped_bytes\":4000}');",
        );
        let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let msgs = store.read_blocking(|c| messages(c, &id)).unwrap();
        assert_eq!(
            msgs[0].parts,
            vec![
                Part::Output {
                    stream: ax_protocol::Stream::Stdout,
                    text: "dropped_bytes".into()
                },
                Part::Truncated {
                    dropped_bytes: 4000
                }
            ]
        );
    }

    /// A v7 database gains `message.ended`: old messages read back with no end, a turn that
    /// ends (or a crashed one recovered) is stamped, and a stamp is never moved.
    #[test]
    fn v8_database_drops_answers_to_untracked_runtime_ids() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
            for m in &MIGRATIONS[..8] {
                conn.execute_batch(m).unwrap();
            }
            conn.execute_batch(
                r#"PRAGMA user_version = 8;
                 INSERT INTO project(id, directory) VALUES (1, '/p');
                 INSERT INTO session(id, project_id, title, created, updated, status)
                   VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 'a', 1, 2, 'idle');
                 INSERT INTO message(id, session_id, seq, role, created, ended)
                   VALUES ('msg_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'assistant', 5, 6);
                 INSERT INTO delta VALUES ('msg_0123456789abABCDEFGHIJKLMA', 1,
                   '{"type":"text_appended","text":"hi"}');
                 INSERT INTO delta VALUES ('msg_0123456789abABCDEFGHIJKLMA', 2,
                   '{"type":"permission_answered","permissionId":"perm-3","outcome":{"state":"cancelled"}}');"#,
            )
            .unwrap();
        }
        let store = Store::open(tmp.path()).unwrap();
        let a: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let read = store.read_blocking(|c| messages(c, &a)).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].parts, vec![Part::Text { text: "hi".into() }]);
    }

    #[test]
    fn v7_database_gains_turn_ends() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
            for m in &MIGRATIONS[..7] {
                conn.execute_batch(m).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 7;
                 INSERT INTO project(id, directory) VALUES (1, '/p');
                 INSERT INTO session(id, project_id, title, created, updated, status)
                   VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 'a', 1, 2, 'busy');
                 INSERT INTO session(id, project_id, title, created, updated, status)
                   VALUES ('ses_1123456789abABCDEFGHIJKLMN', 1, 'b', 1, 2, 'busy');
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMU', 'ses_0123456789abABCDEFGHIJKLMN', 1, 'user', 5);
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMA', 'ses_0123456789abABCDEFGHIJKLMN', 2, 'assistant', 5);
                 INSERT INTO message VALUES ('msg_0123456789abABCDEFGHIJKLMB', 'ses_1123456789abABCDEFGHIJKLMN', 1, 'assistant', 7);
                 INSERT INTO run(session_id, message_id, started) VALUES ('ses_0123456789abABCDEFGHIJKLMN', 'msg_0123456789abABCDEFGHIJKLMA', 5);
                 INSERT INTO run(session_id, message_id, started) VALUES ('ses_1123456789abABCDEFGHIJKLMN', 'msg_0123456789abABCDEFGHIJKLMB', 7);",
            )
            .unwrap();
        }
        let store = Store::open(tmp.path()).unwrap();
        let a: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
        let b: SessionId = "ses_1123456789abABCDEFGHIJKLMN".parse().unwrap();
        let ends = |id: &SessionId| -> Vec<(String, Option<Millis>)> {
            store
                .read_blocking(|c| messages(c, id))
                .unwrap()
                .into_iter()
                .map(|m| (m.id.to_string(), m.ended))
                .collect()
        };
        assert_eq!(
            ends(&a),
            vec![
                ("msg_0123456789abABCDEFGHIJKLMU".into(), None),
                ("msg_0123456789abABCDEFGHIJKLMA".into(), None)
            ]
        );
        store
            .write_blocking(|c| end_run(c, a.as_str(), 42))
            .unwrap();
        assert_eq!(
            ends(&a),
            vec![
                ("msg_0123456789abABCDEFGHIJKLMU".into(), None),
                ("msg_0123456789abABCDEFGHIJKLMA".into(), Some(42))
            ]
        );
        // No run any more: a second end changes nothing.
        store
            .write_blocking(|c| end_run(c, a.as_str(), 99))
            .unwrap();
        assert_eq!(ends(&a)[1].1, Some(42));
        // A run cut by a crash ends when it is recovered.
        store
            .write_blocking(|c| recover_interrupted(c, 1, 50, |_| false))
            .unwrap();
        assert_eq!(
            ends(&b),
            vec![("msg_0123456789abABCDEFGHIJKLMB".into(), Some(50))]
        );
    }
}
