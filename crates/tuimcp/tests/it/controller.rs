//! The controller, driven synchronously with a fake clock (`Instant`s we choose).

use std::time::{Duration, Instant};

use ax_tuimcp::{
    Blockers, Code, Commit, Controller, GuardInputs, Identity, Location, Navigator, Request,
    Response, SelectSession, SessionId, Validation, ValidationOutcome, WireUuid,
};
use tokio::sync::oneshot;

use crate::util::{select, sid};

struct Router {
    inputs: GuardInputs,
    calls: usize,
    mode: Mode,
}

#[derive(PartialEq)]
enum Mode {
    Normal,
    Fail,
    GoElsewhere,
}

impl Navigator for Router {
    type Error = &'static str;
    fn navigate(&mut self, session: &SessionId) -> Result<GuardInputs, &'static str> {
        self.calls += 1;
        match self.mode {
            Mode::Fail => Err("router failed"),
            Mode::GoElsewhere => {
                self.inputs.location = Location::Home;
                Ok(self.inputs.clone())
            }
            Mode::Normal => {
                self.inputs.location = Location::Session(session.clone());
                Ok(self.inputs.clone())
            }
        }
    }
}

struct Rig {
    c: Controller,
    t0: Instant,
    router: Router,
}

impl Rig {
    fn new() -> Self {
        let inputs = GuardInputs::ready_home("/w");
        Self {
            c: Controller::new(Identity::random(), inputs.clone()),
            t0: Instant::now(),
            router: Router {
                inputs,
                calls: 0,
                mode: Mode::Normal,
            },
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    fn fresh(&self, session: u32) -> SelectSession {
        select(&self.c.view(self.t0), &sid(session))
    }

    fn send(
        &mut self,
        args: SelectSession,
        ms: u64,
    ) -> (Option<Validation>, oneshot::Receiver<Response>) {
        let (tx, rx) = oneshot::channel();
        let v = self.c.handle(Request::SelectSession(args), tx, self.at(ms));
        (v, rx)
    }

    /// Sends and expects an immediate answer.
    fn answer(&mut self, args: SelectSession, ms: u64) -> Response {
        let (v, mut rx) = self.send(args, ms);
        assert!(v.is_none(), "no validation expected");
        rx.try_recv().expect("an immediate answer")
    }

    fn finish(&mut self, v: &Validation, outcome: ValidationOutcome, ms: u64) -> Commit {
        let now = self.at(ms);
        self.c
            .validation_finished(v.ticket, outcome, now, &mut self.router)
    }
}

fn code(response: Response) -> Code {
    response
        .code()
        .unwrap_or_else(|| panic!("expected a rejection, got {response:?}"))
}

#[test]
fn happy_path_applies_and_rereads() {
    let mut rig = Rig::new();
    let args = rig.fresh(1);
    let (v, mut rx) = rig.send(args, 0);
    let v = v.expect("a validation");
    assert_eq!(v.session_id, sid(1));
    assert!(rx.try_recv().is_err(), "pending until validated");
    let commit = rig.finish(&v, ValidationOutcome::Valid, 100);
    let Commit::Applied(view) = commit else {
        panic!("applied expected, got {commit:?}")
    };
    assert_eq!(view.session_id, Some(sid(1)));
    assert_eq!(rx.try_recv().unwrap(), Response::Applied(view));
    assert_eq!(rig.router.calls, 1);
}

#[test]
fn selecting_the_open_session_changes_nothing_and_says_so() {
    let mut rig = Rig::new();
    let (v, _rx) = rig.send(rig.fresh(1), 0);
    let Commit::Applied(opened) = rig.finish(&v.unwrap(), ValidationOutcome::Valid, 1) else {
        panic!("applied expected")
    };
    assert_eq!(rig.router.calls, 1);
    // The same session again: no validation, no router call, the view unchanged.
    let again = rig.fresh(1);
    let answer = rig.answer(again.clone(), 2);
    assert_eq!(answer, Response::Applied(opened.clone()));
    assert_eq!(rig.c.revision(), opened.revision, "nothing changed");
    assert_eq!(rig.router.calls, 1, "the router was not called");
    // Its receipt replays like any other, and the guard still applies first.
    assert_eq!(rig.answer(again, 3), Response::Applied(opened));
    let mut stale = rig.fresh(1);
    stale.expected_revision += 1;
    assert_eq!(code(rig.answer(stale, 4)), Code::StaleRevision);
}

#[test]
fn guard_codes_in_order() {
    let mut rig = Rig::new();
    // user_active: each blocker alone.
    let blockers: [fn(&mut Blockers); 8] = [
        |b| b.startup_overlay = true,
        |b| b.exit_overlay = true,
        |b| b.composer_missing = true,
        |b| b.draft = true,
        |b| b.attachment = true,
        |b| b.modal = true,
        |b| b.session_busy = true,
        |b| b.pending_approval = true,
    ];
    for set in blockers {
        let mut inputs = GuardInputs::ready_home("/w");
        set(&mut inputs.blockers);
        rig.c.observe(inputs);
        assert_eq!(code(rig.answer(rig.fresh(1), 0)), Code::UserActive);
        rig.c.observe(GuardInputs::ready_home("/w"));
    }
    // not_ready beats user_active.
    let mut inputs = GuardInputs::ready_home("/w");
    inputs.blockers.draft = true;
    inputs.stream_connected = false;
    rig.c.observe(inputs.clone());
    assert_eq!(code(rig.answer(rig.fresh(1), 0)), Code::NotReady);
    for unready in [
        |i: &mut GuardInputs| i.synced = false,
        |i: &mut GuardInputs| {
            i.location = Location::Session(sid(9));
            i.route_loaded = false;
        },
    ] {
        let mut inputs = GuardInputs::ready_home("/w");
        unready(&mut inputs);
        rig.c.observe(inputs);
        assert_eq!(code(rig.answer(rig.fresh(1), 0)), Code::NotReady);
    }
    // stale_revision beats not_ready.
    let mut stale = rig.fresh(1);
    stale.expected_revision += 1;
    assert_eq!(code(rig.answer(stale.clone(), 0)), Code::StaleRevision);
    // stale_target beats stale_revision (instance and generation each).
    let mut other = stale.clone();
    other.request_id = WireUuid::random();
    other.instance_id = WireUuid::random();
    assert_eq!(code(rig.answer(other, 0)), Code::StaleTarget);
    let mut other = stale;
    other.request_id = WireUuid::random();
    other.generation = WireUuid::random();
    assert_eq!(code(rig.answer(other.clone(), 0)), Code::StaleTarget);
    // revoked beats everything.
    rig.c.revoke();
    other.request_id = WireUuid::random();
    assert_eq!(code(rig.answer(other, 0)), Code::Revoked);
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn quiet_period_blocks_then_ends_without_a_revision_change() {
    let mut rig = Rig::new();
    rig.c.human_input(rig.at(0));
    let revision = rig.c.revision();
    assert!(rig.c.view(rig.at(1499)).blocked);
    assert_eq!(code(rig.answer(rig.fresh(1), 1499)), Code::UserActive);
    assert!(!rig.c.view(rig.at(1500)).blocked);
    assert_eq!(
        rig.c.revision(),
        revision,
        "the end of the quiet period is silent"
    );
    let (v, _rx) = rig.send(rig.fresh(1), 1500);
    assert!(v.is_some(), "navigation allowed after 1.5 s");
}

#[test]
fn keystrokes_count_once_per_episode() {
    let mut rig = Rig::new();
    let r0 = rig.c.revision();
    for ms in (0..3000).step_by(100) {
        rig.c.human_input(rig.at(ms)); // typing steadily: one episode
    }
    assert_eq!(rig.c.revision(), r0 + 1);
    rig.c.human_input(rig.at(2900 + 1500)); // after a pause: a new episode
    assert_eq!(rig.c.revision(), r0 + 2);
    // Content the guard does not read never moves the revision; same inputs are no change.
    rig.c.observe(GuardInputs::ready_home("/w"));
    assert_eq!(rig.c.revision(), r0 + 2);
}

#[test]
fn revision_follows_every_guard_input() {
    let mut rig = Rig::new();
    let changes: [fn(&mut GuardInputs); 6] = [
        |i| i.location = Location::Session(sid(3)),
        |i| i.stream_connected = false,
        |i| i.synced = false,
        |i| i.route_loaded = false,
        |i| i.blockers.modal = true,
        |i| i.workspace = "/other".into(),
    ];
    for change in changes {
        let before = rig.c.revision();
        let mut inputs = GuardInputs::ready_home("/w");
        change(&mut inputs);
        rig.c.observe(inputs);
        assert_eq!(rig.c.revision(), before + 1);
        rig.c.observe(GuardInputs::ready_home("/w"));
        assert_eq!(rig.c.revision(), before + 2);
    }
}

#[test]
fn aba_change_during_validation_is_stale_revision() {
    let mut rig = Rig::new();
    let (v, mut rx) = rig.send(rig.fresh(1), 0);
    let v = v.unwrap();
    let mut modal = GuardInputs::ready_home("/w");
    modal.blockers.modal = true;
    rig.c.observe(modal); // A → B
    rig.c.observe(GuardInputs::ready_home("/w")); // B → A: same state, newer revision
    assert_eq!(
        rig.finish(&v, ValidationOutcome::Valid, 10),
        Commit::Rejected(Code::StaleRevision)
    );
    assert_eq!(code(rx.try_recv().unwrap()), Code::StaleRevision);
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn human_input_during_validation_blocks_the_commit() {
    let mut rig = Rig::new();
    let (v, _rx) = rig.send(rig.fresh(1), 0);
    rig.c.human_input(rig.at(5));
    // The revision moved too, and the guard reports the first failing check.
    assert_eq!(
        rig.finish(&v.unwrap(), ValidationOutcome::Valid, 10),
        Commit::Rejected(Code::StaleRevision)
    );
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn validation_outcomes() {
    let mut rig = Rig::new();
    let (v, mut rx) = rig.send(rig.fresh(1), 0);
    rig.finish(&v.unwrap(), ValidationOutcome::NotFound, 1);
    assert_eq!(code(rx.try_recv().unwrap()), Code::TargetUnavailable);
    let (v, mut rx) = rig.send(rig.fresh(1), 2);
    rig.finish(&v.unwrap(), ValidationOutcome::Unavailable, 3);
    assert_eq!(code(rx.try_recv().unwrap()), Code::NotReady);
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn duplicates_share_one_result_verbatim() {
    let mut rig = Rig::new();
    let args = rig.fresh(1);
    let (v, mut first) = rig.send(args.clone(), 0);
    let (none, mut second) = rig.send(args.clone(), 1);
    assert!(none.is_none(), "a concurrent duplicate starts nothing");
    let commit = rig.finish(&v.unwrap(), ValidationOutcome::Valid, 2);
    let Commit::Applied(view) = commit else {
        panic!("applied expected")
    };
    let a = first.try_recv().unwrap();
    let b = second.try_recv().unwrap();
    assert_eq!(a, Response::Applied(view.clone()));
    assert_eq!(a, b);
    // Later, after the state moved on, the same requestId still gets the original context.
    rig.c.observe(GuardInputs::ready_home("/w"));
    assert_eq!(rig.answer(args.clone(), 5000), Response::Applied(view));
    // UUID case does not matter: it is the same request.
    let upper: SelectSession = serde_json::from_value({
        let mut value = serde_json::to_value(&args).unwrap();
        let id = value["requestId"].as_str().unwrap().to_uppercase();
        value["requestId"] = id.into();
        value
    })
    .unwrap();
    assert!(matches!(rig.answer(upper, 5001), Response::Applied(_)));
    assert_eq!(rig.router.calls, 1);
}

#[test]
fn rejected_receipts_replay_too() {
    let mut rig = Rig::new();
    let mut args = rig.fresh(1);
    args.expected_revision = 99;
    assert_eq!(code(rig.answer(args.clone(), 0)), Code::StaleRevision);
    assert_eq!(code(rig.answer(args, 1)), Code::StaleRevision);
}

#[test]
fn same_request_id_with_other_arguments_conflicts() {
    let mut rig = Rig::new();
    let args = rig.fresh(1);
    let (v, _rx) = rig.send(args.clone(), 0);
    let mut other = args.clone();
    other.session_id = sid(2);
    assert_eq!(code(rig.answer(other.clone(), 1)), Code::RequestConflict);
    rig.finish(&v.unwrap(), ValidationOutcome::Valid, 2);
    assert_eq!(code(rig.answer(other, 3)), Code::RequestConflict);
}

#[test]
fn single_flight_answers_busy() {
    let mut rig = Rig::new();
    let (v, _rx) = rig.send(rig.fresh(1), 0);
    assert_eq!(code(rig.answer(rig.fresh(2), 1)), Code::Busy);
    rig.finish(&v.unwrap(), ValidationOutcome::Valid, 2);
    let (again, _rx) = rig.send(rig.fresh(2), 3);
    assert!(again.is_some(), "the gate opens after the commit");
}

#[test]
fn request_limit_keeps_reads_and_old_receipts() {
    let mut rig = Rig::new();
    let first = rig.fresh(1);
    let (v, _rx) = rig.send(first.clone(), 0);
    let Commit::Applied(view) = rig.finish(&v.unwrap(), ValidationOutcome::Valid, 1) else {
        panic!("applied expected")
    };
    for _ in 1..128 {
        let mut stale = rig.fresh(2);
        stale.expected_revision = 999_999;
        assert_eq!(code(rig.answer(stale, 2)), Code::StaleRevision);
    }
    assert_eq!(code(rig.answer(rig.fresh(2), 3)), Code::RequestLimit);
    assert_eq!(code(rig.answer(rig.fresh(3), 4)), Code::RequestLimit);
    // Reads still work, and the oldest receipt was never evicted.
    let (tx, mut rx) = oneshot::channel();
    assert!(
        rig.c
            .handle(Request::GetViewContext, tx, rig.at(5))
            .is_none()
    );
    assert!(matches!(rx.try_recv().unwrap(), Response::Context(_)));
    assert_eq!(rig.answer(first, 6), Response::Applied(view));
    assert_eq!(rig.router.calls, 1);
}

#[test]
fn revoke_fences_a_late_validation() {
    let mut rig = Rig::new();
    let (v, mut rx) = rig.send(rig.fresh(1), 0);
    rig.c.revoke();
    assert_eq!(code(rx.try_recv().unwrap()), Code::Revoked);
    assert_eq!(
        rig.finish(&v.unwrap(), ValidationOutcome::Valid, 10),
        Commit::Fenced
    );
    assert_eq!(rig.router.calls, 0);
    assert_eq!(code(rig.answer(rig.fresh(2), 11)), Code::Revoked);
    let (tx, mut rx) = oneshot::channel();
    rig.c.handle(Request::GetViewContext, tx, rig.at(12));
    assert_eq!(code(rx.try_recv().unwrap()), Code::Revoked);
    rig.c.revoke(); // idempotent
}

#[test]
fn cancel_fences_a_late_validation() {
    let mut rig = Rig::new();
    let args = rig.fresh(1);
    let (v, rx) = rig.send(args.clone(), 0);
    let (_, duplicate) = rig.send(args.clone(), 1);
    drop(rx);
    rig.c.caller_gone();
    assert!(rig.c.in_flight().is_some(), "one caller still waits");
    drop(duplicate);
    rig.c.caller_gone();
    assert!(rig.c.in_flight().is_none());
    assert_eq!(
        rig.finish(&v.unwrap(), ValidationOutcome::Valid, 10),
        Commit::Fenced
    );
    assert_eq!(rig.router.calls, 0);
    assert_eq!(code(rig.answer(args, 11)), Code::Cancelled);
}

#[test]
fn deadline_fences_a_late_validation() {
    let mut rig = Rig::new();
    let (v, mut rx) = rig.send(rig.fresh(1), 0);
    let v = v.unwrap();
    assert_eq!(v.deadline, rig.at(4000));
    assert_eq!(rig.c.next_deadline(), Some(rig.at(4000)));
    rig.c.poll_deadline(rig.at(3999));
    assert!(rx.try_recv().is_err());
    rig.c.poll_deadline(rig.at(4000));
    assert_eq!(code(rx.try_recv().unwrap()), Code::DeadlineExceeded);
    assert_eq!(
        rig.finish(&v, ValidationOutcome::Valid, 4001),
        Commit::Fenced
    );
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn a_validation_finishing_after_its_deadline_does_not_navigate() {
    let mut rig = Rig::new();
    let (v, mut rx) = rig.send(rig.fresh(1), 0);
    // The owner never polled the deadline; the result still arrives too late.
    assert_eq!(
        rig.finish(&v.unwrap(), ValidationOutcome::Valid, 4000),
        Commit::Rejected(Code::DeadlineExceeded)
    );
    assert_eq!(code(rx.try_recv().unwrap()), Code::DeadlineExceeded);
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn a_hung_validation_does_not_wedge_later_navigation() {
    let mut rig = Rig::new();
    let (hung, _rx) = rig.send(rig.fresh(1), 0);
    rig.c.poll_deadline(rig.at(4000));
    let (v, mut rx) = rig.send(rig.fresh(2), 4001);
    let v = v.expect("the gate was released at the interrupt");
    assert!(matches!(
        rig.finish(&v, ValidationOutcome::Valid, 4002),
        Commit::Applied(_)
    ));
    assert!(matches!(rx.try_recv().unwrap(), Response::Applied(_)));
    // The hung one finally returns: fenced.
    assert_eq!(
        rig.finish(&hung.unwrap(), ValidationOutcome::Valid, 9000),
        Commit::Fenced
    );
    assert_eq!(rig.router.calls, 1);
}

#[test]
fn a_second_concurrent_orphan_answers_busy() {
    let mut rig = Rig::new();
    let (first, _a) = rig.send(rig.fresh(1), 0);
    rig.c.poll_deadline(rig.at(4000)); // orphan 1
    let (second, _b) = rig.send(rig.fresh(2), 4001);
    rig.c.poll_deadline(rig.at(8001)); // orphan 2
    assert_eq!(code(rig.answer(rig.fresh(3), 8002)), Code::Busy);
    assert_eq!(
        rig.finish(&first.unwrap(), ValidationOutcome::Valid, 8003),
        Commit::Fenced
    );
    let (third, _c) = rig.send(rig.fresh(3), 8004);
    assert!(third.is_some(), "one orphan left: the gate is open again");
    assert_eq!(
        rig.finish(&second.unwrap(), ValidationOutcome::Valid, 8005),
        Commit::Fenced
    );
    assert_eq!(rig.router.calls, 0);
}

#[test]
fn router_failure_or_wrong_reread_is_outcome_unknown() {
    for mode in [Mode::Fail, Mode::GoElsewhere] {
        let mut rig = Rig::new();
        rig.router.mode = mode;
        let (v, mut rx) = rig.send(rig.fresh(1), 0);
        assert_eq!(
            rig.finish(&v.unwrap(), ValidationOutcome::Valid, 1),
            Commit::Rejected(Code::OutcomeUnknown)
        );
        assert_eq!(code(rx.try_recv().unwrap()), Code::OutcomeUnknown);
        assert_eq!(
            rig.router.calls, 1,
            "the router was called: never claim no effect"
        );
    }
}

#[test]
fn view_shows_only_the_bounded_state() {
    let mut rig = Rig::new();
    let mut inputs = GuardInputs::ready_home("/secret/workspace/path");
    inputs.location = Location::Session(sid(4));
    inputs.blockers.draft = true;
    rig.c.observe(inputs);
    let view = rig.c.view(rig.t0);
    let json = serde_json::to_string(&view).unwrap();
    assert!(!json.contains("secret"));
    assert_eq!(view.session_id, Some(sid(4)));
    assert!(view.blocked);
    assert!(view.ready);
    let keys: Vec<String> = serde_json::to_value(&view)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys.len(),
        7,
        "instanceId generation revision route sessionId ready blocked: {keys:?}"
    );
}
