//! The owner loop: one task owns the [`App`], the terminal and the TUIMCP controller.
//!
//! Terminal input, backend events, finished background jobs, TUIMCP endpoint requests and
//! validation results all arrive in one `select!`; each is applied to the state without an
//! await, so TUIMCP's guard-then-navigate is a single message. Afterwards the owner starts the
//! effects the state asked for, feeds the controller the fresh guard inputs (the epoch), and
//! draws at most once per frame interval.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use ax_client::{Client, ClientError, EventStream};
use ax_protocol::{Message, Permission, Prompt, Session, SessionId, queue::QueueAnswer};
use ax_tuimcp::{EndpointOptions, Sharing as TuiMcp, Step};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use ratatui::crossterm::event::EventStream as TermEvents;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::app::{App, Effect, Sharing};
use crate::render::draw;
use crate::share::BackendValidator;
use crate::term::{TermEvent, TerminalGuard, convert};

/// Shortest time between two frames.
const FRAME: Duration = Duration::from_millis(16);
/// How often connection state and notices are checked.
const TICK: Duration = Duration::from_millis(200);
/// After the event stream gave up (e.g. a refused credential), start a new one after this.
const STREAM_RESTART: Duration = Duration::from_secs(2);
/// How long the exit overlay waits for sharing to close.
const CLOSE_LIMIT: Duration = Duration::from_secs(3);
/// While the backend does not answer, how often it is asked why (shown on screen).
const PROBE_EVERY: Duration = Duration::from_secs(1);

/// Re-reads the backend credential (e.g. the local credential file `ax-code serve` rewrites
/// with a new generated credential when it restarts).
pub type CredentialSource = Box<dyn Fn() -> Option<ax_client::Secret> + Send>;

/// How to run the TUI.
pub struct Options {
    /// The TUI's authenticated backend client.
    pub client: Client,
    /// Share this TUI over TUIMCP (`--tui-mcp`).
    pub share: bool,
    /// Where the TUIMCP endpoint goes.
    pub endpoint: EndpointOptions,
    /// Awaited on the way out while the exit overlay still shows (e.g. stopping an embedded
    /// backend); awaited on early errors too.
    pub on_exit: Option<BoxFuture<'static, ()>>,
    /// Called when the server no longer proves the credential held (or refuses it): a
    /// different answer replaces it and the stream reconnects at once. `None`: it never changes.
    pub refresh_credential: Option<CredentialSource>,
    /// Exit with an error once the backend has not answered for this long (`None`: never).
    pub give_up_after: Option<Duration>,
}

/// A finished background job.
enum Done {
    Synced {
        generation: u64,
        result: Result<(String, Vec<Session>, Vec<Permission>), String>,
    },
    Transcript {
        generation: u64,
        result: Result<Vec<Message>, String>,
    },
    Submitted {
        generation: u64,
        /// The session, and where the prompt waits when it was queued.
        result: Result<(SessionId, Option<usize>), String>,
    },
    FilesFound {
        generation: u64,
        result: Result<(Vec<String>, bool), String>,
    },
    /// A config option change answered with the session as it is now.
    ConfigSet {
        config_id: String,
        result: Result<Session, String>,
    },
    QueueLoaded {
        generation: u64,
        result: Result<ax_protocol::queue::PromptQueue, String>,
    },
    QueueChanged {
        result: Result<(), String>,
    },
    QueueEdited {
        generation: u64,
        /// `true` in the error: the item left the queue (404).
        result: Result<(), (bool, String)>,
    },
    Created {
        generation: u64,
        result: Result<Session, String>,
    },
    Agents {
        generation: u64,
        result: Result<ax_protocol::AgentList, String>,
    },
    /// A mode switch or a revoke answered with the session as it is now.
    SessionChanged {
        result: Result<Session, String>,
    },
    ReplyFailed {
        permission_id: ax_protocol::PermissionId,
        error: String,
    },
    Aborted {
        session: SessionId,
        result: Result<bool, String>,
    },
    AttachmentChecked {
        path: String,
        result: Result<(), String>,
    },
    /// An image read for the next prompt, or why not.
    ImageLoaded {
        path: String,
        result: Result<crate::composer::ComposerImage, String>,
    },
    /// A rename failed.
    Failed {
        error: String,
    },
    /// A delete failed.
    DeleteFailed {
        session: SessionId,
        error: String,
    },
    /// Why the backend does not answer; `credential` when it answers but does not prove (or
    /// refuses) the credential held.
    Probed {
        result: Result<(), (bool, String)>,
    },
}

