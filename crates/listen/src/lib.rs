//! Listening, for the backend and the hub alike: every loopback family of the requested host
//! on one port, and an accept loop that a flood of idle connections cannot freeze.
//!
//! - **Siblings.** A backend asked for `127.0.0.1:P` also listens on `[::1]:P` (and the other
//!   way round; `0.0.0.0:P` also takes `[::1]:P`). Otherwise anyone could bind the free sibling
//!   and receive what clients send to `localhost:P` when `localhost` resolves to it first. A
//!   fixed port whose sibling is taken refuses to start ([`BindError::SiblingTaken`]); port 0
//!   draws another port. Refusing beats running on one family: beside a squatter, clients
//!   that reach it would be refused by the proof at best, and the person could not tell why.
//!   A machine without IPv6 loopback has no sibling to take, so then the backend listens on
//!   IPv4 alone (logged at info).
//! - **Connections.** Each connection reads its request head within
//!   [`Limits::header_read_timeout`], which hyper also applies while a kept-alive connection
//!   waits for its next request (the idle timeout); a request without the credential must
//!   also be whole (its body) within that time, or its connection is dropped. Connections that
//!   have not carried the credential are capped ([`Limits::unauthenticated_connections`], and
//!   at most a quarter of the file-descriptor limit): the next one evicts the oldest idle one,
//!   or one whose request has stalled for [`STALLED_REQUEST`]. At start the soft
//!   `RLIMIT_NOFILE` is raised to the hard limit. When `accept` fails for lack of descriptors
//!   the loop evicts the oldest unauthenticated connection idle for a second or more and waits
//!   for a connection to close (at most [`EXHAUSTED_PAUSE`]) before it accepts again: no hot
//!   loop, no stop.
//! - **WebSockets.** An upgraded connection stays in the count ([`Conn::upgraded`]) until its
//!   socket closes: unauthenticated (and evictable while idle) until the gateway's `connect`
//!   succeeds, which must happen within the gateway's handshake timeout (10 s).

use std::{
    collections::HashMap,
    io,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::{Arc, Mutex, Once},
    time::{Duration, Instant},
};

use axum::Router;
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Notify};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

/// What the accept loop bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to read a request's head, and the idle timeout of a kept-alive connection.
    pub header_read_timeout: Duration,
    /// Connections that have not carried the credential, at most (and at most a quarter of
    /// the file-descriptor limit).
    pub unauthenticated_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            unauthenticated_connections: 256,
        }
    }
}

/// How long the accept loop waits for a connection to close after running out of descriptors.
pub const EXHAUSTED_PAUSE: Duration = Duration::from_millis(100);
/// Out of descriptors, only connections idle this long are evicted: a connection accepted a
/// moment ago has most likely a request on its way (the person's, waiting its turn).
const EXHAUSTED_MIN_IDLE: Duration = Duration::from_secs(1);
/// An unauthenticated request still in flight after this long (its body stalled) may be
/// evicted to make room: no request without the credential takes that long when its bytes
/// arrive (`/health`, `/signin`, the page's files, the gateway's upgrade).
const STALLED_REQUEST: Duration = Duration::from_secs(1);
/// Port-0 binds try this many ports before giving up on one whose sibling is free.
const PORT_TRIES: usize = 16;

/// Why the listeners could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The address cannot be bound (in use, or not allowed).
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        source: io::Error,
    },
    /// The other loopback family's address with the same port belongs to another program.
    #[error(
        "{sibling} is taken by another program while {addr} was free: clients that reach \
         `localhost:{port}` over the other address family would talk to it, so the backend does \
         not start; stop that program or choose another port",
        port = addr.port()
    )]
    SiblingTaken {
        /// The address the backend bound.
        addr: SocketAddr,
        /// The other family's address, taken.
        sibling: SocketAddr,
    },
}

/// The loopback address of the other family for a host whose clients may say `localhost`.
fn sibling(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(v4) if v4 == Ipv4Addr::LOCALHOST || v4.is_unspecified() => {
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
        }
        IpAddr::V6(v6) if v6 == Ipv6Addr::LOCALHOST => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        _ => None,
    }
}

/// Whether binding failed because the machine has no such address (no IPv6 loopback).
fn unavailable(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AddrNotAvailable
        || e.raw_os_error() == Some(rustix::io::Errno::AFNOSUPPORT.raw_os_error())
}

