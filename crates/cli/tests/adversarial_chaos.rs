//! A bounded chaos and load run through the real binary (docs/SECURITY.md, issue 6 item 3).
//!
//! `ax-code --tui-mcp` runs in a pseudo-terminal (screen read back through vt100). Several
//! real adapters (`ax-code mcp tui`, driven over stdio JSON-RPC) hammer `get_view_context`
//! and `select_session`, replaying requestIds on purpose (also each other's, and with other
//! arguments), while a simulated person types and clears drafts, opens and closes the command
//! palette, clicks and moves the mouse, and sessions run commands and wait for approvals
//! (through the HTTP API, with the credential from the data directory's `servers/` registry).
//!
//! The run lasts `AX_CHAOS_SECS` seconds (default 20, so `cargo test` stays fast) and stops by
//! itself. The full run is a minute:
//!
//! ```text
//! AX_CHAOS_SECS=60 cargo test -p ax-cli --test adversarial_chaos -- --nocapture
//! ```
//!
//! It asserts invariants, never timings:
//! - no navigation while a blocking condition held: every window in which the test KNOWS a
//!   condition held (it saw it on the screen, and only it could end it) is checked against
//!   every `applied` whose whole request lies inside it, and the route shown on screen must
//!   not change inside such a window;
//! - every `applied` view's session is the one the screen shows afterwards (checked whenever
//!   no later navigation, by an agent or the person, followed within 2.5 s);
//! - each requestId navigates at most once: every answer for a requestId and its arguments
//!   is the same receipt, other arguments are a `request_conflict`;
//! - no crash, no undefined answer (`timeout_unknown`, `outcome_unknown`, `internal_error`);
//! - no file-descriptor or memory growth of the TUI process (/proc/<pid>/fd, VmRSS) between
//!   the end of a warm-up and the end of the run, beyond a small slack.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ax_client::Client;
use ax_protocol::{PermissionReply, SessionId, SessionStatus};
use serde_json::{Value, json};
use support::*;

const AGENTS: usize = 3;
/// Unique select_session requestIds the whole run may use (the TUI keeps 128 receipts).
const UNIQUE_BUDGET: usize = 100;
/// How far a person's route-changing input may lag behind the moment it was sent.
const PERSON_LAG: Duration = Duration::from_secs(2);
/// An applied navigation must be on screen when nothing else navigated for this long.
const SHOW_HORIZON: Duration = Duration::from_millis(2500);
/// Slack for the TUI's resources between warm-up and the end of the run.
const FD_SLACK: usize = 8;
const RSS_SLACK_KIB: u64 = 8 * 1024;

/// The draft the person types: none of these keys does anything in the approval dialog.
const DRAFT: &str = "qwx";

#[derive(Clone, Debug)]
struct Call {
    agent: usize,
    select: bool,
    request_id: Option<String>,
    args: Option<Value>,
    /// A requestId replayed with other arguments on purpose.
    conflict_of: Option<Value>,
    /// The target is a well-formed ID no backend knows.
    unknown_target: bool,
    sent: Instant,
    received: Instant,
    answer: Value,
}

