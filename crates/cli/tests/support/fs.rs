//! Private directories for one test.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{AX, WAIT, output_bounded};

/// Private directories for one test: project, data dir, HOME and TMPDIR (all canonical).
pub struct Env {
    _root: tempfile::TempDir,
    pub project: PathBuf,
    pub data: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl Env {
    /// Fresh directories under /tmp (short paths keep socket paths short).
    pub fn new() -> Env {
        Env::with_modes(None)
    }

    /// Like [`Env::new`], but every directory the test creates is opened up to other users
    /// (0755, TMPDIR 1777 like /tmp), so only the modes ax-code sets protect its files.
    pub fn open_to_all() -> Env {
        Env::with_modes(Some((0o755, 0o1777)))
    }

    fn with_modes(modes: Option<(u32, u32)>) -> Env {
        let root = tempfile::Builder::new()
            .prefix("axt")
            .tempdir_in("/tmp")
            .unwrap();
        if let Some((dir, _)) = modes {
            chmod(root.path(), dir);
        }
        let make = |name: &str, tmp: bool| {
            let p = root.path().join(name);
            std::fs::create_dir(&p).unwrap();
            if let Some((dir, tmp_mode)) = modes {
                chmod(&p, if tmp { tmp_mode } else { dir });
            }
            std::fs::canonicalize(p).unwrap()
        };
        Env {
            project: make("project", false),
            data: make("data", false),
            home: make("home", false),
            tmp: make("t", true),
            _root: root,
        }
    }

    /// The environment variables that point ax-code at these directories.
    pub fn vars(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.home.clone()),
            ("AX_CODE_DATA_DIR", self.data.clone()),
            ("TMPDIR", self.tmp.clone()),
        ]
    }

    /// `ax-code ARGS` in the project with these directories, no inherited credential and
    /// stdin from /dev/null.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_via(&[], args)
    }

    /// [`Env::command`] run through `wrapper` (a program and its arguments, e.g. `nsenter
    /// --net=…`), which then runs `ax-code ARGS`; an empty `wrapper` runs it directly.
    pub fn command_via(&self, wrapper: &[&str], args: &[&str]) -> Command {
        let mut cmd = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut cmd = Command::new(program);
                cmd.args(rest).arg(AX);
                cmd
            }
            None => Command::new(AX),
        };
        cmd.args(args)
            .current_dir(&self.project)
            .envs(self.vars())
            .env_remove("AX_CODE_SERVER_PASSWORD")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `ax-code ARGS` in the project (bounded by [`WAIT`]), asserts success and returns
    /// its stdout.
    pub fn ax(&self, args: &[&str], password: Option<&str>) -> String {
        let mut cmd = self.command(args);
        if let Some(p) = password {
            cmd.env("AX_CODE_SERVER_PASSWORD", p);
        }
        let out = output_bounded(&mut cmd, WAIT);
        assert!(
            out.status.success(),
            "ax-code {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The backend this project registered in `servers/`: (URL, credential).
    pub fn registered_backend(&self) -> (String, String) {
        let dir = self.data.join("servers");
        let start = Instant::now();
        loop {
            let found = std::fs::read_dir(&dir).ok().and_then(|entries| {
                entries.flatten().find_map(|e| {
                    let v: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                    Some((
                        v["url"].as_str()?.to_owned(),
                        v["token"].as_str()?.to_owned(),
                    ))
                })
            });
            if let Some(found) = found {
                return found;
            }
            assert!(start.elapsed() < WAIT, "no backend registered in {dir:?}");
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A private (0700) temp directory under /tmp, for endpoint roots.
pub fn private_temp_root(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in("/tmp")
        .unwrap()
}

/// Sets a path's permission bits.
pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A path's permission bits (of the link itself for a symlink).
pub fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}
