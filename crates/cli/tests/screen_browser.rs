//! End to end: `ax-code serve` + the Control UI in headless Chromium + `ax-code mcp screen`
//! driven by the official MCP Python SDK (tests/python/screen_browser.py does the checking).

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    time::{Duration, Instant},
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

#[test]
fn the_screen_tool_arranges_the_control_ui_in_a_real_browser() {
    let python = python();
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        assert!(
            std::path::Path::new(tool).exists(),
            "{tool} is missing: run `bash scripts/setup-test-env.sh`"
        );
    }
    let root = workspace_root();
    let artifacts = root.join("test-artifacts");
    let mut child = Command::new(&python)
        .arg(root.join("tests/python/screen_browser.py"))
        .arg(env!("CARGO_BIN_EXE_ax-code"))
        .arg(&artifacts)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the browser test script");
    let deadline = Instant::now() + Duration::from_secs(150);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("screen_browser.py did not finish within 150 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success(),
        "screen_browser.py failed ({status}); its checks are printed above"
    );
    assert!(artifacts.join("screen-split-panels.png").exists());
}
