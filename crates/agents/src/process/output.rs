//! Output of a started process: UTF-8 decoding across read boundaries and the bound on what
//! is kept.

use std::collections::VecDeque;

use ax_protocol::Stream;

/// How much output a process keeps, and which part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Keep the first `head` bytes and the last `tail` bytes, with a marker between them when
    /// something in the middle was dropped. For commands a person reads afterwards (the
    /// `shell` agent, the operator terminal): a build or test log says what went wrong at its
    /// end, and how it started at its beginning.
    HeadAndTail {
        /// Bytes kept from the start; streamed live as they arrive.
        head: usize,
        /// Bytes kept from the end; known only when the command has ended.
        tail: usize,
    },
    /// Keep only the last `limit` bytes, as ACP's `terminal/output` with `outputByteLimit`
    /// asks. Everything is still streamed live to an event consumer.
    Tail {
        /// Bytes kept from the end.
        limit: usize,
    },
}

impl Bound {
    /// `total` bytes, split evenly between head and tail.
    pub fn head_and_tail(total: usize) -> Bound {
        let head = total / 2;
        Bound::HeadAndTail {
            head,
            tail: total - head,
        }
    }
}

/// Text from one stream, in arrival order relative to every other piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Where it came from.
    pub stream: Stream,
    /// Whole UTF-8 characters; invalid bytes became U+FFFD.
    pub text: String,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    /// The exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it, if one did (9 after a kill).
    pub signal: Option<i32>,
}

/// What an event consumer of a process sees, in this order: output pieces (live), then for
/// [`Bound::HeadAndTail`] a [`OutputEvent::Truncated`] marker and the kept tail when the
/// output went past the head, then exactly one [`OutputEvent::Exit`], after all output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputEvent {
    /// A piece of kept output.
    Output(Piece),
    /// Output between the head and the tail was dropped; the tail follows.
    Truncated {
        /// How many bytes (of decoded text) were dropped.
        dropped_bytes: u64,
    },
    /// The command ended and its group was killed; nothing follows.
    Exit(ExitStatus),
}

/// What a process kept so far, and how it ended if it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Pieces kept from the start (empty for [`Bound::Tail`]).
    pub head: Vec<Piece>,
    /// Bytes dropped between `head` and `tail` (from the start, for [`Bound::Tail`]).
    pub dropped_bytes: u64,
    /// Pieces kept from the end.
    pub tail: Vec<Piece>,
    /// Set once the command ended and all its output is in.
    pub exit: Option<ExitStatus>,
}

impl Snapshot {
    /// Whether anything was dropped.
    pub fn truncated(&self) -> bool {
        self.dropped_bytes > 0
    }

    /// All kept output as one text: the head, the marker (when something between head and
    /// tail was dropped), the tail.
    pub fn text(&self) -> String {
        let mut text: String = self.head.iter().map(|p| p.text.as_str()).collect();
        if self.truncated() && !self.head.is_empty() {
            text.push_str(&marker(self.dropped_bytes));
        }
        text.extend(self.tail.iter().map(|p| p.text.as_str()));
        text
    }
}

/// The line shown where output was dropped.
pub fn marker(dropped_bytes: u64) -> String {
    format!("\n[… {dropped_bytes} bytes of output dropped …]\n")
}

/// Pieces at most this long are extended by the next piece of the same stream, so a command
/// printing one byte at a time does not cost a piece per byte.
const MERGE_BELOW: usize = 4096;

/// The kept output of one process.
#[derive(Debug)]
pub(crate) struct Buffer {
    bound: Bound,
    head: Vec<Piece>,
    head_len: usize,
    head_full: bool,
    tail: VecDeque<Piece>,
    tail_len: usize,
    dropped: u64,
}

impl Buffer {
    pub(crate) fn new(bound: Bound) -> Buffer {
        Buffer {
            bound,
            head: Vec::new(),
            head_len: 0,
            head_full: false,
            tail: VecDeque::new(),
            tail_len: 0,
            dropped: 0,
        }
    }

