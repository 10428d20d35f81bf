//! Interop: the official MCP Python SDK drives `ax-code mcp tui` against a live endpoint
//! served in-process by a fake TUI (a real owner loop with a fake session set).

use std::{os::unix::fs::PermissionsExt, path::PathBuf, process::Stdio, time::Duration};

use ax_tuimcp::{
    SessionId,
    fake::{FakeOptions, FakeTui},
};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn python() -> PathBuf {
    let python = std::env::var_os("AX_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-test/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run `bash scripts/setup-test-env.sh`",
        python.display()
    );
    python
}

fn sid(n: u32) -> SessionId {
    SessionId::parse(&format!("ses_{n:026}")).unwrap()
}

#[tokio::test]
async fn the_official_python_sdk_drives_the_adapter() {
    let python = python();
    let root = tempfile::Builder::new()
        .prefix("axi")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in("/tmp")
        .unwrap();
    let mut options = FakeOptions {
        sessions: vec![sid(1), sid(2)],
        gate_validations: true,
        ..FakeOptions::default()
    };
    options.endpoint.temp_root = Some(root.path().to_owned());
    let tui = FakeTui::start(options).await.unwrap();
    // The first navigation may validate at once; the second one stays pending.
    tui.release_validations(1);

    let script = workspace_root().join("tests/python/tuimcp_interop.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_ax-code"))
        .arg(tui.endpoint_path())
        .arg(sid(1).as_str())
        .arg(sid(2).as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();

    let drive = async {
        let mut printed = Vec::new();
        while let Some(line) = stdout.next_line().await.unwrap() {
            println!("python: {line}");
            if line == "PENDING" {
                for _ in 0..500 {
                    if tui.validations_started() >= 2 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert_eq!(tui.validations_started(), 2, "the navigation is in flight");
                tui.revoke().await;
                stdin.write_all(b"REVOKED\n").await.unwrap();
                stdin.flush().await.unwrap();
            }
            printed.push(line);
        }
        printed
    };
    let printed = tokio::time::timeout(Duration::from_secs(30), drive)
        .await
        .expect("the interop script finishes within 30 s");
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut errors = String::new();
    let _ = stderr.read_to_string(&mut errors).await;
    assert!(
        status.success() && printed.last().map(String::as_str) == Some("PASS"),
        "interop failed ({status}):\n{}\n{errors}",
        printed.join("\n")
    );
    tui.release_validations(10);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        tui.navigations(),
        1,
        "only the applied navigation reached the router"
    );
    assert!(!tui.endpoint_path().exists());
    tui.shutdown().await;
}