#[derive(Clone, Debug)]
struct Window {
    what: String,
    start: Instant,
    end: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shown {
    Waiting,
    Busy,
}

#[derive(Clone, Debug)]
struct Sample {
    at: Instant,
    route: ShownRoute,
    statuses: Vec<(String, Shown)>,
}

/// A command run by the simulated backend user.
#[derive(Clone, Debug)]
struct Run {
    session: String,
    prompted: Instant,
    replied: Instant,
    approved: bool,
    released: Option<Instant>,
}

#[derive(Default)]
struct Log {
    calls: Vec<Call>,
    /// Windows in which the person held a draft or the palette open (seen on screen).
    windows: Vec<Window>,
    /// When the person sent input that may change the route (Esc, a click on the list).
    person_nav: Vec<Instant>,
    samples: Vec<Sample>,
    runs: Vec<Run>,
}

type Shared = Arc<Mutex<Log>>;

/// The phases of the run: calm (nobody but the agents) and active (the person and the
/// sessions), alternating, so that agents both can and cannot navigate.
#[derive(Clone, Copy, Debug)]
struct Phase {
    start: Instant,
    end: Instant,
    active: bool,
}

fn schedule(start: Instant, total: Duration, rng: &mut Rng) -> Vec<Phase> {
    let mut phases = Vec::new();
    let mut t = start;
    let mut active = false;
    while t < start + total {
        let len = if active {
            rng.millis(3000, 5000)
        } else {
            rng.millis(2200, 3200)
        };
        let end = (t + len).min(start + total);
        phases.push(Phase {
            start: t,
            end,
            active,
        });
        t = end;
        active = !active;
    }
    phases
}

fn parse_statuses(screen: &str) -> Vec<(String, Shown)> {
    let mut out = Vec::new();
    let mut header_seen = false;
    for line in screen.lines() {
        let Some(i) = line.find("ses_") else {
            if line.starts_with('┌') {
                header_seen = true;
            }
            continue;
        };
        let id: String = line[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if line.starts_with('┌') && !header_seen {
            header_seen = true;
            // The session route's title row: its state at the right.
            if line.contains("waiting for approval") {
                out.push((id, Shown::Waiting));
            } else if line.contains(" busy ") {
                out.push((id, Shown::Busy));
            }
        } else if line.starts_with('│') {
            // A row of the home list.
            if line.contains("? waiting") {
                out.push((id, Shown::Waiting));
            } else if line.contains("● busy") {
                out.push((id, Shown::Busy));
            }
        }
    }
    out
}

fn chaos_secs() -> u64 {
    std::env::var("AX_CHAOS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
        .clamp(5, 600)
}

#[test]
fn chaos_run_keeps_the_navigation_invariants() {
    let secs = chaos_secs();
    let mut seed_rng = Rng::from_entropy();
    let seed = seed_rng.next();
    eprintln!("chaos: {secs} s, seed {seed}");
    let mut rng = Rng::new(seed);

    let env = Env::new();
    let mut tui = Pty::spawn(&env, &["--tui-mcp"], None);
    let endpoint = tui.endpoint_path();
    tui.wait_text("● connected");
    let pid = tui.pid();
    let (url, token) = env.registered_backend();
    let rt = runtime();
    let client = Client::new(&url, &token).unwrap();
    let sessions: Vec<String> = rt.block_on(async {
        let mut ids = Vec::new();
        for i in 0..4 {
            let s = client
                .create_session(Some(&format!("chaos-{i}")))
                .await
                .unwrap();
            ids.push(s.id.as_str().to_owned());
        }
        ids
    });
    tui.wait_text("chaos-3");

    let log: Shared = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut adapters = Vec::new();
    for _ in 0..AGENTS {
        let mut a = Adapter::spawn(&env, &endpoint);
        a.wait_context("ready", unblocked);
        adapters.push(a);
    }

    let start = Instant::now();
    let total = Duration::from_secs(secs);
    let phases = schedule(start, total, &mut rng);
    let screen = tui.handle();

    // The screen sampler.
    let sampler = {
        let (log, stop, screen) = (log.clone(), stop.clone(), screen.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let s = screen.screen();
                let sample = Sample {
                    at: Instant::now(),
                    route: shown_route(&s),
                    statuses: parse_statuses(&s),
                };
                log.lock().unwrap().samples.push(sample);
                thread::sleep(Duration::from_millis(30));
            }
        })
    };

    // The agents.
    let pool: Arc<Mutex<Vec<(String, Value, Value)>>> = Arc::default();
    let per_agent = UNIQUE_BUDGET / AGENTS;
    let slot = total / per_agent as u32;
    let mut agent_threads = Vec::new();
    for (n, mut adapter) in adapters.into_iter().enumerate() {
        let (log, stop, pool, sessions) =
            (log.clone(), stop.clone(), pool.clone(), sessions.clone());
        let mut rng = Rng::new(seed ^ (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        agent_threads.push(thread::spawn(move || {
            let mut next_unique = start + slot.mul_f64(n as f64 / AGENTS as f64);
            let mut used = 0;
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let ctx = adapter.context();
                log.lock().unwrap().calls.push(Call {
                    agent: n,
                    select: false,
                    request_id: None,
                    args: None,
                    conflict_of: None,
                    unknown_target: false,
                    sent,
                    received: Instant::now(),
                    answer: ctx.clone(),
                });
                if ctx["status"] != "context" {
                    continue;
                }
                let roll = rng.below(100);
                let mut call = None;
                if used < per_agent && Instant::now() >= next_unique {
                    // A fresh navigation attempt, whatever the context says.
                    used += 1;
                    next_unique += slot;
                    let unknown = rng.below(10) == 0;
                    let current = ctx["context"]["sessionId"].as_str().unwrap_or("");
                    let target = if unknown {
                        format!("ses_ffffffffffff{:014}", rng.below(1_000_000))
                    } else {
                        let others: Vec<&String> =
                            sessions.iter().filter(|s| *s != current).collect();
                        others[rng.below(others.len() as u64) as usize].clone()
                    };
                    let request_id = uuid();
                    let args = select_args(&ctx, &request_id, &target);
                    call = Some((request_id, args, None, unknown));
                } else if roll < 30 {
                    // A replay of any earlier request, perhaps another agent's.
                    let pool = pool.lock().unwrap();
                    if !pool.is_empty() {
                        let (id, args, _) = &pool[rng.below(pool.len() as u64) as usize];
                        call = Some((id.clone(), args.clone(), None, false));
                    }
                } else if roll < 38 {
                    // The same requestId with other arguments.
                    let pool = pool.lock().unwrap();
                    if !pool.is_empty() {
                        let (id, args, first) = &pool[rng.below(pool.len() as u64) as usize];
                        let mut other = args.clone();
                        other["expectedRevision"] =
                            json!(args["expectedRevision"].as_u64().unwrap() + 1000);
                        call = Some((id.clone(), other, Some(first.clone()), false));
                    }
                }
                if let Some((request_id, args, conflict_of, _)) = call {
                    let unknown = !sessions.iter().any(|s| args["sessionId"] == json!(s));
                    let sent = Instant::now();
                    let answer = adapter.call("select_session", args.clone());
                    let received = Instant::now();
                    if conflict_of.is_none() {
                        let mut pool = pool.lock().unwrap();
                        if !pool.iter().any(|(id, _, _)| *id == request_id) {
                            pool.push((request_id.clone(), args.clone(), answer.clone()));
                        }
                    }
                    log.lock().unwrap().calls.push(Call {
                        agent: n,
                        select: true,
                        request_id: Some(request_id),
                        args: Some(args),
                        conflict_of,
                        unknown_target: unknown,
                        sent,
                        received,
                        answer,
                    });
                }
                thread::sleep(rng.millis(0, 40));
            }
            adapter
        }));
    }

    // The backend user: commands that wait for approval, then stay busy until released.
    let actor = {
        let (log, phases, client, project, screen) = (
            log.clone(),
            phases.clone(),
            client.clone(),
            env.project.clone(),
            screen.clone(),
        );
        let sessions = sessions.clone();
        let mut rng = Rng::new(seed ^ 0xac70);
        thread::spawn(move || {
            let rt = runtime();
            let mut k = 0;
            for phase in phases.iter().filter(|p| p.active) {
                let len = phase.end.saturating_duration_since(phase.start);
                if len < Duration::from_millis(2500) || rng.below(100) < 15 {
                    continue;
                }
                sleep_until(phase.start + rng.millis(0, 400));
                k += 1;
                // Mostly the session on screen, so the approval dialog shows as well.
                let session = match shown_route(&screen.screen()) {
                    ShownRoute::Session(id) if rng.below(100) < 70 => id,
                    _ => sessions[rng.below(sessions.len() as u64) as usize].clone(),
                };
                let id: SessionId = session.parse().unwrap();
                let command = format!(
                    "echo chaos-run-{k}; while [ ! -e .release-{k} ]; do sleep 0.05; done; echo released-{k}"
                );
                let prompted = Instant::now();
                let accepted = rt.block_on(client.prompt_text(&id, &command)).unwrap();
                let permission = accepted.permission.expect("the shell agent asks first");
                sleep_until(phase.start + rng.millis(900, 1400));
                let approved = rng.below(100) < 80;
                let replied = Instant::now();
                let reply = if approved {
                    PermissionReply::Once
                } else {
                    PermissionReply::Reject
                };
                rt.block_on(client.reply_permission(&id, &permission.id, reply))
                    .unwrap();
                let mut released = None;
                if approved {
                    sleep_until(phase.end - Duration::from_millis(rng.below(300) + 300));
                    released = Some(Instant::now());
                    std::fs::write(project.join(format!(".release-{k}")), b"").unwrap();
                }
                // Idle again before the calm phase.
                let t = Instant::now();
                loop {
                    let s = rt.block_on(client.get_session(&id)).unwrap();
                    if s.status == SessionStatus::Idle {
                        break;
                    }
                    assert!(t.elapsed() < WAIT, "session {session} never went idle");
                    thread::sleep(Duration::from_millis(50));
                }
                log.lock().unwrap().runs.push(Run {
                    session,
                    prompted,
                    replied,
                    approved,
                    released,
                });
            }
        })
    };

    // The person.
    let person = {
        let (log, phases, screen) = (log.clone(), phases.clone(), screen.clone());
        let mut rng = Rng::new(seed ^ 0x9e50);
        thread::spawn(move || {
            for phase in phases.iter().filter(|p| p.active) {
                sleep_until(phase.start);
                while Instant::now() + Duration::from_millis(800) < phase.end {
                    // Navigating by hand only late in the phase, so the agents' last
                    // navigation before it stays on screen long enough to be checked.
                    let may_navigate = Instant::now() > phase.start + Duration::from_millis(2800);
                    person_step(&screen, &log, &mut rng, may_navigate);
                }
            }
            // A palette drawn only after the person stopped looking for it would stay open.
            let cleanup_until = Instant::now() + WAIT;
            loop {
                let s = screen.screen();
                if s.contains("┌ Commands") {
                    screen.send("\x1b");
                } else if s.contains(&format!("│{DRAFT}")) {
                    screen.send("\x7f\x7f\x7f");
                } else {
                    break;
                }
                assert!(Instant::now() < cleanup_until, "cannot clean up:\n{s}");
                thread::sleep(Duration::from_millis(300));
            }
        })
    };

    // Warm-up, then the TUI's resources as a baseline.
    let warm = (total / 5).max(Duration::from_secs(3));
    thread::sleep(warm);
    let fds_before = fd_count(pid);
    let rss_before = rss_kib(pid);

    person.join().expect("the person thread");
    actor.join().expect("the backend user thread");
    sleep_until(start + total);
    stop.store(true, Ordering::Relaxed);
    let mut adapters: Vec<Adapter> = agent_threads
        .into_iter()
        .map(|t| t.join().expect("an agent thread"))
        .collect();
    sampler.join().unwrap();

    // No crash: the TUI runs and every adapter still answers.
    assert!(tui.is_running(), "the TUI died; screen:\n{}", tui.screen());
    // A last navigation in the calm after the run, by each agent in turn.
    let mut last = None;
    for (n, adapter) in adapters.iter_mut().enumerate() {
        let view = adapter.wait_context("unblocked after the run", unblocked);
        let current = view["context"]["sessionId"].as_str().unwrap_or("");
        let target = sessions.iter().find(|s| *s != current).unwrap().clone();
        let answer = adapter.call("select_session", select_args(&view, &uuid(), &target));
        if answer["status"] == "applied" {
            last = Some(target);
        } else {
            eprintln!("final navigation by agent {n}: {answer}");
        }
    }
    if let Some(target) = &last {
        tui.wait_for("the last applied session", |s| {
            shown_route(s) == ShownRoute::Session(target.clone())
        });
    }

    thread::sleep(Duration::from_secs(1));
    let fds_after = fd_count(pid);
    let rss_after = rss_kib(pid);

    let log = Arc::try_unwrap(log)
        .ok()
        .expect("every thread ended")
        .into_inner()
        .unwrap();
    let report = check(&log, start + total);
    eprintln!(
        "chaos: {} calls ({} select_session), {} applied, {} person windows, {} runs, {} samples; \
         {} applied checked on screen, {} known blocking windows with {} fresh select_session \
         requests wholly inside; answers {:?}",
        log.calls.len(),
        log.calls.iter().filter(|c| c.select).count(),
        report.applied,
        log.windows.len(),
        log.runs.len(),
        log.samples.len(),
        report.shown_checked,
        report.windows,
        report.attempts_inside,
        report.codes,
    );
    eprintln!(
        "chaos: TUI fds {fds_before} -> {fds_after}, RSS {rss_before} KiB -> {rss_after} KiB"
    );
    assert!(
        fds_after <= fds_before + FD_SLACK,
        "file descriptors grew: {fds_before} -> {fds_after}"
    );
    assert!(
        rss_after <= rss_before + RSS_SLACK_KIB,
        "memory grew: {rss_before} KiB -> {rss_after} KiB"
    );
    assert!(last.is_some(), "no agent could navigate after the run");
    assert!(
        report.applied >= 3,
        "too few navigations to check anything: {}",
        report.applied
    );
    assert!(
        report.shown_checked >= 1,
        "no applied navigation could be checked against the screen"
    );

    for adapter in adapters {
        assert!(adapter.finish().success(), "an adapter failed");
    }
    tui.send("/quit\r");
    assert!(tui.wait_exit().success(), "the TUI exits cleanly");
    assert!(
        !endpoint.parent().unwrap().exists(),
        "the endpoint directory is removed at exit"
    );
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        thread::sleep(t - now);
    }
}

/// One thing the person does during an active phase.
fn person_step(screen: &PtyHandle, log: &Shared, rng: &mut Rng, may_navigate: bool) {
    let within = Duration::from_secs(3);
    match rng.below(100) {
        // Type a draft, hold it, clear it.
        0..=34 => {
            screen.send(DRAFT);
            let shown = screen
                .poll_for(within, |s| s.contains(&format!("│{DRAFT}")))
                .is_some();
            let start = Instant::now();
            thread::sleep(rng.millis(500, 1200));
            let end = Instant::now();
            if shown {
                log.lock().unwrap().windows.push(Window {
                    what: "draft".into(),
                    start,
                    end,
                });
            }
            // An approval dialog that opened meanwhile takes the keys, so erase until the
            // draft is gone (the backend user answers every approval soon).
            let erase_until = Instant::now() + WAIT;
            loop {
                screen.send("\x7f\x7f\x7f");
                let gone = screen
                    .poll_for(Duration::from_millis(500), |s| {
                        !s.contains(&format!("│{DRAFT}"))
                    })
                    .is_some();
                if gone {
                    break;
                }
                assert!(
                    Instant::now() < erase_until,
                    "the draft cannot be erased; screen:\n{}",
                    screen.screen()
                );
            }
        }
        // Open the command palette, hold it, close it.
        35..=54 => {
            screen.send("\x10");
            let shown = screen
                .poll_for(within, |s| s.contains("┌ Commands"))
                .is_some();
            if shown {
                let start = Instant::now();
                thread::sleep(rng.millis(400, 1000));
                let end = Instant::now();
                screen.send("\x1b");
                log.lock().unwrap().windows.push(Window {
                    what: "palette".into(),
                    start,
                    end,
                });
                let _ = screen.poll_for(within, |s| !s.contains("┌ Commands"));
            }
        }
        // Click the title row (does nothing but count as input).
        55..=64 => {
            screen.click(60, 0);
            thread::sleep(rng.millis(100, 400));
        }
        // Move the mouse around for a while.
        65..=79 => {
            let until = Instant::now() + rng.millis(300, 900);
            let mut col = 10;
            while Instant::now() < until {
                col = if col == 10 { 11 } else { 10 };
                screen.hover(col, 12);
                thread::sleep(Duration::from_millis(80));
            }
        }
        // Go home, or open a session from the list: the person navigates.
        80..=89 if may_navigate => {
            let s = screen.screen();
            match shown_route(&s) {
                // On a running turn Esc aborts it (docs/tui.md §3): not a navigation.
                ShownRoute::Session(_) if !s.contains("┌ Commands") && !s.contains("Esc abort") =>
                {
                    log.lock().unwrap().person_nav.push(Instant::now());
                    screen.send("\x1b");
                }
                ShownRoute::Home => {
                    if let Some(row) = s
                        .lines()
                        .position(|l| l.starts_with('│') && l.contains("ses_"))
                    {
                        log.lock().unwrap().person_nav.push(Instant::now());
                        screen.click(40, row as u16);
                    }
                }
                _ => {}
            }
            thread::sleep(rng.millis(200, 500));
        }
        _ => thread::sleep(rng.millis(200, 600)),
    }
}

#[derive(Debug, Default)]
struct Report {
    applied: usize,
    shown_checked: usize,
    windows: usize,
    attempts_inside: usize,
    codes: HashMap<String, usize>,
}

/// Checks every invariant over the log; panics with the first violation.
fn check(log: &Log, end: Instant) -> Report {
    let mut report = Report::default();

    // Answers: only defined ones.
    for c in &log.calls {
        let status = c.answer["status"].as_str().unwrap_or("");
        let key = match status {
            "rejected" => c.answer["code"].as_str().unwrap_or("?").to_owned(),
            s => s.to_owned(),
        };
        *report.codes.entry(key.clone()).or_default() += 1;
        if !c.select {
            assert_eq!(status, "context", "get_view_context answered {}", c.answer);
            continue;
        }
        assert!(
            [
                "applied",
                "stale_revision",
                "user_active",
                "busy",
                "not_ready",
                "target_unavailable",
                "request_conflict",
                "request_limit",
                "deadline_exceeded",
            ]
            .contains(&key.as_str()),
            "agent {} got an undefined or impossible answer {} for {:?}",
            c.agent,
            c.answer,
            c.args
        );
        if key == "target_unavailable" {
            assert!(c.unknown_target, "a known session was unavailable: {c:?}");
        }
        if status == "applied" {
            assert!(!c.unknown_target, "navigated to an unknown session: {c:?}");
            let view = &c.answer["context"];
            assert_eq!(view["route"], "session", "{c:?}");
            assert_eq!(
                view["sessionId"],
                c.args.as_ref().unwrap()["sessionId"],
                "{c:?}"
            );
            assert_eq!(view["blocked"], false, "applied into a blocked view: {c:?}");
        }
    }

    // Each requestId: one receipt for its arguments, a conflict for any others.
    let mut by_id: HashMap<&str, Vec<&Call>> = HashMap::new();
    for c in log.calls.iter().filter(|c| c.select) {
        by_id
            .entry(c.request_id.as_deref().unwrap())
            .or_default()
            .push(c);
    }
    for (id, calls) in &by_id {
        let original = calls
            .iter()
            .filter(|c| c.conflict_of.is_none())
            .min_by_key(|c| c.sent)
            .expect("every pooled request was sent once first");
        for c in calls {
            if c.conflict_of.is_none() {
                assert_eq!(
                    c.args, original.args,
                    "requestId {id} reused with other arguments outside a conflict probe"
                );
                assert_eq!(
                    c.answer, original.answer,
                    "requestId {id} answered differently for the same arguments"
                );
            } else {
                let expected = if original.answer["code"] == "request_limit" {
                    "request_limit"
                } else {
                    "request_conflict"
                };
                assert_eq!(code(&c.answer), expected, "{id}: {}", c.answer);
            }
        }
    }

    // The navigations, one per requestId, in the order the TUI applied them.
    let mut applied: Vec<&Call> = by_id
        .values()
        .filter_map(|calls| {
            calls
                .iter()
                .filter(|c| c.answer["status"] == "applied")
                .min_by_key(|c| c.sent)
                .copied()
        })
        .collect();
    applied.sort_by_key(|c| c.answer["context"]["revision"].as_u64().unwrap());
    report.applied = applied.len();
    for pair in applied.windows(2) {
        let (a, b) = (&pair[0].answer["context"], &pair[1].answer["context"]);
        // Selecting the session already open is `applied` with the unchanged view.
        assert!(
            a["revision"] != b["revision"] || a["sessionId"] == b["sessionId"],
            "two navigations with one revision: {pair:?}"
        );
    }

    // Known blocking windows: the person's (seen on screen) and the sessions' (a pending
    // approval or a run seen on screen, until the test itself ended it).
    let mut windows = log.windows.clone();
    for run in &log.runs {
        let seen = |from: Instant, to: Instant, shown: Shown| {
            log.samples
                .iter()
                .find(|s| {
                    s.at >= from
                        && s.at < to
                        && s.statuses
                            .iter()
                            .any(|(id, st)| *id == run.session && *st == shown)
                })
                .map(|s| s.at)
        };
        if let Some(at) = seen(run.prompted, run.replied, Shown::Waiting) {
            windows.push(Window {
                what: format!("approval pending on {}", run.session),
                start: at,
                end: run.replied,
            });
        }
        if let (true, Some(released)) = (run.approved, run.released)
            && let Some(at) = seen(run.replied, released, Shown::Busy)
        {
            windows.push(Window {
                what: format!("{} busy", run.session),
                start: at,
                end: released,
            });
        }
    }
    report.windows = windows.len();
    for w in &windows {
        report.attempts_inside += by_id
            .values()
            .filter_map(|calls| calls.iter().min_by_key(|c| c.sent))
            .filter(|c| c.sent >= w.start && c.received <= w.end)
            .count();
        for c in &applied {
            assert!(
                !(c.sent >= w.start && c.received <= w.end),
                "navigated while blocked ({}): {:?}",
                w.what,
                c
            );
        }
        // The route on screen does not change inside the window, unless the person moved.
        let inside: Vec<&Sample> = log
            .samples
            .iter()
            .filter(|s| s.at >= w.start && s.at <= w.end)
            .collect();
        for pair in inside.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let person_moved = log
                .person_nav
                .iter()
                .any(|t| *t + PERSON_LAG >= a.at && *t <= b.at);
            if person_moved || a.route == ShownRoute::Unknown || b.route == ShownRoute::Unknown {
                continue;
            }
            assert_eq!(
                a.route, b.route,
                "the route changed on screen while blocked ({})",
                w.what
            );
        }
    }

