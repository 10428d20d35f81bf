//! The process module against real processes: groups, kills, bounds, ordering, UTF-8, the
//! environment allowlist, and waiting without polling.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use ax_agents::process::{self, Bound, CommandSpec, OutputEvent, Piece};
use ax_protocol::Stream;

/// Every wait here is bounded by this (far below the `sleep 300`s the tests start).
const WAIT: Duration = Duration::from_secs(20);

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f).await.expect("timed out")
}

/// Whether `pid` has exited (gone, or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn until_gone(pid: u32) {
    within(async {
        while !gone(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// Opens the FIFO for writing (which waits for the command to open it) and writes a line.
async fn release(fifo: &Path) {
    let fifo = fifo.to_owned();
    within(tokio::task::spawn_blocking(move || {
        std::fs::write(fifo, "go\n")
    }))
    .await
    .unwrap()
    .unwrap();
}

fn text(events: &[OutputEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            OutputEvent::Output(p) => Some(p.text.as_str()),
            _ => None,
        })
        .collect()
}

async fn all_events(events: &mut process::OutputEvents) -> Vec<OutputEvent> {
    let mut out = Vec::new();
    within(async {
        while let Some(e) = events.next().await {
            out.push(e);
        }
    })
    .await;
    out
}

/// Reads events until the first output line, which must be a pid.
async fn first_pid(events: &mut process::OutputEvents) -> u32 {
    let mut line = String::new();
    within(async {
        while !line.ends_with('\n') {
            match events.next().await {
                Some(OutputEvent::Output(p)) => line.push_str(&p.text),
                other => panic!("expected the pid, got {other:?}"),
            }
        }
    })
    .await;
    line.trim().parse().unwrap()
}

#[tokio::test]
async fn runs_in_the_directory_and_reports_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    // Both lines on stdout: the order between two pipes is whichever the reader sees first.
    let spec = CommandSpec::shell("pwd; echo \"$1\"; exit 7", dir.path()).arg("first arg");
    let (proc, mut events) = process::spawn_with_events(spec).unwrap();
    let got = all_events(&mut events).await;
    let exit = proc.wait_for_exit().await;
    assert_eq!((exit.code, exit.signal), (Some(7), None));
    assert_eq!(got.last(), Some(&OutputEvent::Exit(exit)));
    let out = text(&got);
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert!(out.starts_with(&format!("{}\n", real.display())), "{out:?}");
    assert!(out.ends_with("first arg\n"), "{out:?}");
    assert!(!proc.kill(), "an ended command is never signalled again");
}

#[tokio::test]
async fn stdout_and_stderr_arrive_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (f1, f2) = (dir.path().join("f1"), dir.path().join("f2"));
    mkfifo(&f1);
    mkfifo(&f2);
    // Each write waits until the test saw the one before, so the order is well defined.
    let spec = CommandSpec::shell(
        "echo a; read x < f1; echo b >&2; read x < f2; echo c",
        dir.path(),
    );
    let (_proc, mut events) = process::spawn_with_events(spec).unwrap();
    let mut seen = Vec::new();
    for fifo in [Some(&f1), Some(&f2), None] {
        match within(events.next()).await.unwrap() {
            OutputEvent::Output(p) => seen.push(p),
            other => panic!("{other:?}"),
        }
        if let Some(fifo) = fifo {
            release(fifo).await;
        }
    }
    let piece = |stream, text: &str| Piece {
        stream,
        text: text.into(),
    };
    assert_eq!(
        seen,
        vec![
            piece(Stream::Stdout, "a\n"),
            piece(Stream::Stderr, "b\n"),
            piece(Stream::Stdout, "c\n")
        ]
    );
    assert!(matches!(
        within(events.next()).await,
        Some(OutputEvent::Exit(_))
    ));
}

#[tokio::test]
async fn a_character_split_between_reads_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f");
    mkfifo(&fifo);
    // The euro sign's first two bytes, a pause the reader certainly sees, then its last byte.
    let spec = CommandSpec::shell(
        r"printf '\342\202'; read x < f; printf '\254!\n'",
        dir.path(),
    );
    let (_proc, mut events) = process::spawn_with_events(spec).unwrap();
    release(&fifo).await;
    let got = all_events(&mut events).await;
    assert_eq!(text(&got), "€!\n");
}

