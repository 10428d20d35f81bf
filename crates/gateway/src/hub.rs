//! The registry of live connections, `ui.command` fan-out and acknowledgement collection.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::sync::{mpsc, oneshot};

use crate::{
    frame::{ErrorCode, ErrorShape, EventPrefix},
    outbound::{Out, Outbound},
    ui_command::{Outcome, UiCommandEvent, UiCommandResultParams, UiOutcome},
    ui_layout::{LayoutReport, UiLayout},
};

/// Waited commands held at once across the gateway (each lives at most the wait timeout).
const MAX_PENDING: usize = 1024;

/// A registered connection, as the hub sees it.
pub(crate) struct ConnEntry {
    pub key: u64,
    pub conn_id: String,
    /// `mode == ui` and `caps` contain `ui-commands`.
    pub ui_target: bool,
    /// The session of a session-scoped screen credential ([`crate::SessionScreens`]).
    pub screen_session: Option<String>,
    pub out: Arc<Outbound>,
    /// When a frame last came from the peer (the gateway clock, ms).
    pub last_seen: AtomicU64,
    /// The UI's latest `ui.layout.report`.
    pub layout: Mutex<Option<LayoutReport>>,
}

struct Pending {
    targets: Vec<(u64, String)>,
    answers: HashMap<u64, UiCommandResultParams>,
    done: Option<oneshot::Sender<()>>,
    /// A relayed command's answers, each handed on as it is recorded (room for one per
    /// target, so a send never fails for lack of it).
    each: Option<mpsc::Sender<UiOutcome>>,
}

impl Pending {
    fn complete_if_all(&mut self) {
        if self.answers.len() >= self.targets.len()
            && let Some(done) = self.done.take()
        {
            let _ = done.send(());
        }
    }
}

#[derive(Default)]
pub(crate) struct Hub {
    conns: Mutex<HashMap<u64, Arc<ConnEntry>>>,
    pending: Mutex<HashMap<String, Pending>>,
}

