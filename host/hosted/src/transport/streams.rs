//! The event streams of a server (`GET`): when the next may be opened
//! ([`Streams`]), and how their events are read — bounded per event,
//! redacted, answers' event ids remembered for a resumed `GET`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::{Sse, SseStream};
use warden_egress::CallSession;

use crate::tasks::TaskOnly;

/// A stream opened sooner than this after the one before counts as a
/// reopening of one that failed: the next waits longer.
const STEADY_STREAM: Duration = Duration::from_secs(10);
/// The first wait between two openings.
const FIRST_REOPEN_DELAY: Duration = Duration::from_secs(1);
/// The longest wait between two openings of the standalone stream.
const MAX_REOPEN_DELAY: Duration = Duration::from_secs(60);
/// Event ids of answers remembered, to tell a resumed answer's `GET`.
const ANSWER_IDS: usize = 64;
/// Longest event id remembered (a longer one is not known as an answer's).
const MAX_ANSWER_ID: usize = 256;

/// When a server's next event stream (`GET`) may be opened. rmcp reopens
/// a stream the server ended after the server's `retry:` (which may be 0),
/// with no growing backoff; this spacing is Warden's own, in two kinds:
///
/// - the standalone stream (where announcements come): at once, then one
///   opening a second after the last, twice as long after each opening
///   within [`STEADY_STREAM`] of the one before, up to [`MAX_REOPEN_DELAY`];
///   an opening after a longer while starts over;
/// - resumed answers (a `GET` with the `Last-Event-ID` of an event of a
///   `POST`'s answer, which rmcp sends when the answer's stream ended
///   before the answer): at most one a second, never longer, so a call
///   being answered is not held past its deadline by the other stream.
#[derive(Debug)]
pub(super) struct Streams {
    pub(super) standalone: Pacing,
    pub(super) resumed: Pacing,
    /// Event ids lately seen in answers, oldest first.
    pub(super) answer_ids: VecDeque<String>,
}

impl Default for Streams {
    fn default() -> Self {
        Self {
            standalone: Pacing::new(MAX_REOPEN_DELAY),
            resumed: Pacing::new(FIRST_REOPEN_DELAY),
            answer_ids: VecDeque::new(),
        }
    }
}

impl Streams {
    /// Remember `id` as an event id of an answer.
    pub(super) fn answer_id(&mut self, id: &str) {
        if id.len() > MAX_ANSWER_ID || self.answer_ids.iter().any(|known| known == id) {
            return;
        }
        if self.answer_ids.len() == ANSWER_IDS {
            self.answer_ids.pop_front();
        }
        self.answer_ids.push_back(id.to_owned());
    }

    /// Whether a `GET` resuming after `last_event_id` resumes an answer.
    pub(super) fn resumes_answer(&self, last_event_id: Option<&str>) -> bool {
        last_event_id.is_some_and(|id| self.answer_ids.iter().any(|known| known == id))
    }
}

/// The spacing of one kind of stream: see [`Streams`].
#[derive(Debug)]
pub(super) struct Pacing {
    /// When the last stream was (or will be) opened.
    pub(super) opened: Option<Instant>,
    /// The last wait imposed.
    pub(super) delay: Duration,
    /// The longest wait.
    pub(super) max_delay: Duration,
}

impl Pacing {
    pub(super) fn new(max_delay: Duration) -> Self {
        Self {
            opened: None,
            delay: Duration::ZERO,
            max_delay,
        }
    }

    /// How long to wait before opening a stream asked for at `now`; the
    /// opening is booked at `now` plus that wait.
    pub(super) fn reserve(&mut self, now: Instant) -> Duration {
        let wait = match self.opened {
            Some(opened) if now.saturating_duration_since(opened) < STEADY_STREAM => {
                self.delay = (self.delay * 2).clamp(FIRST_REOPEN_DELAY, self.max_delay);
                (opened + self.delay).saturating_duration_since(now)
            }
            _ => {
                self.delay = Duration::ZERO;
                Duration::ZERO
            }
        };
        self.opened = Some(now + wait);
        wait
    }
}

pub(super) fn media_type_is(value: Option<&str>, expected: &str) -> bool {
    value.is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(expected))
    })
}

/// The chunks of an event stream's body, ended with an error when more
/// than `limit` bytes arrive without an event boundary.
fn bounded_events(
    body: warden_egress::StreamBody,
    limit: usize,
    deadline: Option<tokio::time::Instant>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    futures::stream::unfold(Some((body, Pending::default())), move |state| async move {
        let (mut body, mut pending) = state?;
        let next = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, body.next_chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    let error = std::io::Error::other("the event stream did not end in time");
                    return Some((Err(error), None));
                }
            },
            None => body.next_chunk().await,
        };
        match next? {
            Err(error) => Some((Err(std::io::Error::other(error.to_string())), None)),
            Ok(chunk) => {
                if pending.feed(&chunk) > limit {
                    let error = std::io::Error::other("an event of the stream is too large");
                    return Some((Err(error), None));
                }
                Some((Ok(chunk), Some((body, pending))))
            }
        }
    })
}

/// Bytes of an event stream received since the last event boundary (a
/// blank line: `\n\n`, `\r\r` or `\r\n\r\n`, also split across chunks).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Pending {
    pub(super) bytes: usize,
    /// The last line-break bytes seen, newest last (0: none).
    pub(super) tail: [u8; 3],
}