    // Every applied view is what the screen shows afterwards, unless something navigated
    // again soon after.
    for (i, c) in applied.iter().enumerate() {
        let next_agent = applied.get(i + 1).map(|n| n.sent);
        let next_person = log
            .person_nav
            .iter()
            .filter(|t| **t + PERSON_LAG >= c.sent)
            .min()
            .copied();
        let horizon = [next_agent, next_person, Some(end)]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        if horizon < c.received + SHOW_HORIZON {
            continue;
        }
        let target = c.answer["context"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        let shown = log.samples.iter().any(|s| {
            s.at >= c.received && s.at < horizon && s.route == ShownRoute::Session(target.clone())
        });
        assert!(
            shown,
            "applied {target} (revision {}) was never shown before the next navigation",
            c.answer["context"]["revision"]
        );
        report.shown_checked += 1;
    }
    report
}

/// The checker itself must be able to fail: a synthetic log with one violation each.
mod checker {
    use super::*;

    fn applied_call(id: &str, revision: u64, session: &str, sent: Instant) -> Call {
        Call {
            agent: 0,
            select: true,
            request_id: Some(id.into()),
            args: Some(json!({"requestId": id, "sessionId": session})),
            conflict_of: None,
            unknown_target: false,
            sent,
            received: sent + Duration::from_millis(20),
            answer: json!({"status": "applied", "context": {
                "route": "session", "sessionId": session, "revision": revision,
                "blocked": false, "ready": true}}),
        }
    }

