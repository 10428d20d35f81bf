//! The controller: the only authority over navigation (docs/tuimcp.md §6, §7).
//!
//! It is a plain synchronous struct held by the task that owns the UI state. It never awaits:
//! the owner feeds it every state mutation ([`Controller::observe`]) and every parsed human
//! input event ([`Controller::human_input`]), hands it requests with their reply channels
//! ([`Controller::handle`]), and reports finished validations
//! ([`Controller::validation_finished`]), which guards, navigates and re-reads the view in one
//! call. Time is always passed in (`now`), so tests drive a fake clock.

use std::{
    collections::{HashMap, HashSet},
    fmt,
    time::{Duration, Instant},
};

use tokio::sync::oneshot;

use crate::protocol::{Code, Request, Response, Route, SelectSession, SessionId, View, WireUuid};

/// Human input within this window blocks navigation (`user_active`).
pub const QUIET_PERIOD: Duration = Duration::from_millis(1500);
/// Controller deadline for validating a session (adapter 4.5 s, socket 5.0 s).
pub const VALIDATION_DEADLINE: Duration = Duration::from_secs(4);
/// Navigation requests one TUI process accepts; receipts are never evicted.
pub const RECEIPT_LIMIT: usize = 128;

/// Who this TUI is: random per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Random; names the sharing TUI. A request naming another is `stale_target`.
    pub instance_id: WireUuid,
    /// Random too; a request must name both, so one read from another endpoint file is `stale_target`.
    pub generation: WireUuid,
}

impl Identity {
    /// Fresh random ids (sharing starts with one).
    pub fn random() -> Self {
        Self {
            instance_id: WireUuid::random(),
            generation: WireUuid::random(),
        }
    }
}

/// Where the TUI is. The session route always names its session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The session list.
    Home,
    /// One session's transcript.
    Session(SessionId),
}

/// The blocked predicate's inputs (§7), as booleans: never content such as the draft's text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Blockers {
    /// The first-run overlay is up.
    pub startup_overlay: bool,
    /// The quit confirmation is up.
    pub exit_overlay: bool,
    /// The session route has no composer to return to.
    pub composer_missing: bool,
    /// A draft exists, even only whitespace.
    pub draft: bool,
    /// A file is attached to the draft.
    pub attachment: bool,
    /// Any modal or dialog.
    pub modal: bool,
    /// The shown session is running something.
    pub session_busy: bool,
    /// Any pending approval or question.
    pub pending_approval: bool,
}

impl Blockers {
    /// Whether anything blocks navigation (`user_active`).
    pub fn any(&self) -> bool {
        let Blockers {
            startup_overlay,
            exit_overlay,
            composer_missing,
            draft,
            attachment,
            modal,
            session_busy,
            pending_approval,
        } = self;
        *startup_overlay
            || *exit_overlay
            || *composer_missing
            || *draft
            || *attachment
            || *modal
            || *session_busy
            || *pending_approval
    }
}

/// Everything the guard reads from the UI state. The owner rebuilds it after every mutation
/// and passes it to [`Controller::observe`]; any difference bumps the revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardInputs {
    /// The route shown now.
    pub location: Location,
    /// The backend event stream is connected.
    pub stream_connected: bool,
    /// The initial sync with the backend finished.
    pub synced: bool,
    /// On the session route: the session finished loading (ignored on home).
    pub route_loaded: bool,
    /// What the person is in the middle of.
    pub blockers: Blockers,
    /// Identifies the workspace (e.g. its path). Compared only, never shown to an agent.
    pub workspace: String,
    /// Changes whenever a session appears in or leaves the UI's list (a counter), so a
    /// revision read before a session was deleted is stale.
    pub sessions: u64,
}

impl GuardInputs {
    /// Home, ready, nothing blocking.
    pub fn ready_home(workspace: impl Into<String>) -> Self {
        Self {
            location: Location::Home,
            stream_connected: true,
            synced: true,
            route_loaded: true,
            blockers: Blockers::default(),
            workspace: workspace.into(),
            sessions: 0,
        }
    }

