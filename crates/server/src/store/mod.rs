//! The SQLite store: one database (WAL) in the data directory, versioned migrations
//! ([`schema`]), and the queries the API and the runner need, one file per table: sessions
//! ([`sessions`]), their standing answers ([`standing`]), messages with their parts and turn
//! deltas ([`messages`]), their images ([`images`]), permissions ([`permissions`]), run and
//! process-group records ([`runs`]), the crash recovery that reads them ([`recovery`]) and
//! prompt queues ([`queue`]).
//!
//! SQLite is synchronous, so every call runs on the blocking pool. One connection writes and
//! one reads; each sits behind a std `Mutex` (held only for one short statement batch, never
//! across an await). WAL lets the reader go on while the writer commits, and a thread of its
//! own checkpoints the log so that no commit does ([`checkpoint`]).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use rusqlite::{Connection, OpenFlags};

mod checkpoint;
mod images;
mod messages;
mod permissions;
mod queue;
mod recovery;
mod runs;
mod schema;
mod sessions;
mod shell_replies;
mod standing;
#[cfg(test)]
mod tests;

pub use images::{image, insert_image};
pub use messages::{
    append_delta_bodies, append_deltas, append_part, encode_delta, insert_message, messages,
};
pub use permissions::{
    answer_permission, get_permission, insert_permission, pending_permissions, set_permission_state,
};
pub use queue::{
    edit_queued, enqueue, move_to_front, pause_waiting_queues, prompt_queue, remove_queued,
    set_queue_paused,
};
pub use recovery::{EndedRun, Recovered, recover_interrupted};
pub use runs::{
    Owner, begin_run, end_run, forget_process_group, record_process_group, set_run_process,
    take_orphaned_process_groups,
};
pub use schema::{DB_FILE, SCHEMA_VERSION};
use schema::{check_version, configure, migrate};
pub use sessions::{
    OfferedTitle, agent_session, delete_session, find_project, get_session, insert_session,
    list_sessions, offer_title, project_id, rename_session, session_exists, set_agent_session,
    set_agent_state, set_status,
};
pub use shell_replies::CUT_SHORT;
pub use standing::{add_standing, always_allowed, revoke_standing, set_always_allowed};

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
    // Dropped in this order, the writer last (see `checkpoint::Checkpointer`): a store closed
    // cleanly leaves its whole content in the database file, and no log beside it.
    read: Arc<Mutex<Connection>>,
    _checkpointer: Option<Arc<checkpoint::Checkpointer>>,
    write: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
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
        let (write, checkpointer, read) = retry_while_busy(|| {
            let mut write = Connection::open(&path)?;
            migrate(&mut write, &path)?;
            let checkpointer = checkpoint::start(&path, &mut write)?;
            let read = Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            configure(&read)?;
            Ok((write, checkpointer, read))
        })?;
        Ok(Store {
            read: Arc::new(Mutex::new(read)),
            _checkpointer: Some(Arc::new(checkpointer)),
            write: Arc::new(Mutex::new(write)),
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
            read: conn.clone(),
            _checkpointer: None,
            write: conn,
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

    /// Copies into the database file all of the log that no reader still needs, without
    /// waiting for anyone (a passive checkpoint). A backend's clean stop calls it, so that the
    /// database file alone holds everything it stored (docs/backend.md §1).
    pub async fn checkpoint(&self) -> Result<()> {
        self.write(|c| {
            checkpoint::checkpoint(c);
            Ok(())
        })
        .await
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