/// Binds `requested` and its loopback sibling on the same port. The first listener is the
/// requested one.
pub async fn bind(requested: SocketAddr) -> Result<Vec<TcpListener>, BindError> {
    let tries = if requested.port() == 0 { PORT_TRIES } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let primary = TcpListener::bind(requested)
            .await
            .map_err(|source| BindError::Bind {
                addr: requested,
                source,
            })?;
        let addr = primary.local_addr().map_err(|source| BindError::Bind {
            addr: requested,
            source,
        })?;
        let Some(other) = sibling(addr.ip()) else {
            return Ok(vec![primary]);
        };
        let other = SocketAddr::new(other, addr.port());
        match TcpListener::bind(other).await {
            Ok(second) => return Ok(vec![primary, second]),
            Err(e) if unavailable(&e) => {
                tracing::info!(%other, "no such address on this machine; listening on {addr} alone");
                return Ok(vec![primary]);
            }
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                last = Some(BindError::SiblingTaken {
                    addr,
                    sibling: other,
                });
            }
            Err(source) => {
                return Err(BindError::Bind {
                    addr: other,
                    source,
                });
            }
        }
    }
    Err(last.expect("at least one try"))
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (once per process) and returns the soft
/// limit in force.
pub fn raise_nofile_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    static RAISE: Once = Once::new();
    RAISE.call_once(|| {
        let mut limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum {
            let from = limit.current;
            limit.current = limit.maximum;
            match setrlimit(Resource::Nofile, limit) {
                Ok(()) => tracing::debug!(?from, to = ?limit.maximum, "raised RLIMIT_NOFILE"),
                Err(e) => tracing::debug!(%e, "cannot raise RLIMIT_NOFILE"),
            }
        }
    });
    getrlimit(Resource::Nofile).current
}

/// The server's address on the connection a request came over (its local address on the
/// accepted socket): what the `/health` proof is bound to.
#[derive(Debug, Clone, Copy)]
pub struct LocalAddr(pub SocketAddr);

/// One connection's entry in the [`Tracker`], as a request extension.
#[derive(Clone)]
pub struct Conn {
    id: u64,
    tracker: Arc<Tracker>,
}

impl Conn {
    /// The connection carried the credential: it is the person's, never evicted or capped.
    pub fn authenticated(&self) {
        if let Some(e) = self.tracker.lock().conns.get_mut(&self.id) {
            e.authenticated = true;
        }
    }

    fn request(&self, started: bool) {
        let mut inner = self.tracker.lock();
        if let Some(e) = inner.conns.get_mut(&self.id) {
            if started {
                e.in_flight += 1;
            } else {
                e.in_flight = e.in_flight.saturating_sub(1);
            }
            e.last_active = Instant::now();
        }
    }

    fn is_authenticated(&self) -> bool {
        self.tracker
            .lock()
            .conns
            .get(&self.id)
            .is_some_and(|e| e.authenticated)
    }

    /// The connection became a WebSocket: it stays in the tracker (counted in the cap until
    /// it authenticates, evictable while idle) until the returned guard is dropped, when the
    /// socket's task ends. [`Upgraded::evicted`] tells that task to close it.
    pub fn upgraded(&self) -> Upgraded {
        let evict = match self.tracker.lock().conns.get_mut(&self.id) {
            Some(e) => {
                e.upgraded = true;
                e.evict.clone()
            }
            None => CancellationToken::new(),
        };
        Upgraded {
            conn: self.clone(),
            evict,
        }
    }

    /// Drops the connection at once (its task sees the token).
    fn evict(&self) {
        if let Some(e) = self.tracker.lock().conns.get(&self.id) {
            e.evict.cancel();
        }
    }
}

/// An upgraded connection's place in the [`Tracker`], held by the WebSocket's task.
pub struct Upgraded {
    conn: Conn,
    evict: CancellationToken,
}

impl Upgraded {
    /// The socket proved the credential (the gateway's `connect`): never capped or evicted.
    pub fn authenticated(&self) {
        self.conn.authenticated();
    }

    /// Resolves when the cap (or a lack of descriptors) evicts the socket.
    pub async fn evicted(&self) {
        self.evict.cancelled().await;
    }
}

impl Drop for Upgraded {
    fn drop(&mut self) {
        self.conn.tracker.remove(self.conn.id);
    }
}

/// A WebSocket's place in the cap, for a handler that upgrades a connection: counted as
/// unauthenticated (and evictable while idle) until the socket proves the credential, then
/// the person's. Off the accept loop (no [`Conn`] on the request) it bounds nothing.
pub struct SocketPlace(Option<Arc<Upgraded>>);

impl SocketPlace {
    /// The place of the connection `conn` that is being upgraded.
    pub fn of(conn: Option<&Conn>) -> SocketPlace {
        SocketPlace(conn.map(|c| Arc::new(c.upgraded())))
    }

    /// What the socket's server calls once the socket has proved the credential.
    pub fn on_authenticated(&self) -> Box<dyn FnOnce() + Send> {
        let place = self.0.clone();
        Box::new(move || {
            if let Some(place) = place {
                place.authenticated();
            }
        })
    }

