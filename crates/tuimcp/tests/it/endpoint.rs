//! The endpoint over real Unix sockets, with a real owner loop (FakeTui) behind it.

use std::{
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
    time::Duration,
};

use ax_tuimcp::{
    Code, Endpoint, EndpointError, EndpointOptions, Identity, Request, Response, Route,
    client::{self, call_with_deadline},
    endpoint_file::{self, EndpointFile, read_endpoint_file},
    fake::FakeOptions,
    protocol::request_frame,
};
use tokio::{io::AsyncWriteExt, net::UnixListener};

use crate::util::{
    call, eventually, fake, raw_exchange, select, sid, socket_of, temp_root, token_of, view,
};

/// The exact bytes the endpoint sends for a rejection.
fn rejected(code: Code) -> Vec<u8> {
    Response::Rejected(code).to_frame()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn options() -> FakeOptions {
    FakeOptions {
        sessions: vec![sid(1), sid(2)],
        ..FakeOptions::default()
    }
}

#[tokio::test]
async fn files_are_private_and_the_capability_is_one_strict_line() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let file = tui.endpoint_path();
    let dir = file.parent().unwrap();
    assert!(file.is_absolute());
    assert_eq!(
        dir.parent().unwrap(),
        std::fs::canonicalize(root.path()).unwrap()
    );
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("ax-tui-") && name.len() == 13, "{name}");
    assert_eq!(mode(dir), 0o700);
    assert_eq!(mode(file), 0o600);
    assert_eq!(mode(&socket_of(file)), 0o600);
    assert!(
        std::fs::symlink_metadata(socket_of(file))
            .unwrap()
            .file_type()
            .is_socket_like()
    );
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(text.matches('\n').count(), 1);
    assert!(text.ends_with('\n'));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert_eq!(value["version"], 1);
    let token = value["token"].as_str().unwrap();
    assert_eq!(token.len(), 64);
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    let (parsed, _) = read_endpoint_file(file).unwrap();
    assert_eq!(parsed.instance_id, tui.identity().instance_id);
    assert_eq!(parsed.generation, tui.identity().generation);
    tui.shutdown().await;
}

trait SocketLike {
    fn is_socket_like(&self) -> bool;
}

impl SocketLike for std::fs::FileType {
    fn is_socket_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.is_socket()
    }
}

#[tokio::test]
async fn close_is_idempotent_and_removes_the_directory() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let dir = tui.endpoint_path().parent().unwrap().to_owned();
    let endpoint = tui.endpoint().clone();
    let (a, b) = tokio::join!(endpoint.close(), tui.endpoint().close());
    let ((), ()) = (a, b);
    assert!(endpoint.is_closed());
    assert!(!dir.exists());
    endpoint.close().await;
    tui.shutdown().await;
}

#[tokio::test]
async fn unauthenticated_callers_learn_only_unauthorized() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let socket = socket_of(tui.endpoint_path());
    let token = token_of(tui.endpoint_path());
    let wrong = "0".repeat(64);
    let oversize = {
        let mut frame = request_frame(&token, &Request::GetViewContext);
        frame.pop();
        frame.extend(std::iter::repeat_n(b' ', 16384));
        frame.push(b'\n');
        frame
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "wrong token",
            request_frame(&wrong, &Request::GetViewContext),
        ),
        (
            "token prefix",
            request_frame(&token[..63], &Request::GetViewContext),
        ),
        ("bad JSON", b"{\"token\": \n".to_vec()),
        ("not an object", b"[1,2]\n".to_vec()),
        (
            "no token",
            b"{\"request\":{\"operation\":\"get_view_context\"}}\n".to_vec(),
        ),
        (
            "token not a string",
            b"{\"token\":1,\"request\":{}}\n".to_vec(),
        ),
        ("not UTF-8", b"{\"token\":\"\xff\xfe\"}\n".to_vec()),
        ("oversize frame, right token", oversize),
        (
            "wrong token, bad request",
            format!("{{\"token\":\"{wrong}\",\"request\":{{\"operation\":\"x\"}},\"y\":1}}\n")
                .into_bytes(),
        ),
    ];
    for (what, bytes) in cases {
        assert_eq!(
            raw_exchange(&socket, &bytes).await,
            rejected(Code::Unauthorized),
            "{what}"
        );
    }
    assert_eq!(tui.navigations(), 0);
    tui.shutdown().await;
}