type Mcp = TuiMcp<BackendValidator>;

/// Runs the TUI until the person quits. The terminal is restored on every way out.
pub async fn run(options: Options) -> anyhow::Result<()> {
    let client = options.client;
    let mut on_exit = options.on_exit;
    let reconnect = Reconnect {
        refresh: options.refresh_credential,
        give_up_after: options.give_up_after,
    };
    let result = run_inner(
        &client,
        options.share,
        options.endpoint,
        &mut on_exit,
        &reconnect,
    )
    .await;
    if let Some(f) = on_exit.take() {
        f.await;
    }
    result
}

/// How the TUI follows a backend that went away.
struct Reconnect {
    refresh: Option<CredentialSource>,
    give_up_after: Option<Duration>,
}

impl Reconnect {
    /// Re-reads the credential; whether a different one was found (and is now used).
    fn refresh(&self, client: &Client) -> bool {
        match self.refresh.as_ref().and_then(|f| f()) {
            Some(token) if !client.holds_token(&token) => {
                client.set_token(token);
                true
            }
            _ => false,
        }
    }
}

/// Whether an error means "this server does not take (or prove) our credential".
fn credential_refused(e: &ClientError) -> bool {
    e.is_not_proven() || e.status() == Some(401)
}

async fn run_inner(
    client: &Client,
    share: bool,
    endpoint: EndpointOptions,
    on_exit: &mut Option<BoxFuture<'static, ()>>,
    reconnect: &Reconnect,
) -> anyhow::Result<()> {
    // Sharing starts before the terminal is taken, so a failure prints plainly.
    let mut mcp: Option<Mcp> = if share {
        let initial = App::new(String::new(), None).guard_inputs();
        let s = TuiMcp::start(initial, BackendValidator::new(client.clone()), endpoint)
            .await
            .context("cannot start TUIMCP sharing")?;
        Some(s)
    } else {
        None
    };
    let sharing = mcp.as_ref().map(|s| Sharing {
        endpoint_path: s.endpoint_path().display().to_string(),
    });
    let mut app = App::new(String::new(), sharing);
    app.set_backend_url(client.url());
    notifications_from_env(&mut app);
    let result = owner_loop(client, &mut app, &mut mcp, on_exit, reconnect).await;
    // Exit closes the endpoint whatever happened.
    if let Some(mut s) = mcp.take() {
        let _ = tokio::time::timeout(CLOSE_LIMIT, s.revoke()).await;
    }
    result
}