    /// Takes decoded text; returns the piece to stream live, if any.
    pub(crate) fn push(&mut self, stream: Stream, mut text: String) -> Option<Piece> {
        if text.is_empty() {
            return None;
        }
        match self.bound {
            Bound::HeadAndTail { head, tail } => {
                if self.head_full {
                    self.push_tail(stream, text, tail);
                    return None;
                }
                let room = head - self.head_len;
                if text.len() > room {
                    let cut = floor_boundary(&text, room);
                    let rest = text.split_off(cut);
                    // A character that does not fit ends the head: later output must not
                    // appear before this one's remainder.
                    self.head_full = true;
                    self.push_tail(stream, rest, tail);
                }
                if text.is_empty() {
                    return None;
                }
                self.head_len += text.len();
                let piece = Piece { stream, text };
                self.head.push(piece.clone());
                Some(piece)
            }
            Bound::Tail { limit } => {
                self.push_tail(stream, text.clone(), limit);
                Some(Piece { stream, text })
            }
        }
    }

    fn push_tail(&mut self, stream: Stream, text: String, cap: usize) {
        self.tail_len += text.len();
        match self.tail.back_mut() {
            Some(last) if last.stream == stream && last.text.len() < MERGE_BELOW => {
                last.text.push_str(&text);
            }
            _ => self.tail.push_back(Piece { stream, text }),
        }
        while self.tail_len > cap {
            let excess = self.tail_len - cap;
            let Some(front) = self.tail.front_mut() else {
                break;
            };
            if front.text.len() <= excess {
                let len = front.text.len();
                self.tail.pop_front();
                self.tail_len -= len;
                self.dropped += len as u64;
            } else {
                let cut = ceil_boundary(&front.text, excess);
                front.text.drain(..cut);
                if front.text.is_empty() {
                    self.tail.pop_front();
                }
                self.tail_len -= cut;
                self.dropped += cut as u64;
            }
        }
    }

    /// The tail that a head-and-tail consumer has not seen yet, merged by stream, and the
    /// dropped count; empty for [`Bound::Tail`], whose output was all streamed live.
    pub(crate) fn unsent_tail(&self) -> (u64, Vec<Piece>) {
        match self.bound {
            Bound::HeadAndTail { .. } => (self.dropped, merged(self.tail.iter())),
            Bound::Tail { .. } => (0, Vec::new()),
        }
    }

    pub(crate) fn snapshot(&self, exit: Option<ExitStatus>) -> Snapshot {
        Snapshot {
            head: merged(self.head.iter()),
            dropped_bytes: self.dropped,
            tail: merged(self.tail.iter()),
            exit,
        }
    }
}

fn merged<'a>(pieces: impl Iterator<Item = &'a Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for p in pieces {
        match out.last_mut() {
            Some(last) if last.stream == p.stream => last.text.push_str(&p.text),
            _ => out.push(p.clone()),
        }
    }
    out
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `at`.
fn ceil_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Decodes one stream's bytes as UTF-8: a character split between two reads waits for its
/// rest instead of becoming two replacement characters.
#[derive(Debug, Default)]
pub(crate) struct Utf8Carry {
    carry: Vec<u8>,
}

impl Utf8Carry {
    /// Text of the complete characters so far; an unfinished last character stays behind.
    pub(crate) fn decode(&mut self, bytes: &[u8]) -> String {
        let mut all = std::mem::take(&mut self.carry);
        all.extend_from_slice(bytes);
        let keep = incomplete_tail(&all);
        self.carry = all.split_off(all.len() - keep);
        lossy(all)
    }