#[tokio::test]
async fn a_background_child_neither_outlives_the_command_nor_keeps_it_open() {
    let dir = tempfile::tempdir().unwrap();
    // The background `sleep` inherits stdout: without the group kill at the end, the pipe
    // would stay open for 300 s and no exit would come.
    let spec = CommandSpec::shell("sleep 300 & echo $!", dir.path());
    let (proc, mut events) = process::spawn_with_events(spec).unwrap();
    let child = first_pid(&mut events).await;
    let rest = all_events(&mut events).await;
    assert!(
        matches!(rest.last(), Some(OutputEvent::Exit(s)) if s.code == Some(0)),
        "{rest:?}"
    );
    until_gone(child).await;
    assert_eq!(within(proc.wait_for_exit()).await.code, Some(0));
}

#[tokio::test]
async fn kill_ends_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CommandSpec::shell("sleep 300 & echo $!; wait", dir.path());
    let (proc, mut events) = process::spawn_with_events(spec).unwrap();
    let child = first_pid(&mut events).await;
    assert!(!gone(child));
    let killer = proc.killer();
    assert!(killer.kill());
    let rest = all_events(&mut events).await;
    assert!(
        matches!(rest.last(), Some(OutputEvent::Exit(s)) if s.signal == Some(9)),
        "{rest:?}"
    );
    until_gone(child).await;
    assert_eq!(proc.exit_status().unwrap().signal, Some(9));
}

#[tokio::test]
async fn dropping_the_process_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let spec = CommandSpec::shell("sleep 300 & echo $!; wait", dir.path());
    let (proc, mut events) = process::spawn_with_events(spec).unwrap();
    let child = first_pid(&mut events).await;
    let leader = proc.group().pgid;
    assert!(proc.group().start.is_some());
    drop(proc);
    until_gone(child).await;
    until_gone(leader).await;
    assert!(matches!(
        all_events(&mut events).await.last(),
        Some(OutputEvent::Exit(s)) if s.signal == Some(9)
    ));
}

#[tokio::test]
async fn release_kills_too() {
    let dir = tempfile::tempdir().unwrap();
    let (proc, mut events) =
        process::spawn_with_events(CommandSpec::shell("echo $$; exec sleep 300", dir.path()))
            .unwrap();
    let pid = first_pid(&mut events).await;
    proc.release();
    until_gone(pid).await;
}

fn seq_output(n: u32) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

#[tokio::test]
async fn head_and_tail_keep_both_ends_of_real_output() {
    let dir = tempfile::tempdir().unwrap();
    let full = seq_output(100_000);
    let spec = CommandSpec::shell("seq 1 100000", dir.path()).bound(Bound::head_and_tail(10_000));
    let (proc, mut events) = process::spawn_with_events(spec).unwrap();
    let got = all_events(&mut events).await;
    let marker_at = got
        .iter()
        .position(|e| matches!(e, OutputEvent::Truncated { .. }))
        .expect("a marker between head and tail");
    let OutputEvent::Truncated { dropped_bytes } = got[marker_at] else {
        unreachable!()
    };
    let head = text(&got[..marker_at]);
    let tail = text(&got[marker_at..]);
    assert_eq!(head.len(), 5_000);
    assert_eq!(tail.len(), 5_000);
    assert!(full.starts_with(&head));
    assert!(full.ends_with(&tail));
    assert!(tail.ends_with("\n99999\n100000\n"));
    assert_eq!(dropped_bytes as usize, full.len() - 10_000);
    // The snapshot says the same, with the marker between.
    let snap = proc.snapshot();
    assert_eq!(
        snap.text(),
        format!("{head}{}{tail}", process::marker(dropped_bytes))
    );
    assert_eq!(snap.exit.unwrap().code, Some(0));
}

#[tokio::test]
async fn tail_only_keeps_the_end_as_acp_asks() {
    let dir = tempfile::tempdir().unwrap();
    let full = seq_output(100_000);
    let spec = CommandSpec::shell("seq 1 100000", dir.path()).bound(Bound::Tail { limit: 1000 });
    let proc = process::spawn(spec).unwrap();
    let exit = within(proc.wait_for_exit()).await;
    assert_eq!(exit.code, Some(0));
    let snap = proc.snapshot();
    assert!(snap.truncated());
    assert!(snap.head.is_empty());
    let out = snap.text();
    assert_eq!(out.len(), 1000);
    assert!(full.ends_with(&out));
    assert_eq!(snap.dropped_bytes as usize, full.len() - 1000);
    // Waiting again returns at once with the same answer.
    assert_eq!(within(proc.wait_for_exit()).await, exit);
}