    /// Whether the TUI is in a state where navigation may happen (else `not_ready`).
    pub fn ready(&self) -> bool {
        self.stream_connected
            && self.synced
            && (self.location == Location::Home || self.route_loaded)
    }
}

/// The reply channel of one request.
pub type Reply = oneshot::Sender<Response>;

/// One validation the owner must run: `validator.validate(session_id)`, then report the
/// outcome with [`Controller::validation_finished`] and the same ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// Names this validation when it is reported back.
    pub ticket: Ticket,
    /// The session to check.
    pub session_id: SessionId,
    /// When the validation counts as `deadline_exceeded`.
    pub deadline: Instant,
}

/// Names one validation; a stale ticket can never navigate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket(u64);

/// What the backend said about a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidationOutcome {
    /// The session exists in this project.
    Valid,
    /// Unknown session, or not in this project.
    NotFound,
    /// The backend could not answer.
    Unavailable,
}

/// The app's router, called synchronously by the owner task inside
/// [`Controller::validation_finished`].
pub trait Navigator {
    /// Why routing failed; shown in the log, never to the agent.
    type Error: fmt::Display;
    /// Route to `session` and return the guard inputs re-read right after it.
    fn navigate(&mut self, session: &SessionId) -> Result<GuardInputs, Self::Error>;
}

/// What a finished validation led to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Navigated: show the person a short notice that the agent did this.
    Applied(View),
    /// The ticket was fenced (interrupted earlier): nothing happened.
    Fenced,
    /// Answered with this code. `OutcomeUnknown` means the router was called.
    Rejected(Code),
}

enum ReceiptState {
    Pending(Vec<Reply>),
    Done(Response),
}

struct Receipt {
    signature: String,
    state: ReceiptState,
}

struct Flight {
    ticket: Ticket,
    request: SelectSession,
    deadline: Instant,
}

/// See the module docs.
pub struct Controller {
    identity: Identity,
    inputs: GuardInputs,
    revision: u64,
    last_human_input: Option<Instant>,
    receipts: HashMap<WireUuid, Receipt>,
    flight: Option<Flight>,
    orphans: HashSet<Ticket>,
    next_ticket: u64,
    revoked: bool,
}

impl Controller {
    /// A controller for `identity`, starting at revision 0 with the UI's current `inputs`.
    pub fn new(identity: Identity, inputs: GuardInputs) -> Self {
        Self {
            identity,
            inputs,
            revision: 0,
            last_human_input: None,
            receipts: HashMap::new(),
            flight: None,
            orphans: HashSet::new(),
            next_ticket: 0,
            revoked: false,
        }
    }

    /// Who this TUI is (written into the endpoint file).
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// Bumped by every change of the guard inputs; a request must name the current one.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Whether sharing was revoked; every later request is `revoked`.
    pub fn is_revoked(&self) -> bool {
        self.revoked
    }

    /// The ticket of the validation currently holding the single-flight gate.
    pub fn in_flight(&self) -> Option<Ticket> {
        self.flight.as_ref().map(|f| f.ticket)
    }

    /// When the in-flight validation times out; the owner sleeps until then and calls
    /// [`Controller::poll_deadline`].
    pub fn next_deadline(&self) -> Option<Instant> {
        self.flight.as_ref().map(|f| f.deadline)
    }

    /// The epoch: call after every UI state mutation. Any change of a guard input bumps the
    /// revision once.
    pub fn observe(&mut self, inputs: GuardInputs) {
        if inputs != self.inputs {
            self.inputs = inputs;
            self.revision += 1;
        }
    }

    /// Call for every parsed keyboard, paste or mouse event. Only the first event of an
    /// activity episode bumps the revision, so the revision does not leak typing rhythm.
    pub fn human_input(&mut self, now: Instant) {
        if !self.recently_active(now) {
            self.revision += 1;
        }
        self.last_human_input = Some(now);
    }

    fn recently_active(&self, now: Instant) -> bool {
        self.last_human_input
            .is_some_and(|at| now.saturating_duration_since(at) < QUIET_PERIOD)
    }

