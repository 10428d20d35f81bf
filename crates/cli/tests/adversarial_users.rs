//! Other OS users (SECURITY.md: "other OS users"): a live `ax-code --tui-mcp` in a PTY (with
//! its embedded backend), an `ax-code serve` and an `ax-code mcp tui` adapter run as the
//! person (root here); a second user, created for the test, probes them with
//! `setpriv --reuid/--regid --clear-groups`:
//! - it can read none of `endpoint.json`, the credential file, the `servers/` registry, the
//!   database or the processes' environments, nor list the private directories;
//! - it cannot connect to the TUIMCP socket (and if it could, the peer uid check refuses it:
//!   crates/tuimcp/tests/it/endpoint.rs `a_peer_with_another_uid_is_refused`);
//! - the backends' HTTP APIs answer it 401 without the credential, never with a secret;
//! - `ax-code session list|create` run as that user with the person's data directory fails
//!   and prints no token and no session title;
//! - the process listing (`ps -eo args`) shows no secret.
//!
//! Every directory the test itself creates is opened up (0755, the temp root 1777 like /tmp),
//! so only the modes ax-code sets stand between the two users. Needs root to switch users:
//! skipped with a printed reason otherwise.

mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::*;

const USER: &str = "axtestuser";
const TITLE: &str = "victim-private-title";

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn id_of(flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, USER]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The second user's (uid, gid), created if absent (a concurrent creation is fine).
fn other_user() -> (u32, u32) {
    if id_of("-u").is_none() {
        let status = Command::new("useradd")
            .args(["-M", "-s", "/usr/sbin/nologin", USER])
            .status()
            .expect("useradd");
        // 9: the user exists (created meanwhile).
        assert!(
            status.success() || status.code() == Some(9),
            "useradd {USER} failed: {status}"
        );
    }
    let uid = id_of("-u").expect("the test user exists");
    let gid = id_of("-g").expect("the test user has a group");
    assert_ne!(uid, 0);
    (uid, gid)
}

/// Runs `program args` as the other user, no supplementary groups, a bare environment,
/// `stdin` on its standard input; bounded.
fn as_user(user: (u32, u32), cwd: &Path, program: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("setpriv")
        .arg(format!("--reuid={}", user.0))
        .arg(format!("--regid={}", user.1))
        .arg("--clear-groups")
        .arg(program)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setpriv");
    let watchdog = Watchdog::new(child.id(), WAIT);
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    drop(watchdog);
    out
}

/// Python (standard library only) run as the other user: tries each probe and reports
/// what happened as JSON. It gets no secret: only paths and URLs.
const PROBE: &str = r#"
import errno, json, os, socket, sys, urllib.request, urllib.error
plan = json.load(sys.stdin)
out = {"read": {}, "list": {}, "connect": {}, "http": []}
def err(e):
    return "err:" + (errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__)
for p in plan["read"]:
    try:
        with open(p, "rb") as f:
            out["read"][p] = "ok:" + f.read(4096).decode("utf-8", "replace")
    except OSError as e:
        out["read"][p] = err(e)
for p in plan["list"]:
    try:
        out["list"][p] = "ok:" + ",".join(sorted(os.listdir(p)))
    except OSError as e:
        out["list"][p] = err(e)
for p in plan["connect"]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(p)
        out["connect"][p] = "connected"
    except OSError as e:
        out["connect"][p] = err(e)
    finally:
        s.close()
