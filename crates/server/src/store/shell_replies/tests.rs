//! Schema v13 on real SQLite files of the old schema: every kind of old `shell` reply reads
//! back as the `shell` agent's ACP turn, nothing else changes, and a turn cut by a crash is
//! recovered as an ACP turn.

use ax_protocol::{
    Part, PermissionState, SessionId,
    turn::{
        Notice, NoticeKind, PermissionChoice, PermissionKind, PermissionOutcome, PermissionPart,
        TERMINAL_OUTPUT_KEPT, TerminalExit, ToolCallPart, ToolContent, ToolKind, ToolStatus,
        TurnPart,
    },
};
use rusqlite::{Connection, params};
use serde_json::{Value, json};

use super::super::schema::MIGRATIONS;
use super::super::*;
use super::{CALL_ID, CUT_SHORT, TERMINAL_ID};

/// The last schema before v13.
const OLD_VERSION: usize = 12;

/// A database of the old schema being filled as the old backend filled it.
pub(super) struct OldDb {
    pub conn: Connection,
    next: u64,
}

/// One old turn to store: the prompt, the permission row's state (`None`: the session
/// allowed always), the reply's parts as JSON, whether its `run` row is left (a crash).
pub(super) struct OldTurn<'a> {
    pub command: &'a str,
    pub files: &'a [&'a str],
    pub permission: Option<&'a str>,
    pub parts: Vec<String>,
    pub running: bool,
}

impl OldDb {
    pub fn create(dir: &std::path::Path) -> OldDb {
        OldDb::create_for(dir, std::path::Path::new("/p"))
    }

    /// A database in `dir` whose one project is `project`.
    pub fn create_for(dir: &std::path::Path, project: &std::path::Path) -> OldDb {
        let conn = Connection::open(dir.join(DB_FILE)).unwrap();
        for m in &MIGRATIONS[..OLD_VERSION] {
            m.apply(&conn).unwrap();
        }
        conn.execute_batch(&format!("PRAGMA user_version = {OLD_VERSION};"))
            .unwrap();
        conn.execute(
            "INSERT INTO project(id, directory) VALUES (1, ?1)",
            [project.to_string_lossy()],
        )
        .unwrap();
        OldDb { conn, next: 0 }
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}_{:026}", self.next)
    }

    pub fn session(&mut self, agent: &str, always: bool) -> String {
        let id = self.id("ses");
        self.conn
            .execute(
                "INSERT INTO session(id, project_id, title, created, updated, status, \
                 always_allow, agent) VALUES (?1, 1, 't', 1, 1, 'idle', ?2, ?3)",
                params![id, always as i64, agent],
            )
            .unwrap();
        id
    }

    /// Stores the person's message, the reply (same millisecond as the permission) and the
    /// permission; returns the reply's and the permission's ids.
    pub fn turn(&mut self, session: &str, turn: &OldTurn<'_>) -> (String, Option<String>) {
        let (user, reply) = (self.id("msg"), self.id("msg"));
        let created = self.next as i64;
        let mut prompt: Vec<String> =
            vec![json!({"type": "text", "text": turn.command}).to_string()];
        prompt.extend(
            turn.files
                .iter()
                .map(|f| json!({"type": "file", "path": f}).to_string()),
        );
        for (id, role, parts) in [(&user, "user", &prompt), (&reply, "assistant", &turn.parts)] {
            self.conn
                .execute(
                    "INSERT INTO message(id, session_id, seq, role, created) VALUES (?1, ?2, \
                     (SELECT COALESCE(MAX(seq), 0) + 1 FROM message WHERE session_id = ?2), ?3, ?4)",
                    params![id, session, role, created],
                )
                .unwrap();
            for (i, body) in parts.iter().enumerate() {
                self.conn
                    .execute(
                        "INSERT INTO part(message_id, idx, body) VALUES (?1, ?2, ?3)",
                        params![id, i as i64, body],
                    )
                    .unwrap();
            }
        }
        let permission = turn.permission.map(|state| {
            let id = self.id("per");
            self.conn
                .execute(
                    "INSERT INTO permission(id, session_id, command, state, created, attachments) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        id,
                        session,
                        turn.command,
                        state,
                        created,
                        json!(turn.files).to_string()
                    ],
                )
                .unwrap();
            id
        });
        if turn.running {
            self.conn
                .execute(
                    "INSERT INTO run(session_id, message_id, started) VALUES (?1, ?2, ?3)",
                    params![session, reply, created],
                )
                .unwrap();
            self.conn
                .execute(
                    "UPDATE session SET status = 'busy' WHERE id = ?1",
                    [session],
                )
                .unwrap();
        }
        (reply, permission)
    }
}