    /// Runs `serve`, the socket's life, until it ends or the cap evicts the socket; then the
    /// place is given up.
    pub async fn run(self, serve: impl Future<Output = ()>) {
        let evicted = async {
            match &self.0 {
                Some(place) => place.evicted().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = serve => {}
            () = evicted => {}
        }
    }
}

struct Entry {
    authenticated: bool,
    /// A WebSocket now: its [`Upgraded`] guard removes it.
    upgraded: bool,
    in_flight: u32,
    last_active: Instant,
    evict: CancellationToken,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    conns: HashMap<u64, Entry>,
}

/// The open connections, for the cap and eviction.
#[derive(Default)]
pub struct Tracker {
    inner: Mutex<Inner>,
    /// Signalled whenever a connection closes.
    closed: Notify,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Evicts the unauthenticated connection idle (or stalled in a request for at least
    /// [`STALLED_REQUEST`]) the longest, if that has lasted at least `min_idle`; false when
    /// there is none.
    fn evict_oldest_idle(&self, min_idle: Duration) -> bool {
        let inner = self.lock();
        let now = Instant::now();
        let oldest = inner
            .conns
            .values()
            .filter(|e| !e.authenticated && !e.evict.is_cancelled())
            .filter(|e| {
                let min = if e.in_flight == 0 {
                    min_idle
                } else {
                    min_idle.max(STALLED_REQUEST)
                };
                now.duration_since(e.last_active) >= min
            })
            .min_by_key(|e| e.last_active);
        match oldest {
            Some(e) => {
                e.evict.cancel();
                true
            }
            None => false,
        }
    }

    /// Registers a new connection unless the cap is reached and no idle one can make room.
    fn admit(self: &Arc<Self>, cap: usize) -> Option<(Conn, CancellationToken)> {
        let unauthenticated = self
            .lock()
            .conns
            .values()
            .filter(|e| !e.authenticated && !e.evict.is_cancelled())
            .count();
        if unauthenticated >= cap && !self.evict_oldest_idle(Duration::ZERO) {
            return None;
        }
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        let evict = CancellationToken::new();
        inner.conns.insert(
            id,
            Entry {
                authenticated: false,
                upgraded: false,
                in_flight: 0,
                last_active: Instant::now(),
                evict: evict.clone(),
            },
        );
        Some((
            Conn {
                id,
                tracker: self.clone(),
            },
            evict,
        ))
    }

    fn remove(&self, id: u64) {
        self.lock().conns.remove(&id);
        self.closed.notify_waiters();
    }

    /// Removes the connection when its HTTP part ended, unless it lives on as a WebSocket.
    fn http_ended(&self, id: u64) {
        let upgraded = self.lock().conns.get(&id).is_some_and(|e| e.upgraded);
        if !upgraded {
            self.remove(id);
        }
    }
}

/// Whether an `accept` error means the process (or system) ran out of descriptors or memory.
fn exhausted(e: &io::Error) -> bool {
    use rustix::io::Errno;
    [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
        .iter()
        .any(|n| e.raw_os_error() == Some(n.raw_os_error()))
}

/// Serves `router` on every listener until `stop`; then stops accepting, lets each connection
/// finish its current exchange (event streams end on the same token) and returns.
pub async fn serve(
    listeners: Vec<TcpListener>,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
) -> io::Result<()> {
    let nofile = raise_nofile_limit().unwrap_or(u64::MAX);
    let cap = limits
        .unauthenticated_connections
        .min(usize::try_from(nofile / 4).unwrap_or(usize::MAX))
        .max(1);
    let tracker = Arc::new(Tracker::default());
    let connections = TaskTracker::new();
    let service = TowerToHyperService::new(router);
    let mut accepting = tokio::task::JoinSet::new();
    for listener in listeners {
        accepting.spawn(accept_loop(
            listener,
            service.clone(),
            limits.header_read_timeout,
            cap,
            tracker.clone(),
            connections.clone(),
            stop.clone(),
        ));
    }
    while accepting.join_next().await.is_some() {}
    connections.close();
    connections.wait().await;
    Ok(())
}

async fn accept_loop(
    listener: TcpListener,
    service: TowerToHyperService<Router>,
    header_read_timeout: Duration,
    cap: usize,
    tracker: Arc<Tracker>,
    connections: TaskTracker,
    stop: CancellationToken,
) {
    let mut exhausted_since: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = stop.cancelled() => return,
        };
        let (stream, _peer) = match accepted {
            Ok(a) => a,
            Err(e) if exhausted(&e) => {
                if exhausted_since.is_none() {
                    tracing::warn!(%e, "out of file descriptors; evicting idle connections");
                    exhausted_since = Some(Instant::now());
                }
                tracker.evict_oldest_idle(EXHAUSTED_MIN_IDLE);
                let closed = tracker.closed.notified();
                tokio::select! {
                    () = closed => {}
                    () = tokio::time::sleep(EXHAUSTED_PAUSE) => {}
                    () = stop.cancelled() => return,
                }
                continue;
            }
            // A connection that failed before we took it (reset, aborted): take the next one.
            Err(e) => {
                tracing::debug!(%e, "accept failed");
                continue;
            }
        };
        // Events and answers are small writes that must leave at once: with Nagle's algorithm
        // a write waits while the one before is unacknowledged, and a client that delays its
        // acknowledgements holds every live event back (docs/PERFORMANCE-hub.md).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%e, "cannot set TCP_NODELAY");
        }
        if let Some(since) = exhausted_since.take() {
            tracing::info!(
                ms = since.elapsed().as_millis() as u64,
                "accepting connections again"
            );
        }
        let Ok(local) = stream.local_addr() else {
            continue;
        };
        let Some((conn, evict)) = tracker.admit(cap) else {
            tracing::debug!("too many unauthenticated connections, none idle: refused one");
            continue;
        };
        let service = service.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let id = conn.id;
            let tracker = conn.tracker.clone();
            let per_request = conn.clone();
            let handler = service_fn(move |mut request: hyper::Request<Incoming>| {
                let service = service.clone();
                let conn = per_request.clone();
                request.extensions_mut().insert(LocalAddr(local));
                request.extensions_mut().insert(conn.clone());
                async move {
                    conn.request(true);
                    let call = hyper::service::Service::call(&service, request);
                    tokio::pin!(call);
                    // A request without the credential must be whole within the head's time
                    // (its body too: a stalled `POST /signin` holds a slot of the cap);
                    // past it the connection is dropped like an idle one.
                    let response = tokio::select! {
                        r = &mut call => r,
                        () = tokio::time::sleep(header_read_timeout) => {
                            if conn.is_authenticated() {
                                call.await
                            } else {
                                tracing::debug!("unauthenticated request unfinished in time: dropped");
                                conn.evict();
                                let mut late = hyper::Response::new(axum::body::Body::empty());
                                *late.status_mut() = hyper::StatusCode::REQUEST_TIMEOUT;
                                Ok(late)
                            }
                        }
                    };
                    conn.request(false);
                    response
                }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout)
                .serve_connection(TokioIo::new(stream), handler)
                .with_upgrades();
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                // Evicted: dropped at once, whatever it was doing (it had no request in flight).
                () = evict.cancelled() => {}
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            tracker.http_ended(id);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_are_the_other_loopback_family() {
        let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(sibling(v4), Some(v6));
        assert_eq!(sibling(v6), Some(v4));
        assert_eq!(sibling(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), Some(v6));
        assert_eq!(sibling("127.0.0.2".parse().unwrap()), None);
        assert_eq!(sibling("192.0.2.1".parse().unwrap()), None);
    }

    #[test]
    fn the_cap_evicts_the_oldest_idle_unauthenticated_connection() {
        let tracker = Arc::new(Tracker::default());
        let (first, first_evict) = tracker.admit(2).unwrap();
        let (second, second_evict) = tracker.admit(2).unwrap();
        second.request(true); // in flight: not idle
        // Full: the third evicts the only idle one, the first.
        let (_third, third_evict) = tracker.admit(2).unwrap();
        assert!(first_evict.is_cancelled());
        assert!(!second_evict.is_cancelled());
        tracker.remove(first.id);
        // Full again, and the only idle one left is the newest.
        second.request(true);
        let (_fourth, _) = tracker.admit(2).unwrap();
        assert!(third_evict.is_cancelled());
        // An authenticated connection does not count and is never evicted.
        second.authenticated();
        second.request(false);
        second.request(false);
        assert!(!second_evict.is_cancelled());
    }

    #[test]
    fn a_stalled_unauthenticated_request_makes_room_but_a_fresh_one_does_not() {
        let tracker = Arc::new(Tracker::default());
        let (stalled, stalled_evict) = tracker.admit(2).unwrap();
        let (fresh, fresh_evict) = tracker.admit(2).unwrap();
        stalled.request(true);
        fresh.request(true);
        // Both in flight a moment ago: nothing can make room.
        assert!(tracker.admit(2).is_none());
        // One has waited for its body for longer than a request takes: it makes room.
        tracker
            .lock()
            .conns
            .get_mut(&stalled.id)
            .unwrap()
            .last_active -= STALLED_REQUEST * 2;
        assert!(tracker.admit(2).is_some());
        assert!(stalled_evict.is_cancelled());
        assert!(!fresh_evict.is_cancelled());
    }
}