    /// The blocked predicate of §7 (including the quiet period).
    pub fn user_active(&self, now: Instant) -> bool {
        self.inputs.blockers.any() || self.recently_active(now)
    }

    /// The bounded view.
    pub fn view(&self, now: Instant) -> View {
        let (route, session_id) = match &self.inputs.location {
            Location::Home => (Route::Home, None),
            Location::Session(id) => (Route::Session, Some(id.clone())),
        };
        View {
            instance_id: self.identity.instance_id,
            generation: self.identity.generation,
            revision: self.revision,
            route,
            session_id,
            ready: self.inputs.ready(),
            blocked: self.user_active(now),
        }
    }

    /// Handles one request. Returns a validation for the owner to run, or `None` when the
    /// reply was answered (or parked behind an identical pending request).
    pub fn handle(&mut self, request: Request, reply: Reply, now: Instant) -> Option<Validation> {
        match request {
            Request::GetViewContext => {
                let response = if self.revoked {
                    Response::Rejected(Code::Revoked)
                } else {
                    Response::Context(self.view(now))
                };
                let _ = reply.send(response);
                None
            }
            Request::SelectSession(args) => self.select_session(args, reply, now),
        }
    }

    fn select_session(
        &mut self,
        args: SelectSession,
        reply: Reply,
        now: Instant,
    ) -> Option<Validation> {
        if self.revoked {
            let _ = reply.send(Response::Rejected(Code::Revoked));
            return None;
        }
        let signature = args.signature();
        if let Some(receipt) = self.receipts.get_mut(&args.request_id) {
            if receipt.signature != signature {
                let _ = reply.send(Response::Rejected(Code::RequestConflict));
                return None;
            }
            match &mut receipt.state {
                ReceiptState::Pending(waiters) => waiters.push(reply),
                ReceiptState::Done(response) => {
                    let _ = reply.send(response.clone());
                }
            }
            return None;
        }
        if self.receipts.len() >= RECEIPT_LIMIT {
            let _ = reply.send(Response::Rejected(Code::RequestLimit));
            return None;
        }
        // The receipt is stored before anything else can happen to this request.
        let request_id = args.request_id;
        self.receipts.insert(
            request_id,
            Receipt {
                signature,
                state: ReceiptState::Pending(vec![reply]),
            },
        );
        if let Err(code) = self.guard(&args, now) {
            self.finish(request_id, Response::Rejected(code));
            return None;
        }
        // At most one validation in flight, and at most one orphan besides it.
        if self.flight.is_some() || self.orphans.len() >= 2 {
            self.finish(request_id, Response::Rejected(Code::Busy));
            return None;
        }
        // Already there: nothing to validate or navigate. The answer is `applied` with the
        // unchanged view (same revision), and the person's screen is left alone.
        if self.inputs.location == Location::Session(args.session_id.clone()) {
            self.finish(request_id, Response::Applied(self.view(now)));
            return None;
        }
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        let deadline = now + VALIDATION_DEADLINE;
        let session_id = args.session_id.clone();
        self.flight = Some(Flight {
            ticket,
            request: args,
            deadline,
        });
        Some(Validation {
            ticket,
            session_id,
            deadline,
        })
    }

    /// Answers a request that arrived past the connection cap from its stored receipt
    /// alone: the stored final result for the same arguments, `request_conflict` for other
    /// arguments, and `busy` when there is no final result yet (nothing new starts).
    pub fn answer_from_receipt(&self, args: &SelectSession, reply: Reply) {
        let response = if self.revoked {
            Response::Rejected(Code::Revoked)
        } else {
            match self.receipts.get(&args.request_id) {
                Some(receipt) if receipt.signature != args.signature() => {
                    Response::Rejected(Code::RequestConflict)
                }
                Some(Receipt {
                    state: ReceiptState::Done(response),
                    ..
                }) => response.clone(),
                _ => Response::Rejected(Code::Busy),
            }
        };
        let _ = reply.send(response);
    }

