//! The interactive terminals (`terminal.open` …) with a real shell under a real PTY behind
//! the mounted gateway: colours, input, resize, the environment, a terminal outliving its
//! viewer with its scrollback replayed, one typing connection, a slow viewer that holds up
//! nobody, kills on close and on backend shutdown, and the screen credential kept out.

use serde_json::{Value, json};

use crate::{
    terminal::{Operator, process_group_of, recorded_groups},
    util::{Backend, eventually, process_gone, within},
};

impl Operator {
    /// The next event (held ones first).
    async fn event(&mut self) -> Value {
        if let Some(e) = self.held.pop_front() {
            return e;
        }
        loop {
            let f = self.frame().await;
            if f["type"] == "event" {
                return f;
            }
        }
    }

    /// Opens an 80×24 terminal; its id.
    async fn open(&mut self) -> String {
        let res = self
            .request("terminal.open", json!({"cols": 80, "rows": 24}))
            .await;
        assert_eq!(res["ok"], true, "{res}");
        res["payload"]["terminalId"].as_str().unwrap().to_owned()
    }

    async fn type_in(&mut self, id: &str, text: &str) {
        let res = self
            .request("terminal.input", json!({"terminalId": id, "data": text}))
            .await;
        assert_eq!(res["ok"], true, "{res}");
    }

    /// Reads the terminal's output into `seen` until it contains `needle`.
    async fn until(&mut self, id: &str, seen: &mut String, needle: &str) {
        within(async {
            while !seen.contains(needle) {
                let e = self.event().await;
                let p = &e["payload"];
                if p["terminalId"] != id {
                    continue;
                }
                match e["event"].as_str().unwrap() {
                    "terminal.data" => seen.push_str(p["data"].as_str().unwrap()),
                    "terminal.dropped" => {}
                    other => panic!("{other} before {needle:?}: {e}; output {seen:?}"),
                }
            }
        })
        .await;
    }

    /// Waits for the terminal's `terminal.exit`.
    async fn until_ended(&mut self, id: &str) -> Value {
        within(async {
            loop {
                let e = self.event().await;
                if e["event"] == "terminal.exit" && e["payload"]["terminalId"] == id {
                    return e["payload"].clone();
                }
            }
        })
        .await
    }
}

/// The number printed right after `tag` (the echo of the typed line shows `tag$…`, not digits).
fn number_after(seen: &str, tag: &str) -> i32 {
    seen.match_indices(tag)
        .filter_map(|(i, _)| {
            let digits: String = seen[i + tag.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .next()
        .unwrap_or_else(|| panic!("no {tag} number in {seen:?}"))
}

/// `text` without CSI escape sequences (the shell's bracketed-paste switches and the like).
fn strip_csi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

const PROBE: &str = "AX_SERVER_PTY_ENV_PROBE";

/// Runs in a child test process whose environment holds a secret and whose `SHELL` is
/// `/bin/sh` (which reads no start-up file), so every variable the shell shows came from the
/// backend: each must be on the allowlist.
#[tokio::test]
async fn the_shell_gets_colours_input_resize_and_only_the_allowlisted_environment() {
    if std::env::var_os(PROBE).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "pty::the_shell_gets_colours_input_resize_and_only_the_allowlisted_environment",
                "--test-threads=1",
            ])
            .env(PROBE, "1")
            .env("SHELL", "/bin/sh")
            .env("OPENAI_API_KEY", "sk-must-not-leak")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("1 passed"), "{text}");
        return;
    }
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    let id = op.open().await;
    let mut seen = String::new();
    op.type_in(
        &id,
        "printf '\\033[31m%s\\033[0m\\n' RED-$((40+2)); stty size\r",
    )
    .await;
    op.until(&id, &mut seen, "\x1b[31mRED-42\x1b[0m").await;
    op.until(&id, &mut seen, "24 80").await;
    let res = op
        .request(
            "terminal.resize",
            json!({"terminalId": id, "cols": 132, "rows": 43}),
        )
        .await;
    assert_eq!(res["ok"], true, "{res}");
    op.type_in(&id, "stty size; pwd -P\r").await;
    op.until(&id, &mut seen, "43 132").await;
    let project = std::fs::canonicalize(b.project_path()).unwrap();
    op.until(&id, &mut seen, project.to_str().unwrap()).await;

    let mut env = String::new();
    op.type_in(&id, "env; echo ENV-$((1+1))-END\r").await;
    op.until(&id, &mut env, "ENV-2-END").await;
    assert!(
        !env.contains(b.server.token().expose()),
        "the credential leaked"
    );
    assert!(
        !env.contains(b.server.screen_token().expose()),
        "the credential leaked"
    );
    assert!(env.contains("TERM=xterm-256color"), "{env}");
    let env = strip_csi(&env);
    assert!(!env.contains("sk-must-not-leak"), "{env}");
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| !k.contains(' '))
        .collect();
    assert!(
        names.contains(&"PATH") && names.contains(&"COLORTERM"),
        "{env}"
    );
    for name in names {
        let shells_own = ["PWD", "OLDPWD", "SHLVL", "_", "COLORTERM"].contains(&name);
        assert!(
            shells_own || ax_agents::process::env::is_allowed(std::ffi::OsStr::new(name)),
            "{name} is not on the allowlist: {env}"
        );
    }
}

