//! The `/event` stream: an SSE reader that reconnects with backoff and resumes with
//! `Last-Event-ID`. Before every connect the server proves it holds the credential (a fresh
//! `/health?proof=` check); a stream that breaks marks its client unverified.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use ax_core::Secret;
use ax_protocol::{ErrorBody, Event, EventEnvelope, MessageId, SessionId, turn::TurnDelta};
use futures_util::{Stream, StreamExt};
use reqwest::header;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::{ClientError, bearer, proof::Verification};

/// No bytes (not even a heartbeat) for this long means the connection is dead.
const IDLE_LIMIT: Duration = Duration::from_secs(35);
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// One SSE event may not exceed this (the backend's largest is far below).
const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Events in order; see [`crate::Client::events`]. Dropping it closes the connection.
pub struct EventStream {
    rx: mpsc::Receiver<Result<EventEnvelope, ClientError>>,
    connected: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl EventStream {
    /// The next event; `None` after a fatal error was delivered.
    pub async fn next(&mut self) -> Option<Result<EventEnvelope, ClientError>> {
        self.rx.recv().await
    }

    /// Whether the stream is connected right now (false while it waits to reconnect).
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Stream for EventStream {
    type Item = Result<EventEnvelope, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// One stream's fixed parts.
struct Target {
    http: reqwest::Client,
    base: String,
    token: Secret,
    verification: Arc<Verification>,
}

pub(crate) fn spawn(
    http: reqwest::Client,
    base: String,
    token: Secret,
    verification: Arc<Verification>,
    last_id: Option<u64>,
) -> EventStream {
    let (tx, rx) = mpsc::channel(256);
    let connected = Arc::new(AtomicBool::new(false));
    let target = Target {
        http,
        base,
        token,
        verification,
    };
    let task = tokio::spawn(run(target, last_id, tx, connected.clone()));
    EventStream {
        rx,
        connected,
        task,
    }
}

/// What one connection attempt ended with.
enum Outcome {
    Retry,
    Fatal(ClientError),
    Closed,
}

async fn run(
    target: Target,
    mut last_id: Option<u64>,
    tx: mpsc::Sender<Result<EventEnvelope, ClientError>>,
    connected: Arc<AtomicBool>,
) {
    let mut backoff = BACKOFF_START;
    loop {
        let outcome = connect_once(&target, &mut last_id, &tx, &connected, &mut backoff).await;
        if !matches!(outcome, Outcome::Closed) {
            // The connection broke or failed: whoever answers next must prove itself again,
            // for the client's ordinary requests too (marked before `is_connected` turns false).
            target.verification.set(false);
        }
        connected.store(false, Ordering::Release);
        match outcome {
            Outcome::Closed => return,
            Outcome::Fatal(err) => {
                let _ = tx.send(Err(err)).await;
                return;
            }
            Outcome::Retry => {}
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = tx.closed() => return,
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

async fn connect_once(
    target: &Target,
    last_id: &mut Option<u64>,
    tx: &mpsc::Sender<Result<EventEnvelope, ClientError>>,
    connected: &AtomicBool,
    backoff: &mut Duration,
) -> Outcome {
    // A fresh proof before every connect, whatever the client's state.
    let checked = tokio::select! {
        r = target.verification.check_now(&target.http, &target.base, &target.token) => r,
        () = tx.closed() => return Outcome::Closed,
    };
    match checked {
        Ok(_) => {}
        Err(ClientError::Transport(_)) => return Outcome::Retry,
        Err(e) => return Outcome::Fatal(e),
    }
    let mut request = target
        .http
        .get(format!("{}/event", target.base))
        .header(header::AUTHORIZATION, bearer(&target.token))
        .header(header::ACCEPT, "text/event-stream");
    if let Some(id) = last_id {
        request = request.header("Last-Event-ID", id.to_string());
    }
    let response = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(10), request.send()) => r,
        () = tx.closed() => return Outcome::Closed,
    };
    let response = match response {
        Ok(Ok(r)) => r,
        Ok(Err(_)) | Err(_) => return Outcome::Retry,
    };
    let status = response.status();
    if !status.is_success() {
        if status.is_server_error() {
            return Outcome::Retry;
        }
        let bytes = response.bytes().await.unwrap_or_default();
        return Outcome::Fatal(match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(body) => ClientError::Api {
                status: status.as_u16(),
                error: body.error,
            },
            Err(_) => ClientError::Status {
                status: status.as_u16(),
            },
        });
    }
    connected.store(true, Ordering::Release);
    *backoff = BACKOFF_START;
    let mut body = response.bytes_stream();
    let mut parser = SseParser::default();
    loop {
        let chunk = tokio::select! {
            c = tokio::time::timeout(IDLE_LIMIT, body.next()) => c,
            () = tx.closed() => return Outcome::Closed,
        };
        let bytes = match chunk {
            Ok(Some(Ok(bytes))) => bytes,
            _ => return Outcome::Retry,
        };
        for data in parser.push(&bytes) {
            let Some(data) = data else {
                return Outcome::Retry;
            };
            let envelope = match decode(&data) {
                Ok(e) => e,
                Err(e) => {
                    return Outcome::Fatal(ClientError::Decode(format!("event: {e}")));
                }
            };
            *last_id = Some(envelope.id);
            if tx.send(Ok(envelope)).await.is_err() {
                return Outcome::Closed;
            }
        }
    }
}

/// One `/event` frame's `data`, parsed as [`EventEnvelope`].
///
/// Most frames of a turn are `message.delta` events of a text or thought chunk: those are
/// parsed in one pass ([`text_delta`]), where serde's general parse of the internally tagged
/// [`ax_protocol::Event`] (with the internally tagged [`TurnDelta`] inside) buffers every key
/// and string of the frame and reads them again, the delta's twice. Anything the one pass
/// does not take (another event, another delta, any field more, a value of another type)
/// goes to the general parse, which decides it (and words its error) as it always did.
fn decode(data: &str) -> Result<EventEnvelope, serde_json::Error> {
    if let Some(envelope) = text_delta(data) {
        return Ok(envelope);
    }
    serde_json::from_str(data)
}

/// A frame that is a `message.delta` event of a `text_appended` or `thought_appended` delta
/// and nothing else, parsed in one pass; `None` for anything else. Unknown and repeated
/// fields are refused here as the general parse refuses them, so what this takes the general
/// parse takes too, as the same envelope (the tests compare the two).
fn text_delta(data: &str) -> Option<EventEnvelope> {
    let frame: TextDeltaFrame = serde_json::from_str(data).ok()?;
    let event = frame.event;
    let text = event.delta.text;
    Some(EventEnvelope {
        id: frame.id,
        event: Event::MessageDelta {
            session_id: event.session_id,
            message_id: event.message_id,
            seq: event.seq,
            delta: match event.delta.kind {
                TextKind::TextAppended => TurnDelta::TextAppended { text },
                TextKind::ThoughtAppended => TurnDelta::ThoughtAppended { text },
            },
        },
    })
}

/// [`EventEnvelope`] of a text delta event.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextDeltaFrame {
    id: u64,
    event: TextDeltaEvent,
}

/// [`Event::MessageDelta`] with its tag as a field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TextDeltaEvent {
    #[serde(rename = "type")]
    _tag: MessageDeltaTag,
    session_id: SessionId,
    message_id: MessageId,
    seq: u64,
    delta: TextDelta,
}

/// The one tag [`TextDeltaEvent`] takes.
#[derive(Deserialize)]
enum MessageDeltaTag {
    #[serde(rename = "message.delta")]
    MessageDelta,
}

/// [`TurnDelta::TextAppended`] or [`TurnDelta::ThoughtAppended`] with its tag as a field.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextDelta {
    #[serde(rename = "type")]
    kind: TextKind,
    text: String,
}