    /// The guard, in its order: revoked → stale_target → stale_revision → not_ready →
    /// user_active.
    fn guard(&self, args: &SelectSession, now: Instant) -> Result<(), Code> {
        if self.revoked {
            Err(Code::Revoked)
        } else if args.instance_id != self.identity.instance_id
            || args.generation != self.identity.generation
        {
            Err(Code::StaleTarget)
        } else if args.expected_revision != self.revision {
            Err(Code::StaleRevision)
        } else if !self.inputs.ready() {
            Err(Code::NotReady)
        } else if self.user_active(now) {
            Err(Code::UserActive)
        } else {
            Ok(())
        }
    }

    /// Stores the final response of a receipt and answers everyone waiting on it.
    fn finish(&mut self, request_id: WireUuid, response: Response) {
        if let Some(receipt) = self.receipts.get_mut(&request_id) {
            let state = std::mem::replace(&mut receipt.state, ReceiptState::Done(response.clone()));
            if let ReceiptState::Pending(waiters) = state {
                for waiter in waiters {
                    let _ = waiter.send(response.clone());
                }
            }
        }
    }

    /// Ends the in-flight validation with `code` and fences its ticket.
    fn interrupt(&mut self, code: Code) {
        if let Some(flight) = self.flight.take() {
            self.orphans.insert(flight.ticket);
            self.finish(flight.request.request_id, Response::Rejected(code));
        }
    }

    /// Times out the in-flight validation once its deadline passed.
    pub fn poll_deadline(&mut self, now: Instant) {
        if self.flight.as_ref().is_some_and(|f| now >= f.deadline) {
            self.interrupt(Code::DeadlineExceeded);
        }
    }

    /// Call when a caller hung up: if nobody waits for the in-flight navigation any more,
    /// it is cancelled.
    pub fn caller_gone(&mut self) {
        let Some(flight) = &self.flight else { return };
        let Some(receipt) = self.receipts.get_mut(&flight.request.request_id) else {
            return;
        };
        if let ReceiptState::Pending(waiters) = &mut receipt.state {
            waiters.retain(|w| !w.is_closed());
            if waiters.is_empty() {
                self.interrupt(Code::Cancelled);
            }
        }
    }

    /// Revocation, exit or a fatal endpoint error: fences every pending navigation at once
    /// (it answers `revoked`), and every later request answers `revoked`. Idempotent.
    pub fn revoke(&mut self) {
        self.revoked = true;
        self.interrupt(Code::Revoked);
    }

    /// A validation finished. If its ticket still holds the gate and the deadline has not
    /// passed, guards again, navigates and re-reads the view, all in this one call.
    pub fn validation_finished<N: Navigator>(
        &mut self,
        ticket: Ticket,
        outcome: ValidationOutcome,
        now: Instant,
        navigator: &mut N,
    ) -> Commit {
        if self.flight.as_ref().map(|f| f.ticket) != Some(ticket) {
            self.orphans.remove(&ticket);
            return Commit::Fenced;
        }
        if self.flight.as_ref().is_some_and(|f| now >= f.deadline) {
            self.interrupt(Code::DeadlineExceeded);
            self.orphans.remove(&ticket);
            return Commit::Rejected(Code::DeadlineExceeded);
        }
        let Some(flight) = self.flight.take() else {
            return Commit::Fenced;
        };
        let request_id = flight.request.request_id;
        let rejected = |this: &mut Self, code: Code| {
            this.finish(request_id, Response::Rejected(code));
            Commit::Rejected(code)
        };
        match outcome {
            ValidationOutcome::Valid => {}
            ValidationOutcome::NotFound => return rejected(self, Code::TargetUnavailable),
            ValidationOutcome::Unavailable => return rejected(self, Code::NotReady),
        }
        if let Err(code) = self.guard(&flight.request, now) {
            return rejected(self, code);
        }
        let target = flight.request.session_id;
        match navigator.navigate(&target) {
            Ok(inputs) => {
                self.observe(inputs);
                let view = self.view(now);
                if view.session_id.as_ref() == Some(&target) {
                    self.finish(request_id, Response::Applied(view.clone()));
                    Commit::Applied(view)
                } else {
                    rejected(self, Code::OutcomeUnknown)
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "tuimcp: the route handler failed");
                rejected(self, Code::OutcomeUnknown)
            }
        }
    }
}
