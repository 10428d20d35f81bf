//! `ax-code serve` as a real process.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use super::{AX, Env, WAIT, line_channel, signal};

/// `ax-code serve` on a port with a known credential (or the one it generates when `None`);
/// its URL from the first stdout line.
pub struct Serve {
    pub child: Child,
    pub url: String,
    reaped: bool,
}

impl Serve {
    /// Starts `serve --port PORT` in `env`'s project and waits for its address.
    pub fn start(env: &Env, port: u16, password: Option<&str>) -> Serve {
        let mut cmd = env.command(&["serve", "--port", &port.to_string()]);
        if let Some(p) = password {
            cmd.env("AX_CODE_SERVER_PASSWORD", p);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = line_channel(child.stdout.take().unwrap());
        let Ok(line) = lines.recv_timeout(WAIT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ax-code serve printed no address");
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .trim_end_matches('/')
            .to_owned();
        Serve {
            child,
            url,
            reaped: false,
        }
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        signal(self.pid(), "KILL");
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // A stopped process still dies of SIGKILL; SIGCONT is for good measure.
        signal(self.pid(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The origin and one-time sign-in code of a `Control UI: ORIGIN/#code=CODE` line.
pub fn control_ui_link(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("Control UI: ")?;
    let link = rest.split_whitespace().next()?;
    let (url, code) = link
        .split_once("/#code=")
        .expect("a one-time code in the fragment");
    Some((url.to_owned(), code.to_owned()))
}

/// The credential `serve` generated for `url`, from its credential file in the data directory
/// `cmd` runs with (`AX_CODE_DATA_DIR`): the link it prints carries a one-time code only.
fn generated_credential(cmd: &Command, url: &str) -> Option<String> {
    let data = cmd
        .get_envs()
        .find(|(k, _)| *k == "AX_CODE_DATA_DIR")
        .and_then(|(_, v)| v)?;
    let dir = Path::new(data).join("credentials");
    std::fs::read_dir(dir).ok()?.find_map(|entry| {
        let text = std::fs::read_to_string(entry.ok()?.path()).ok()?;
        let record: serde_json::Value = serde_json::from_str(&text).ok()?;
        (record["url"].as_str() == Some(url))
            .then(|| record["token"].as_str().map(str::to_owned))?
    })
}

/// Spawns a prepared `ax-code serve` command (with a generated credential and
/// `AX_CODE_DATA_DIR` set) with stdout piped and reads its Control UI link: (child, URL,
/// credential, read from the credential file). Kills the child if no link comes within
/// [`WAIT`] (the panic shows the stdout so far and the file `log`, if any); `lines_seen`
/// receives every stdout line read up to the link.
pub fn spawn_control_ui(
    mut cmd: Command,
    lines_seen: &mut Vec<String>,
    log: Option<&Path>,
) -> (Child, String, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let lines = line_channel(child.stdout.take().unwrap());
    loop {
        let Ok(line) = lines.recv_timeout(WAIT) else {
            let _ = child.kill();
            let _ = child.wait();
            let log = log
                .map(|p| std::fs::read_to_string(p).unwrap_or_default())
                .unwrap_or_default();
            panic!("serve printed no Control UI line; stdout {lines_seen:?}, log:\n{log}");
        };
        let link = control_ui_link(&line);
        lines_seen.push(line);
        if link.is_some() {
            // The API's URL is the one `serve` listens on; the link has an origin of its own.
            let url = lines_seen
                .iter()
                .find_map(|l| {
                    l.split_once("listening on ")
                        .map(|(_, u)| u.trim().to_owned())
                })
                .expect("serve printed its address before the link");
            let Some(token) = generated_credential(&cmd, &url) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no credential file for {url}");
            };
            return (child, url, token);
        }
    }
}

/// `ax-code serve --port 0` with a generated token (read from its credential file),
/// in its own project and data directories.
pub struct ControlServe {
    pub child: Child,
    pub url: String,
    pub token: String,
    pub project: TempDir,
    pub data: TempDir,
}

impl ControlServe {
    pub fn start() -> ControlServe {
        let project = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(AX);
        cmd.args(["serve", "--port", "0"])
            .current_dir(project.path())
            .env("AX_CODE_DATA_DIR", data.path())
            .env_remove("AX_CODE_SERVER_PASSWORD")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        let (child, url, token) = spawn_control_ui(cmd, &mut Vec::new(), None);
        ControlServe {
            child,
            url,
            token,
            project,
            data,
        }
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for ControlServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
