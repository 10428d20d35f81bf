//! The adapter's side of the socket: one checked call per tool call, never a retry.
//!
//! Failure mapping is honest: a definitive code only when nothing could have applied.
//! `get_view_context` changes nothing, so any failure is `target_unavailable`; for
//! `select_session`, once the frame was sent, a missing answer is `timeout_unknown` and an
//! unreadable one `outcome_unknown`.

use std::{
    future::Future,
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use tokio::{io::AsyncWriteExt, net::UnixStream, time::Instant};

use crate::{
    endpoint_file::read_endpoint_file,
    frame::{FrameError, read_frame},
    protocol::{Code, Request, Response, request_frame},
};

/// The adapter's deadline for one call (controller 4.0 s < adapter 4.5 s < socket 5.0 s).
pub const ADAPTER_DEADLINE: Duration = Duration::from_millis(4500);

enum Failure {
    /// Nothing was sent: definitive.
    BeforeSend(Code),
    /// Sent, but no answer in time (or the connection closed without one).
    NoAnswer,
    /// Sent, and the answer could not be read.
    Unreadable,
}

/// Who decided a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The TUI answered it.
    Tui,
    /// The adapter mapped a failure (nothing reached the TUI, or no readable answer came).
    Adapter,
}

/// Calls the TUI behind `endpoint` (the path of `endpoint.json`) once. `cancel` resolves when
/// the caller gives up.
pub async fn call(
    endpoint: &Path,
    request: &Request,
    cancel: impl Future<Output = ()>,
) -> Response {
    call_with_deadline(endpoint, request, cancel, ADAPTER_DEADLINE).await
}

/// [`call`], also saying who decided the response.
pub async fn call_with_origin(
    endpoint: &Path,
    request: &Request,
    cancel: impl Future<Output = ()>,
) -> (Response, Origin) {
    call_traced(endpoint, request, cancel, ADAPTER_DEADLINE).await
}

/// [`call`] with an explicit deadline (tests, benchmarks).
pub async fn call_with_deadline(
    endpoint: &Path,
    request: &Request,
    cancel: impl Future<Output = ()>,
    deadline: Duration,
) -> Response {
    call_traced(endpoint, request, cancel, deadline).await.0
}

async fn call_traced(
    endpoint: &Path,
    request: &Request,
    cancel: impl Future<Output = ()>,
    deadline: Duration,
) -> (Response, Origin) {
    let deadline = Instant::now() + deadline;
    let sent = AtomicBool::new(false);
    let outcome = tokio::select! {
        // Cancellation is checked first on every poll, so a cancelled caller sends nothing.
        biased;
        () = cancel => Err(if sent.load(Ordering::SeqCst) {
            Failure::NoAnswer
        } else {
            Failure::BeforeSend(Code::Cancelled)
        }),
        outcome = exchange(endpoint, request, deadline, &sent) => outcome,
    };
    let is_view = matches!(request, Request::GetViewContext);
    let response = match outcome {
        Ok(response) => {
            let fits = match (&response, is_view) {
                (Response::Context(_), true) | (Response::Applied(_), false) => true,
                (Response::Rejected(code), true) => code.is_definitive(),
                (Response::Rejected(_), false) => true,
                _ => false,
            };
            if fits {
                return (response, Origin::Tui);
            }
            Err(Failure::Unreadable)
        }
        Err(failure) => Err(failure),
    };
    let code = match (response, is_view) {
        (Ok(response), _) => return (response, Origin::Tui),
        (Err(Failure::BeforeSend(code)), _) => code,
        (Err(_), true) => Code::TargetUnavailable,
        (Err(Failure::NoAnswer), false) => Code::TimeoutUnknown,
        (Err(Failure::Unreadable), false) => Code::OutcomeUnknown,
    };
    (Response::Rejected(code), Origin::Adapter)
}

async fn exchange(
    endpoint: &Path,
    request: &Request,
    deadline: Instant,
    sent: &AtomicBool,
) -> Result<Response, Failure> {
    let unavailable = Failure::BeforeSend(Code::TargetUnavailable);
    let (file, socket) = match read_endpoint_file(endpoint) {
        Ok(found) => found,
        Err(err) => {
            tracing::warn!("tuimcp: {err}");
            return Err(unavailable);
        }
    };
    // One timer for connect, write and read; `sent` tells a timeout before the frame left
    // from one after it.
    match tokio::time::timeout_at(deadline, send_and_read(&socket, &file.token, request, sent))
        .await
    {
        Ok(outcome) => outcome,
        Err(_) if sent.load(Ordering::SeqCst) => Err(Failure::NoAnswer),
        Err(_) => Err(unavailable),
    }
}

/// Connects to `socket` and sends `frame`. On Linux a Unix-socket `connect` finishes (or
/// fails, e.g. `EAGAIN` on a full backlog) inside the call, and a frame of at most 16 KiB fits
/// the new socket's send buffer, so both are done with plain non-blocking calls before the
/// stream is handed to tokio: no wait for a first writable event from the I/O driver. What a
/// short write leaves is sent the usual way. `Ok` only once the whole frame is out.
pub async fn connect_and_send(socket: &Path, frame: &[u8]) -> std::io::Result<UnixStream> {
    #[cfg(target_os = "linux")]
    {
        use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )?;
        let address = SocketAddrUnix::new(socket)?;
        let connected = match rustix::net::connect(&fd, &address) {
            Ok(()) => true,
            // Not expected for a Unix socket; wait as for any non-blocking connect.
            Err(rustix::io::Errno::INPROGRESS) => false,
            Err(err) => return Err(err.into()),
        };
        // Registered before anything is written: once the whole frame is out, nothing can
        // fail any more, so an error here always means the frame did not leave.
        let mut stream = UnixStream::from_std(std::os::unix::net::UnixStream::from(fd))?;
        if !connected {
            stream.writable().await?;
            if let Some(err) = stream.take_error()? {
                return Err(err);
            }
        }
        let mut written = 0;
        while written < frame.len() {
            // `send` with MSG_NOSIGNAL: a peer that closed meanwhile is an error, not SIGPIPE.
            match rustix::net::send(&stream, &frame[written..], rustix::net::SendFlags::NOSIGNAL) {
                Ok(n) => written += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => break,
                Err(err) => return Err(err.into()),
            }
        }
        stream.write_all(&frame[written..]).await?;
        Ok(stream)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let mut stream = UnixStream::connect(socket).await?;
        stream.write_all(frame).await?;
        Ok(stream)
    }
}

async fn send_and_read(
    socket: &Path,
    token: &str,
    request: &Request,
    sent: &AtomicBool,
) -> Result<Response, Failure> {
    let frame = request_frame(token, request);
    // If connect or write fails the final `\n` never left, so the TUI cannot have a whole
    // frame.
    let Ok(mut stream) = connect_and_send(socket, &frame).await else {
        return Err(Failure::BeforeSend(Code::TargetUnavailable));
    };
    sent.store(true, Ordering::SeqCst);
    match read_frame(&mut stream).await {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .ok()
            .and_then(|value| Response::from_value(value).ok())
            .ok_or(Failure::Unreadable),
        Err(FrameError::TooLarge | FrameError::Trailing) => Err(Failure::Unreadable),
        Err(FrameError::Eof | FrameError::Io(_)) => Err(Failure::NoAnswer),
    }
}