#[tokio::test]
async fn authenticated_bad_requests_are_invalid_request() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let socket = socket_of(tui.endpoint_path());
    let token = token_of(tui.endpoint_path());
    let v = view(tui.endpoint_path()).await;
    let good = Request::SelectSession(select(&v, &sid(1))).to_value();
    let mut extra_field = good.clone();
    extra_field["extra"] = true.into();
    let mut bad_session = good.clone();
    bad_session["sessionId"] = "ses_short".into();
    let mut negative = good.clone();
    negative["expectedRevision"] = (-1).into();
    let bad_requests = [
        serde_json::json!({"token": token, "request": good, "more": 1}),
        serde_json::json!({"token": token}),
        serde_json::json!({"token": token, "request": extra_field}),
        serde_json::json!({"token": token, "request": bad_session}),
        serde_json::json!({"token": token, "request": negative}),
        serde_json::json!({"token": token, "request": {"operation": "type_text"}}),
    ];
    for body in bad_requests {
        let mut bytes = body.to_string().into_bytes();
        bytes.push(b'\n');
        assert_eq!(
            raw_exchange(&socket, &bytes).await,
            rejected(Code::InvalidRequest),
            "{body}"
        );
    }
    assert_eq!(tui.navigations(), 0);
    tui.shutdown().await;
}

#[tokio::test]
async fn two_frames_or_trailing_bytes_close_without_an_answer() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let socket = socket_of(tui.endpoint_path());
    let token = token_of(tui.endpoint_path());
    let v = view(tui.endpoint_path()).await;
    let select_frame = request_frame(&token, &Request::SelectSession(select(&v, &sid(1))));
    let view_frame = request_frame(&token, &Request::GetViewContext);
    for (first, tail) in [
        (&select_frame, &view_frame[..]),
        (&select_frame, &b"x"[..]),
        (&view_frame, &b"\n"[..]),
    ] {
        let mut bytes = first.clone();
        bytes.extend_from_slice(tail);
        assert_eq!(raw_exchange(&socket, &bytes).await, b"");
    }
    // A settle round trip: the owner takes requests in order and finishes a running
    // validation before the next request, so a select that got through would show by now.
    assert_eq!(view(tui.endpoint_path()).await, v);
    assert_eq!(tui.validations_started(), 0);
    assert_eq!(tui.navigations(), 0);
    tui.shutdown().await;
}

#[tokio::test]
async fn select_session_end_to_end() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let path = tui.endpoint_path_buf();
    let v = view(&path).await;
    assert_eq!(v.route, Route::Home);
    assert!(v.ready && !v.blocked);
    let args = select(&v, &sid(1));
    let applied = call(&path, &Request::SelectSession(args.clone())).await;
    let Response::Applied(after) = &applied else {
        panic!("applied expected, got {applied:?}")
    };
    assert_eq!(after.session_id, Some(sid(1)));
    assert_eq!(tui.navigations(), 1);
    // The same request again: the original receipt, verbatim; no second navigation.
    assert_eq!(call(&path, &Request::SelectSession(args)).await, applied);
    let now = view(&path).await;
    assert_eq!(now.session_id, Some(sid(1)));
    // An unknown session.
    let missing = call(&path, &Request::SelectSession(select(&now, &sid(77)))).await;
    assert_eq!(missing, Response::Rejected(Code::TargetUnavailable));
    // Human input: user_active, and the revision moved.
    tui.human_input();
    let mut fresh = view(&path).await;
    for _ in 0..100 {
        if fresh.blocked {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        fresh = view(&path).await;
    }
    assert!(fresh.blocked);
    assert_eq!(fresh.revision, now.revision + 1);
    let stale = call(&path, &Request::SelectSession(select(&now, &sid(2)))).await;
    assert_eq!(stale, Response::Rejected(Code::StaleRevision));
    let active = call(&path, &Request::SelectSession(select(&fresh, &sid(2)))).await;
    assert_eq!(active, Response::Rejected(Code::UserActive));
    assert_eq!(tui.navigations(), 1);
    tui.shutdown().await;
}

