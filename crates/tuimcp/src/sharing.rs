//! [`Sharing`]: a ready-made driver that bundles the controller, the endpoint and the
//! validation tasks for the task that owns the UI state.
//!
//! The owner awaits [`Sharing::next`] inside its `select!` loop (it is cancel-safe) and
//! passes the [`Step`] it returns to [`Sharing::apply`] together with its router. `apply`
//! never awaits, so guard, navigate and re-read happen in one message.
//!
//! Validations are futures polled by [`Sharing::next`] itself, in the owner task: no task is
//! spawned and no message carries the outcome back, so the validation's own wake-up (the
//! backend's answer) wakes the owner directly.

use std::{
    collections::VecDeque,
    future::Future,
    panic::AssertUnwindSafe,
    path::Path,
    pin::Pin,
    task::{Context, Poll},
    time::Instant,
};

use tokio::sync::mpsc;

use crate::{
    controller::{
        Commit, Controller, GuardInputs, Identity, Navigator, Ticket, Validation, ValidationOutcome,
    },
    protocol::SessionId,
    server::{Endpoint, EndpointError, EndpointOptions, Inbound},
};

/// Checks a session through the TUI's own authenticated backend connection. Cloned into
/// each validation's future, which [`Sharing::next`] polls in the owner task; dropping the
/// future must be harmless (it is dropped when the controller fences it). A panic inside it
/// counts as `Unavailable` and never reaches the owner.
pub trait SessionValidator: Clone + Send + Sync + 'static {
    /// Whether `session` exists in this TUI's project.
    fn validate(&self, session: SessionId) -> impl Future<Output = ValidationOutcome> + Send;
}

/// One thing for the owner to apply.
#[derive(Debug)]
pub enum Step {
    /// A message from the endpoint: pass it to the controller.
    Inbound(Inbound),
    /// A validation finished: report it with [`Controller::validation_finished`].
    Finished(Ticket, ValidationOutcome),
    /// The in-flight validation's deadline passed: call [`Controller::poll_deadline`].
    Deadline,
    /// The endpoint's channel ended: the endpoint closed.
    EndpointGone,
}

type Running = Pin<Box<dyn Future<Output = ValidationOutcome> + Send>>;

/// Polls every running validation once; the first that finished is removed and returned.
fn poll_running(running: &mut Vec<(Ticket, Running)>, cx: &mut Context<'_>) -> Poll<Step> {
    for i in 0..running.len() {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| running[i].1.as_mut().poll(cx)));
        let outcome = match polled {
            Ok(Poll::Pending) => continue,
            Ok(Poll::Ready(outcome)) => outcome,
            Err(_) => {
                tracing::error!("tuimcp: the session validator panicked");
                ValidationOutcome::Unavailable
            }
        };
        let (ticket, _) = running.swap_remove(i);
        return Poll::Ready(Step::Finished(ticket, outcome));
    }
    Poll::Pending
}

/// The controller, the endpoint and the running validations, owned by the UI task.
pub struct Sharing<V: SessionValidator> {
    controller: Controller,
    endpoint: Endpoint,
    inbound: mpsc::Receiver<Inbound>,
    inbound_open: bool,
    /// In flight and orphaned validations (at most three), polled by [`Sharing::next`].
    running: Vec<(Ticket, Running)>,
    /// Validations dropped because the controller fenced them: reported as finished
    /// (`Unavailable`) by the next [`Sharing::next`], so the controller releases the orphan.
    dropped: VecDeque<Ticket>,
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
        Ok(Self {
            controller: Controller::new(identity, inputs),
            endpoint,
            inbound,
            inbound_open: true,
            running: Vec::new(),
            dropped: VecDeque::new(),
            validator,
        })
    }

    /// Absolute path of `endpoint.json`, for the TUIMCP bar.
    pub fn endpoint_path(&self) -> &Path {
        self.endpoint.path()
    }

    /// The live endpoint (its socket and file).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The controller, for reading its state.
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
        if let Some(ticket) = self.dropped.pop_front() {
            return Step::Finished(ticket, ValidationOutcome::Unavailable);
        }
        let deadline = self.controller.next_deadline();
        // A passed deadline first, so a stream of requests can never starve it.
        if deadline.is_some_and(|at| now() >= at) {
            return Step::Deadline;
        }
        // The sleep is polled last: a validation that is already done (or a request) never
        // registers a timer.
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            step = std::future::poll_fn(|cx| poll_running(&mut self.running, cx)),
                if !self.running.is_empty() => step,
            inbound = self.inbound.recv(), if self.inbound_open => match inbound {
                Some(inbound) => Step::Inbound(inbound),
                None => {
                    self.inbound_open = false;
                    Step::EndpointGone
                }
            },
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
                    self.start_validation(validation);
                }
                None
            }
            Step::Inbound(Inbound::Receipt { request, reply }) => {
                self.controller.answer_from_receipt(&request, reply);
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
            Step::Finished(ticket, outcome) => Some(
                self.controller
                    .validation_finished(ticket, outcome, now, navigator),
            ),
        };
        self.abort_fenced();
        commit
    }

    fn start_validation(&mut self, validation: Validation) {
        let validator = self.validator.clone();
        let session = validation.session_id;
        let future: Running = Box::pin(async move { validator.validate(session).await });
        self.running.push((validation.ticket, future));
    }

    /// Validations the controller fenced (deadline, cancel, revoke) need not keep running:
    /// they are dropped, and reported finished so the controller releases the orphan.
    fn abort_fenced(&mut self) {
        let current = self.controller.in_flight();
        let dropped = &mut self.dropped;
        self.running.retain(|(ticket, _)| {
            let keep = Some(*ticket) == current;
            if !keep {
                dropped.push_back(*ticket);
            }
            keep
        });
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
