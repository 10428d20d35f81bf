//! Commands under a pseudo-terminal, against real processes: colours pass through, input
//! reaches the command, a resize is what `stty size` reports, Ctrl-C interrupts (the terminal
//! is the controlling one), kills reach every job of the session, and the environment is the
//! allowlist.

use std::time::Duration;

use ax_agents::process::{
    CommandSpec,
    pty::{self, PtyEvent, PtyEvents, PtyProcess, TermSize},
};

const WAIT: Duration = Duration::from_secs(20);
const SIZE: TermSize = TermSize { cols: 80, rows: 24 };

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

fn pgrp_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn start(line: &str) -> (PtyProcess, PtyEvents, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (proc, events) = pty::spawn_pty(CommandSpec::shell(line, dir.path()), SIZE).unwrap();
    (proc, events, dir)
}

/// Reads output into `seen` until it contains `needle`.
async fn until(events: &mut PtyEvents, seen: &mut String, needle: &str) {
    within(async {
        while !seen.contains(needle) {
            match events.next().await {
                Some(PtyEvent::Output(text)) => seen.push_str(&text),
                other => panic!("ended before {needle:?}: {other:?}; output {seen:?}"),
            }
        }
    })
    .await;
}

/// Reads to the end; the output and the exit.
async fn to_end(events: &mut PtyEvents) -> (String, ax_agents::process::ExitStatus) {
    let mut seen = String::new();
    within(async {
        loop {
            match events.next().await {
                Some(PtyEvent::Output(text)) => seen.push_str(&text),
                Some(PtyEvent::Exit(status)) => return (seen, status),
                None => panic!("no exit event; output {seen:?}"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn colours_pass_through_and_the_command_sees_a_terminal() {
    let (_proc, mut events, _dir) =
        start(r"printf '\033[31mred\033[0m \033[38;5;208mo\033[0m\n'; test -t 0 && echo tty-yes");
    let (out, status) = to_end(&mut events).await;
    assert!(out.contains("\x1b[31mred\x1b[0m"), "{out:?}");
    assert!(out.contains("\x1b[38;5;208mo"), "{out:?}");
    assert!(out.contains("tty-yes"), "{out:?}");
    assert_eq!(status.code, Some(0));
}

#[tokio::test]
async fn input_reaches_the_command() {
    let (proc, mut events, _dir) = start("echo ready; read line; echo \"got:$line\"");
    let mut seen = String::new();
    until(&mut events, &mut seen, "ready").await;
    proc.write(b"hello there\r".to_vec()).unwrap();
    let (rest, status) = to_end(&mut events).await;
    assert!(rest.contains("got:hello there"), "{rest:?}");
    assert_eq!(status.code, Some(0));
    // Input after the end is refused, not queued for nobody.
    assert!(proc.write(b"x".to_vec()).is_err());
}

#[tokio::test]
async fn stty_size_reports_the_resize() {
    let (proc, mut events, _dir) = start("stty size; read _; stty size");
    let mut seen = String::new();
    until(&mut events, &mut seen, "24 80").await;
    proc.resize(TermSize {
        cols: 132,
        rows: 43,
    })
    .unwrap();
    proc.write(b"\r".to_vec()).unwrap();
    let (rest, _) = to_end(&mut events).await;
    assert!(rest.contains("43 132"), "{rest:?}");
}

#[tokio::test]
async fn ctrl_c_interrupts_the_foreground_command() {
    let (proc, mut events, _dir) =
        start("trap 'echo interrupted; exit 7' INT; echo ready; while :; do sleep 0.05; done");
    let mut seen = String::new();
    until(&mut events, &mut seen, "ready").await;
    proc.write(vec![0x03]).unwrap();
    let (rest, status) = to_end(&mut events).await;
    assert!(rest.contains("interrupted"), "{rest:?}");
    assert_eq!(status.code, Some(7));
}

#[tokio::test]
async fn kill_reaches_every_job_of_the_session() {
    // `set -m`: job control, so the background job gets a process group of its own, as in an
    // interactive shell; killing only the shell's group would leave it running.
    let (proc, mut events, _dir) = start("set -m; sleep 300 & echo \"bg:$!\"; wait");
    let mut seen = String::new();
    until(&mut events, &mut seen, "\n").await;
    let bg: u32 = seen
        .split("bg:")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    let leader = proc.group().pgid;
    assert_ne!(
        pgrp_of(bg),
        leader,
        "the job should lead a group of its own"
    );
    assert!(proc.kill());
    let (_, status) = to_end(&mut events).await;
    assert_eq!(status.signal, Some(9));
    within(async {
        while !(gone(bg) && gone(leader)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn dropping_the_handle_kills_the_session() {
    let (proc, mut events, _dir) = start("echo up; sleep 300");
    let mut seen = String::new();
    until(&mut events, &mut seen, "up").await;
    let leader = proc.group().pgid;
    drop(proc);
    let (_, status) = to_end(&mut events).await;
    assert_eq!(status.signal, Some(9));
    assert!(gone(leader));
}

#[tokio::test]
async fn a_missing_directory_is_an_error_not_the_home_directory() {
    let err = pty::spawn_pty(CommandSpec::shell("pwd", "/no/such/dir/ax"), SIZE).unwrap_err();
    assert!(err.to_string().contains("no such directory"), "{err}");
}

const PROBE: &str = "AX_AGENTS_PTY_ENV_PROBE";

#[tokio::test]
async fn secrets_in_the_parent_never_reach_the_terminal() {
    if std::env::var_os(PROBE).is_some() {
        let (_proc, mut events, _dir) = start("env");
        let (out, _) = to_end(&mut events).await;
        println!("<<<{out}>>>");
        return;
    }
    // Run this test again in a child process whose environment holds secrets.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "secrets_in_the_parent_never_reach_the_terminal",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE, "1")
        .env("AX_CODE_SERVER_PASSWORD", "hunter2-backend-credential")
        .env("OPENAI_API_KEY", "sk-secret-value")
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (_, rest) = stdout.split_once("<<<").expect("probe output");
    let (env, _) = rest.split_once(">>>").unwrap();
    for secret in ["hunter2", "sk-secret", PROBE] {
        assert!(!env.contains(secret), "{secret} leaked: {env}");
    }
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        .collect();
    assert!(
        names.contains(&"PATH") && names.contains(&"LC_ALL"),
        "{env}"
    );
    for name in &names {
        assert!(
            [
                "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "PWD",
                "SHLVL", "OLDPWD", "_"
            ]
            .contains(name)
                || name.starts_with("LC_")
                || name.starts_with("XDG_"),
            "{name} is not on the allowlist: {env}"
        );
    }
}
