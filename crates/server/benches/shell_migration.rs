//! How long schema v13 (old `shell` replies rewritten as the shell agent's turn deltas,
//! `store/shell_replies.rs`) takes on a database of the old schema.
//!
//! Run: `cargo bench -p ax-server --bench shell_migration [-- REPLIES]` (release; 10,000
//! replies when not given). A real SQLite file in a temp directory: made by this build, set
//! back to version 12 (v13 changes rows, not tables) and filled as the old backend filled it;
//! then opened, which migrates, and opened again, which does not.

use std::time::Instant;

use ax_server::store::{self, Store};
use rusqlite::{Connection, params};
use serde_json::json;

mod common;
use common::cpu_us;

/// One old turn of the mix: its command, permission state, reply parts.
fn old_turn(i: usize) -> (String, Option<&'static str>, Vec<String>) {
    let out = |n: usize| {
        (0..n)
            .map(|k| json!({"type": "output", "stream": if k % 4 == 3 { "stderr" } else { "stdout" }, "text": format!("line {k} of the output of command {i}: {}\n", "x".repeat(60))}).to_string())
            .collect::<Vec<_>>()
    };
    let bare = |kind: &str| json!({ "type": kind }).to_string();
    let exit = |code: i32| json!({"type": "exit", "code": code}).to_string();
    let command = format!("make test-{i}");
    match i % 20 {
        // Exit 0 with some output, asked and approved (most turns).
        0..=12 => {
            let mut parts = out(12);
            parts.push(exit(0));
            (command, Some("approved"), parts)
        }
        // Failed, always allowed.
        13 | 14 => {
            let mut parts = out(30);
            parts.push(exit(2));
            (command, None, parts)
        }
        // A long log, truncated between head and tail.
        15 => {
            let mut parts = out(200);
            parts.insert(
                100,
                json!({"type": "truncated", "droppedBytes": 123_456}).to_string(),
            );
            parts.push(exit(1));
            (command, None, parts)
        }
        16 => (command, Some("rejected"), vec![bare("rejected")]),
        17 => (command, Some("cancelled"), vec![bare("aborted")]),
        18 => {
            let mut parts = out(5);
            parts.push(bare("aborted"));
            (command, Some("approved"), parts)
        }
        _ => {
            let mut parts = out(5);
            parts.push(bare("interrupted"));
            (command, Some("approved"), parts)
        }
    }
}

/// Fills `dir` with a version-12 database of `replies` old shell replies, 10 per session.
fn populate(dir: &std::path::Path, replies: usize) {
    drop(Store::open(dir).unwrap());
    let mut conn = Connection::open(dir.join(store::DB_FILE)).unwrap();
    conn.pragma_update(None, "user_version", store::SCHEMA_VERSION - 1)
        .unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO project(id, directory) VALUES (1, '/p')", [])
        .unwrap();
    let id = |prefix: &str, n: usize| format!("{prefix}_{n:026}");
    let mut n = 0;
    for i in 0..replies {
        let session = id("ses", i / 10);
        if i % 10 == 0 {
            tx.execute(
                "INSERT INTO session(id, project_id, title, created, updated, status) \
                 VALUES (?1, 1, 't', 1, 1, 'idle')",
                [&session],
            )
            .unwrap();
        }
        let (command, permission, parts) = old_turn(i);
        let created = i as i64;
        n += 1;
        let user = id("msg", n);
        n += 1;
        let reply = id("msg", n);
        let prompt = vec![json!({"type": "text", "text": command}).to_string()];
        for (mid, role, parts) in [(&user, "user", &prompt), (&reply, "assistant", &parts)] {
            tx.execute(
                "INSERT INTO message(id, session_id, seq, role, created) VALUES (?1, ?2, \
                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM message WHERE session_id = ?2), ?3, ?4)",
                params![mid, session, role, created],
            )
            .unwrap();
            for (k, body) in parts.iter().enumerate() {
                tx.execute(
                    "INSERT INTO part(message_id, idx, body) VALUES (?1, ?2, ?3)",
                    params![mid, k as i64, body],
                )
                .unwrap();
            }
        }
        if let Some(state) = permission {
            tx.execute(
                "INSERT INTO permission(id, session_id, command, state, created) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id("per", i), session, command, state, created],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn count(dir: &std::path::Path, sql: &str) -> i64 {
    let conn = Connection::open(dir.join(store::DB_FILE)).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn main() {
    let replies: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|a| a.parse().expect("REPLIES is a number"))
        .unwrap_or(10_000);
    let data = tempfile::tempdir().unwrap();
    populate(data.path(), replies);
    let size = std::fs::metadata(data.path().join(store::DB_FILE))
        .unwrap()
        .len();
    let parts = count(data.path(), "SELECT COUNT(*) FROM part");
    println!(
        "{replies} old shell replies: {parts} part rows, {:.1} MB",
        size as f64 / 1e6
    );
    let (t, cpu) = (Instant::now(), cpu_us());
    drop(Store::open(data.path()).unwrap());
    let migrated = t.elapsed();
    let cpu = cpu_us() - cpu;
    let deltas = count(data.path(), "SELECT COUNT(*) FROM delta");
    let left = count(
        data.path(),
        "SELECT COUNT(*) FROM part p JOIN message m ON m.id = p.message_id WHERE m.role = 'assistant'",
    );
    assert_eq!(left, 0, "every reply rewritten");
    println!(
        "open + migrate: {:.0} ms wall, {:.0} ms CPU ({:.1} µs CPU per reply), {deltas} delta rows written",
        migrated.as_secs_f64() * 1e3,
        cpu as f64 / 1e3,
        cpu as f64 / replies as f64
    );
    let t = Instant::now();
    drop(Store::open(data.path()).unwrap());
    println!(
        "open again (nothing to migrate): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}
