//! [`Sharing`]: a ready-made driver that bundles the controller, the endpoint and the
//! validation tasks for the task that owns the UI state.
//!
//! The owner awaits [`Sharing::next`] inside its `select!` loop (it is cancel-safe) and
//! passes the [`Step`] it returns to [`Sharing::apply`] together with its router. `apply`
//! never awaits, so guard, navigate and re-read happen in one message.

use std::{collections::HashMap, future::Future, path::Path, time::Instant};

use tokio::{
    sync::mpsc,
    task::{AbortHandle, JoinHandle},
};

use crate::{
    controller::{
        Commit, Controller, GuardInputs, Identity, Navigator, Ticket, Validation, ValidationOutcome,
    },
    protocol::SessionId,
    server::{Endpoint, EndpointError, EndpointOptions, Inbound},
};

/// Checks a session through the TUI's own authenticated backend connection. Cloned into
/// one spawned task per validation; dropping the future must be harmless (it is aborted when
/// the controller fences it).
pub trait SessionValidator: Clone + Send + Sync + 'static {
    fn validate(&self, session: SessionId) -> impl Future<Output = ValidationOutcome> + Send;
}

/// One thing for the owner to apply.
#[derive(Debug)]
pub enum Step {
    Inbound(Inbound),
    Finished(Ticket, ValidationOutcome),
    Deadline,
    /// The endpoint's channel ended: the endpoint closed.
    EndpointGone,
}

/// Sends the validation's end to the owner even when the task is aborted, so the controller
/// always learns that an orphan finished.
struct FinishGuard {
    tx: mpsc::UnboundedSender<(Ticket, ValidationOutcome)>,
    ticket: Ticket,
    outcome: ValidationOutcome,
}

impl Drop for FinishGuard {
    fn drop(&mut self) {
        let _ = self.tx.send((self.ticket, self.outcome));
    }
}

/// The controller, the endpoint and the running validations, owned by the UI task.
pub struct Sharing<V: SessionValidator> {
    controller: Controller,
    endpoint: Endpoint,
    inbound: mpsc::Receiver<Inbound>,
    inbound_open: bool,
    finished_tx: mpsc::UnboundedSender<(Ticket, ValidationOutcome)>,
    finished_rx: mpsc::UnboundedReceiver<(Ticket, ValidationOutcome)>,
    running: HashMap<Ticket, AbortHandle>,
    validator: V,
}

/// The clock the driver uses: tokio's, so tests with paused time stay consistent.
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl<V: SessionValidator> Sharing<V> {
    /// Starts sharing with a fresh identity: creates the endpoint and its `endpoint.json`.
    pub async fn start(
        inputs: GuardInputs,
        validator: V,
        options: EndpointOptions,
    ) -> Result<Self, EndpointError> {
        let identity = Identity::random();
        let (endpoint, inbound) = Endpoint::start(identity, options).await?;
        let (finished_tx, finished_rx) = mpsc::unbounded_channel();
        Ok(Self {
            controller: Controller::new(identity, inputs),
            endpoint,
            inbound,
            inbound_open: true,
            finished_tx,
            finished_rx,
            running: HashMap::new(),
            validator,
        })
    }

    /// Absolute path of `endpoint.json`, for the TUIMCP bar.
    pub fn endpoint_path(&self) -> &Path {
        self.endpoint.path()
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// Call after every UI state mutation.
    pub fn observe(&mut self, inputs: GuardInputs) {
        self.controller.observe(inputs);
    }

    /// Call for every parsed keyboard, paste or mouse event.
    pub fn human_input(&mut self) {
        self.controller.human_input(now());
    }

    /// Waits for the next thing to apply. Cancel-safe: use it as a `select!` branch.
    pub async fn next(&mut self) -> Step {
        let deadline = self.controller.next_deadline();
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            inbound = self.inbound.recv(), if self.inbound_open => match inbound {
                Some(inbound) => Step::Inbound(inbound),
                None => {
                    self.inbound_open = false;
                    Step::EndpointGone
                }
            },
            Some((ticket, outcome)) = self.finished_rx.recv() => Step::Finished(ticket, outcome),
            () = sleep => Step::Deadline,
        }
    }

    /// Applies a step; returns the commit when a validation finished (show a notice on
    /// `Commit::Applied`). Never awaits.
    pub fn apply<N: Navigator>(&mut self, step: Step, navigator: &mut N) -> Option<Commit> {
        let now = now();
        // Closed from elsewhere (or a fatal listener error): fence before anything else, so
        // a validation that finishes now can never navigate.
        if self.endpoint.is_closing() {
            self.controller.revoke();
        }
        let commit = match step {
            Step::Inbound(Inbound::Request { request, reply }) => {
                if let Some(validation) = self.controller.handle(request, reply, now) {
                    self.spawn_validation(validation);
                }
                None
            }
            Step::Inbound(Inbound::CallerGone) => {
                self.controller.caller_gone();
                None
            }
            Step::Inbound(Inbound::Closed) | Step::EndpointGone => {
                self.controller.revoke();
                None
            }
            Step::Deadline => {
                self.controller.poll_deadline(now);
                None
            }
            Step::Finished(ticket, outcome) => {
                self.running.remove(&ticket);
                Some(
                    self.controller
                        .validation_finished(ticket, outcome, now, navigator),
                )
            }
        };
        self.abort_fenced();
        commit
    }

    fn spawn_validation(&mut self, validation: Validation) {
        let validator = self.validator.clone();
        let mut guard = FinishGuard {
            tx: self.finished_tx.clone(),
            ticket: validation.ticket,
            // What an aborted validation reports; the controller has fenced it already.
            outcome: ValidationOutcome::Unavailable,
        };
        let task: JoinHandle<()> = tokio::spawn(async move {
            guard.outcome = validator.validate(validation.session_id).await;
            drop(guard);
        });
        self.running.insert(validation.ticket, task.abort_handle());
    }

    /// Validations the controller fenced (deadline, cancel, revoke) need not keep running.
    fn abort_fenced(&mut self) {
        let current = self.controller.in_flight();
        for (ticket, task) in &self.running {
            if Some(*ticket) != current {
                task.abort();
            }
        }
    }

    /// Revokes sharing: fences every pending navigation at once, then closes the endpoint.
    /// The returned future completes when the directory is gone; awaiting it is optional.
    pub fn revoke(&mut self) -> impl Future<Output = ()> + Send + 'static {
        self.controller.revoke();
        self.abort_fenced();
        let endpoint = self.endpoint.clone();
        async move { endpoint.close().await }
    }
}