/// The tags [`TextDelta`] takes.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum TextKind {
    TextAppended,
    ThoughtAppended,
}

/// Incremental SSE parsing: feeds bytes, yields each complete event's `data` (joined lines).
/// `None` in the output means the stream broke the size bound.
#[derive(Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    last_was_cr: bool,
}

impl SseParser {
    pub(crate) fn push(&mut self, mut bytes: &[u8]) -> Vec<Option<String>> {
        let mut out = Vec::new();
        if bytes.is_empty() {
            return out;
        }
        // A CR ended the last chunk: an LF starting this one belongs to it.
        if std::mem::take(&mut self.last_was_cr) && bytes[0] == b'\n' {
            bytes = &bytes[1..];
        }
        // Whole lines at a time: a line that ends in this chunk is read where it lies (after
        // what an earlier chunk left of it), only a line's unfinished end is kept.
        while !bytes.is_empty() {
            let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                if self.line.len() + bytes.len() + self.data.len() > MAX_EVENT_BYTES {
                    self.line.clear();
                    out.push(None);
                    return out;
                }
                self.line.extend_from_slice(bytes);
                return out;
            };
            let part = &bytes[..end];
            if !part.is_empty() && self.line.len() + part.len() + self.data.len() > MAX_EVENT_BYTES
            {
                self.line.clear();
                out.push(None);
                return out;
            }
            let event = if self.line.is_empty() {
                self.line_done(part)
            } else {
                // Taken out and put back, so the buffer keeps its capacity.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(part);
                let event = self.line_done(&line);
                line.clear();
                self.line = line;
                event
            };
            if let Some(event) = event {
                out.push(Some(event));
            }
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.last_was_cr = true,
                }
            }
        }
        out
    }

    fn line_done(&mut self, line: &[u8]) -> Option<String> {
        if line.is_empty() {
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            return Some(std::mem::take(&mut self.data));
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use ax_protocol::turn::{
        Notice, NoticeKind, PermissionChoice, PermissionKind, PermissionOutcome, PermissionPart,
        PlanEntry, PlanPriority, PlanStatus, TerminalExit, ToolCallFields, ToolCallPart,
        ToolStatus,
    };

    use super::*;

    const SESSION: &str = "ses_0123456789abABCDEFGHIJKLMN";
    const MESSAGE: &str = "msg_0123456789abABCDEFGHIJKLMN";
    const PERMISSION: &str = "per_0123456789abABCDEFGHIJKLMN";

    fn general(data: &str) -> Result<EventEnvelope, String> {
        serde_json::from_str::<EventEnvelope>(data).map_err(|e| e.to_string())
    }

    /// The frame the backend writes for `delta`.
    fn frame(id: u64, seq: u64, delta: TurnDelta) -> String {
        serde_json::to_string(&EventEnvelope {
            id,
            event: Event::MessageDelta {
                session_id: SESSION.parse().unwrap(),
                message_id: MESSAGE.parse().unwrap(),
                seq,
                delta,
            },
        })
        .unwrap()
    }

    /// Checks that `decode` gives what the general parse gives (the same envelope, or an
    /// error in the same words) and that the one pass takes nothing the general parse
    /// refuses; true if the one pass took `data`.
    fn same_as_general(data: &str) -> bool {
        let fast = text_delta(data);
        let general = general(data);
        if let Some(fast) = &fast {
            assert_eq!(Ok(fast), general.as_ref(), "one pass differs on {data}");
        }
        assert_eq!(
            decode(data).map_err(|e| e.to_string()),
            general,
            "decode differs on {data}"
        );
        fast.is_some()
    }

    #[test]
    fn every_delta_decodes_as_the_general_parse_does() {
        let tool = ToolCallPart {
            tool_call_id: "t1".into(),
            title: "Run".into(),
            ..ToolCallPart::default()
        };
        let texts = [
            "",
            "plain",
            "quote \" backslash \\ slash / tab \t newline \n",
            "\u{1b}[31mred\u{1b}[0m \u{0} \u{7f}",
            "unicode: é ü 日本語 🦀 \u{2028}",
            "{\"type\":\"text_appended\",\"text\":\"nested\"}",
        ];
        let mut taken = 0;
        for (i, text) in texts.iter().enumerate() {
            for delta in [
                TurnDelta::TextAppended {
                    text: (*text).into(),
                },
                TurnDelta::ThoughtAppended {
                    text: (*text).into(),
                },
            ] {
                for (id, seq) in [(1, 1), (i as u64 + 2, 7), (u64::MAX, u64::MAX)] {
                    let data = frame(id, seq, delta.clone());
                    assert!(same_as_general(&data), "one pass refused {data}");
                    taken += 1;
                }
            }
        }
        assert_eq!(taken, texts.len() * 6);
        let others = [
            TurnDelta::ToolCallCreated {
                tool_call: tool.clone(),
            },
            TurnDelta::ToolCallUpdated {
                tool_call_id: "t1".into(),
                fields: ToolCallFields {
                    status: Some(ToolStatus::Completed),
                    ..ToolCallFields::default()
                },
            },
            TurnDelta::PlanReplaced {
                entries: vec![PlanEntry {
                    content: "a".into(),
                    priority: PlanPriority::High,
                    status: PlanStatus::Pending,
                }],
            },
            TurnDelta::PermissionAsked {
                permission: PermissionPart {
                    permission_id: PERMISSION.parse().unwrap(),
                    tool_call: tool,
                    options: vec![PermissionChoice {
                        option_id: "allow".into(),
                        name: "Allow".into(),
                        kind: PermissionKind::AllowOnce,
                    }],
                    outcome: PermissionOutcome::Pending,
                },
            },
            TurnDelta::PermissionAnswered {
                permission_id: PERMISSION.parse().unwrap(),
                outcome: PermissionOutcome::Cancelled,
            },
            TurnDelta::Notice {
                notice: Notice {
                    kind: NoticeKind::Info,
                    message: "hi".into(),
                },
            },
            TurnDelta::TerminalOutput {
                terminal_id: "term-1".into(),
                text: "out".into(),
                dropped_bytes: 3,
            },
            TurnDelta::TerminalExited {
                terminal_id: "term-1".into(),
                exit: TerminalExit {
                    exit_code: Some(2),
                    signal: None,
                },
            },
        ];
        for delta in others {
            let data = frame(9, 3, delta);
            assert!(general(&data).is_ok(), "{data}");
            assert!(!same_as_general(&data), "one pass took {data}");
        }
        // Other events go the general way too.
        let data = serde_json::to_string(&EventEnvelope {
            id: 4,
            event: Event::SessionStatus {
                session_id: SESSION.parse().unwrap(),
                status: ax_protocol::SessionStatus::Idle,
            },
        })
        .unwrap();
        assert!(general(&data).is_ok(), "{data}");
        assert!(!same_as_general(&data), "one pass took {data}");
    }

    #[test]
    fn a_text_delta_is_refused_where_the_general_parse_refuses_it() {
        let head =
            format!(r#""type":"message.delta","sessionId":"{SESSION}","messageId":"{MESSAGE}""#);
        let event = |rest: &str| format!(r#"{{"id":5,"event":{{{head},{rest}}}}}"#);
        let delta = r#""delta":{"type":"text_appended","text":"a"}"#;
        // Taken: any field order, escaped keys and values, whitespace.
        let taken = [
            event(&format!(r#""seq":2,{delta}"#)),
            event(r#""delta":{"text":"a","type":"thought_appended"},"seq":2"#),
            format!(r#"{{"event":{{{delta},"seq":2,{head}}},"id":5}}"#),
            event(r#""s\u0065q":2,"delta":{"type":"text_appended","text":"\ud83e\udd80\n"}"#),
            format!(" {{ \"id\" : 5 ,\n \"event\":{{{head},\"seq\":2, {delta} }} }} "),
        ];
        for data in &taken {
            assert!(general(data).is_ok(), "{data}");
            assert!(same_as_general(data), "one pass refused {data}");
        }
        // Refused by both: unknown fields at every level, repeated fields, wrong types,
        // missing fields, bad IDs, another tag, bytes after or missing.
        let refused = [
            event(r#""seq":2,"delta":{"type":"text_appended","text":"a","x":1}"#),
            event(&format!(r#""seq":2,{delta},"x":1"#)),
            format!(r#"{{"id":5,"x":1,"event":{{{head},"seq":2,{delta}}}}}"#),
            event(r#""seq":2,"delta":{"type":"text_appended","text":"a","text":"b"}"#),
            event(r#""seq":2,"delta":{"type":"text_appended","type":"text_appended","text":"a"}"#),
            event(&format!(r#""seq":2,"seq":2,{delta}"#)),
            event(&format!(r#""type":"message.delta","seq":2,{delta}"#)),
            format!(r#"{{"id":5,"id":5,"event":{{{head},"seq":2,{delta}}}}}"#),
            event(&format!(r#""seq":"2",{delta}"#)),
            event(&format!(r#""seq":2.0,{delta}"#)),
            event(&format!(r#""seq":-1,{delta}"#)),
            event(&format!(r#""seq":18446744073709551616,{delta}"#)),
            event(&format!(r#""seq":null,{delta}"#)),
            event(r#""seq":2,"delta":{"type":"text_appended","text":null}"#),
            event(r#""seq":2,"delta":{"type":"text_appended","text":7}"#),
            event(r#""seq":2,"delta":{"type":"text_appended","text":["a"]}"#),
            event(r#""seq":2,"delta":{"type":"text_appended"}"#),
            event(r#""seq":2,"delta":{"text":"a"}"#),
            event(r#""seq":2,"delta":{"type":"Text_appended","text":"a"}"#),
            event(r#""seq":2,"delta":{"type":"text_appended","text":"\ud800"}"#),
            event(r#""seq":2"#),
            event(delta),
            event(r#""seq":2,"delta":"a""#),
            format!(
                r#"{{"id":5,"event":{{"type":"message.delta","sessionId":"ses_x","messageId":"{MESSAGE}","seq":2,{delta}}}}}"#
            ),
            format!(
                r#"{{"id":5,"event":{{"type":"message.delta","sessionId":"{SESSION}","messageId":"{SESSION}","seq":2,{delta}}}}}"#
            ),
            format!(
                r#"{{"id":5,"event":{{"type":"message.part","sessionId":"{SESSION}","messageId":"{MESSAGE}","seq":2,{delta}}}}}"#
            ),
            format!(r#"{{"id":"5","event":{{{head},"seq":2,{delta}}}}}"#),
            format!(r#"{{"id":5,"event":{{{head},"seq":2,{delta}}}}}x"#),
            format!(r#"{{"id":5,"event":{{{head},"seq":2,{delta}}}"#),
            format!(r#"{{"event":{{{head},"seq":2,{delta}}}}}"#),
        ];
        for data in &refused {
            assert!(general(data).is_err(), "the general parse took {data}");
            assert!(!same_as_general(data), "one pass took {data}");
        }
    }

    /// The parser as it was, a byte at a time: the reference the line-at-a-time one must match.
    #[derive(Default)]
    struct ByteParser {
        inner: SseParser,
    }

    impl ByteParser {
        fn push(&mut self, bytes: &[u8]) -> Vec<Option<String>> {
            let p = &mut self.inner;
            let mut out = Vec::new();
            for &b in bytes {
                if b == b'\n' && p.last_was_cr {
                    p.last_was_cr = false;
                    continue;
                }
                p.last_was_cr = b == b'\r';
                if b == b'\n' || b == b'\r' {
                    let line = std::mem::take(&mut p.line);
                    if let Some(event) = p.line_done(&line) {
                        out.push(Some(event));
                    }
                    continue;
                }
                p.line.push(b);
                if p.line.len() + p.data.len() > MAX_EVENT_BYTES {
                    p.line.clear();
                    out.push(None);
                    return out;
                }
            }
            out
        }
    }

    /// Feeds `chunks` to both parsers and compares what each push gives.
    fn same_as_bytewise(chunks: &[&[u8]]) {
        let (mut lines, mut bytes) = (SseParser::default(), ByteParser::default());
        for (i, chunk) in chunks.iter().enumerate() {
            let (a, b) = (lines.push(chunk), bytes.push(chunk));
            assert_eq!(a, b, "push {i} of {chunks:?}");
            if a.contains(&None) {
                return;
            }
        }
    }

    #[test]
    fn lines_parse_as_byte_by_byte_however_split() {
        let streams: [&[u8]; 6] = [
            b": heartbeat\n\nid: 1\ndata: {\"a\":1}\n\nid: 2\ndata:x\ndata:  y\n\n",
            b"data: a\r\n\r\ndata: b\r\rdata: c\n\r\ndata: d\r\n\n\n\r\rdata\n\n",
            b"event: e\nretry: 5\ndata: caf\xc3\xa9 \xff\nfoo\n:comment\ndata\ndata:\n\n",
            b"\r\n\r\n\n\rdata: last without end",
            b"data: \r\ndata: :\r\n\r\n",
            b"",
        ];
        for s in streams {
            same_as_bytewise(&[s]);
            same_as_bytewise(&s.chunks(1).collect::<Vec<_>>());
            for i in 0..=s.len() {
                same_as_bytewise(&[&s[..i], &s[i..]]);
                for j in i..=s.len() {
                    same_as_bytewise(&[&s[..i], &s[i..j], &s[j..]]);
                }
            }
        }
    }

    #[test]
    fn an_event_over_the_bound_ends_the_stream_as_before() {
        let big = vec![b'x'; MAX_EVENT_BYTES / 2];
        // Data lines that add up past the bound, one over it by a line's end.
        for extra in [0, 1, 2, 16] {
            let mut first = b"data: ".to_vec();
            first.extend_from_slice(&big);
            first.push(b'\n');
            let mut second = b"data: ".to_vec();
            second.extend_from_slice(&vec![b'x'; big.len() - 8 + extra]);
            second.extend_from_slice(b"\n\ndata: next\n\n");
            same_as_bytewise(&[&first, &second]);
            let mut whole = first.clone();
            whole.extend_from_slice(&second);
            same_as_bytewise(&[&whole]);
            same_as_bytewise(&whole.chunks(1 << 20).collect::<Vec<_>>());
        }
        let mut p = SseParser::default();
        let mut line = b"data: ".to_vec();
        line.extend_from_slice(&vec![b'y'; MAX_EVENT_BYTES + 1]);
        assert_eq!(p.push(&line), vec![None]);
    }

    #[test]
    fn parses_split_events_comments_and_crlf() {
        let mut p = SseParser::default();
        let mut got = p.push(b": heartbeat\n\nid: 1\ndata: {\"a\"");
        assert!(got.is_empty());
        got = p.push(b":1}\r\n\r\ndata: x\ndata: y\n\n");
        assert_eq!(
            got,
            vec![Some("{\"a\":1}".to_owned()), Some("x\ny".to_owned())]
        );
    }
}