/// What a fan-out achieved; `wait` is set when the caller asked to collect outcomes.
pub(crate) struct Delivery {
    pub delivered: usize,
    pub wait: Option<oneshot::Receiver<()>>,
    /// A relayed command's answers, as they come.
    pub answers: Option<mpsc::Receiver<UiOutcome>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hub {
    pub(crate) fn register(&self, entry: Arc<ConnEntry>) {
        lock(&self.conns).insert(entry.key, entry);
    }

    pub(crate) fn unregister(&self, key: u64) {
        lock(&self.conns).remove(&key);
    }

    /// Queue a keepalive tick to every connection and cut those silent for `dead_after_ms`.
    pub(crate) fn tick(&self, now_ms: u64, dead_after_ms: u64) {
        let conns: Vec<Arc<ConnEntry>> = lock(&self.conns).values().cloned().collect();
        for c in conns {
            let idle = now_ms.saturating_sub(c.last_seen.load(Ordering::Relaxed));
            if idle > dead_after_ms {
                c.out.kill(1008, "keepalive timeout");
            } else {
                c.out.push(Out::Tick);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.conns).len()
    }

    pub(crate) fn ui_targets(&self) -> usize {
        lock(&self.conns).values().filter(|c| c.ui_target).count()
    }

    pub(crate) fn is_ui_target(&self, conn_id: &str) -> bool {
        lock(&self.conns)
            .values()
            .any(|c| c.ui_target && c.conn_id == conn_id && !c.out.is_closed())
    }

    /// Queues `screen.gate {enabled}` to every connection of `session`'s screen credential.
    pub(crate) fn screen_gate_changed(&self, session: &str, enabled: bool) {
        let targets: Vec<Arc<ConnEntry>> = lock(&self.conns)
            .values()
            .filter(|c| c.screen_session.as_deref() == Some(session))
            .cloned()
            .collect();
        if targets.is_empty() {
            return;
        }
        let payload = serde_json::json!({ "enabled": enabled });
        let prefix = EventPrefix::new(crate::method::Event::ScreenGate.as_str(), &payload);
        for t in targets {
            t.out.push(Out::Event(prefix.clone()));
        }
    }

    /// The live UI targets, or only the one `only` names (absent: `UNAVAILABLE`, never
    /// everyone instead).
    fn targets(&self, only: Option<&str>) -> Result<Vec<Arc<ConnEntry>>, ErrorShape> {
        let targets: Vec<Arc<ConnEntry>> = lock(&self.conns)
            .values()
            .filter(|c| c.ui_target && !c.out.is_closed())
            .filter(|c| only.is_none_or(|id| c.conn_id == id))
            .cloned()
            .collect();
        match only {
            _ if !targets.is_empty() => Ok(targets),
            Some(id) => Err(ErrorShape::new(
                ErrorCode::Unavailable,
                format!("no ui client {id}: it is not connected"),
            )),
            None => Err(no_ui_client()),
        }
    }

    /// Stores a UI's layout report.
    pub(crate) fn set_layout(&self, entry: &ConnEntry, report: LayoutReport) {
        *lock(&entry.layout) = Some(report);
    }

    /// The layouts of the targeted UIs that reported one, in connection order.
    pub(crate) fn layouts(&self, only: Option<&str>) -> Result<Vec<UiLayout>, ErrorShape> {
        let mut targets = self.targets(only)?;
        targets.sort_by_key(|t| t.key);
        Ok(targets
            .iter()
            .filter_map(|t| {
                lock(&t.layout).clone().map(|layout| UiLayout {
                    ui_id: t.conn_id.clone(),
                    layout,
                })
            })
            .collect())
    }

    /// Send `event` to every UI target (or the one `only` names). The event is serialised
    /// once for all of them.
    pub(crate) fn fan_out_ui_command(
        &self,
        event: &UiCommandEvent,
        wait: bool,
        only: Option<&str>,
    ) -> Result<Delivery, ErrorShape> {
        self.fan_out(event, wait, only, false)
    }

    /// A command another gateway accepted (`Gateway::relay_ui_command`): sent to every UI
    /// target and waited for, each answer handed to the receiver as it comes. Its
    /// `commandId` is the other gateway's; one already waited for here is refused.
    pub(crate) fn relay_ui_command(&self, event: &UiCommandEvent) -> Result<Delivery, ErrorShape> {
        self.fan_out(event, true, None, true)
    }

    fn fan_out(
        &self,
        event: &UiCommandEvent,
        wait: bool,
        only: Option<&str>,
        each: bool,
    ) -> Result<Delivery, ErrorShape> {
        let targets = self.targets(only)?;
        let (each, answers) = if each {
            let (tx, rx) = mpsc::channel(targets.len().max(1));
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let payload = serde_json::to_value(event)
            .map_err(|e| ErrorShape::new(ErrorCode::Internal, format!("encode: {e}")))?;
        let prefix = EventPrefix::new(crate::method::Event::UiCommand.as_str(), &payload);

        // Register before sending: a fast UI may answer before the loop below ends.
        let rx = if wait {
            let (tx, rx) = oneshot::channel();
            let mut pending = lock(&self.pending);
            if pending.len() >= MAX_PENDING {
                return Err(ErrorShape::new(
                    ErrorCode::Unavailable,
                    "too many commands waiting for answers",
                ));
            }
            if pending.contains_key(&event.command_id) {
                return Err(ErrorShape::invalid(format!(
                    "command {} is already waiting for answers",
                    event.command_id
                )));
            }
            pending.insert(
                event.command_id.clone(),
                Pending {
                    targets: targets.iter().map(|t| (t.key, t.conn_id.clone())).collect(),
                    answers: HashMap::new(),
                    done: Some(tx),
                    each,
                },
            );
            Some(rx)
        } else {
            None
        };

        let mut delivered = Vec::with_capacity(targets.len());
        for t in &targets {
            if t.out.push(Out::Event(prefix.clone())) {
                delivered.push(t.key);
            }
        }

        if wait {
            let mut pending = lock(&self.pending);
            if delivered.is_empty() {
                pending.remove(&event.command_id);
            } else if let Some(p) = pending.get_mut(&event.command_id) {
                p.targets.retain(|(k, _)| delivered.contains(k));
                p.answers.retain(|k, _| delivered.contains(k));
                p.complete_if_all();
            }
        }
        if delivered.is_empty() {
            return Err(no_ui_client());
        }
        Ok(Delivery {
            delivered: delivered.len(),
            wait: rx,
            answers,
        })
    }

    /// Record a UI's answer. `false` if nothing waits for it from this connection.
    pub(crate) fn record_outcome(&self, conn_key: u64, answer: UiCommandResultParams) -> bool {
        let mut pending = lock(&self.pending);
        let Some(p) = pending.get_mut(&answer.command_id) else {
            return false;
        };
        let Some((_, conn_id)) = p.targets.iter().find(|(k, _)| *k == conn_key) else {
            return false;
        };
        if p.answers.contains_key(&conn_key) {
            return false;
        }
        if let Some(each) = &p.each {
            // Room for one answer per target, each target answers once: never full.
            let _ = each.try_send(outcome_of(conn_id.clone(), answer.clone()));
        }
        p.answers.insert(conn_key, answer);
        p.complete_if_all();
        true
    }

    /// Wait until every target answered or `timeout` passed; silent UIs are `no_answer`.
    pub(crate) async fn collect(
        &self,
        command_id: &str,
        done: oneshot::Receiver<()>,
        timeout: Duration,
    ) -> Vec<UiOutcome> {
        let _ = tokio::time::timeout(timeout, done).await;
        let Some(mut p) = lock(&self.pending).remove(command_id) else {
            return Vec::new();
        };
        p.targets
            .iter()
            .map(|(key, conn_id)| match p.answers.remove(key) {
                Some(a) => outcome_of(conn_id.clone(), a),
                None => UiOutcome {
                    conn_id: conn_id.clone(),
                    outcome: Outcome::NoAnswer,
                    reason: None,
                    revision: None,
                    not_applied: None,
                },
            })
            .collect()
    }
}

/// A UI's answer as a waited response lists it.
fn outcome_of(conn_id: String, a: UiCommandResultParams) -> UiOutcome {
    UiOutcome {
        conn_id,
        outcome: a.outcome.into(),
        reason: a.reason,
        revision: a.revision,
        not_applied: a.not_applied,
    }
}

fn no_ui_client() -> ErrorShape {
    ErrorShape::new(ErrorCode::Unavailable, "no ui client")
}