#[tokio::test]
async fn two_live_endpoints_never_cross() {
    let root = temp_root();
    let a = fake(options(), root.path()).await;
    let b = fake(options(), root.path()).await;
    assert_ne!(a.endpoint_path(), b.endpoint_path());
    assert_ne!(token_of(a.endpoint_path()), token_of(b.endpoint_path()));
    let va = view(a.endpoint_path()).await;
    let vb = view(b.endpoint_path()).await;
    assert_ne!(va.instance_id, vb.instance_id);
    let crossed = call(
        b.endpoint_path(),
        &Request::SelectSession(select(&va, &sid(1))),
    )
    .await;
    assert_eq!(crossed, Response::Rejected(Code::StaleTarget));
    // A's token does not open B.
    let frame = request_frame(&token_of(a.endpoint_path()), &Request::GetViewContext);
    assert_eq!(
        raw_exchange(&socket_of(b.endpoint_path()), &frame).await,
        rejected(Code::Unauthorized)
    );
    assert_eq!(a.navigations() + b.navigations(), 0);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn close_during_validation_is_timeout_unknown_and_never_navigates() {
    let root = temp_root();
    let mut opts = options();
    opts.gate_validations = true;
    let tui = fake(opts, root.path()).await;
    let path = tui.endpoint_path_buf();
    let v = view(&path).await;
    let pending = tokio::spawn({
        let path = path.clone();
        async move { call(&path, &Request::SelectSession(select(&v, &sid(1)))).await }
    });
    eventually("validation started", || tui.validations_started() == 1).await;
    tui.endpoint().close().await;
    // The validation finishes right after the close: it must be fenced all the same.
    tui.release_validations(10);
    let answer = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, Response::Rejected(Code::TimeoutUnknown));
    eventually("the validation is decided", || {
        tui.validations_settled() == 1
    })
    .await;
    assert_eq!(tui.navigations(), 0);
    assert!(!path.parent().unwrap().exists());
    tui.shutdown().await;
}

#[tokio::test]
async fn revoke_during_validation_answers_revoked_and_never_navigates() {
    let root = temp_root();
    let mut opts = options();
    opts.gate_validations = true;
    let tui = fake(opts, root.path()).await;
    let path = tui.endpoint_path_buf();
    let v = view(&path).await;
    let pending = tokio::spawn({
        let path = path.clone();
        async move { call(&path, &Request::SelectSession(select(&v, &sid(1)))).await }
    });
    eventually("validation started", || tui.validations_started() == 1).await;
    tui.revoke().await;
    let answer = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, Response::Rejected(Code::Revoked));
    tui.release_validations(10);
    eventually("the validation is decided", || {
        tui.validations_settled() == 1
    })
    .await;
    assert_eq!(tui.navigations(), 0);
    // The endpoint is gone: nothing can be sent any more.
    assert!(!path.exists());
    assert_eq!(
        call(&path, &Request::GetViewContext).await,
        Response::Rejected(Code::TargetUnavailable)
    );
    tui.shutdown().await;
}

#[tokio::test]
async fn the_seventeenth_connection_gets_busy() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let socket = socket_of(tui.endpoint_path());
    let mut idle = Vec::new();
    for _ in 0..16 {
        idle.push(tokio::net::UnixStream::connect(&socket).await.unwrap());
    }
    let busy = rejected(Code::Busy);
    let frame = request_frame(&token_of(tui.endpoint_path()), &Request::GetViewContext);
    assert_eq!(raw_exchange(&socket, &frame).await, busy);
    drop(idle);
    let mut served = false;
    for _ in 0..100 {
        if raw_exchange(&socket, &frame).await != busy {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "slots are freed when connections close");
    tui.shutdown().await;
}