async fn owner_loop(
    client: &Client,
    app: &mut App,
    mcp: &mut Option<Mcp>,
    on_exit: &mut Option<BoxFuture<'static, ()>>,
    reconnect: &Reconnect,
) -> anyhow::Result<()> {
    let mut guard = TerminalGuard::enter().context("cannot set up the terminal")?;
    let size = guard.terminal.size()?;
    app.resize(size.width, size.height);
    let mut term_events = TermEvents::new();
    // SIGTERM or a closed terminal (SIGHUP) exits like /quit: endpoint closed, terminal restored.
    let mut terminate = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
    let mut hangup = signal(SignalKind::hangup()).context("installing SIGHUP handler")?;
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let mut events: Option<EventStream> = Some(client.events(None));
    let mut restart_stream_at: Option<Instant> = None;
    let mut connected = false;
    let mut down_since = Instant::now();
    let mut closing: Vec<JoinHandle<()>> = Vec::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    let mut probing = false;
    let mut last_probe = Instant::now();

    loop {
        if let Some(s) = mcp.as_mut() {
            s.observe(app.guard_inputs());
        }
        if dirty && last_draw.elapsed() >= FRAME {
            let size = guard.terminal.size()?;
            if (size.width, size.height) != app.size() {
                app.resize(size.width, size.height);
            }
            guard.terminal.draw(|f| draw(f, app))?;
            dirty = false;
            last_draw = Instant::now();
        }
        let frame_due = dirty.then(|| tokio::time::Instant::from_std(last_draw + FRAME));
        tokio::select! {
            ev = term_events.next() => match ev {
                Some(Ok(ev)) => match convert(ev) {
                    TermEvent::Input(input) => {
                        if let Some(s) = mcp.as_mut() {
                            s.human_input();
                        }
                        app.handle_input(input);
                        dirty = true;
                    }
                    TermEvent::Focus(focused) => app.set_focused(focused),
                    TermEvent::Resize(w, h) => {
                        app.resize(w, h);
                        dirty = true;
                    }
                    TermEvent::Ignored => {}
                },
                Some(Err(e)) => return Err(e).context("reading the terminal"),
                None => return Err(anyhow::anyhow!("the terminal closed")),
            },
            item = next_event(&mut events) => {
                match item {
                    Some(Ok(envelope)) => {
                        if !connected {
                            connected = true;
                            app.set_down_cause(None);
                            app.on_stream_connected();
                        }
                        // Turn timing reads the state's clock: bring it to now first.
                        app.tick(Instant::now());
                        app.on_event(envelope.event);
                    }
                    Some(Err(e)) => {
                        stream_gone(app, &mut events, &mut connected, &mut down_since);
                        app.set_down_cause(Some(e.to_string()));
                        // A restarted backend with a new credential: re-read it and go on.
                        if credential_refused(&e) && reconnect.refresh(client) {
                            events = Some(client.events(None));
                            restart_stream_at = None;
                        } else {
                            app.notify(crate::app::NoticeKind::Error, format!("event stream: {e}"));
                            restart_stream_at = Some(Instant::now() + STREAM_RESTART);
                        }
                    }
                    None => {
                        stream_gone(app, &mut events, &mut connected, &mut down_since);
                        restart_stream_at = Some(Instant::now() + STREAM_RESTART);
                    }
                }
                dirty = true;
            }
            Some(done) = done_rx.recv() => {
                if let Done::Probed { result } = done {
                    probing = false;
                    match result {
                        Ok(()) => app.set_down_cause(None),
                        Err((refused, cause)) => {
                            app.set_down_cause(Some(cause));
                            if refused && reconnect.refresh(client) {
                                events = Some(client.events(None));
                                restart_stream_at = None;
                            }
                        }
                    }
                } else {
                    apply_done(app, done);
                }
                dirty = true;
            }
            step = next_step(mcp) => {
                if let Some(s) = mcp.as_mut() {
                    // Guard, navigate and re-read happen inside `apply`, without an await.
                    s.apply(step, app);
                    if s.controller().is_revoked() && app.sharing().is_some() {
                        // The endpoint failed by itself: sharing is over.
                        app.sharing_closed();
                        let mut s = mcp.take().expect("checked above");
                        closing.push(tokio::spawn(s.revoke()));
                    }
                }
                dirty = true;
            }
            _ = tick.tick() => {
                let now = Instant::now();
                let before = (app.connection(), app.notice().is_some());
                app.tick(now);
                match events.as_ref().map(EventStream::is_connected) {
                    Some(true) if !connected => {
                        connected = true;
                        app.on_stream_connected();
                    }
                    Some(false) | None if connected => {
                        // The client reconnects by itself; until then we are not ready.
                        connected = false;
                        down_since = now;
                        app.on_stream_down(Duration::ZERO);
                    }
                    Some(false) | None => app.on_stream_down(now - down_since),
                    Some(true) => {}
                }
                if restart_stream_at.is_some_and(|at| now >= at) {
                    restart_stream_at = None;
                    events = Some(client.events(None));
                }
                if !connected {
                    if let Some(limit) = reconnect.give_up_after
                        && now.duration_since(down_since) >= limit
                    {
                        let cause = app.down_cause().unwrap_or("no answer").to_owned();
                        return Err(anyhow::anyhow!(
                            "gave up: the backend at {} has not answered for {} s ({cause})",
                            client.url(),
                            limit.as_secs()
                        ));
                    }
                    if !probing && now.duration_since(last_probe) >= PROBE_EVERY {
                        probing = true;
                        last_probe = now;
                        spawn_probe(client, &done_tx);
                    }
                }
                // A running turn's spinner and elapsed time move with the clock.
                if (app.connection(), app.notice().is_some()) != before || app.animating() {
                    dirty = true;
                }
            }
            _ = sleep_until(frame_due) => {}
            _ = terminate.recv() => app.begin_exit(),
            _ = hangup.recv() => app.begin_exit(),
        }
        let mut quit = false;
        for effect in app.take_effects() {
            match effect {
                Effect::Quit => {
                    // Show the exit overlay now, then leave the loop.
                    guard.terminal.draw(|f| draw(f, app))?;
                    quit = true;
                }
                Effect::RevokeSharing => {
                    if let Some(mut s) = mcp.take() {
                        closing.push(tokio::spawn(s.revoke()));
                    }
                }
                Effect::Redraw => {
                    guard.terminal.clear()?;
                    dirty = true;
                }
                Effect::SetMouseCapture { on } => {
                    use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
                    let out = guard.terminal.backend_mut();
                    let _ = if on {
                        ratatui::crossterm::execute!(out, EnableMouseCapture)
                    } else {
                        ratatui::crossterm::execute!(out, DisableMouseCapture)
                    };
                }
                Effect::Ring { sequence } => {
                    // Between frames, so it never lands inside a drawn row.
                    use std::io::Write as _;
                    let out = guard.terminal.backend_mut();
                    let _ = out.write_all(sequence.as_bytes());
                    let _ = out.flush();
                }
                Effect::CopyToClipboard { text } => {
                    // The terminal copies it (OSC 52); one that does not know the sequence
                    // ignores it, and /tui-mcp-config still shows the text.
                    use std::io::Write as _;
                    let out = guard.terminal.backend_mut();
                    let _ = out.write_all(crate::share::osc52(&text).as_bytes());
                    let _ = out.flush();
                }
                other => spawn_job(client, other, &done_tx),
            }
        }
        if quit {
            break;
        }
    }
    // Exit: revoke sharing (fences pending navigations, removes the directory), close the
    // stream, and wait for earlier revocations to finish.
    if let Some(mut s) = mcp.take() {
        let _ = tokio::time::timeout(CLOSE_LIMIT, s.revoke()).await;
    }
    drop(events);
    for c in closing {
        let _ = tokio::time::timeout(CLOSE_LIMIT, c).await;
    }
    if let Some(f) = on_exit.take() {
        f.await;
    }
    drop(guard);
    Ok(())
}

