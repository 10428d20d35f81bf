//! WAL checkpoints off the writer's path.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the log past its threshold:
//! that commit copies the log into the database file and syncs both files before it returns.
//! A turn stores each burst of deltas before it streams it, so on a slow disk that one commit
//! held every update behind it for milliseconds (the p99 of docs/PERFORMANCE-agents.md, "WAL
//! checkpoints"). Here the writing connection only says when its log has grown (a WAL hook,
//! which replaces the automatic checkpoint), and a thread of its own, with a connection of its
//! own, runs a passive checkpoint: it copies what no reader still needs while the writer goes
//! on appending, and the next commit after a complete one starts the log from the beginning.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc::{self, Receiver, SyncSender},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use rusqlite::{Connection, OpenFlags};

use super::{Result, schema::configure};

/// Log pages after which a checkpoint is asked for: SQLite's own default threshold.
pub(super) const WAL_PAGES: i32 = 1000;

/// Log pages past which a commit checkpoints itself (see [`start`]): about 16 MiB of log.
pub(super) const LOG_BOUND: i32 = 4 * WAL_PAGES;

/// At most one checkpoint per this long: large commits can ask several times in a row, and a
/// checkpoint copies all there is, so one after the pause answers them all.
const PAUSE: Duration = Duration::from_millis(100);

/// The checkpoint thread, stopped and joined when this is dropped. The store drops it after
/// its reader and before its writer ([`super::Store`]): SQLite checkpoints the whole log into
/// the database file and deletes it only when the last connection closes and is one that can
/// write, so the writer must close last.
pub(super) struct Checkpointer {
    wake: SyncSender<()>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes a thread waiting for an ask (a full slot means it is not waiting) ...
        let _ = self.wake.try_send(());
        if let Some(thread) = self.thread.take() {
            // ... or in its pause.
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Installs the hook on `writer` and starts the thread, with its own connection to `path`.
/// The thread ends when the returned [`Checkpointer`] is dropped, or when `writer` closes
/// first (its hook holds the other sender).
pub(super) fn start(path: &Path, writer: &mut Connection) -> Result<Checkpointer> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn)?;
    let (wake, asked) = mpsc::sync_channel(1);
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("ax-store-checkpoint".into())
        .spawn(move || run(&conn, &asked, &stopping))
        .map_err(|e| super::StoreError::Task(format!("cannot start the checkpointer: {e}")))?;
    // Runs inside each commit of the writer, under its lock. It asks the thread once per
    // `WAL_PAGES` of growth (not at every commit past it, which would wake it a thousand times a
    // second). Only a checkpoint that no commit races with lets the next commit restart the
    // log, so while commits keep coming the thread alone cannot bound it: past `LOG_BOUND` the
    // commit checkpoints itself, SQLite's own way, which is short because the thread has
    // already copied all but the newest frames.
    let mut asked_at = 0;
    let ask = wake.clone();
    writer.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: i32| {
        if pages < asked_at {
            asked_at = 0; // the log restarted
        }
        if pages >= LOG_BOUND {
            if let Err(e) = wal.checkpoint() {
                tracing::debug!(error = %e, "WAL checkpoint in a commit did not run");
            }
        } else if pages >= asked_at + WAL_PAGES {
            asked_at = pages;
            let _ = ask.try_send(());
        }
        Ok(())
    }))?;
    Ok(Checkpointer {
        wake,
        stop,
        thread: Some(thread),
    })
}

fn run(conn: &Connection, asked: &Receiver<()>, stop: &AtomicBool) {
    while asked.recv().is_ok() && !stop.load(Ordering::Acquire) {
        checkpoint(conn);
        // An ask that comes during the pause waits in the channel's one slot (more are
        // dropped): one checkpoint after it answers them all.
        let until = Instant::now() + PAUSE;
        loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            let now = Instant::now();
            if now >= until {
                break;
            }
            // A plain timed wait, woken early only to stop (not a channel's, which spun).
            std::thread::park_timeout(until - now);
        }
    }
}

/// One passive checkpoint: it never waits for readers or writers, it copies what it can.
pub(super) fn checkpoint(conn: &Connection) {
    let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    });
    match result {
        Ok((busy, log, copied)) => tracing::trace!(busy, log, copied, "WAL checkpoint"),
        // Another backend on the same file may be checkpointing: its turn, not an error.
        Err(e) => tracing::debug!(error = %e, "WAL checkpoint did not run"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::store::{DB_FILE, Store};

    /// `rows` commits of one 20 KB row each: about five log pages per commit.
    fn commit_rows(store: &Store, rows: usize) {
        let body = "x".repeat(20_000);
        store
            .write_blocking(|c| {
                c.execute_batch("CREATE TABLE filler(body TEXT NOT NULL)")?;
                for _ in 0..rows {
                    c.execute("INSERT INTO filler(body) VALUES (?1)", [&body])?;
                }
                Ok(())
            })
            .unwrap();
    }

    /// A store closed cleanly leaves its whole content in the database file and no log beside
    /// it (a copy of the file alone is a backup), however recently the thread checkpointed.
    #[test]
    fn a_closed_store_leaves_no_log_behind() {
        for rows in [1, 300] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            // 300 rows wake the thread, which is then in its pause when the store closes.
            commit_rows(&store, rows);
            let clone = store.clone();
            drop(store);
            drop(clone);
            let wal = dir.path().join(format!("{DB_FILE}-wal"));
            assert!(!wal.exists(), "{rows} rows: the log is left behind");
            let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
            let n: i64 = conn
                .query_row("SELECT COUNT(*) FROM filler", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, rows as i64);
        }
    }

    /// The writer no longer checkpoints in its commits, and the thread does: the database file
    /// grows by what the log held, with no checkpoint asked of the writer.
    #[test]
    fn the_log_is_checkpointed_by_the_thread_not_by_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let db = dir.path().join(DB_FILE);
        let auto: i64 = store
            .write_blocking(|c| Ok(c.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))?))
            .unwrap();
        assert_eq!(auto, 0, "the automatic checkpoint is replaced by the hook");
        let before = std::fs::metadata(&db).unwrap().len();
        // About 1,500 pages of 4 KiB in the log, in commits of one row each.
        commit_rows(&store, 300);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = std::fs::metadata(&db).unwrap().len();
            if now > before + 4 * 1024 * 1024 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the database file stayed at {now} bytes: nothing was checkpointed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Commits that never pause leave the thread no moment to finish a checkpoint, so the log
    /// could only grow; the bound keeps it near `LOG_BOUND` pages (past it while a checkpoint
    /// of the thread holds the checkpoint lock, so the test allows twice that).
    #[test]
    fn the_log_stays_bounded_while_commits_keep_coming() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let wal = dir.path().join(format!("{}-wal", DB_FILE));
        // About 12,500 pages through the log, three times the bound.
        commit_rows(&store, 2_500);
        let frame = 4096 + 24;
        let most = 2 * LOG_BOUND as u64 * frame;
        let size = std::fs::metadata(&wal).unwrap().len();
        assert!(size <= most, "the log grew to {size} bytes (bound {most})");
    }
}
