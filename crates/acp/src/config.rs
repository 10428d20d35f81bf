//! The agents configuration: built-in presets plus the user's `config.toml`.
//!
//! ```toml
//! default_agent = "claude"
//!
//! [agents.claude]
//! command = "claude-agent-acp"
//! args = []
//! env = { ANTHROPIC_API_KEY = "..." }
//! ```
//!
//! The file lives at `$XDG_CONFIG_HOME/ax-code/config.toml`, else
//! `~/.config/ax-code/config.toml`. A missing file means the presets alone. Unknown keys and
//! bad values are an error naming the file and the line, never silently ignored.

use std::{
    collections::BTreeMap,
    ffi::OsStr,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use serde::Deserialize;

/// The name of the built-in agent that runs a prompt as a shell command.
pub const SHELL: &str = "shell";

/// Longest agent name accepted.
const MAX_NAME: usize = 64;

/// How an agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKind {
    /// The built-in `shell` agent (not an ACP agent).
    Shell,
    /// An ACP agent started as a subprocess.
    Acp(AgentSpec),
}

/// An ACP agent's command line and extra environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// The name a session picks it by.
    pub name: String,
    /// The program: a path with a `/` as is, else looked up on `PATH`.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Added to the allowlisted environment (e.g. the agent's API key).
    pub env: BTreeMap<String, String>,
}

/// Where a configured agent came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Known to ax-code without configuration.
    Builtin,
    /// Defined or overridden in the agents file.
    ConfigFile,
}

/// One named agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEntry {
    /// The name a session picks it by.
    pub name: String,
    /// The shell agent, or an ACP agent's command line.
    pub kind: AgentKind,
    /// Where it was defined (shown by `ax-code agents`).
    pub origin: Origin,
}

/// The agents a user can pick from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentsConfig {
    agents: BTreeMap<String, AgentEntry>,
    default_agent: String,
    /// The file that was read, if any.
    pub source: Option<PathBuf>,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The agents file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// `line` is 1-based; 0 when the location is unknown.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The agents file.
        path: PathBuf,
        /// Where in it (1-based; 0 when unknown).
        line: usize,
        /// What is wrong and what was expected.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    default_agent: Option<toml::Spanned<String>>,
    #[serde(default)]
    agents: BTreeMap<toml::Spanned<String>, toml::Spanned<FileAgent>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

fn preset(name: &str, command: &str, args: &[&str]) -> AgentEntry {
    AgentEntry {
        name: name.into(),
        kind: AgentKind::Acp(AgentSpec {
            name: name.into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
        }),
        origin: Origin::Builtin,
    }
}

/// The built-in agents: `shell`, and the ACP adapters of Claude Code, Codex and Gemini CLI
/// (run only if their command is found; nothing is installed by us).
pub fn presets() -> BTreeMap<String, AgentEntry> {
    let mut map = BTreeMap::new();
    map.insert(
        SHELL.to_string(),
        AgentEntry {
            name: SHELL.into(),
            kind: AgentKind::Shell,
            origin: Origin::Builtin,
        },
    );
    for entry in [
        preset("claude", "claude-agent-acp", &[]),
        preset("codex", "codex-acp", &[]),
        preset("gemini", "gemini", &["--acp"]),
    ] {
        map.insert(entry.name.clone(), entry);
    }
    map
}

/// `$XDG_CONFIG_HOME/ax-code/config.toml`, else `$HOME/.config/ax-code/config.toml`.
pub fn default_config_path(
    xdg_config_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    let base = match xdg_config_home.map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => PathBuf::from(home?).join(".config"),
    };
    Some(base.join("ax-code").join("config.toml"))
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn valid_env_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl AgentsConfig {
    /// The presets alone.
    pub fn builtin() -> Self {
        AgentsConfig {
            agents: presets(),
            default_agent: SHELL.into(),
            source: None,
        }
    }

    /// Reads the user's file from the default location (see [`default_config_path`]).
    pub fn load_default() -> Result<Self, ConfigError> {
        match default_config_path(
            std::env::var_os("XDG_CONFIG_HOME").as_deref(),
            std::env::var_os("HOME").as_deref(),
        ) {
            Some(path) => Self::load(&path),
            None => Ok(Self::builtin()),
        }
    }

    /// Reads `path`; a missing file gives the presets.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::builtin()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses the text of a config file; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let invalid = |offset: usize, message: String| ConfigError::Invalid {
            path: path.to_owned(),
            line: line_of(text, offset),
            message,
        };
        let file: FileConfig = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_owned(),
            line: e.span().map(|s| line_of(text, s.start)).unwrap_or(0),
            message: e.message().trim().to_string(),
        })?;
        let mut agents = presets();
        for (name, agent) in file.agents {
            let at = name.span().start;
            let name = name.into_inner();
            if !valid_name(&name) {
                return Err(invalid(
                    at,
                    format!("agent name {name:?}: use 1 to {MAX_NAME} of a-z, 0-9, `-` and `_`"),
                ));
            }
            if name == SHELL {
                return Err(invalid(
                    at,
                    "`shell` is built in and cannot be configured".to_string(),
                ));
            }
            let agent_at = agent.span().start;
            let agent = agent.into_inner();
            if agent.command.trim().is_empty() || agent.command.contains('\0') {
                return Err(invalid(
                    agent_at,
                    format!("agents.{name}.command must be a non-empty command"),
                ));
            }
            if agent.args.iter().any(|a| a.contains('\0')) {
                return Err(invalid(
                    agent_at,
                    format!("agents.{name}.args may not contain NUL"),
                ));
            }
            for (key, value) in &agent.env {
                if !valid_env_key(key) || value.contains('\0') {
                    return Err(invalid(
                        agent_at,
                        format!(
                            "agents.{name}.env: {key:?} is not a valid variable name (or its \
                             value has NUL)"
                        ),
                    ));
                }
            }
            agents.insert(
                name.clone(),
                AgentEntry {
                    name: name.clone(),
                    kind: AgentKind::Acp(AgentSpec {
                        name,
                        command: agent.command,
                        args: agent.args,
                        env: agent.env,
                    }),
                    origin: Origin::ConfigFile,
                },
            );
        }
        let default_agent = match file.default_agent {
            Some(name) => {
                let at = name.span().start;
                let name = name.into_inner();
                if !agents.contains_key(&name) {
                    let known: Vec<&str> = agents.keys().map(String::as_str).collect();
                    return Err(invalid(
                        at,
                        format!(
                            "default_agent {name:?} is not a configured agent (known: {})",
                            known.join(", ")
                        ),
                    ));
                }
                name
            }
            None => SHELL.into(),
        };
        Ok(AgentsConfig {
            agents,
            default_agent,
            source: Some(path.to_owned()),
        })
    }

    /// The agent new sessions get when none is named.
    pub fn default_agent(&self) -> &str {
        &self.default_agent
    }

    /// A named agent.
    pub fn get(&self, name: &str) -> Option<&AgentEntry> {
        self.agents.get(name)
    }

    /// All agents, by name.
    pub fn iter(&self) -> impl Iterator<Item = &AgentEntry> {
        self.agents.values()
    }
}