#[tokio::test]
async fn a_missing_directory_is_a_clear_error() {
    let err = process::spawn(CommandSpec::shell("true", "/nonexistent/ax-code-test")).unwrap_err();
    assert!(err.to_string().starts_with("cannot start sh:"), "{err}");
}

/// With the clock paused, tokio moves time forward only to the next armed timer whenever
/// everything waits. A reader that polled with sleeps would race the clock far ahead while
/// the real command runs for a second; one that waits on the process and its pipes arms no
/// timer until the command exits (then only the drain bound).
#[tokio::test(start_paused = true)]
async fn waiting_does_not_poll() {
    let dir = tempfile::tempdir().unwrap();
    let started_real = Instant::now();
    let started_virtual = tokio::time::Instant::now();
    let proc = process::spawn(CommandSpec::shell("sleep 1; echo done", dir.path())).unwrap();
    let exit = proc.wait_for_exit().await;
    assert_eq!(exit.code, Some(0));
    assert_eq!(proc.snapshot().text(), "done\n");
    assert!(started_real.elapsed() >= Duration::from_secs(1));
    let virtual_elapsed = started_virtual.elapsed();
    assert!(
        virtual_elapsed <= process::DRAIN_TIMEOUT,
        "the paused clock moved {virtual_elapsed:?}: something waits by sleeping"
    );
}

/// The child side of `secrets_in_the_parent_never_reach_the_child`: prints the environment a
/// started command sees.
const PROBE: &str = "AX_AGENTS_ENV_PROBE";

#[tokio::test]
async fn secrets_in_the_parent_never_reach_the_child() {
    if std::env::var_os(PROBE).is_some() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CommandSpec::shell("env", dir.path()).env("EXTRA_GIVEN", "yes");
        let proc = process::spawn(spec).unwrap();
        proc.wait_for_exit().await;
        println!("<<<{}>>>", proc.snapshot().text());
        return;
    }
    // Run this test again in a child process whose environment holds secrets.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "secrets_in_the_parent_never_reach_the_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE, "1")
        .env("AX_CODE_SERVER_PASSWORD", "hunter2-backend-credential")
        .env("OPENAI_API_KEY", "sk-secret-value")
        .env("SOME_TOKEN", "tok-secret-value")
        .env("LC_ALL", "C")
        .env("XDG_CONFIG_HOME", "/tmp/xdg-probe")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (_, rest) = stdout.split_once("<<<").expect("probe output");
    let (env, _) = rest.split_once(">>>").unwrap();
    for secret in ["hunter2", "sk-secret", "tok-secret", PROBE] {
        assert!(!env.contains(secret), "{secret} leaked: {env}");
    }
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    for kept in ["PATH", "LC_ALL", "XDG_CONFIG_HOME", "EXTRA_GIVEN"] {
        assert!(names.contains(&kept), "{kept} missing: {env}");
    }
    for name in &names {
        assert!(
            [
                "PATH",
                "HOME",
                "USER",
                "LOGNAME",
                "SHELL",
                "LANG",
                "TERM",
                "TMPDIR",
                "EXTRA_GIVEN",
                "PWD",
                "SHLVL",
                "OLDPWD",
                "_"
            ]
            .contains(name)
                || name.starts_with("LC_")
                || name.starts_with("XDG_"),
            "{name} is not on the allowlist: {env}"
        );
    }
}

/// A bare program name is found on the child's own `PATH` (an extra `PATH` wins over the
/// inherited one), and a script without `#!` still runs through `/bin/sh` as `execvp` runs
/// it.
#[tokio::test]
async fn a_bare_name_runs_from_the_childs_path_as_exec_would() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let path = bin.path().join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("with-shebang", "#!/bin/sh\necho \"shebang $*\"\n");
    write("without-shebang", "echo \"plain $*\"\n");
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    for (program, want) in [
        ("with-shebang", "shebang a b\n"),
        ("without-shebang", "plain a b\n"),
    ] {
        let spec = CommandSpec::new(program, bin.path())
            .args(["a", "b"])
            .env("PATH", &path);
        let (proc, mut events) = process::spawn_with_events(spec).unwrap();
        let got = within(all_events(&mut events)).await;
        assert_eq!(proc.wait_for_exit().await.code, Some(0), "{program}");
        assert_eq!(text(&got), want, "{program}");
    }
    // Not on the inherited PATH, so only the extra one can find it.
    let missing = process::spawn(CommandSpec::new("with-shebang", bin.path())).unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("cannot start with-shebang:"),
        "{missing}"
    );
}