fn out(text: &str) -> String {
    json!({"type": "output", "stream": "stdout", "text": text}).to_string()
}

fn err(text: &str) -> String {
    json!({"type": "output", "stream": "stderr", "text": text}).to_string()
}

fn truncated(n: u64) -> String {
    json!({"type": "truncated", "droppedBytes": n}).to_string()
}

fn exit(code: Option<i32>, signal: Option<i32>) -> String {
    let mut v = json!({"type": "exit"});
    if let Some(c) = code {
        v["code"] = json!(c);
    }
    if let Some(s) = signal {
        v["signal"] = json!(s);
    }
    v.to_string()
}

fn bare(kind: &str) -> String {
    json!({ "type": kind }).to_string()
}

/// The call as the `shell` agent creates it, then as it ended.
pub(super) fn call(
    command: &str,
    files: &[&str],
    status: ToolStatus,
    content: Vec<ToolContent>,
    raw_output: Option<Value>,
) -> ToolCallPart {
    ToolCallPart {
        tool_call_id: CALL_ID.into(),
        title: command.into(),
        kind: ToolKind::Execute,
        status,
        content,
        locations: Vec::new(),
        raw_input: Some(json!({"command": command, "attachments": files})),
        raw_output,
    }
}

fn shown(call: ToolCallPart) -> Part {
    Part::Turn(TurnPart::ToolCall(call))
}

fn terminal(
    output: &str,
    dropped_bytes: u64,
    exit: Option<(Option<u32>, Option<&str>)>,
) -> ToolContent {
    ToolContent::Terminal {
        terminal_id: TERMINAL_ID.into(),
        output: output.into(),
        dropped_bytes,
        exit: exit.map(|(exit_code, signal)| TerminalExit {
            exit_code,
            signal: signal.map(str::to_string),
        }),
    }
}

fn raw(exit_code: Option<u32>, signal: Option<&str>, truncated: bool) -> Option<Value> {
    Some(json!({"exitCode": exit_code, "signal": signal, "truncated": truncated}))
}

pub(super) fn options() -> Vec<PermissionChoice> {
    vec![
        PermissionChoice {
            option_id: "once".into(),
            name: "Allow once".into(),
            kind: PermissionKind::AllowOnce,
        },
        PermissionChoice {
            option_id: "always".into(),
            name: "Allow always in this session".into(),
            kind: PermissionKind::AllowAlways,
        },
        PermissionChoice {
            option_id: "reject".into(),
            name: "Reject".into(),
            kind: PermissionKind::RejectOnce,
        },
    ]
}

fn asked(id: &str, command: &str, files: &[&str], outcome: PermissionOutcome) -> Part {
    Part::Turn(TurnPart::Permission(PermissionPart {
        permission_id: id.parse().unwrap(),
        tool_call: call(command, files, ToolStatus::Pending, Vec::new(), None),
        options: options(),
        outcome,
    }))
}

fn chose(option_id: &str, kind: PermissionKind) -> PermissionOutcome {
    PermissionOutcome::Selected {
        option_id: option_id.into(),
        kind,
    }
}

fn said(kind: NoticeKind, message: &str) -> Part {
    Part::Turn(TurnPart::Notice(Notice {
        kind,
        message: message.into(),
    }))
}

/// The parts of message `id` as the store's read API gives them.
fn read(store: &Store, session: &str, id: &str) -> Vec<Part> {
    let session: SessionId = session.parse().unwrap();
    store
        .read_blocking(|c| messages(c, &session))
        .unwrap()
        .into_iter()
        .find(|m| m.id.as_str() == id)
        .expect("the message is there")
        .parts
}

