//! Starting the real mock agent binary through the ax-acp runtime.
#![allow(dead_code)]

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use ax_acp::{AcpEvent, AgentHandle, AgentSpec, PermissionResponder, StartError, StartOptions};
use ax_protocol::turn::{PermissionPart, TurnDelta, TurnEnd, TurnPart, apply};
use tokio::sync::mpsc::UnboundedReceiver;

pub const WAIT: Duration = Duration::from_secs(30);

pub fn spec(env: &[(&str, &str)]) -> AgentSpec {
    AgentSpec {
        name: "mock".into(),
        command: env!("CARGO_BIN_EXE_ax-mock-agent").into(),
        args: Vec::new(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    }
}

pub struct Fixture {
    pub project: tempfile::TempDir,
    pub agent: AgentHandle,
    pub events: UnboundedReceiver<AcpEvent>,
}

pub fn options(project: &std::path::Path) -> StartOptions {
    let mut o = StartOptions::new(project);
    o.watchdog = Duration::from_secs(1);
    o.stop_term_after = Duration::from_millis(300);
    o.stop_kill_after = Duration::from_millis(500);
    o.request_timeout = WAIT;
    o
}

pub async fn try_start(
    env: &[(&str, &str)],
    project: &std::path::Path,
) -> Result<(AgentHandle, UnboundedReceiver<AcpEvent>), StartError> {
    AgentHandle::start(&spec(env), options(project)).await
}

pub async fn start(env: &[(&str, &str)]) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    let (mut agent, events) = try_start(env, project.path()).await.expect("agent starts");
    agent
        .open_session(Vec::new(), None)
        .await
        .expect("session opens");
    Fixture {
        project,
        agent,
        events,
    }
}

pub fn project_path(fx: &Fixture) -> PathBuf {
    fx.project.path().canonicalize().unwrap()
}

/// The next event.
pub async fn next(events: &mut UnboundedReceiver<AcpEvent>) -> AcpEvent {
    tokio::time::timeout(WAIT, events.recv())
        .await
        .expect("an event in time")
        .expect("event stream open")
}

/// What one turn streamed.
pub struct Turn {
    pub deltas: Vec<TurnDelta>,
    pub end: TurnEnd,
    pub parts: Vec<TurnPart>,
}

impl Turn {
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                TurnPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Folding what streamed gives what the runtime reports at the end.
    pub fn check_fold(&self) {
        let mut folded = Vec::new();
        for d in &self.deltas {
            apply(&mut folded, d.clone());
        }
        assert_eq!(
            folded, self.parts,
            "the fold of the deltas equals the turn's parts"
        );
    }
}

/// Collects deltas until the turn ends. A permission asked meanwhile is left waiting (its
/// responder held to the turn's end), for the runtime to answer.
pub async fn finish(events: &mut UnboundedReceiver<AcpEvent>, mut deltas: Vec<TurnDelta>) -> Turn {
    let mut held = Vec::new();
    loop {
        match next(events).await {
            AcpEvent::Delta(d) => deltas.push(d),
            AcpEvent::Asked {
                permission,
                responder,
            } => {
                deltas.push(TurnDelta::PermissionAsked { permission });
                held.push(responder);
            }
            AcpEvent::TurnEnded { end, parts } => {
                let turn = Turn { deltas, end, parts };
                turn.check_fold();
                return turn;
            }
            _ => {}
        }
    }
}

pub async fn run(fx: &mut Fixture, script: &str) -> Turn {
    fx.agent.prompt_text(script).expect("prompt starts");
    finish(&mut fx.events, Vec::new()).await
}

/// A permission request as the tests see it: the part (what `.` reaches), with its responder,
/// held while this lives (dropped unanswered, it answers `cancelled`).
pub struct Asked {
    pub part: PermissionPart,
    pub responder: PermissionResponder,
}

impl std::ops::Deref for Asked {
    type Target = PermissionPart;

    fn deref(&self) -> &PermissionPart {
        &self.part
    }
}

/// Waits for the next permission request; returns it and the deltas seen so far.
pub async fn permission(
    events: &mut UnboundedReceiver<AcpEvent>,
    deltas: &mut Vec<TurnDelta>,
) -> Asked {
    loop {
        match next(events).await {
            AcpEvent::Delta(d) => deltas.push(d),
            AcpEvent::Asked {
                permission,
                responder,
            } => {
                deltas.push(TurnDelta::PermissionAsked {
                    permission: permission.clone(),
                });
                return Asked {
                    part: permission,
                    responder,
                };
            }
            AcpEvent::TurnEnded { end, .. } => panic!("turn ended before a permission: {end:?}"),
            _ => {}
        }
    }
}