    /// At the end of the stream: whatever was left, invalid bytes replaced.
    pub(crate) fn finish(&mut self) -> String {
        lossy(std::mem::take(&mut self.carry))
    }
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Bytes at the end of `b` that begin a UTF-8 character whose remaining bytes have not
/// arrived yet (0 to 3).
pub(crate) fn incomplete_tail(b: &[u8]) -> usize {
    for back in 1..=b.len().min(3) {
        let byte = b[b.len() - back];
        if byte & 0xC0 == 0x80 {
            // A continuation byte: its lead is further back.
            continue;
        }
        let needs = match byte {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if needs > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str) -> (Stream, String) {
        (Stream::Stdout, text.to_owned())
    }

    #[test]
    fn split_characters_wait_for_their_rest() {
        let euro = "€".as_bytes(); // three bytes
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail(&[b'a', euro[0]]), 1);
        assert_eq!(incomplete_tail(&[b'a', euro[0], euro[1]]), 2);
        assert_eq!(incomplete_tail(euro), 0);
        // An invalid byte earlier does not stop a split character at the end from waiting.
        assert_eq!(incomplete_tail(&[0xFF, b'a', euro[0]]), 1);

        let mut carry = Utf8Carry::default();
        let mut text = carry.decode(&[b'x', euro[0]]);
        text += &carry.decode(&[euro[1]]);
        text += &carry.decode(&[euro[2], b'y']);
        text += &carry.finish();
        assert_eq!(text, "x€y");
        // A stream that ends inside a character shows one replacement character.
        let mut carry = Utf8Carry::default();
        assert_eq!(carry.decode(&[b'z', euro[0], euro[1]]), "z");
        assert_eq!(carry.finish(), "\u{FFFD}");
    }

    #[test]
    fn head_and_tail_keep_both_ends_with_a_marker() {
        let mut b = Buffer::new(Bound::HeadAndTail { head: 4, tail: 3 });
        let mut live = Vec::new();
        for (s, t) in [out("ab"), out("cdef"), out("ghij"), out("k")] {
            live.extend(b.push(s, t));
        }
        let live: String = live.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(live, "abcd");
        let snap = b.snapshot(None);
        assert_eq!(snap.dropped_bytes, 4);
        assert_eq!(snap.text(), format!("abcd{}ijk", marker(4)));
        assert_eq!(b.unsent_tail().0, 4);
    }

    #[test]
    fn nothing_dropped_means_no_marker() {
        let mut b = Buffer::new(Bound::HeadAndTail { head: 2, tail: 5 });
        b.push(Stream::Stdout, "abc".into());
        b.push(Stream::Stderr, "de".into());
        let snap = b.snapshot(None);
        assert!(!snap.truncated());
        assert_eq!(snap.text(), "abcde");
        assert_eq!(
            b.unsent_tail().1,
            vec![
                Piece {
                    stream: Stream::Stdout,
                    text: "c".into()
                },
                Piece {
                    stream: Stream::Stderr,
                    text: "de".into()
                }
            ]
        );
    }

    #[test]
    fn tail_only_keeps_the_end_and_streams_everything() {
        let mut b = Buffer::new(Bound::Tail { limit: 5 });
        let live: Vec<_> = ["hello ", "wor", "ld"]
            .into_iter()
            .filter_map(|t| b.push(Stream::Stdout, t.into()))
            .collect();
        assert_eq!(live.len(), 3);
        let snap = b.snapshot(None);
        assert!(snap.head.is_empty());
        assert_eq!(snap.text(), "world");
        assert_eq!(snap.dropped_bytes, 6);
        assert_eq!(b.unsent_tail(), (0, Vec::new()));
    }

    #[test]
    fn cuts_never_split_a_character() {
        let mut b = Buffer::new(Bound::HeadAndTail { head: 4, tail: 4 });
        // "aé" is 3 bytes, "€" 3 more: the head takes "aé", the euro goes to the tail.
        assert_eq!(b.push(Stream::Stdout, "aé€".into()).unwrap().text, "aé");
        b.push(Stream::Stdout, "xyé".into());
        let snap = b.snapshot(None);
        assert_eq!(snap.head[0].text, "aé");
        // Tail cap 4: "€xyé" is 7 bytes; dropping 3 from the front removes the euro whole.
        assert_eq!(snap.tail[0].text, "xyé");
        assert_eq!(snap.dropped_bytes, 3);
        let mut t = Buffer::new(Bound::Tail { limit: 2 });
        t.push(Stream::Stdout, "€".into());
        assert_eq!(t.snapshot(None).text(), "");
        assert_eq!(t.snapshot(None).dropped_bytes, 3);
    }
}