/// Finds `command` the way a shell would: a path with a `/` as is, else on `path_var`
/// (the `PATH` value). Only executable regular files count.
pub fn find_command(command: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if command.contains('/') {
        let p = PathBuf::from(command);
        return is_exec(&p).then_some(p);
    }
    if command.is_empty() {
        return None;
    }
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| is_exec(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentsConfig, ConfigError> {
        AgentsConfig::parse(Path::new("/cfg/config.toml"), text)
    }

    #[test]
    fn presets_and_overrides() {
        let c = parse(
            "default_agent = \"mine\"\n[agents.mine]\ncommand = \"my-agent\"\nargs = [\"--acp\"]\n\
             env = { MY_KEY = \"v\" }\n[agents.claude]\ncommand = \"/opt/claude-acp\"\n",
        )
        .unwrap();
        assert_eq!(c.default_agent(), "mine");
        let Some(AgentEntry {
            kind: AgentKind::Acp(spec),
            origin: Origin::ConfigFile,
            ..
        }) = c.get("mine")
        else {
            panic!("mine missing")
        };
        assert_eq!(spec.args, vec!["--acp"]);
        assert_eq!(spec.env.get("MY_KEY").map(String::as_str), Some("v"));
        let Some(AgentEntry {
            kind: AgentKind::Acp(claude),
            ..
        }) = c.get("claude")
        else {
            panic!()
        };
        assert_eq!(claude.command, "/opt/claude-acp");
        assert!(
            matches!(c.get("gemini").unwrap().kind, AgentKind::Acp(ref s) if s.args == ["--acp"])
        );
        assert_eq!(c.get("shell").unwrap().kind, AgentKind::Shell);
        assert_eq!(parse("").unwrap().default_agent(), "shell");
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let e = parse("[agents.a]\ncommand = \"x\"\ncolour = \"red\"\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("/cfg/config.toml:3:"), "{msg}");
        assert!(msg.contains("colour"), "{msg}");

        let e = parse("\n\ndefault_agent = \"nope\"\n").unwrap_err();
        assert!(e.to_string().starts_with("/cfg/config.toml:3:"), "{e}");
        assert!(e.to_string().contains("nope"), "{e}");

        let e = parse("[agents.a]\ncommand = 7\n").unwrap_err();
        assert!(e.to_string().starts_with("/cfg/config.toml:2:"), "{e}");

        let e = parse("\n[agents.shell]\ncommand = \"sh\"\n").unwrap_err();
        assert!(e.to_string().starts_with("/cfg/config.toml:2:"), "{e}");

        let e = parse("[agents.\"Bad Name\"]\ncommand = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("Bad Name"), "{e}");

        let e = parse("[agents.a]\ncommand = \"x\"\nenv = { \"A-B\" = \"1\" }\n").unwrap_err();
        assert!(e.to_string().contains("A-B"), "{e}");

        let e = parse("[agents.a]\ncommand = \"\"\n").unwrap_err();
        assert!(e.to_string().contains("command"), "{e}");

        let e = parse("default_agent = [\n").unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { line: 1, .. }), "{e}");
    }

    #[test]
    fn config_path_prefers_an_absolute_xdg_dir() {
        let p = default_config_path(Some(OsStr::new("/x")), Some(OsStr::new("/h")));
        assert_eq!(p.unwrap(), Path::new("/x/ax-code/config.toml"));
        let p = default_config_path(Some(OsStr::new("rel")), Some(OsStr::new("/h")));
        assert_eq!(p.unwrap(), Path::new("/h/.config/ax-code/config.toml"));
        assert!(default_config_path(None, None).is_none());
    }

    #[test]
    fn command_lookup_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("my-agent");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = dir.path().join("not-exec");
        std::fs::write(&plain, "").unwrap();
        let path = std::env::join_paths([Path::new("/nonexistent"), dir.path()]).unwrap();
        assert_eq!(find_command("my-agent", Some(&path)), Some(exe.clone()));
        assert_eq!(find_command("not-exec", Some(&path)), None);
        assert_eq!(find_command("missing", Some(&path)), None);
        assert_eq!(find_command(exe.to_str().unwrap(), None), Some(exe));
    }
}