for h in plan["http"]:
    data = h["body"].encode() if h.get("body") is not None else None
    req = urllib.request.Request(h["url"], data=data, method=h["method"])
    for k, v in h.get("headers", {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            out["http"].append({"req": h, "status": r.status, "body": r.read(2048).decode("utf-8", "replace")})
    except urllib.error.HTTPError as e:
        out["http"].append({"req": h, "status": e.code, "body": e.read(2048).decode("utf-8", "replace")})
    except OSError as e:
        out["http"].append({"req": h, "status": 0, "body": err(e)})
print(json.dumps(out))
"#;

fn python3() -> &'static str {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("python3 is needed to probe as another user: apt-get install python3")
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn assert_no_secret(what: &str, text: &str, secrets: &BTreeSet<String>) {
    for s in secrets {
        assert!(!text.contains(s.as_str()), "{what} shows a secret: {text}");
    }
}

#[test]
fn another_os_user_can_reach_no_secret_no_socket_and_no_api() {
    if !is_root() {
        println!("skipped: needs root to create a second OS user and run probes as it");
        return;
    }
    let user = other_user();
    let python = python3();
    let env = Env::open_to_all();

    // The person's processes: a headless backend, a shared TUI with its embedded backend,
    // and an MCP adapter for that TUI.
    let (serve, serve_url, serve_token) = {
        let mut cmd = env.command(&["serve", "--port", "0"]);
        cmd.stderr(Stdio::null());
        let (child, url, token) = spawn_control_ui(cmd, &mut Vec::new(), None);
        (Reaped(child), url, token)
    };
    // Another project (one backend per project: in serve's, the TUI would attach to it).
    let tui_project = env.project.join("tui-project");
    std::fs::create_dir(&tui_project).unwrap();
    chmod(&tui_project, 0o755);
    let tui = Pty::spawn_sized(
        &env,
        &["--tui-mcp", tui_project.to_str().unwrap()],
        None,
        36,
        160,
    );
    let endpoint = tui.endpoint_path();
    tui.wait_text("● connected");
    let endpoint_dir = endpoint.parent().unwrap().to_owned();
    let socket = std::fs::read_dir(&endpoint_dir)
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.file_type().unwrap().is_socket())
        .expect("the TUIMCP socket beside endpoint.json")
        .path();
    let adapter = Reaped(
        env.command(&["mcp", "tui", "--endpoint", endpoint.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out = env
        .command(&["session", "create", "--title", TITLE, "--url", &serve_url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // What there is to protect, read as the person.
    let servers = json_files(&env.data.join("servers"));
    let credentials = json_files(&env.data.join("credentials"));
    assert!(servers.len() >= 2, "both backends registered: {servers:?}");
    assert_eq!(credentials.len(), 1, "serve wrote its credential file");
    let mut secrets = BTreeSet::from([serve_token.clone()]);
    let endpoint_json: Value = serde_json::from_slice(&std::fs::read(&endpoint).unwrap()).unwrap();
    secrets.insert(endpoint_json["token"].as_str().unwrap().to_owned());
    let mut urls = BTreeSet::from([serve_url.clone()]);
    for f in servers.iter().chain(&credentials) {
        let record: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        secrets.insert(record["token"].as_str().unwrap().to_owned());
        urls.insert(record["url"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        secrets.len(),
        3,
        "serve, embedded backend and endpoint tokens"
    );
    assert!(urls.len() >= 2, "{urls:?}");

    // The modes ax-code set (the test opened every directory it made itself).
    assert_eq!(mode(&env.data), 0o700, "the data directory was tightened");
    for dir in [
        env.data.join("servers"),
        env.data.join("credentials"),
        endpoint_dir.clone(),
    ] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    let mut private_files = vec![endpoint.clone(), socket.clone()];
    private_files.extend(servers.iter().cloned());
    private_files.extend(credentials.iter().cloned());
    for e in std::fs::read_dir(&env.data).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            private_files.push(p);
        }
    }
    for f in &private_files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }

    // The probes, as the other user. Controls first: a world-readable file is readable and
    // the backends are reachable (`/health` is public), so refusals below mean something.
    let readable = env.project.join("README");
    std::fs::write(&readable, "public").unwrap();
    chmod(&readable, 0o644);
    let proc_environ = |pid: u32| format!("/proc/{pid}/environ");
    let mut read: Vec<String> = private_files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    read.push(proc_environ(serve.0.id()));
    read.push(proc_environ(tui.child.process_id().unwrap()));
    read.push(proc_environ(adapter.0.id()));
    let list =
        [&env.data, &env.data.join("servers"), &endpoint_dir].map(|p| p.display().to_string());
    let mut http = Vec::new();
    for url in &urls {
        http.push(json!({"url": format!("{url}/health"), "method": "GET"}));
        for path in ["/session", "/event", "/project", "/permission"] {
            http.push(json!({"url": format!("{url}{path}"), "method": "GET"}));
        }
        http.push(json!({"url": format!("{url}/session"), "method": "GET",
            "headers": {"Authorization": "Bearer not-the-token-0000000000000000000000"}}));
        http.push(json!({"url": format!("{url}/session"), "method": "POST",
            "headers": {"Content-Type": "application/json"}, "body": "{\"title\":\"intruder\"}"}));
    }
    let plan = json!({
        "read": std::iter::once(readable.display().to_string()).chain(read.clone()).collect::<Vec<_>>(),
        "list": list,
        "connect": [socket.display().to_string()],
        "http": http,
    });
    let out = as_user(
        user,
        Path::new("/"),
        python,
        &["-c", PROBE],
        &plan.to_string(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the probe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_secret("the probe's findings", &stdout, &secrets);
    let found: Value = serde_json::from_str(&stdout).unwrap();
    println!("probe as uid {}: {found:#}", user.0);

    assert_eq!(found["read"][readable.display().to_string()], "ok:public");
    for p in &read {
        assert_eq!(found["read"][p], "err:EACCES", "{p} as another user");
    }
    for p in &list {
        assert_eq!(
            found["list"][p], "err:EACCES",
            "listing {p} as another user"
        );
    }
    assert_eq!(
        found["connect"][socket.display().to_string()],
        "err:EACCES",
        "the TUIMCP socket as another user"
    );
    for answer in found["http"].as_array().unwrap() {
        let url = answer["req"]["url"].as_str().unwrap();
        let want = if url.ends_with("/health") { 200 } else { 401 };
        assert_eq!(answer["status"], want, "{answer}");
        if want == 401 {
            assert!(
                answer["body"]
                    .as_str()
                    .unwrap()
                    .contains("\"unauthorized\""),
                "{answer}"
            );
        }
        assert!(
            !answer["body"].as_str().unwrap().contains(TITLE),
            "{answer}"
        );
    }

    // The ordinary commands as the other user, pointed at the person's data and project.
    let data = env.data.display().to_string();
    let ax_as_user = |args: &[&str]| {
        let assignment = format!("AX_CODE_DATA_DIR={data}");
        let mut argv = vec![assignment.as_str(), AX];
        argv.extend_from_slice(args);
        as_user(user, &env.project, "/usr/bin/env", &argv, "")
    };
    let mut attempts: Vec<Vec<&str>> = vec![
        vec!["session", "list"],
        vec!["session", "list", "--json"],
        vec!["session", "create", "--title", "intruder"],
    ];
    for url in &urls {
        attempts.push(vec!["session", "list", "--url", url]);
        attempts.push(vec![
            "session", "create", "--title", "intruder", "--url", url,
        ]);
    }
    for args in &attempts {
        let out = ax_as_user(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.status.success(),
            "ax-code {args:?} as another user: {text}"
        );
        assert_no_secret(
            &format!("ax-code {args:?} as another user"),
            &text,
            &secrets,
        );
        assert!(
            !text.contains(TITLE),
            "ax-code {args:?} leaks a title: {text}"
        );
        assert!(!text.contains("panicked"), "{text}");
        if args[1] == "list" && args.len() <= 3 {
            // Not "no sessions yet": the person's store exists, this user just may not read it.
            assert!(
                text.contains("cannot read the data directory"),
                "ax-code {args:?} as another user: {text}"
            );
        }
    }

    // The process listing, as the other user and as the person.
    for listing in [
        as_user(user, Path::new("/"), "/usr/bin/ps", &["-eo", "args"], ""),
        Command::new("ps").args(["-eo", "args"]).output().unwrap(),
    ] {
        assert!(listing.status.success());
        let text = String::from_utf8_lossy(&listing.stdout);
        assert!(
            text.contains(&format!("mcp tui --endpoint {}", endpoint.display())),
            "the listing shows our processes"
        );
        assert_no_secret("ps -eo args", &text, &secrets);
    }

    // Control: the person still sees exactly their session, nothing the intruder tried.
    let out = env
        .command(&["session", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains(TITLE), "{listed}");
    assert!(!listed.contains("intruder"), "{listed}");
    drop(adapter);
    drop(tui);
    drop(serve);
}
