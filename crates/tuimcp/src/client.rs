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

/// Calls the TUI behind `endpoint` (the path of `endpoint.json`) once. `cancel` resolves when
/// the caller gives up.
pub async fn call(
    endpoint: &Path,
    request: &Request,
    cancel: impl Future<Output = ()>,
) -> Response {
    call_with_deadline(endpoint, request, cancel, ADAPTER_DEADLINE).await
}

/// [`call`] with an explicit deadline (tests, benchmarks).
pub async fn call_with_deadline(
    endpoint: &Path,
    request: &Request,
    cancel: impl Future<Output = ()>,
    deadline: Duration,
) -> Response {
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
                return response;
            }
            Err(Failure::Unreadable)
        }
        Err(failure) => Err(failure),
    };
    let code = match (response, is_view) {
        (Ok(response), _) => return response,
        (Err(Failure::BeforeSend(code)), _) => code,
        (Err(_), true) => Code::TargetUnavailable,
        (Err(Failure::NoAnswer), false) => Code::TimeoutUnknown,
        (Err(Failure::Unreadable), false) => Code::OutcomeUnknown,
    };
    Response::Rejected(code)
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
    let mut stream = match tokio::time::timeout_at(deadline, UnixStream::connect(&socket)).await {
        Ok(Ok(stream)) => stream,
        _ => return Err(unavailable),
    };
    let frame = request_frame(&file.token, request);
    // If the write fails the final `\n` never left, so the TUI cannot have a whole frame.
    match tokio::time::timeout_at(deadline, stream.write_all(&frame)).await {
        Ok(Ok(())) => sent.store(true, Ordering::SeqCst),
        _ => return Err(unavailable),
    }
    match tokio::time::timeout_at(deadline, read_frame(&mut stream)).await {
        Ok(Ok(bytes)) => serde_json::from_slice(&bytes)
            .ok()
            .and_then(|value| Response::from_value(value).ok())
            .ok_or(Failure::Unreadable),
        Ok(Err(FrameError::TooLarge | FrameError::Trailing)) => Err(Failure::Unreadable),
        Ok(Err(FrameError::Eof | FrameError::Io(_))) | Err(_) => Err(Failure::NoAnswer),
    }
}
