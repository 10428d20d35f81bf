//! The store's unit tests: migrations from every old schema, malformed rows, recovery.

use ax_protocol::{
    Event, Message, MessageId, Millis, Part, PermissionState, Session, SessionId, SessionStatus,
    turn,
};
use rusqlite::{Connection, params};

use super::schema::MIGRATIONS;
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
    let err = Store::open(tmp.path()).expect_err("must refuse");
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
        MIGRATIONS[0].apply(&conn).unwrap();
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
    // Read as the shell agent's turn (v13): the call, then the interruption.
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
            m.apply(&conn).unwrap();
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
    // Rewritten as the shell agent's turn (v13): the recovery cancels its call and its
    // question as it cancels an ACP turn's.
    let statuses: Vec<String> = msgs[0]
        .parts
        .iter()
        .map(|p| match p {
            Part::Turn(turn::TurnPart::ToolCall(t)) => format!("{} {:?}", t.title, t.status),
            Part::Turn(turn::TurnPart::Permission(p)) => {
                format!("{} {:?}", p.permission_id, p.outcome)
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            "sleep 9 Cancelled",
            "per_0123456789abABCDEFGHIJKLMB Cancelled",
            "Interrupted"
        ]
    );
    let orphans = store
        .write_blocking(|c| take_orphaned_process_groups(c, |_| false))
        .unwrap();
    assert_eq!(orphans, vec![(77, 5)]);
}

/// In project `/p`: the mock agent's session `id` with `status`, and its empty reply `reply`.
fn mock_reply(
    c: &Connection,
    id: &SessionId,
    reply: &MessageId,
    status: SessionStatus,
) -> Result<()> {
    let p = project_id(c, "/p")?;
    insert_session(
        c,
        p,
        &Session {
            id: id.clone(),
            title: String::new(),
            created: 1,
            updated: 1,
            status,
            agent: "mock".into(),
            agent_state: None,
            standing: Vec::new(),
        },
    )?;
    insert_message(
        c,
        &Message {
            id: reply.clone(),
            session_id: id.clone(),
            role: ax_protocol::Role::Assistant,
            created: 1,
            ended: None,
            deltas: 0,
            parts: Vec::new(),
        },
    )
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
            mock_reply(
                c,
                &id,
                &"msg_0123456789abABCDEFGHIJKLMA".parse().unwrap(),
                SessionStatus::Idle,
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
            mock_reply(c, &id, &mid, SessionStatus::Busy)?;
            append_deltas(
                c,
                &mid,
                deltas.iter().enumerate().map(|(i, d)| (i as u64 + 1, d)),
            )?;
            begin_run(c, id.as_str(), &mid, 1, (1, Some(1)))
        })
        .unwrap();
    let (recovered, told) = store
        .write_blocking(|c| {
            let recovered = recover_interrupted(c, 1, 2, |_| false)?;
            let told = crate::recovered::events(c, 1, &recovered)?;
            Ok((recovered, told))
        })
        .unwrap();
    let msgs = store.read_blocking(|c| messages(c, &id)).unwrap();
    // What it ended, told as a turn's end tells it: the cancelling deltas (after the three
    // stored), the `interrupted` part at its index in the folded reply, the end, the session.
    let cancel = |id: &str| turn::TurnDelta::ToolCallUpdated {
        tool_call_id: id.into(),
        fields: turn::ToolCallFields {
            status: Some(turn::ToolStatus::Cancelled),
            ..turn::ToolCallFields::default()
        },
    };
    assert_eq!(recovered.ended.len(), 1);
    assert_eq!(
        recovered.ended[0].deltas,
        vec![(4, cancel("run")), (5, cancel("wait"))]
    );
    assert_eq!(recovered.ended[0].ended, Some(2));
    assert_eq!(recovered.idled, vec![id.clone()]);
    let session = store
        .read_blocking(|c| get_session(c, 1, id.as_str()))
        .unwrap()
        .unwrap();
    let delta = |seq, d| Event::MessageDelta {
        session_id: id.clone(),
        message_id: mid.clone(),
        seq,
        delta: d,
    };
    assert_eq!(
        told,
        vec![
            delta(4, cancel("run")),
            delta(5, cancel("wait")),
            Event::MessagePart {
                session_id: id.clone(),
                message_id: mid.clone(),
                index: 3,
                part: Part::Interrupted,
            },
            Event::MessageEnded {
                session_id: id.clone(),
                message_id: mid.clone(),
                ended: 2,
            },
            Event::SessionUpdated { session },
            Event::SessionStatus {
                session_id: id.clone(),
                status: SessionStatus::Idle,
            },
        ]
    );
    assert_eq!(msgs[0].parts.len(), 4);
    let statuses: Vec<_> = msgs[0]
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Turn(turn::TurnPart::ToolCall(t)) => Some((t.tool_call_id.as_str(), t.status)),
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
        MIGRATIONS[0].apply(&conn).unwrap();
        MIGRATIONS[1].apply(&conn).unwrap();
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
    // Read as the shell agent's turn since v13: the output and the bytes dropped after it
    // are the terminal's.
    let Some(Part::Turn(turn::TurnPart::ToolCall(call))) = msgs[0].parts.first() else {
        panic!("{:?}", msgs[0].parts);
    };
    assert_eq!(
        call.content,
        vec![turn::ToolContent::Terminal {
            terminal_id: "term-1".into(),
            output: "dropped_bytes".into(),
            dropped_bytes: 4000,
            exit: None,
        }]
    );
    assert_eq!(msgs[0].parts.len(), 1);
}

