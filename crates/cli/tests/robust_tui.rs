//! The real TUI under a PTY: one backend per project (the TUI attaches to a running `serve`),
//! renaming and deleting sessions from the TUI, titles from the first prompt, and `attach`
//! recovering after `serve` restarts with a new generated credential.

mod support;

use support::*;

/// `session list` in the project: its lines.
fn list(env: &Env) -> String {
    env.ax(&["session", "list"], None)
}

#[test]
fn the_tui_attaches_to_the_projects_serve_and_manages_sessions() {
    let env = Env::new();
    std::fs::create_dir(env.project.join(".git")).unwrap();
    let serve = Serve::start(&env, 0, None);
    env.ax(&["session", "create", "--title", "from-serve"], None);

    let mut tui = Pty::spawn(&env, &[], None);
    tui.wait_text("from-serve");
    tui.wait_text("● connected");
    let records = std::fs::read_dir(env.data.join("servers")).unwrap().count();
    assert_eq!(records, 1, "no second (embedded) backend for the project");

    // Rename the selected session from the TUI: serve has it.
    tui.send("/rename renamed in tui\r");
    tui.wait_text("renamed in tui");
    eventually("serve lists the new title", || {
        list(&env).contains("renamed in tui")
    });

    // A session made with Ctrl+N gets its title from its first prompt.
    tui.send("\x0e");
    // It asks which agent, the default preselected: Enter takes it.
    tui.wait_text("which agent?");
    tui.send("\r");
    tui.wait_for("the new session", |s| s.contains("(untitled) ses_"));
    tui.send("echo titled-by-prompt\r");
    tui.wait_text("Approval needed");
    tui.send("n");
    tui.wait_text("echo titled-by-prompt ses_");

    // Delete it, after the confirmation.
    tui.send("/delete\r");
    tui.wait_text("Delete session?");
    tui.send("y");
    tui.wait_for("home without it", |s| {
        s.contains("Sessions (1)") && !s.contains("titled-by-prompt")
    });
    eventually("serve no longer lists it", || {
        !list(&env).contains("titled-by-prompt")
    });

    tui.send("/quit\r");
    assert!(tui.wait_exit().success());
    // Serve still runs and still serves the project.
    assert!(list(&env).contains("renamed in tui"));
    drop(serve);
}

#[test]
fn attach_follows_serve_through_a_restart_with_a_new_credential() {
    let env = Env::new();
    let mut serve = Serve::start(&env, 0, None);
    let (url, port) = (serve.url.clone(), serve.port());
    env.ax(&["session", "create", "--title", "before-restart"], None);
    let mut tui = Pty::spawn(&env, &["attach", &url], None);
    tui.wait_text("before-restart");
    tui.wait_text("● connected");

    signal(serve.pid(), "TERM");
    wait_child(&mut serve.child);
    // While down: the URL and why, on screen.
    tui.wait_for("the URL and the cause", |s| {
        s.contains("reconnecting") && s.contains(&url) && s.contains("cannot reach")
    });

    // A new serve on the same port generates a new credential; the TUI re-reads it.
    let _again = Serve::start(&env, port, None);
    env.ax(&["session", "create", "--title", "after-restart"], None);
    tui.wait_text("after-restart");
    tui.wait_text("● connected");
    tui.send("/quit\r");
    assert!(tui.wait_exit().success());
}

#[test]
fn attach_gives_up_with_a_message_when_nothing_answers() {
    let env = Env::new();
    let mut serve = Serve::start(&env, 0, None);
    let url = serve.url.clone();
    let mut tui = Pty::spawn(&env, &["attach", &url, "--give-up-after", "2"], None);
    tui.wait_text("● connected");
    serve.kill();
    let status = tui.wait_exit();
    assert!(!status.success());
    let screen = tui.screen();
    assert!(
        screen.contains("gave up") && screen.contains(&url),
        "the reason is shown after the terminal is restored:\n{screen}"
    );
}
