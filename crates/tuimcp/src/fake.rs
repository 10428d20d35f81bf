//! [`FakeTui`]: a real owner loop over a fake session set, for tests, interop checks and
//! benchmarks. It is also the smallest complete example of driving [`Sharing`].

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use tokio::{
    sync::{Semaphore, mpsc, oneshot},
    task::JoinHandle,
};

use crate::{
    controller::{Commit, GuardInputs, Identity, Location, Navigator, ValidationOutcome},
    protocol::SessionId,
    server::{Endpoint, EndpointError, EndpointOptions},
    sharing::{SessionValidator, Sharing},
};

/// How the fake TUI behaves.
#[derive(Clone, Debug, Default)]
pub struct FakeOptions {
    /// Sessions the fake backend knows.
    pub sessions: Vec<SessionId>,
    /// Validations wait for [`FakeTui::release_validations`].
    pub gate_validations: bool,
    /// The router fails on every navigation.
    pub fail_navigation: bool,
    /// Where the fake's endpoint goes.
    pub endpoint: EndpointOptions,
}

#[derive(Clone)]
struct FakeValidator {
    sessions: Arc<HashSet<SessionId>>,
    gate: Option<Arc<Semaphore>>,
    started: Arc<AtomicUsize>,
}

impl SessionValidator for FakeValidator {
    async fn validate(&self, session: SessionId) -> ValidationOutcome {
        self.started.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            match gate.acquire().await {
                Ok(permit) => permit.forget(),
                Err(_) => return ValidationOutcome::Unavailable,
            }
        }
        if self.sessions.contains(&session) {
            ValidationOutcome::Valid
        } else {
            ValidationOutcome::NotFound
        }
    }
}

struct FakeApp {
    inputs: GuardInputs,
    fail: bool,
    navigations: Arc<AtomicUsize>,
}

impl Navigator for FakeApp {
    type Error = &'static str;

    fn navigate(&mut self, session: &SessionId) -> Result<GuardInputs, Self::Error> {
        self.navigations.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err("the fake router failed");
        }
        self.inputs.location = Location::Session(session.clone());
        Ok(self.inputs.clone())
    }
}

type Update = Box<dyn FnOnce(&mut GuardInputs) + Send>;

enum Command {
    Update(Update),
    HumanInput,
    Revoke(oneshot::Sender<()>),
}

/// A running fake TUI with sharing on.
pub struct FakeTui {
    commands: mpsc::UnboundedSender<Command>,
    endpoint: Endpoint,
    identity: Identity,
    navigations: Arc<AtomicUsize>,
    applied: Arc<AtomicUsize>,
    settled: Arc<AtomicUsize>,
    started: Arc<AtomicUsize>,
    in_flight: Arc<AtomicBool>,
    gate: Option<Arc<Semaphore>>,
    task: JoinHandle<()>,
}

impl FakeTui {
    /// Starts the endpoint and the owner loop. The TUI starts ready on home.
    pub async fn start(options: FakeOptions) -> Result<Self, EndpointError> {
        let gate = options
            .gate_validations
            .then(|| Arc::new(Semaphore::new(0)));
        let started = Arc::new(AtomicUsize::new(0));
        let validator = FakeValidator {
            sessions: Arc::new(options.sessions.into_iter().collect()),
            gate: gate.clone(),
            started: started.clone(),
        };
        let inputs = GuardInputs::ready_home("/fake/workspace");
        let mut sharing = Sharing::start(inputs.clone(), validator, options.endpoint).await?;
        let endpoint = sharing.endpoint().clone();
        let identity = sharing.controller().identity();
        let navigations = Arc::new(AtomicUsize::new(0));
        let applied = Arc::new(AtomicUsize::new(0));
        let settled = Arc::new(AtomicUsize::new(0));
        let mut app = FakeApp {
            inputs,
            fail: options.fail_navigation,
            navigations: navigations.clone(),
        };
        let (commands, mut command_rx) = mpsc::unbounded_channel();
        let applied_count = applied.clone();
        let settled_count = settled.clone();
        let in_flight = Arc::new(AtomicBool::new(false));
        let flying = in_flight.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    command = command_rx.recv() => match command {
                        None => break,
                        Some(Command::Update(update)) => {
                            update(&mut app.inputs);
                            sharing.observe(app.inputs.clone());
                        }
                        Some(Command::HumanInput) => sharing.human_input(),
                        Some(Command::Revoke(done)) => {
                            let closing = sharing.revoke();
                            tokio::spawn(async move {
                                closing.await;
                                let _ = done.send(());
                            });
                        }
                    },
                    step = sharing.next() => {
                        let commit = sharing.apply(step, &mut app);
                        if commit.is_some() {
                            settled_count.fetch_add(1, Ordering::SeqCst);
                        }
                        if let Some(Commit::Applied(_)) = commit {
                            applied_count.fetch_add(1, Ordering::SeqCst);
                        }
                        sharing.observe(app.inputs.clone());
                    }
                }
                flying.store(sharing.controller().in_flight().is_some(), Ordering::SeqCst);
            }
            sharing.revoke().await;
        });
        Ok(Self {
            commands,
            endpoint,
            identity,
            navigations,
            applied,
            settled,
            started,
            in_flight,
            gate,
            task,
        })
    }

    /// Absolute path of `endpoint.json`.
    pub fn endpoint_path(&self) -> &Path {
        self.endpoint.path()
    }

    /// [`FakeTui::endpoint_path`], owned.
    pub fn endpoint_path_buf(&self) -> PathBuf {
        self.endpoint.path().to_owned()
    }

    /// The fake's live endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Who the fake TUI is (what a correct request names).
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// Times the router was called.
    pub fn navigations(&self) -> usize {
        self.navigations.load(Ordering::SeqCst)
    }

    /// Navigations answered `applied`.
    pub fn applied(&self) -> usize {
        self.applied.load(Ordering::SeqCst)
    }

    /// Validations that started.
    pub fn validations_started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// Validations the controller has decided (applied, rejected or fenced; a dropped one is
    /// decided as unavailable). Once this equals [`FakeTui::validations_started`], no
    /// validation can navigate any more: tests wait for it instead of sleeping.
    pub fn validations_settled(&self) -> usize {
        self.settled.load(Ordering::SeqCst)
    }

    /// A navigation holds the single-flight gate.
    pub fn in_flight(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Lets `n` gated validations finish.
    pub fn release_validations(&self, n: usize) {
        if let Some(gate) = &self.gate {
            gate.add_permits(n);
        }
    }

    /// Changes the UI state (as a keypress or a backend event would).
    pub fn update(&self, update: impl FnOnce(&mut GuardInputs) + Send + 'static) {
        let _ = self.commands.send(Command::Update(Box::new(update)));
    }

    /// A parsed human input event.
    pub fn human_input(&self) {
        let _ = self.commands.send(Command::HumanInput);
    }

    /// Revokes sharing (fence, then close) and waits until the directory is gone.
    pub async fn revoke(&self) {
        let (done, wait) = oneshot::channel();
        if self.commands.send(Command::Revoke(done)).is_ok() {
            let _ = wait.await;
        }
        self.endpoint.close().await;
    }

    /// Stops the owner loop (as when the TUI exits) and waits for the endpoint to close.
    pub async fn shutdown(self) {
        drop(self.commands);
        let _ = self.task.await;
        self.endpoint.close().await;
    }
}
