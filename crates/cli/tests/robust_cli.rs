//! Everyday robustness of the `ax-code` binary without a terminal: managing sessions from the
//! command line, the project root, one backend per project, a concurrent first start, SIGHUP,
//! and error messages that say what is wrong (once).

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};

use support::*;

fn run_in(env: &Env, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = env.command(args);
    cmd.current_dir(cwd);
    output_bounded(&mut cmd, WAIT)
}

fn stdout_ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr_failed(o: &Output) -> String {
    assert!(!o.status.success(), "expected a failure: {o:?}");
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The session IDs `session list` prints, in order.
fn listed(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// A project that is a git work tree, with a subdirectory two levels down.
fn git_project(env: &Env) -> std::path::PathBuf {
    std::fs::create_dir(env.project.join(".git")).unwrap();
    let sub = env.project.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    sub
}

#[test]
fn sessions_are_managed_from_a_subdirectory_of_the_project() {
    let env = Env::new();
    let sub = git_project(&env);
    let _serve = Serve::start(&env, 0, None);

    // From the subdirectory, the commands find the project's running backend.
    let a = stdout_ok(&run_in(
        &env,
        &sub,
        &["session", "create", "--title", "alpha"],
    ));
    let b = stdout_ok(&run_in(
        &env,
        &sub,
        &["session", "create", "--title", "beta"],
    ));
    let (a, b) = (a.trim(), b.trim());
    let list = stdout_ok(&run_in(&env, &sub, &["session", "list"]));
    assert_eq!(listed(&list), vec![b, a], "most recent first:\n{list}");

    // Renaming is activity: the renamed session moves to the top.
    let renamed = stdout_ok(&run_in(&env, &sub, &["session", "rename", a, "alpha two"]));
    assert!(renamed.contains("alpha two"), "{renamed}");
    let list = stdout_ok(&run_in(&env, &sub, &["session", "list"]));
    assert_eq!(listed(&list), vec![a, b], "{list}");
    assert!(
        list.lines().next().unwrap().ends_with("alpha two"),
        "{list}"
    );

    let deleted = stdout_ok(&run_in(&env, &sub, &["session", "delete", b]));
    assert!(deleted.contains(b), "{deleted}");
    let list = stdout_ok(&run_in(&env, &sub, &["session", "list"]));
    assert_eq!(listed(&list), vec![a], "{list}");

    // Unknown and malformed IDs say so.
    let unknown = "ses_0123456789abABCDEFGHIJKLMN";
    let err = stderr_failed(&run_in(&env, &sub, &["session", "delete", unknown]));
    assert!(err.contains("404") && err.contains(unknown), "{err}");
    let err = stderr_failed(&run_in(&env, &sub, &["session", "rename", "nope", "x"]));
    assert!(err.contains("not a session ID"), "{err}");

    stdout_ok(&run_in(&env, &sub, &["session", "delete", a]));
    let empty = run_in(&env, &sub, &["session", "list"]);
    assert!(stdout_ok(&empty).is_empty());
    let said = String::from_utf8_lossy(&empty.stderr);
    assert!(
        said.contains("no sessions yet") && said.contains(&env.project.display().to_string()),
        "names the project used: {said}"
    );
}

#[test]
fn the_offline_list_uses_the_project_root_too() {
    let env = Env::new();
    let sub = git_project(&env);
    let mut serve = Serve::start(&env, 0, None);
    let id = stdout_ok(&run_in(
        &env,
        &env.project,
        &["session", "create", "--title", "kept"],
    ));
    signal(serve.pid(), "TERM");
    wait_child(&mut serve.child);
    let list = stdout_ok(&run_in(&env, &sub, &["session", "list"]));
    assert_eq!(listed(&list), vec![id.trim()], "{list}");
    // A directory outside any work tree is its own project, and the message names it.
    let outside = tempfile::tempdir().unwrap();
    let out = run_in(&env, outside.path(), &["session", "list"]);
    assert!(stdout_ok(&out).is_empty());
    let said = String::from_utf8_lossy(&out.stderr);
    let canonical = std::fs::canonicalize(outside.path()).unwrap();
    assert!(said.contains(&canonical.display().to_string()), "{said}");
}

#[test]
fn a_second_serve_for_the_project_is_refused_naming_the_first() {
    let env = Env::new();
    let sub = git_project(&env);
    let serve = Serve::start(&env, 0, None);
    // Started from a subdirectory: the same project.
    let mut cmd = env.command(&["serve", "--port", "0"]);
    cmd.current_dir(&sub);
    let err = stderr_failed(&output_bounded(&mut cmd, WAIT));
    assert!(
        err.contains(&serve.url) && err.contains(&format!("pid {}", serve.pid())),
        "names the running backend: {err}"
    );
    assert!(err.contains("ax-code attach"), "{err}");
}

#[test]
fn two_serves_starting_at_once_on_a_fresh_data_directory_both_run() {
    for round in 0..4 {
        let env = Env::new();
        let other = env.home.join(format!("other-{round}"));
        std::fs::create_dir(&other).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let starts: Vec<_> = [env.project.clone(), other]
            .into_iter()
            .map(|dir| {
                let mut cmd = env.command(&["serve", "--port", "0"]);
                cmd.current_dir(dir)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut child = cmd.spawn().unwrap();
                    let lines = line_channel(child.stdout.take().unwrap());
                    let errors = line_channel(child.stderr.take().unwrap());
                    let first = lines.recv_timeout(WAIT);
                    let _ = child.kill();
                    let _ = child.wait();
                    let errors: Vec<String> = errors.try_iter().collect();
                    (first.ok(), errors)
                })
            })
            .collect();
        for s in starts {
            let (first, errors) = s.join().unwrap();
            assert!(
                first.as_deref().is_some_and(|l| l.contains("listening on")),
                "a serve failed to start: {errors:?}"
            );
        }
    }
}