/// The notification mode from `AX_CODE_NOTIFY` (docs/tui.md §2c); a bad value says so and
/// keeps `auto`.
fn notifications_from_env(app: &mut App) {
    use crate::notify::{ENV, NotifyMode};
    let env = |k: &str| std::env::var(k).ok();
    let auto = NotifyMode::Auto.resolve(env);
    let mode = match std::env::var(ENV) {
        Ok(v) => v.parse().unwrap_or_else(|e| {
            app.notify(crate::app::NoticeKind::Error, format!("{ENV}: {e}"));
            NotifyMode::Auto
        }),
        Err(_) => NotifyMode::Auto,
    };
    app.set_notifications(mode, auto);
}

/// Asks the backend why it does not answer (no credential is sent: a proof check).
fn spawn_probe(client: &Client, done: &mpsc::UnboundedSender<Done>) {
    let client = client.clone();
    let done = done.clone();
    tokio::spawn(async move {
        let result = match client.verify().await {
            Ok(_) => Ok(()),
            Err(e) => Err((credential_refused(&e), e.to_string())),
        };
        let _ = done.send(Done::Probed { result });
    });
}

fn stream_gone(
    app: &mut App,
    events: &mut Option<EventStream>,
    connected: &mut bool,
    down_since: &mut Instant,
) {
    *events = None;
    if *connected {
        *connected = false;
        *down_since = Instant::now();
    }
    app.on_stream_down(down_since.elapsed());
}