#[tokio::test]
async fn a_terminal_outlives_its_viewer_and_replays_its_scrollback() {
    let b = Backend::start().await;
    let mut first = Operator::connect(&b).await;
    let id = first.open().await;
    let mut seen = String::new();
    first
        .type_in(
            &id,
            "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo tick-$i; sleep 0.05; done\r",
        )
        .await;
    first.until(&id, &mut seen, "tick-3\r\n").await;
    drop(first);

    let mut second = Operator::connect(&b).await;
    // The closed connection detaches the terminal; it keeps running.
    let mut listed = Value::Null;
    within(async {
        loop {
            let res = second.request("terminal.list", json!({})).await;
            listed = res["payload"]["terminals"][0].clone();
            if listed["attached"] == false {
                break;
            }
        }
    })
    .await;
    assert_eq!(listed["terminalId"], id.as_str());
    assert_eq!(listed["running"], true);

    let res = second
        .request("terminal.attach", json!({"terminalId": id}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let mut replay = String::new();
    second.until(&id, &mut replay, "tick-1\r\n").await;
    // The scrollback came back from the start, and the loop went on while nobody watched.
    assert!(replay.contains("tick-3\r\n"), "{replay}");
    second.until(&id, &mut replay, "tick-8\r\n").await;
    second.type_in(&id, "\x03").await;
    // The shell resets the terminal when the interrupted loop returns to its prompt, which can
    // discard what was typed in between: type the command again until its output shows (the
    // typed line echoes `AFTER-$((2*3))`, never `AFTER-6`).
    for _ in 0..10 {
        second.type_in(&id, "echo AFTER-$((2*3))\r").await;
        let shown = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            second.until(&id, &mut replay, "AFTER-6"),
        )
        .await;
        if shown.is_ok() {
            return;
        }
    }
    panic!("the shell never ran the command typed after Ctrl-C: {replay:?}");
}

#[tokio::test]
async fn only_the_attached_connection_types_and_the_old_viewer_is_told() {
    let b = Backend::start().await;
    let mut first = Operator::connect(&b).await;
    let id = first.open().await;
    let mut second = Operator::connect(&b).await;
    // Not attached: no input, no resize.
    for (method, params) in [
        (
            "terminal.input",
            json!({"terminalId": id, "data": "touch typed-by-second\r"}),
        ),
        (
            "terminal.resize",
            json!({"terminalId": id, "cols": 10, "rows": 10}),
        ),
    ] {
        let res = second.request(method, params).await;
        assert_eq!(res["error"]["code"], "UNAVAILABLE", "{res}");
    }
    let res = second
        .request("terminal.attach", json!({"terminalId": id}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let detached = within(async {
        loop {
            let e = first.event().await;
            if e["event"] == "terminal.detached" {
                return e;
            }
        }
    })
    .await;
    assert_eq!(detached["payload"]["terminalId"], id.as_str());
    let res = first
        .request(
            "terminal.input",
            json!({"terminalId": id, "data": "touch typed-by-first\r"}),
        )
        .await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE", "{res}");
    let mut seen = String::new();
    second.type_in(&id, "echo OK-$((3+4))\r").await;
    second.until(&id, &mut seen, "OK-7").await;
    assert!(!b.project_path().join("typed-by-first").exists());
    assert!(!b.project_path().join("typed-by-second").exists());
    // Bad input is refused with a reason and changes nothing.
    for (method, params) in [
        ("terminal.open", json!({"cols": 0, "rows": 24})),
        (
            "terminal.open",
            json!({"cols": 80, "rows": 24, "shell": "/bin/evil"}),
        ),
        (
            "terminal.resize",
            json!({"terminalId": id, "cols": 5000, "rows": 10}),
        ),
        (
            "terminal.input",
            json!({"terminalId": id, "data": "x".repeat(ax_gateway::TERMINAL_MAX_INPUT + 1)}),
        ),
    ] {
        let res = second.request(method, params).await;
        assert_eq!(res["error"]["code"], "INVALID_REQUEST", "{method}: {res}");
    }
    let res = second
        .request("terminal.attach", json!({"terminalId": "term_nope"}))
        .await;
    assert_eq!(res["error"]["code"], "NOT_FOUND", "{res}");
}

#[tokio::test]
async fn close_kills_every_job_of_the_shell() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    let id = op.open().await;
    let mut seen = String::new();
    op.type_in(&id, "sleep 300 & echo BG:$! SH:$$ E$((1))ND\r")
        .await;
    op.until(&id, &mut seen, " E1ND").await;
    let bg = number_after(&seen, "BG:");
    let shell = number_after(&seen, "SH:");
    assert!(!process_gone(bg) && !process_gone(shell));
    let group = process_group_of(shell);
    eventually("the shell's group is recorded", || {
        recorded_groups(&b).contains(&group)
    })
    .await;
    let res = op
        .request("terminal.close", json!({"terminalId": id}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let exit = op.until_ended(&id).await;
    assert!(exit["signal"] == 9 || exit["code"].is_number(), "{exit}");
    eventually("the shell and its job are killed", || {
        process_gone(bg) && process_gone(shell)
    })
    .await;
    eventually("the record is gone", || {
        !recorded_groups(&b).contains(&group)
    })
    .await;
    let res = op.request("terminal.list", json!({})).await;
    assert_eq!(res["payload"]["terminals"], json!([]));
}

#[tokio::test]
async fn a_slow_viewer_holds_up_nobody_and_learns_what_it_missed() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    let id = op.open().await;
    // About 20 MB of output while this connection reads nothing: far beyond its queue and
    // the scrollback. The shell must finish anyway.
    op.type_in(&id, "seq 1 3000000; touch seq-done\r").await;
    let done = b.project_path().join("seq-done");
    eventually("the command finished although nobody read", || {
        done.exists()
    })
    .await;
    let mut dropped = 0;
    let mut seen = String::new();
    within(async {
        while !seen.contains("2999999\r\n3000000\r\n") {
            let e = op.event().await;
            match e["event"].as_str().unwrap() {
                "terminal.dropped" => dropped += e["payload"]["droppedBytes"].as_u64().unwrap(),
                "terminal.data" => seen.push_str(e["payload"]["data"].as_str().unwrap()),
                _ => {}
            }
        }
    })
    .await;
    assert!(dropped > 1_000_000, "{dropped}");
    // A viewer that attaches now is told what left the scrollback, then gets the rest from the
    // start of a line.
    let mut later = Operator::connect(&b).await;
    let res = later
        .request("terminal.attach", json!({"terminalId": id}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let first = later.event().await;
    assert_eq!(first["event"], "terminal.dropped", "{first}");
    assert!(first["payload"]["droppedBytes"].as_u64().unwrap() > 1_000_000);
    let next = later.event().await;
    assert_eq!(next["event"], "terminal.data", "{next}");
    let data = next["payload"]["data"].as_str().unwrap();
    let line = data.split("\r\n").next().unwrap();
    let n: u32 = line
        .parse()
        .unwrap_or_else(|_| panic!("not a whole line: {line:?}"));
    assert!(n > 2_000_000, "{n}");
}

#[tokio::test]
async fn backend_shutdown_kills_the_terminals() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    let id = op.open().await;
    let mut seen = String::new();
    op.type_in(&id, "echo SH:$$ E$((1))ND\r").await;
    op.until(&id, &mut seen, " E1ND").await;
    let shell = number_after(&seen, "SH:");
    assert!(!process_gone(shell));
    let Backend {
        server, project, ..
    } = b;
    server.shutdown().await;
    eventually("the shell is killed", || process_gone(shell)).await;
    drop(project);
}

#[tokio::test]
async fn the_screen_credential_can_neither_open_nor_type_nor_watch() {
    let b = Backend::start().await;
    let mut admin = Operator::connect(&b).await;
    let id = admin.open().await;
    let mut screen =
        Operator::connect_with(&b, b.server.screen_token().expose(), "operator.admin").await;
    for (method, params) in [
        ("terminal.open", json!({"cols": 80, "rows": 24})),
        ("terminal.list", json!({})),
        ("terminal.attach", json!({"terminalId": id})),
        (
            "terminal.input",
            json!({"terminalId": id, "data": "touch pwned\r"}),
        ),
        (
            "terminal.resize",
            json!({"terminalId": id, "cols": 10, "rows": 10}),
        ),
        ("terminal.close", json!({"terminalId": id})),
    ] {
        let res = screen.request(method, params).await;
        assert_eq!(res["error"]["code"], "FORBIDDEN", "{method}: {res}");
        assert_eq!(res["error"]["details"]["missingScope"], "operator.admin");
    }
    let res = admin.request("terminal.list", json!({})).await;
    assert_eq!(res["payload"]["terminals"][0]["running"], true, "{res}");
    assert_eq!(res["payload"]["terminals"][0]["attached"], true, "{res}");
    assert!(!b.project_path().join("pwned").exists());
}

#[tokio::test]
async fn an_ended_shell_stays_listed_replays_its_end_and_makes_room() {
    let b = Backend::start().await;
    let mut op = Operator::connect(&b).await;
    let first = op.open().await;
    let mut seen = String::new();
    op.type_in(&first, "echo BYE-$((1+1)); exit 3\r").await;
    op.until(&first, &mut seen, "BYE-2").await;
    let exit = op.until_ended(&first).await;
    assert_eq!(exit["code"], 3, "{exit}");
    let res = op.request("terminal.list", json!({})).await;
    assert_eq!(res["payload"]["terminals"][0]["running"], false, "{res}");
    assert_eq!(res["payload"]["terminals"][0]["code"], 3, "{res}");
    // A viewer that comes later gets the whole story: the output, then the end.
    let mut later = Operator::connect(&b).await;
    let res = later
        .request("terminal.attach", json!({"terminalId": first}))
        .await;
    assert_eq!(res["payload"]["running"], false, "{res}");
    let mut replay = String::new();
    later.until(&first, &mut replay, "BYE-2").await;
    assert_eq!(later.until_ended(&first).await["code"], 3);
    // At most four run at once; the ended one makes room.
    let mut ids = Vec::new();
    for _ in 0..ax_gateway::MAX_TERMINALS {
        ids.push(op.open().await);
    }
    let res = op
        .request("terminal.open", json!({"cols": 80, "rows": 24}))
        .await;
    assert_eq!(res["error"]["code"], "UNAVAILABLE", "{res}");
    let res = op.request("terminal.list", json!({})).await;
    let listed: Vec<&str> = res["payload"]["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["terminalId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids.iter().map(String::as_str).collect::<Vec<_>>());
    let res = op
        .request("terminal.close", json!({"terminalId": ids[0]}))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    op.until_ended(&ids[0]).await;
    op.open().await;
}