#[tokio::test]
async fn past_the_cap_a_stored_receipt_is_still_answered() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let path = tui.endpoint_path_buf();
    let socket = socket_of(&path);
    let token = token_of(&path);
    let args = select(&view(&path).await, &sid(1));
    let applied = call(&path, &Request::SelectSession(args.clone())).await;
    assert!(matches!(applied, Response::Applied(_)), "{applied:?}");
    let after = view(&path).await;
    let mut idle = Vec::new();
    for _ in 0..16 {
        idle.push(tokio::net::UnixStream::connect(&socket).await.unwrap());
    }
    // The repeat gets its receipt, not a "busy" that claims nothing happened.
    let repeat = request_frame(&token, &Request::SelectSession(args.clone()));
    assert_eq!(raw_exchange(&socket, &repeat).await, applied.to_frame());
    // Other arguments under that requestId: request_conflict, as below the cap.
    let mut other = args.clone();
    other.session_id = sid(2);
    let conflict = request_frame(&token, &Request::SelectSession(other));
    assert_eq!(
        raw_exchange(&socket, &conflict).await,
        rejected(Code::RequestConflict)
    );
    // Anything new is busy and starts nothing; a wrong token learns only unauthorized.
    let read = request_frame(&token, &Request::GetViewContext);
    assert_eq!(raw_exchange(&socket, &read).await, rejected(Code::Busy));
    let fresh = request_frame(&token, &Request::SelectSession(select(&after, &sid(2))));
    assert_eq!(raw_exchange(&socket, &fresh).await, rejected(Code::Busy));
    let forged = request_frame(&"0".repeat(64), &Request::SelectSession(args));
    assert_eq!(
        raw_exchange(&socket, &forged).await,
        rejected(Code::Unauthorized)
    );
    drop(idle);
    assert_eq!(tui.navigations(), 1);
    tui.shutdown().await;
}

#[tokio::test]
async fn the_too_long_path_advice_works_every_time() {
    let root = temp_root();
    let mut deep = root.path().to_owned();
    while deep.as_os_str().len() < 100 {
        deep.push("long-directory-name");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let err = Endpoint::start(
        Identity::random(),
        EndpointOptions {
            temp_root: Some(deep),
        },
    )
    .await
    .unwrap_err()
    .to_string();
    // The advised command, as the person would paste it, with `ax-code` replaced by a
    // command that shows the root it got.
    let advice = err.split('`').nth(1).expect("a command in backticks");
    let shell = advice.replace("ax-code --tui-mcp", "sh -c 'printf %s \"$TMPDIR\"'");
    let mut made = Vec::new();
    for _ in 0..2 {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&shell)
            .output()
            .unwrap();
        assert!(out.status.success(), "{advice}: {out:?}");
        let dir = PathBuf::from(String::from_utf8(out.stdout).unwrap());
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        let socket_len = dir.join("ax-tui-XXXXXX").join("s").as_os_str().len();
        assert!(socket_len < 100, "{}", dir.display());
        made.push(dir);
    }
    assert_ne!(made[0], made[1], "each run gets its own private root");
    for dir in made {
        std::fs::remove_dir(dir).unwrap();
    }
}