async fn next_event(
    events: &mut Option<EventStream>,
) -> Option<Result<ax_protocol::EventEnvelope, ClientError>> {
    match events {
        Some(e) => e.next().await,
        None => std::future::pending().await,
    }
}

async fn next_step(mcp: &mut Option<Mcp>) -> Step {
    match mcp {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn apply_done(app: &mut App, done: Done) {
    match done {
        Done::Synced { generation, result } => {
            let result = result.map(|(workspace, sessions, permissions)| {
                app.set_workspace(workspace);
                (sessions, permissions)
            });
            app.on_synced(generation, result);
        }
        Done::Transcript { generation, result } => app.on_transcript(generation, result),
        Done::Submitted { generation, result } => app.on_sent(generation, result),
        Done::FilesFound { generation, result } => app.on_files_found(generation, result),
        Done::ConfigSet { config_id, result } => app.on_config_set(&config_id, result),
        Done::QueueLoaded { generation, result } => app.on_queue_loaded(generation, result),
        Done::QueueChanged { result } => app.on_queue_changed(result),
        Done::QueueEdited { generation, result } => app.on_queue_edited(generation, result),
        Done::Created { generation, result } => app.on_created(generation, result),
        Done::Agents { generation, result } => app.on_agents(generation, result),
        Done::SessionChanged { result } => app.on_session_changed(result),
        Done::ReplyFailed {
            permission_id,
            error,
        } => app.on_reply_failed(&permission_id, error),
        Done::Aborted { session, result } => app.on_aborted(&session, result),
        Done::AttachmentChecked { path, result } => app.on_attachment_checked(&path, result),
        Done::ImageLoaded { path, result } => app.on_image_loaded(&path, result),
        Done::Failed { error } => app.notify(crate::app::NoticeKind::Error, error),
        Done::DeleteFailed { session, error } => app.on_delete_failed(&session, error),
        Done::Probed { .. } => {}
    }
}

fn spawn_job(client: &Client, effect: Effect, done: &mpsc::UnboundedSender<Done>) {
    let client = client.clone();
    let done = done.clone();
    let msg = |e: ClientError| e.to_string();
    tokio::spawn(async move {
        let result = match effect {
            Effect::Resync { generation } => {
                let result = async {
                    let project = client.project().await.map_err(msg)?;
                    let sessions = client.list_sessions().await.map_err(msg)?;
                    let permissions = client.permissions().await.map_err(msg)?;
                    Ok((project.directory, sessions, permissions))
                }
                .await;
                Done::Synced { generation, result }
            }
            Effect::LoadTranscript {
                session,
                generation,
            } => Done::Transcript {
                generation,
                result: client.messages(&session).await.map_err(msg),
            },
            Effect::Submit {
                session,
                parts,
                generation,
                queue,
            } => {
                let result = async {
                    let id = match session {
                        Some(id) => id,
                        // The backend titles it from this first prompt.
                        None => client.create_session(None).await.map_err(msg)?.id,
                    };
                    let prompt = Prompt { parts };
                    if !queue {
                        client.prompt(&id, &prompt).await.map_err(msg)?;
                        return Ok((id, None));
                    }
                    match client.queue_prompt(&id, &prompt).await.map_err(msg)? {
                        QueueAnswer::Sent { .. } => Ok((id, None)),
                        QueueAnswer::Queued { position, .. } => Ok((id, Some(position))),
                    }
                }
                .await;
                Done::Submitted { generation, result }
            }
            Effect::SetConfig {
                session,
                config_id,
                value,
            } => Done::ConfigSet {
                result: client
                    .set_config(&session, &config_id, value)
                    .await
                    .map_err(|e| format!("{config_id} not changed: {e}")),
                config_id,
            },
            Effect::FindFiles { query, generation } => Done::FilesFound {
                generation,
                result: client
                    .find_files(&query, crate::picker::FIND_LIMIT)
                    .await
                    .map(|found| {
                        let files = found.files.into_iter().map(|f| f.path).collect();
                        (files, found.truncated)
                    })
                    .map_err(msg),
            },
            Effect::LoadQueue {
                session,
                generation,
            } => Done::QueueLoaded {
                generation,
                result: client.prompt_queue(&session).await.map_err(msg),
            },
            Effect::EditQueued {
                session,
                id,
                parts,
                generation,
            } => Done::QueueEdited {
                generation,
                result: match client.edit_queued(&session, &id, &Prompt { parts }).await {
                    Ok(_) => Ok(()),
                    Err(e) => Err((e.status() == Some(404), e.to_string())),
                },
            },
            Effect::CancelQueued { session, id } => Done::QueueChanged {
                result: client
                    .cancel_queued(&session, &id)
                    .await
                    .map(drop)
                    .map_err(|e| format!("not cancelled: {e}")),
            },
            Effect::SendQueuedNow { session, id } => Done::QueueChanged {
                result: client
                    .send_queued_now(&session, &id)
                    .await
                    .map(drop)
                    .map_err(|e| format!("not sent: {e}")),
            },
            Effect::ResumeQueue { session } => Done::QueueChanged {
                result: client
                    .resume_queue(&session)
                    .await
                    .map(drop)
                    .map_err(|e| format!("not resumed: {e}")),
            },
            Effect::CreateSession { generation, agent } => Done::Created {
                generation,
                result: client
                    .create_session_with(None, agent.as_deref())
                    .await
                    .map_err(msg),
            },
            Effect::ListAgents { generation } => Done::Agents {
                generation,
                result: client.agents().await.map_err(msg),
            },
            Effect::SetMode { session, mode_id } => Done::SessionChanged {
                result: client
                    .set_mode(&session, &mode_id)
                    .await
                    .map_err(|e| format!("mode not switched: {e}")),
            },
            Effect::RevokeStanding { session } => Done::SessionChanged {
                result: client
                    .revoke_standing(&session)
                    .await
                    .map_err(|e| format!("not revoked: {e}")),
            },
            Effect::ReplyPermission {
                session,
                permission_id,
                reply,
                option_id,
            } => {
                let sent = client
                    .reply_permission_option(&session, &permission_id, reply, &option_id)
                    .await;
                match sent {
                    Ok(_) => return,
                    Err(e) => Done::ReplyFailed {
                        permission_id,
                        error: e.to_string(),
                    },
                }
            }
            Effect::Abort { session } => {
                let result = client.abort(&session).await.map(|r| r.aborted).map_err(msg);
                Done::Aborted { session, result }
            }
            Effect::CheckAttachment { workspace, path } => {
                let p = path.clone();
                let result = tokio::task::spawn_blocking(move || {
                    crate::attach::check(std::path::Path::new(&workspace), &p)
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                Done::AttachmentChecked { path, result }
            }
            Effect::LoadImage { workspace, path } => {
                let p = path.clone();
                let result = tokio::task::spawn_blocking(move || {
                    crate::attach::load_image(std::path::Path::new(&workspace), &p)
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                Done::ImageLoaded { path, result }
            }
            // Success shows through the event stream (session.updated / session.deleted).
            Effect::RenameSession { session, title } => {
                match client.rename_session(&session, &title).await {
                    Ok(_) => return,
                    Err(e) => Done::Failed {
                        error: format!("rename failed: {e}"),
                    },
                }
            }
            Effect::DeleteSession { session } => match client.delete_session(&session).await {
                Ok(_) => return,
                Err(e) => Done::DeleteFailed {
                    session,
                    error: format!("delete failed: {e}"),
                },
            },
            Effect::RevokeSharing
            | Effect::CopyToClipboard { .. }
            | Effect::Ring { .. }
            | Effect::SetMouseCapture { .. }
            | Effect::Redraw
            | Effect::Quit => return,
        };
        let _ = done.send(result);
    });
}
