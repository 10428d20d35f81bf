//! The test venv's Python and the scripts in tests/python.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::workspace_root;

/// The test interpreter: `$AX_TEST_PYTHON`, else `<workspace>/.venv-test/bin/python`.
/// Fails (never skips) with how to install it when it is missing.
pub fn python() -> PathBuf {
    let p = std::env::var_os("AX_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv-test/bin/python"));
    assert!(
        p.exists(),
        "no test Python at {}: run `bash scripts/setup-test-env.sh` (or set AX_TEST_PYTHON)",
        p.display()
    );
    p
}

/// A script in tests/python.
pub fn script(name: &str) -> PathBuf {
    workspace_root().join("tests/python").join(name)
}

/// Fails unless Debian's Chromium and chromedriver are installed.
pub fn require_browser() {
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: run `bash scripts/setup-test-env.sh`"
        );
    }
}

/// Runs tests/python/NAME with `args` (its output goes to the test's), killed after
/// `limit`; returns its exit status.
pub fn run_script(name: &str, args: &[&std::ffi::OsStr], limit: Duration) -> ExitStatus {
    let mut child = Command::new(python())
        .arg(script(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(100));
    }
}
