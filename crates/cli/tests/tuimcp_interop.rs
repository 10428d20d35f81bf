//! Interop: the official MCP Python SDK drives `ax-code mcp tui` against a live endpoint
//! served in-process by a fake TUI (a real owner loop with a fake session set).

mod support;

use std::{process::Stdio, time::Duration};

use ax_tuimcp::fake::{FakeOptions, FakeTui};
use support::{python, script, sid};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    process::Command,
};

#[tokio::test]
async fn the_official_python_sdk_drives_the_adapter() {
    let python = python();
    let root = support::private_temp_root("axi");
    let mut options = FakeOptions {
        sessions: vec![sid(1), sid(2)],
        gate_validations: true,
        ..FakeOptions::default()
    };
    options.endpoint.temp_root = Some(root.path().to_owned());
    let tui = FakeTui::start(options).await.unwrap();
    // The first navigation and the unknown session validate at once; the next one stays
    // pending.
    tui.release_validations(2);

    let mut child = Command::new(&python)
        .arg(script("tuimcp_interop.py"))
        .arg(support::AX)
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
                    if tui.validations_started() >= 3 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert_eq!(tui.validations_started(), 3, "the navigation is in flight");
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
    // The controller decides every validation exactly once; after that none can navigate.
    for _ in 0..500 {
        if tui.validations_settled() == tui.validations_started() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        tui.validations_settled(),
        tui.validations_started(),
        "every validation is decided"
    );
    assert_eq!(
        tui.navigations(),
        1,
        "only the applied navigation reached the router"
    );
    assert!(!tui.endpoint_path().exists());
    tui.shutdown().await;
}