/// A v7 database gains `message.ended`: old messages read back with no end, a turn that
/// ends (or a crashed one recovered) is stamped, and a stamp is never moved.
#[test]
fn v8_database_drops_answers_to_untracked_runtime_ids() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
        for m in &MIGRATIONS[..8] {
            m.apply(&conn).unwrap();
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
            m.apply(&conn).unwrap();
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

#[test]
fn an_agent_titles_only_sessions_no_person_named() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let conn = Connection::open(tmp.path().join(DB_FILE)).unwrap();
        for m in &MIGRATIONS[..11] {
            m.apply(&conn).unwrap();
        }
        // Stored before v12: who titled `old` is unknown, so it counts as a person's.
        conn.execute_batch(
            "PRAGMA user_version = 11;
             INSERT INTO project(id, directory) VALUES (1, '/p');
             INSERT INTO session(id, project_id, title, created, updated, status)
               VALUES ('ses_0123456789abABCDEFGHIJKLMN', 1, 'old', 1, 2, 'idle');
             INSERT INTO session(id, project_id, title, created, updated, status)
               VALUES ('ses_1123456789abABCDEFGHIJKLMN', 1, '', 1, 2, 'idle');",
        )
        .unwrap();
    }
    let store = Store::open(tmp.path()).unwrap();
    let (old, new) = (
        "ses_0123456789abABCDEFGHIJKLMN",
        "ses_1123456789abABCDEFGHIJKLMN",
    );
    let agent = |id: &'static str, title: &'static str| {
        store
            .write_blocking(move |c| offer_title(c, 1, id, title, OfferedTitle::Agent))
            .unwrap()
            .map(|s| s.title)
    };
    let title = |id: &'static str| {
        store
            .read_blocking(move |c| get_session(c, 1, id))
            .unwrap()
            .unwrap()
            .title
    };
    assert_eq!(agent(old, "Agent's"), None);
    assert_eq!(title(old), "old");

    // Untitled, then titled by its first prompt: the agent's title replaces either, and a
    // title equal to the one kept changes nothing.
    store
        .write_blocking(move |c| offer_title(c, 1, new, "from the prompt", OfferedTitle::Prompt))
        .unwrap();
    assert_eq!(agent(new, "Parser fix").as_deref(), Some("Parser fix"));
    assert_eq!(agent(new, "Parser fix"), None);
    assert_eq!(
        agent(new, "Parser fix, tested").as_deref(),
        Some("Parser fix, tested")
    );

    // A person renames it: from then on the agent's titles are not kept.
    store
        .write_blocking(move |c| rename_session(c, 1, new, "mine", 9))
        .unwrap();
    assert_eq!(agent(new, "Agent again"), None);
    assert_eq!(title(new), "mine");
}

/// A transcript is read from one snapshot: a turn committing a delta and a part together
/// between the reads of messages, deltas and parts never shows one without the other.
#[test]
fn a_transcript_is_read_from_one_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let id: SessionId = "ses_0123456789abABCDEFGHIJKLMN".parse().unwrap();
    let reply: ax_protocol::MessageId = "msg_0123456789abABCDEFGHIJKLMA".parse().unwrap();
    store
        .write_blocking(|c| mock_reply(c, &id, &reply, SessionStatus::Busy))
        .unwrap();
    // While the transcript is read, each step of SQLite's reading commits one more delta and
    // one more part of the reply, in one transaction.
    let committed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (writer, counter, message) = (store.clone(), committed.clone(), reply.clone());
    // A reader of its own (the store's takes no progress handler through a shared borrow).
    let mut c = Connection::open(tmp.path().join(DB_FILE)).unwrap();
    c.progress_handler(
        1,
        Some(move || {
            let n = counter.load(std::sync::atomic::Ordering::Relaxed);
            if n < 200 {
                counter.store(n + 1, std::sync::atomic::Ordering::Relaxed);
                writer
                    .write_blocking(|w| {
                        let tx = begin_write(w)?;
                        let delta = turn::TurnDelta::TextAppended { text: "d".into() };
                        append_deltas(&tx, &message, [(n + 1, &delta)])?;
                        append_part(&tx, &message, n as u32, &Part::Interrupted)?;
                        Ok(tx.commit()?)
                    })
                    .unwrap();
            }
            false
        }),
    )
    .unwrap();
    let transcript = messages(&c, &id).unwrap();
    let committed = committed.load(std::sync::atomic::Ordering::Relaxed);
    assert!(committed > 0, "nothing was committed during the read");
    let reply = &transcript[0];
    let marks = reply
        .parts
        .iter()
        .filter(|p| **p == Part::Interrupted)
        .count() as u64;
    assert_eq!(reply.deltas, marks, "{:?}", reply.parts);
}