/// Every table's rows as text, to compare a database with itself later.
fn dump(conn: &Connection) -> Vec<String> {
    let mut rows = Vec::new();
    for (table, order) in [
        ("message", "id"),
        ("part", "message_id, idx"),
        ("delta", "message_id, seq"),
        ("permission", "id"),
        ("run", "session_id"),
        ("session", "id"),
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap();
        let n = stmt.column_count();
        let mut found = stmt.query([]).unwrap();
        while let Some(r) = found.next().unwrap() {
            let cells: Vec<String> = (0..n)
                .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                .collect();
            rows.push(format!("{table}: {}", cells.join(" | ")));
        }
    }
    rows
}

#[test]
fn every_kind_of_old_shell_reply_reads_as_the_shell_agents_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let mut old = OldDb::create(tmp.path());
    let turn = |command, files, permission, parts: Vec<String>| OldTurn {
        command,
        files,
        permission,
        parts,
        running: false,
    };

    // A session that ran, then allowed always.
    let a = old.session("shell", true);
    let (a1, a1p) = old.turn(
        &a,
        &turn(
            "printf 'hi\\n'; cat \"$1\"",
            &["a.txt"],
            Some("approved"),
            vec![out("hi\n"), out("file\n"), exit(Some(0), None)],
        ),
    );
    let (a2, a2p) = old.turn(
        &a,
        &turn(
            "echo o; echo e >&2; exit 3",
            &[],
            Some("approved"),
            vec![err("e1\n"), out("o\n"), err("e2\n"), exit(Some(3), None)],
        ),
    );
    let (a3, _) = old.turn(
        &a,
        &turn("kill -9 $$", &[], None, vec![exit(None, Some(9))]),
    );
    let head = "h".repeat(40_000);
    let tail = "t".repeat(40_000);
    let (a4, _) = old.turn(
        &a,
        &turn(
            "big",
            &[],
            None,
            vec![
                out(&head),
                truncated(5_000),
                out(&tail[..10]),
                out(&tail[10..]),
                exit(Some(0), None),
            ],
        ),
    );
    let (a5, _) = old.turn(
        &a,
        &turn(
            "small",
            &[],
            None,
            vec![
                out("head\n"),
                truncated(7),
                out("tail\n"),
                exit(Some(1), None),
            ],
        ),
    );

    // A session that asks every time: rejected, aborted, interrupted, could not start.
    let b = old.session("shell", false);
    let rejected_line = "rm -rf /tmp/x\necho done";
    let (b1, b1p) = old.turn(
        &b,
        &turn(rejected_line, &[], Some("rejected"), vec![bare("rejected")]),
    );
    let (b2, b2p) = old.turn(
        &b,
        &turn("sleep 9", &[], Some("cancelled"), vec![bare("aborted")]),
    );
    let (b3, b3p) = old.turn(
        &b,
        &turn(
            "sleep 10",
            &[],
            Some("approved"),
            vec![out("x\n"), bare("aborted")],
        ),
    );
    let (b4, b4p) = old.turn(
        &b,
        &turn(
            "sleep 11",
            &[],
            Some("approved"),
            vec![out("y\n"), bare("interrupted")],
        ),
    );
    let (b5, b5p) = old.turn(
        &b,
        &turn(
            "sleep 12",
            &[],
            Some("cancelled"),
            vec![bare("interrupted")],
        ),
    );
    let gone = "a.txt: no such file; the command did not run";
    let (b6, b6p) = old.turn(
        &b,
        &turn(
            "cat \"$1\"",
            &["a.txt"],
            Some("approved"),
            vec![err(&format!("ax-code: {gone}\n")), exit(None, None)],
        ),
    );
    // Ended, then a crash before the turn's end was stored: the recovery's `interrupted`.
    let (b7, b7p) = old.turn(
        &b,
        &turn(
            "true",
            &[],
            Some("approved"),
            vec![exit(Some(0), None), bare("interrupted")],
        ),
    );

    // Cut by a crash: waiting for its answer, and running (always allowed).
    let c = old.session("shell", false);
    let (c1, c1p) = old.turn(
        &c,
        &OldTurn {
            command: "sleep 99",
            files: &[],
            permission: Some("pending"),
            parts: Vec::new(),
            running: true,
        },
    );
    let d = old.session("shell", true);
    let (d1, _) = old.turn(
        &d,
        &OldTurn {
            command: "yes",
            files: &[],
            permission: None,
            parts: vec![out("y\ny\n")],
            running: true,
        },
    );

    // Rows no shell run wrote (two exits) stay as they are; so does an ACP agent's reply.
    let e = old.session("shell", false);
    let odd = vec![out("o\n"), exit(Some(0), None), exit(Some(1), None)];
    let (e1, e1p) = old.turn(&e, &turn("odd", &[], Some("approved"), odd.clone()));
    let f = old.session("mock", false);
    let (f1, _) = old.turn(&f, &turn("hello", &[], None, vec![bare("interrupted")]));
    old.conn
        .execute(
            "INSERT INTO delta(message_id, seq, body) VALUES (?1, 1, ?2)",
            params![
                f1,
                json!({"type": "text_appended", "text": "hi"}).to_string()
            ],
        )
        .unwrap();
    drop(old);

    let store = Store::open(tmp.path()).unwrap();
    let version: i64 = store
        .read_blocking(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, OLD_VERSION as i64 + 1);
    let (ok, failed, cancelled) = (
        ToolStatus::Completed,
        ToolStatus::Failed,
        ToolStatus::Cancelled,
    );
    let once = || chose("once", PermissionKind::AllowOnce);

    let a1_line = "printf 'hi\\n'; cat \"$1\"";
    assert_eq!(
        read(&store, &a, &a1),
        vec![
            shown(call(
                a1_line,
                &["a.txt"],
                ok,
                vec![terminal("hi\nfile\n", 0, Some((Some(0), None)))],
                raw(Some(0), None, false),
            )),
            asked(a1p.as_deref().unwrap(), a1_line, &["a.txt"], once()),
        ]
    );
    // Approved, and the next command was not asked about: "always".
    let a2_line = "echo o; echo e >&2; exit 3";
    assert_eq!(
        read(&store, &a, &a2),
        vec![
            shown(call(
                a2_line,
                &[],
                failed,
                vec![terminal("e1\no\ne2\n", 0, Some((Some(3), None)))],
                raw(Some(3), None, false),
            )),
            asked(
                a2p.as_deref().unwrap(),
                a2_line,
                &[],
                chose("always", PermissionKind::AllowAlways)
            ),
        ]
    );
    assert_eq!(
        read(&store, &a, &a3),
        vec![shown(call(
            "kill -9 $$",
            &[],
            failed,
            vec![terminal("", 0, Some((None, Some("SIGKILL"))))],
            raw(None, Some("SIGKILL"), false),
        )),]
    );
    // Head and tail are 80,000 bytes: the card keeps the last 64 KiB, and counts what it
    // did not keep with the 5,000 the old run dropped between them.
    let kept = format!("{head}{tail}")[80_000 - TERMINAL_OUTPUT_KEPT..].to_string();
    assert_eq!(
        read(&store, &a, &a4),
        vec![shown(call(
            "big",
            &[],
            ok,
            vec![terminal(
                &kept,
                5_000 + (80_000 - TERMINAL_OUTPUT_KEPT) as u64,
                Some((Some(0), None))
            )],
            raw(Some(0), None, true),
        )),]
    );
    assert_eq!(
        read(&store, &a, &a5),
        vec![shown(call(
            "small",
            &[],
            failed,
            vec![terminal("head\ntail\n", 7, Some((Some(1), None)))],
            raw(Some(1), None, true),
        )),]
    );

    assert_eq!(
        read(&store, &b, &b1),
        vec![
            shown(call(rejected_line, &[], failed, Vec::new(), None)),
            asked(
                b1p.as_deref().unwrap(),
                rejected_line,
                &[],
                chose("reject", PermissionKind::RejectOnce)
            ),
            said(
                NoticeKind::Stop,
                "the agent ended its turn after you rejected `rm -rf /tmp/x…`"
            ),
        ]
    );
    assert_eq!(
        read(&store, &b, &b2),
        vec![
            shown(call("sleep 9", &[], cancelled, Vec::new(), None)),
            asked(
                b2p.as_deref().unwrap(),
                "sleep 9",
                &[],
                PermissionOutcome::Cancelled
            ),
        ]
    );
    assert_eq!(
        read(&store, &b, &b3),
        vec![
            shown(call(
                "sleep 10",
                &[],
                cancelled,
                vec![terminal("x\n", 0, None)],
                None
            )),
            asked(b3p.as_deref().unwrap(), "sleep 10", &[], once()),
        ]
    );
    assert_eq!(
        read(&store, &b, &b4),
        vec![
            shown(call(
                "sleep 11",
                &[],
                cancelled,
                vec![terminal("y\n", 0, None)],
                None
            )),
            asked(b4p.as_deref().unwrap(), "sleep 11", &[], once()),
            said(NoticeKind::Info, CUT_SHORT),
        ]
    );
    assert_eq!(
        read(&store, &b, &b5),
        vec![
            shown(call("sleep 12", &[], cancelled, Vec::new(), None)),
            asked(
                b5p.as_deref().unwrap(),
                "sleep 12",
                &[],
                PermissionOutcome::Cancelled
            ),
            said(NoticeKind::Info, CUT_SHORT),
        ]
    );
    assert_eq!(
        read(&store, &b, &b6),
        vec![
            shown(call(
                "cat \"$1\"",
                &["a.txt"],
                failed,
                vec![ToolContent::Text { text: gone.into() }],
                None
            )),
            asked(b6p.as_deref().unwrap(), "cat \"$1\"", &["a.txt"], once()),
        ]
    );
    assert_eq!(
        read(&store, &b, &b7),
        vec![
            shown(call(
                "true",
                &[],
                ok,
                vec![terminal("", 0, Some((Some(0), None)))],
                raw(Some(0), None, false),
            )),
            asked(b7p.as_deref().unwrap(), "true", &[], once()),
            said(NoticeKind::Info, CUT_SHORT),
        ]
    );

    // The cut turns stay open until the recovery closes them, as it closes an ACP turn.
    assert_eq!(
        read(&store, &c, &c1),
        vec![
            shown(call("sleep 99", &[], ToolStatus::Pending, Vec::new(), None)),
            asked(
                c1p.as_deref().unwrap(),
                "sleep 99",
                &[],
                PermissionOutcome::Pending
            ),
        ]
    );
    assert_eq!(
        read(&store, &d, &d1),
        vec![shown(call(
            "yes",
            &[],
            ToolStatus::InProgress,
            vec![terminal("y\ny\n", 0, None)],
            None
        )),]
    );

    // Left as they were: the odd reply, its permission, and the ACP agent's reply.
    let odd_parts: Vec<Part> = odd
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
    assert_eq!(read(&store, &e, &e1), odd_parts);
    assert_eq!(
        read(&store, &f, &f1),
        vec![Part::Text { text: "hi".into() }, Part::Interrupted]
    );

    // The permission rows read as an ACP permission's: the call, the options, the answer.
    let permission = |store: &Store, session: &str, id: &Option<String>| {
        let id = id.as_deref().unwrap().parse().unwrap();
        store
            .read_blocking(|c| get_permission(c, session, &id))
            .unwrap()
            .unwrap()
    };
    let p = permission(&store, &a, &a1p);
    assert_eq!(p.state, PermissionState::Approved);
    assert_eq!(p.option_id.as_deref(), Some("once"));
    assert_eq!(p.options, options());
    assert_eq!(p.attachments, vec!["a.txt".to_string()]);
    assert_eq!(
        p.tool_call,
        Some(call(
            a1_line,
            &["a.txt"],
            ToolStatus::Pending,
            Vec::new(),
            None
        ))
    );
    assert_eq!(
        permission(&store, &a, &a2p).option_id.as_deref(),
        Some("always")
    );
    let p = permission(&store, &b, &b1p);
    assert_eq!(
        (p.state, p.option_id.as_deref()),
        (PermissionState::Rejected, Some("reject"))
    );
    let p = permission(&store, &b, &b2p);
    assert_eq!((p.state, p.option_id), (PermissionState::Cancelled, None));
    let p = permission(&store, &e, &e1p);
    assert_eq!(
        (p.tool_call, p.options, p.option_id),
        (None, Vec::new(), None)
    );
    assert_eq!(
        store
            .read_blocking(|c| pending_permissions(c, 1))
            .unwrap()
            .len(),
        1,
        "the crashed turn's question waits for the recovery"
    );

    // The old rows went with the rewrite; the person's messages kept theirs.
    let parts_left: i64 = store
        .read_blocking(|c| {
            Ok(c.query_row(
                "SELECT COUNT(*) FROM part p JOIN message m ON m.id = p.message_id \
                 WHERE m.role = 'assistant'",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(
        parts_left,
        odd.len() as i64 + 1,
        "only the odd reply's and the ACP reply's"
    );
    let a_messages = store
        .read_blocking(|c| messages(c, &a.parse().unwrap()))
        .unwrap();
    assert_eq!(
        a_messages[0].parts,
        vec![
            Part::Text {
                text: a1_line.into()
            },
            Part::File {
                path: "a.txt".into()
            }
        ]
    );

    // Opened again: the rewrite ran once.
    let before = store.read_blocking(|c| Ok(dump(c))).unwrap();
    drop(store);
    let store = Store::open(tmp.path()).unwrap();
    assert_eq!(store.read_blocking(|c| Ok(dump(c))).unwrap(), before);

    // A restart's recovery closes the cut turns as it closes an ACP agent's.
    let recovered = store
        .write_blocking(|c| recover_interrupted(c, 1, 1_000, |_| false))
        .unwrap();
    assert_eq!(recovered.runs, 2);
    assert_eq!(
        read(&store, &c, &c1),
        vec![
            shown(call("sleep 99", &[], cancelled, Vec::new(), None)),
            asked(
                c1p.as_deref().unwrap(),
                "sleep 99",
                &[],
                PermissionOutcome::Cancelled
            ),
            Part::Interrupted,
        ]
    );
    assert_eq!(
        permission(&store, &c, &c1p).state,
        PermissionState::Cancelled
    );
    assert_eq!(
        read(&store, &d, &d1),
        vec![
            shown(call(
                "yes",
                &[],
                cancelled,
                vec![terminal("y\ny\n", 0, None)],
                None
            )),
            Part::Interrupted,
        ]
    );
}

/// A bound on waiting for what must happen; never a measure of speed.
const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What happens while a turn runs, besides answering its question.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Abort {
    Never,
    /// While the question waits (the live turn's question is then not answered).
    WhileAsking,
    /// Once the command printed something.
    AfterOutput,
}

/// Runs `command` as the old `shell` run did (`sh -c` through `ax_agents::process`, the
/// files as positional parameters and `AX_ATTACHMENTS`, head and tail kept within the
/// backend's default output bound; that run is gone from the product) and returns its parts
/// as the old run stored them.
async fn old_run(
    dir: &std::path::Path,
    command: &str,
    files: &[&str],
    abort: Abort,
) -> Vec<String> {
    use ax_agents::process::{self, Bound, CommandSpec, OutputEvent};
    let paths: Vec<_> = files
        .iter()
        .map(|f| {
            let attachment = ax_agents::project::resolve(dir, f).unwrap();
            ax_agents::project::recheck(dir, &attachment).unwrap()
        })
        .collect();
    let listing: String = paths
        .iter()
        .map(|p| format!("{}\n", p.to_string_lossy()))
        .collect();
    let spec = CommandSpec::shell(command, dir)
        .args(&paths)
        .env("AX_ATTACHMENTS", listing)
        .bound(Bound::head_and_tail(
            crate::Limits::default().output_bytes_per_message,
        ));
    let mut parts = Vec::new();
    let last = match process::spawn_with_events(spec) {
        Err(e) => {
            parts.push(Part::Output {
                stream: ax_protocol::Stream::Stderr,
                text: format!("ax-code: {e}\n"),
            });
            Part::Exit {
                code: None,
                signal: None,
            }
        }
        Ok((running, mut events)) => {
            let mut killed = false;
            loop {
                let event = tokio::time::timeout(WAIT, events.next()).await.unwrap();
                match event {
                    Some(OutputEvent::Output(piece)) => {
                        parts.push(Part::Output {
                            stream: piece.stream,
                            text: piece.text,
                        });
                        if abort == Abort::AfterOutput && !killed {
                            running.kill();
                            killed = true;
                        }
                    }
                    Some(OutputEvent::Truncated { dropped_bytes }) => {
                        parts.push(Part::Truncated { dropped_bytes })
                    }
                    Some(OutputEvent::Exit(_)) | None if killed => break Part::Aborted,
                    Some(OutputEvent::Exit(status)) => {
                        break Part::Exit {
                            code: status.code,
                            signal: status.signal,
                        };
                    }
                    None => panic!("the command's output ended without an exit"),
                }
            }
        }
    };
    parts.push(last);
    parts
        .iter()
        .map(|p| serde_json::to_string(p).unwrap())
        .collect()
}

/// The `shell` agent served in this process through the ACP runtime, one session.
struct Live {
    dir: std::path::PathBuf,
    handle: ax_acp::AgentHandle,
    events: tokio::sync::mpsc::UnboundedReceiver<ax_acp::AcpEvent>,
}

impl Live {
    async fn start(dir: &std::path::Path) -> Live {
        let options = ax_acp::StartOptions::new(dir);
        let (mut handle, events) =
            ax_acp::shell::start(options, ax_acp::shell::ShellConfig::default())
                .await
                .unwrap();
        handle.open_session(Vec::new(), None).await.unwrap();
        Live {
            dir: dir.into(),
            handle,
            events,
        }
    }

    /// Runs one turn as the backend sends it (`attachments::blocks`), answering its question
    /// with `answer`; returns its deltas folded, as a reload reads them.
    async fn turn(
        &mut self,
        command: &str,
        files: &[&str],
        answer: Option<PermissionKind>,
        abort: Abort,
    ) -> Vec<Part> {
        use ax_acp::AcpEvent;
        use ax_protocol::turn::{TurnDelta, apply};
        let content = crate::attachments::PromptContent {
            text: command.into(),
            attachments: files
                .iter()
                .map(|f| ax_agents::project::resolve(&self.dir, f).unwrap())
                .collect(),
            images: Vec::new(),
        };
        let blocks =
            crate::attachments::blocks(&self.dir, &content, &self.handle.info().capabilities);
        self.handle.prompt(blocks).unwrap();
        let mut parts = Vec::new();
        let mut held = Vec::new();
        let mut aborted = false;
        loop {
            let event = tokio::time::timeout(WAIT, self.events.recv())
                .await
                .expect("the turn goes on")
                .expect("the agent's events go on");
            match event {
                AcpEvent::Asked {
                    permission,
                    responder,
                } => {
                    apply(&mut parts, TurnDelta::PermissionAsked { permission });
                    match answer {
                        Some(kind) if abort != Abort::WhileAsking => {
                            responder.answer(kind, None).unwrap();
                        }
                        _ => aborted = self.handle.cancel(),
                    }
                    held.push(responder);
                }
                // The runtime before the shell agent became the backend's leaves a "started a
                // terminal" notice for every agent; it leaves none for an agent served inside
                // the backend (docs/backend.md, one agent model), as a rewritten reply has none.
                AcpEvent::Delta(TurnDelta::Notice { notice })
                    if notice.message.starts_with("ax-code started a terminal") => {}
                AcpEvent::Delta(delta) => {
                    let printed = matches!(&delta, TurnDelta::TerminalOutput { .. });
                    apply(&mut parts, delta);
                    if printed && abort == Abort::AfterOutput && !aborted {
                        aborted = self.handle.cancel();
                    }
                }
                AcpEvent::TurnEnded { .. } => break,
                _ => {}
            }
        }
        parts.into_iter().map(Part::from_turn).collect()
    }
}

/// `parts` with the ids a run mints (call, terminal, permission) made the same.
fn same_ids(parts: Vec<Part>) -> Vec<Part> {
    let permission: ax_protocol::PermissionId = "per_00000000000000000000000000".parse().unwrap();
    let call = |c: &mut ToolCallPart| {
        c.tool_call_id = "cmd".into();
        for item in &mut c.content {
            if let ToolContent::Terminal { terminal_id, .. } = item {
                *terminal_id = "term".into();
            }
        }
    };
    parts
        .into_iter()
        .map(|mut p| {
            match &mut p {
                Part::Turn(TurnPart::ToolCall(c)) => call(c),
                Part::Turn(TurnPart::Permission(asked)) => {
                    asked.permission_id = permission.clone();
                    call(&mut asked.tool_call);
                }
                _ => {}
            }
            p
        })
        .collect()
}

/// The same commands run by the old `shell` run (stored in a database of the old schema,
/// then rewritten by v13) and by the `shell` agent through the ACP runtime (folded as a
/// reload folds its stored deltas) read the same, ids aside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_reply_reads_as_the_same_command_run_by_the_shell_agent() {
    use PermissionKind::{AllowAlways, AllowOnce, RejectOnce};
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().canonicalize().unwrap();
    std::fs::write(dir.join("a.txt"), "file\n").unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut old = OldDb::create_for(data.path(), &dir);
    // (command, files, the person's answer, abort, the old permission row's state)
    type Case = (
        &'static str,
        &'static [&'static str],
        Option<PermissionKind>,
        Abort,
        Option<&'static str>,
    );
    let asks: &[Case] = &[
        (
            "printf 'hi\\n'; cat \"$1\"",
            &["a.txt"],
            Some(AllowOnce),
            Abort::Never,
            Some("approved"),
        ),
        (
            "echo o1; sleep 0.3; echo e1 >&2; sleep 0.3; echo o2; exit 3",
            &[],
            Some(AllowAlways),
            Abort::Never,
            Some("approved"),
        ),
        // Silent: it can end before the call shows its terminal, and the live card still
        // gets its exit (offered again until a call shows the terminal).
        ("kill -9 $$", &[], None, Abort::Never, None),
        (
            "head -c 1500000 /dev/zero | tr '\\0' y",
            &[],
            None,
            Abort::Never,
            None,
        ),
    ];
    let refuses: &[Case] = &[
        (
            "rm -rf ./never\necho gone",
            &[],
            Some(RejectOnce),
            Abort::Never,
            Some("rejected"),
        ),
        (
            "sleep 30",
            &[],
            Some(AllowOnce),
            Abort::WhileAsking,
            Some("cancelled"),
        ),
        (
            "printf 'x\\n'; sleep 30",
            &[],
            Some(AllowOnce),
            Abort::AfterOutput,
            Some("approved"),
        ),
    ];
    let mut compared = Vec::new();
    for cases in [asks, refuses] {
        let session = old.session("shell", cases == asks);
        let mut live = Live::start(&dir).await;
        for &(command, files, answer, abort, state) in cases {
            let ran = state == Some("approved") || state.is_none();
            let parts = if ran {
                old_run(&dir, command, files, abort).await
            } else if abort == Abort::WhileAsking {
                vec![bare("aborted")]
            } else {
                vec![bare("rejected")]
            };
            let (reply, _) = old.turn(
                &session,
                &OldTurn {
                    command,
                    files,
                    permission: state,
                    parts,
                    running: false,
                },
            );
            let now = live.turn(command, files, answer, abort).await;
            compared.push((session.clone(), reply, now, abort));
        }
        live.handle.stop().await;
    }
    drop(old);

    let store = Store::open(data.path()).unwrap();
    for (session, reply, mut live, abort) in compared {
        if abort == Abort::AfterOutput {
            // The live card also shows the kill's exit, which the old run never stored.
            let Some(Part::Turn(TurnPart::ToolCall(c))) = live.first_mut() else {
                panic!("{live:?}");
            };
            let Some(ToolContent::Terminal { exit, .. }) = c.content.first_mut() else {
                panic!("{c:?}");
            };
            assert_eq!(
                exit.take().and_then(|e| e.signal).as_deref(),
                Some("SIGKILL")
            );
        }
        let migrated = read(&store, &session, &reply);
        assert_eq!(same_ids(migrated), same_ids(live), "reply {reply}");
    }
}