    #[test]
    #[should_panic(expected = "navigated while blocked")]
    fn flags_a_navigation_inside_a_known_window() {
        let t = Instant::now();
        let log = Log {
            calls: vec![applied_call(
                "r1",
                3,
                "ses_a",
                t + Duration::from_millis(100),
            )],
            windows: vec![Window {
                what: "draft".into(),
                start: t,
                end: t + Duration::from_secs(1),
            }],
            ..Log::default()
        };
        check(&log, t + Duration::from_secs(2));
    }

    #[test]
    #[should_panic(expected = "answered differently")]
    fn flags_a_request_id_that_navigates_twice() {
        let t = Instant::now();
        let log = Log {
            calls: vec![
                applied_call("r1", 3, "ses_a", t),
                applied_call("r1", 5, "ses_a", t + Duration::from_millis(100)),
            ],
            ..Log::default()
        };
        check(&log, t + Duration::from_secs(2));
    }

    #[test]
    #[should_panic(expected = "never shown")]
    fn flags_an_applied_view_the_screen_never_shows() {
        let t = Instant::now();
        let samples = (0..100)
            .map(|i| Sample {
                at: t + Duration::from_millis(30 * i),
                route: ShownRoute::Home,
                statuses: Vec::new(),
            })
            .collect();
        let log = Log {
            calls: vec![applied_call("r1", 3, "ses_a", t)],
            samples,
            ..Log::default()
        };
        check(&log, t + Duration::from_secs(3));
    }

    #[test]
    #[should_panic(expected = "route changed on screen while blocked")]
    fn flags_a_route_change_inside_a_known_window() {
        let t = Instant::now();
        let at = |ms| t + Duration::from_millis(ms);
        let sample = |ms, route| Sample {
            at: at(ms),
            route,
            statuses: Vec::new(),
        };
        let log = Log {
            windows: vec![Window {
                what: "palette".into(),
                start: at(0),
                end: at(1000),
            }],
            samples: vec![
                sample(100, ShownRoute::Home),
                sample(200, ShownRoute::Session("ses_b".into())),
            ],
            ..Log::default()
        };
        check(&log, at(2000));
    }
}