#[test]
fn sighup_shuts_serve_down_like_sigterm() {
    let env = Env::new();
    let mut serve = Serve::start(&env, 0, None);
    let (url, token) = env.registered_backend();
    let pidfile = env.project.join("cmd.pid");
    let rt = runtime();
    rt.block_on(async {
        let client = ax_client::Client::new(&url, &token).unwrap();
        let id = client.create_session(None).await.unwrap().id;
        let accepted = client
            .prompt_text(&id, "echo $$ > cmd.pid; exec sleep 300")
            .await
            .unwrap();
        client
            .reply_permission(
                &id,
                &accepted.permission.unwrap().id,
                ax_protocol::PermissionReply::Once,
            )
            .await
            .unwrap();
    });
    eventually("the command runs", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let command: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(command));

    signal(serve.pid(), "HUP");
    let status = wait_child(&mut serve.child);
    assert!(
        status.success(),
        "a clean exit, not killed by SIGHUP: {status:?}"
    );
    eventually("the command's group is killed", || process_gone(command));
    for dir in ["servers", "credentials"] {
        let left: Vec<_> = std::fs::read_dir(env.data.join(dir))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{dir}/ left behind: {left:?}");
    }
}

#[test]
fn errors_say_what_is_wrong_once() {
    let env = Env::new();
    let ax = |args: &[&str]| stderr_failed(&output_bounded(&mut env.command(args), WAIT));

    let err = ax(&["attach", "notaurl"]);
    assert!(err.contains("not a backend URL"), "{err}");
    assert!(!err.contains("credential"), "{err}");
    let err = ax(&["attach", "localhost:4722"]);
    assert!(err.contains("did you mean http://localhost:4722"), "{err}");
    assert!(!err.contains("credential"), "{err}");

    // A port where nothing listens (bound, then freed).
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let url = format!("http://127.0.0.1:{port}");
    for args in [
        vec!["attach", url.as_str()],
        vec!["session", "list", "--url", url.as_str()],
    ] {
        let err = ax(&args);
        assert!(err.contains("nothing answers at"), "{args:?}: {err}");
        assert!(!err.contains("no credential"), "{args:?}: {err}");
    }

    // Port in use: said once, with the way out.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let err = ax(&["serve", "--port", &port]);
    assert!(err.contains("--port 0"), "{err}");
    assert_eq!(err.matches("in use").count(), 1, "{err}");
    assert!(!err.contains("os error 98"), "{err}");

    let file = env.home.join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let err = ax(&["serve", "--port", "0", "--dir", file.to_str().unwrap()]);
    assert_eq!(err.matches("not a directory").count(), 1, "{err}");
}

#[test]
fn every_subcommand_describes_every_argument() {
    let commands: &[&[&str]] = &[
        &[],
        &["serve"],
        &["attach"],
        &["mcp"],
        &["mcp", "tui"],
        &["mcp", "screen"],
        &["session"],
        &["session", "list"],
        &["session", "create"],
        &["session", "rename"],
        &["session", "delete"],
    ];
    for args in commands {
        let mut cmd = Command::new(AX);
        cmd.args(*args).arg("--help").env("COLUMNS", "200");
        let out = output_bounded(&mut cmd, WAIT);
        let help = stdout_ok(&out);
        let mut in_list = false;
        let mut entries = 0;
        for line in help.lines() {
            if ["Arguments:", "Options:", "Commands:"].contains(&line) {
                in_list = true;
                continue;
            }
            if line.trim().is_empty() || !line.starts_with("  ") {
                in_list = false;
                continue;
            }
            if in_list {
                entries += 1;
                // `  --flag <VALUE>  Description`: two spaces then text after the name.
                let body = line.trim_start();
                let described = body
                    .split_once("  ")
                    .is_some_and(|(_, text)| !text.trim().is_empty());
                assert!(
                    described,
                    "`ax-code {}`: no description for {line:?}",
                    args.join(" ")
                );
            }
        }
        assert!(entries > 0, "{help}");
    }
}