#[tokio::test]
async fn a_peer_with_another_uid_is_refused() {
    if !rustix::process::getuid().is_root() {
        println!("skipped: needs root to run a client as another uid");
        return;
    }
    let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        panic!("python3 is needed to run a client as another uid: apt-get install python3");
    };
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let file = tui.endpoint_path_buf();
    let socket = socket_of(&file);
    // Loosen the modes on purpose so only the peer check stands in the way.
    chmod(root.path(), 0o711);
    chmod(file.parent().unwrap(), 0o711);
    chmod(&socket, 0o666);
    let frame =
        String::from_utf8(request_frame(&token_of(&file), &Request::GetViewContext)).unwrap();
    let script = "import socket,sys\n\
        s=socket.socket(socket.AF_UNIX)\n\
        s.connect(sys.argv[1])\n\
        try: s.sendall(sys.stdin.buffer.read())\n\
        except OSError: pass\n\
        data=b''\n\
        while True:\n\
        \x20   chunk=s.recv(4096)\n\
        \x20   if not chunk: break\n\
        \x20   data+=chunk\n\
        sys.stdout.write(data.decode())\n";
    let socket_arg = socket.clone();
    let output = tokio::task::spawn_blocking(move || {
        use std::{io::Write, os::unix::process::CommandExt, process::Stdio};
        let mut child = std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(&socket_arg)
            .uid(65534)
            .gid(65534)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The token goes through stdin, never the argument list.
        child
            .stdin
            .take()
            .unwrap()
            .write_all(frame.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.stdout, rejected(Code::Unauthorized));
    // And the adapter side refuses the loosened files outright.
    assert_eq!(
        call(&file, &Request::GetViewContext).await,
        Response::Rejected(Code::TargetUnavailable)
    );
    tui.shutdown().await;
}

fn refused(path: &Path) -> bool {
    read_endpoint_file(path).is_err()
}

#[tokio::test]
async fn the_client_refuses_unsafe_endpoint_files() {
    let root = temp_root();
    let tui = fake(options(), root.path()).await;
    let file = tui.endpoint_path_buf();
    let dir = file.parent().unwrap().to_owned();
    let socket = socket_of(&file);
    assert!(!refused(&file));
    for (target, bad, good) in [
        (&dir, 0o750, 0o700),
        (&dir, 0o701, 0o700),
        (&file, 0o640, 0o600),
        (&file, 0o400, 0o600),
        (&socket, 0o666, 0o600),
        (&socket, 0o700, 0o600),
    ] {
        chmod(target, bad);
        assert!(refused(&file), "{} at {bad:o}", target.display());
        assert_eq!(
            call(&file, &Request::GetViewContext).await,
            Response::Rejected(Code::TargetUnavailable)
        );
        chmod(target, good);
    }
    assert!(!refused(&file));
    // Relative, renamed, `..`, `//`.
    let relative = PathBuf::from(file.strip_prefix("/").unwrap());
    assert!(refused(&relative));
    let renamed = dir.join("endpoint.JSON");
    assert!(refused(&renamed));
    let dotdot = dir
        .join("..")
        .join(dir.file_name().unwrap())
        .join("endpoint.json");
    assert!(refused(&dotdot));
    let doubled = PathBuf::from(file.to_str().unwrap().replacen("/ax-tui", "//ax-tui", 1));
    assert!(refused(&doubled));
    // A symlinked file and a symlinked directory.
    let other = root.path().join("other");
    std::fs::create_dir(&other).unwrap();
    chmod(&other, 0o700);
    std::os::unix::fs::symlink(&file, other.join("endpoint.json")).unwrap();
    assert!(refused(&other.join("endpoint.json")));
    let linked_dir = root.path().join("linked");
    std::os::unix::fs::symlink(&dir, &linked_dir).unwrap();
    assert!(refused(&linked_dir.join("endpoint.json")));
    assert_eq!(
        call(&linked_dir.join("endpoint.json"), &Request::GetViewContext).await,
        Response::Rejected(Code::TargetUnavailable)
    );
    assert_eq!(tui.navigations(), 0);
    tui.shutdown().await;
}

#[tokio::test]
async fn the_client_refuses_a_malformed_endpoint_file() {
    let root = temp_root();
    let dir = endpoint_file::make_private_dir(root.path()).unwrap();
    let _listener = UnixListener::bind(dir.join("s")).unwrap();
    chmod(&dir.join("s"), 0o600);
    let file = dir.join("endpoint.json");
    for body in [
        "{}",
        "{\"version\":1,\"instanceId\":\"x\",\"generation\":\"y\",\"token\":\"z\"}",
        &format!(
            "{{\"version\":2,\"instanceId\":\"{0}\",\"generation\":\"{0}\",\"token\":\"{1}\"}}",
            ax_tuimcp::WireUuid::random(),
            "a".repeat(64)
        ),
        &format!(
            "{{\"version\":1,\"instanceId\":\"{0}\",\"generation\":\"{0}\",\"token\":\"{1}\",\"x\":1}}",
            ax_tuimcp::WireUuid::random(),
            "a".repeat(64)
        ),
        &format!(
            "{{\"version\":1,\"instanceId\":\"{0}\",\"generation\":\"{0}\",\"token\":\"{1}\"}}",
            ax_tuimcp::WireUuid::random(),
            "A".repeat(64)
        ),
    ] {
        let _ = std::fs::remove_file(&file);
        std::fs::write(&file, body).unwrap();
        chmod(&file, 0o600);
        assert!(refused(&file), "{body}");
    }
    let _ = std::fs::remove_file(&file);
    std::fs::write(&file, vec![b' '; 17 * 1024]).unwrap();
    chmod(&file, 0o600);
    assert!(refused(&file), "too large");
    let _ = std::fs::remove_file(&file);
    endpoint_file::write_endpoint_file(
        &dir,
        &EndpointFile::new(Identity::random(), "a".repeat(64).into()),
    )
    .unwrap();
    assert!(!refused(&file));
}

/// A hand-made endpoint whose "TUI" misbehaves in the given way.
async fn rogue(root: &Path, behaviour: &'static [u8]) -> PathBuf {
    let dir = endpoint_file::make_private_dir(root).unwrap();
    let listener = UnixListener::bind(dir.join("s")).unwrap();
    chmod(&dir.join("s"), 0o600);
    let file = endpoint_file::write_endpoint_file(
        &dir,
        &EndpointFile::new(Identity::random(), "b".repeat(64).into()),
    )
    .unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = ax_tuimcp::frame::read_frame(&mut stream).await;
                if behaviour == b"hang" {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                } else if !behaviour.is_empty() {
                    let _ = stream.write_all(behaviour).await;
                }
            });
        }
    });
    file
}