impl Pending {
    /// Count `chunk`; the bytes now pending.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> usize {
        let mut rest = chunk;
        loop {
            let line_break = memchr::memchr2(b'\n', b'\r', rest);
            let plain = line_break.unwrap_or(rest.len());
            if plain > 0 {
                self.bytes += plain;
                self.tail = [0; 3];
            }
            let Some(at) = line_break else {
                return self.bytes;
            };
            self.line_break(rest[at]);
            rest = &rest[at + 1..];
        }
    }

    /// Count a line-break byte.
    pub(super) fn line_break(&mut self, byte: u8) {
        self.bytes += 1;
        let [_, b, c] = self.tail;
        let ends = match (b, c, byte) {
            (_, b'\n', b'\n') | (_, b'\r', b'\r') => true,
            (b'\n', b'\r', b'\n') => self.tail[0] == b'\r',
            _ => false,
        };
        if ends {
            self.bytes = 0;
            self.tail = [0; 3];
        } else {
            self.tail = [self.tail[1], c, byte];
        }
    }
}

/// The events of a streaming body as rmcp reads them, as they arrive:
/// each bounded to `limit` bytes, its text fields redacted by `session`,
/// the stream ended at `deadline` when given; the ids of events that
/// answer requests remembered in `answers`.
pub(super) fn redacted_events(
    body: warden_egress::StreamBody,
    session: CallSession,
    limit: usize,
    deadline: Option<tokio::time::Instant>,
    answers: Option<Arc<Mutex<Streams>>>,
    tasks: Option<Arc<TaskOnly>>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let chunks = bounded_events(body, limit, deadline);
    SseStream::from_bytes_stream(chunks)
        .map(move |event| {
            let event = event.map(|mut sse| {
                // Every text field: `id` goes back to the server as
                // Last-Event-ID, `event` and `data` into the MCP client.
                for field in [&mut sse.data, &mut sse.id, &mut sse.event] {
                    *field = field
                        .take()
                        .map(|text| session.redactor().redact_string(text));
                }
                sse
            });
            if let Some(answers) = &answers {
                remember_answer_id(answers, &event);
            }
            if let (
                Some(tasks),
                Ok(Sse {
                    data: Some(data), ..
                }),
            ) = (&tasks, &event)
            {
                tasks.observe(data);
            }
            event
        })
        .boxed()
}

fn remember_answer_id(streams: &Mutex<Streams>, event: &Result<Sse, SseError>) {
    if let Ok(Sse { id: Some(id), .. }) = event {
        streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answer_id(id);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{MAX_REOPEN_DELAY, Pending, STEADY_STREAM, Streams};

    #[test]
    fn streams_that_end_early_are_reopened_ever_later_and_a_steady_one_resets() {
        let mut pacing = Streams::default().standalone;
        let start = Instant::now();
        assert_eq!(pacing.reserve(start), Duration::ZERO);
        // Each stream ends as soon as it opens: 1 s, 2 s, 4 s, ... up to the cap.
        let mut now = start;
        let mut waits = Vec::new();
        for _ in 0..10 {
            let wait = pacing.reserve(now);
            waits.push(wait.as_secs());
            now += wait;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        assert_eq!(pacing.delay, MAX_REOPEN_DELAY);
        // Two asked for at once: the second is booked after the first.
        let mut pacing = Streams::default().standalone;
        assert_eq!(pacing.reserve(start), Duration::ZERO);
        assert_eq!(pacing.reserve(start), Duration::from_secs(1));
        assert_eq!(pacing.reserve(start), Duration::from_secs(3));
        // A stream that lasted: the next opens at once, the spacing starts over.
        let later = start + Duration::from_secs(3) + STEADY_STREAM;
        assert_eq!(pacing.reserve(later), Duration::ZERO);
        assert_eq!(pacing.reserve(later), Duration::from_secs(1));
    }

    #[test]
    fn resumed_answers_are_spaced_a_second_apart_and_told_by_their_ids() {
        let mut streams = Streams::default();
        let start = Instant::now();
        let mut now = start;
        let mut waits = Vec::new();
        for _ in 0..5 {
            let wait = streams.resumed.reserve(now);
            waits.push(wait.as_secs());
            now += wait;
        }
        assert_eq!(waits, [0, 1, 1, 1, 1]);
        // Only an id seen in an answer makes a resumption; ids are bounded.
        assert!(!streams.resumes_answer(Some("7")));
        assert!(!streams.resumes_answer(None));
        streams.answer_id("7");
        assert!(streams.resumes_answer(Some("7")));
        for i in 0..super::ANSWER_IDS {
            streams.answer_id(&format!("other-{i}"));
        }
        assert!(!streams.resumes_answer(Some("7")));
        streams.answer_id(&"x".repeat(super::MAX_ANSWER_ID + 1));
        assert!(!streams.resumes_answer(Some(&"x".repeat(super::MAX_ANSWER_ID + 1))));
    }

    #[test]
    fn event_boundaries_reset_the_count_in_every_form_and_across_chunks() {
        for boundary in ["\n\n", "\r\r", "\r\n\r\n"] {
            let mut pending = Pending::default();
            let text = format!("data: one{boundary}data: two");
            assert_eq!(
                pending.feed(text.as_bytes()),
                "data: two".len(),
                "{boundary:?}"
            );
            // Split in the middle of the boundary.
            let mut pending = Pending::default();
            let (first, second) = text.split_at("data: one".len() + 1);
            pending.feed(first.as_bytes());
            assert_eq!(
                pending.feed(second.as_bytes()),
                "data: two".len(),
                "{boundary:?}"
            );
        }
        // A single line break is no boundary: the count goes on.
        let mut pending = Pending::default();
        assert_eq!(pending.feed(b"data: a\ndata: b"), 15);
        assert_eq!(pending.feed(b"\r\ndata"), 21);
    }
}