#[tokio::test]
async fn client_failure_mapping_is_honest() {
    let root = temp_root();
    let v = ax_tuimcp::View {
        instance_id: ax_tuimcp::WireUuid::random(),
        generation: ax_tuimcp::WireUuid::random(),
        revision: 0,
        route: Route::Home,
        session_id: None,
        ready: true,
        blocked: false,
    };
    let select_request = Request::SelectSession(select(&v, &sid(1)));
    let cases: [(&'static [u8], Code, Code); 5] = [
        (b"", Code::TimeoutUnknown, Code::TargetUnavailable),
        (b"not json\n", Code::OutcomeUnknown, Code::TargetUnavailable),
        (
            b"{\"status\":\"applied\",\"context\":{}}\n",
            Code::OutcomeUnknown,
            Code::TargetUnavailable,
        ),
        (
            b"{\"status\":\"rejected\",\"code\":\"outcome_unknown\"}\n",
            Code::OutcomeUnknown,
            Code::TargetUnavailable,
        ),
        (b"hang", Code::TimeoutUnknown, Code::TargetUnavailable),
    ];
    for (behaviour, for_select, for_view) in cases {
        let file = rogue(root.path(), behaviour).await;
        let deadline = Duration::from_millis(300);
        let never = std::future::pending();
        assert_eq!(
            call_with_deadline(&file, &select_request, never, deadline).await,
            Response::Rejected(for_select),
            "select vs {}",
            String::from_utf8_lossy(behaviour)
        );
        let never = std::future::pending();
        assert_eq!(
            call_with_deadline(&file, &Request::GetViewContext, never, deadline).await,
            Response::Rejected(for_view),
            "view vs {}",
            String::from_utf8_lossy(behaviour)
        );
    }
    // Cancelled before anything was sent: definitive `cancelled`.
    let file = rogue(root.path(), b"hang").await;
    let cancelled = client::call(&file, &select_request, std::future::ready(())).await;
    assert_eq!(cancelled, Response::Rejected(Code::Cancelled));
    // Cancelled after sending: the outcome is unknown.
    let late = client::call(
        &file,
        &select_request,
        tokio::time::sleep(Duration::from_millis(200)),
    )
    .await;
    assert_eq!(late, Response::Rejected(Code::TimeoutUnknown));
    // Nothing listening: definitive, nothing was sent.
    let gone = root.path().join("nope").join("endpoint.json");
    assert_eq!(
        call(&gone, &select_request).await,
        Response::Rejected(Code::TargetUnavailable)
    );
}

#[tokio::test]
async fn a_socket_path_that_is_too_long_is_refused_with_advice() {
    let root = temp_root();
    let mut deep = root.path().to_owned();
    while deep.as_os_str().len() < 100 {
        deep.push("long-directory-name");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let err = Endpoint::start(
        Identity::random(),
        EndpointOptions {
            temp_root: Some(deep.clone()),
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EndpointError::PathTooLong { .. }), "{err}");
    assert!(err.to_string().contains("TMPDIR"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&deep).unwrap().collect();
    assert!(left.is_empty(), "the directory was removed");
}

#[tokio::test]
async fn a_hung_validation_times_out_end_to_end_and_does_not_wedge() {
    let root = temp_root();
    let mut opts = options();
    opts.gate_validations = true;
    let tui = fake(opts, root.path()).await;
    let path = tui.endpoint_path_buf();
    let v = view(&path).await;
    // Real time: the owner's deadline timer fires after 4 s, before the adapter's 4.5 s.
    let answer = call(&path, &Request::SelectSession(select(&v, &sid(1)))).await;
    assert_eq!(answer, Response::Rejected(Code::DeadlineExceeded));
    assert!(!tui.in_flight());
    // The hung validation is gone; the next navigation goes through.
    tui.release_validations(1);
    let v = view(&path).await;
    let applied = call(&path, &Request::SelectSession(select(&v, &sid(2)))).await;
    assert!(matches!(applied, Response::Applied(_)), "{applied:?}");
    assert_eq!(tui.navigations(), 1);
    tui.shutdown().await;
}

/// Validations are polled inside the owner task: one that panics must still answer (as an
/// unavailable backend, `not_ready`), never navigate, and leave the owner serving.
#[tokio::test]
async fn a_panicking_validator_answers_not_ready_and_the_owner_keeps_serving() {
    use ax_tuimcp::{
        GuardInputs, Location, Navigator, SessionId, SessionValidator, Sharing, ValidationOutcome,
    };

    #[derive(Clone)]
    struct Panicky;
    impl SessionValidator for Panicky {
        async fn validate(&self, session: SessionId) -> ValidationOutcome {
            tokio::task::yield_now().await;
            assert_ne!(session, sid(9), "the validator panics on ses_..9");
            ValidationOutcome::Valid
        }
    }
    struct App(GuardInputs, usize);
    impl Navigator for App {
        type Error = String;
        fn navigate(&mut self, session: &SessionId) -> Result<GuardInputs, String> {
            self.1 += 1;
            self.0.location = Location::Session(session.clone());
            Ok(self.0.clone())
        }
    }

    let root = temp_root();
    let inputs = GuardInputs::ready_home("/w");
    let options = EndpointOptions {
        temp_root: Some(root.path().to_owned()),
    };
    let mut sharing = Sharing::start(inputs.clone(), Panicky, options)
        .await
        .unwrap();
    let path = sharing.endpoint_path().to_owned();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let owner = tokio::spawn(async move {
        let mut app = App(inputs, 0);
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                step = sharing.next() => {
                    sharing.apply(step, &mut app);
                    sharing.observe(app.0.clone());
                }
            }
        }
        sharing.revoke().await;
        app.1
    });
    let v = view(&path).await;
    let panicked = call(&path, &Request::SelectSession(select(&v, &sid(9)))).await;
    assert_eq!(panicked, Response::Rejected(Code::NotReady));
    let v = view(&path).await;
    assert_eq!(v.route, Route::Home);
    let applied = call(&path, &Request::SelectSession(select(&v, &sid(1)))).await;
    assert!(matches!(applied, Response::Applied(_)), "{applied:?}");
    stop.send(()).unwrap();
    let navigations = tokio::time::timeout(Duration::from_secs(10), owner)
        .await
        .expect("the owner stops")
        .unwrap();
    assert_eq!(navigations, 1);
}
