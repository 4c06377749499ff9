//! The newline-delimited JSON-RPC transport of [`crate::serve_io`]: rmcp's
//! stdio framing, plus an answer for a message over the limits of
//! [`crate::guard`] instead of silently dropping it.
//!
//! rmcp writes every answer on a task of its own. A client that sends
//! requests and stops reading would have them pile up without end; once
//! [`MAX_WAITING_ANSWERS`] wait to be written, no more requests are read
//! until the client reads again (and its own writes then block in turn). A
//! client that writes all its requests before reading any answer is served
//! as far as the pipes hold (as with any program on a pipe): the answers
//! fill the output pipe before any of them waits.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::{
    RoleServer,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::error::Category;
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::{Mutex, Notify},
};

use crate::guard::{self, MAX_DEPTH, MAX_MESSAGE_BYTES, Refusal};

/// Bytes read from the stream at most at once.
const READ_BUFFER: usize = 8 << 10;

/// Messages waiting to be written past which no more requests are read.
const MAX_WAITING_ANSWERS: usize = 64;

/// The messages waiting to be written.
#[derive(Debug, Default)]
struct Backlog {
    waiting: AtomicUsize,
    /// Notified as each one is written (or given up).
    written: Notify,
}

impl Backlog {
    /// One more message waits, until the ticket is dropped.
    fn ticket(self: &Arc<Self>) -> Ticket {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        Ticket(Arc::clone(self))
    }

    /// Wait while `MAX_WAITING_ANSWERS` messages wait to be written.
    async fn room(&self) {
        while self.waiting.load(Ordering::Relaxed) >= MAX_WAITING_ANSWERS {
            // A message written after the check leaves a permit: no wake-up
            // is lost.
            self.written.notified().await;
        }
    }
}

/// A message waiting to be written, counted in its [`Backlog`].
struct Ticket(Arc<Backlog>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
        self.0.written.notify_one();
    }
}

/// One connection over a `(reader, writer)` pair of byte streams.
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read. `receive` is polled inside a `select!` and may be
    /// cancelled between reads, so a partial line lives here, not on a stack.
    line: Vec<u8>,
    /// Dropping the rest of a line already refused as too large.
    discarding: bool,
    /// The CPU was given up for the line being read ([`Self::yield_to_writer`]).
    yielded: bool,
    /// The last read from the stream filled less than the buffer: the
    /// writer had no more to give then.
    read_short: bool,
    /// Times the CPU was given up.
    #[cfg(test)]
    yields: usize,
    write: Arc<Mutex<Option<W>>>,
    backlog: Arc<Backlog>,
}

/// How one bounded read ended.
enum Read {
    /// A whole line is in `line`.
    Line,
    /// A line passed the size limit; `line` holds its first bytes.
    TooLarge,
    /// The peer closed the stream (or it failed).
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::with_capacity(READ_BUFFER, read),
            line: Vec::new(),
            discarding: false,
            yielded: false,
            read_short: false,
            #[cfg(test)]
            yields: 0,
            write: Arc::new(Mutex::new(Some(write))),
            backlog: Arc::default(),
        }
    }

    /// Read into `line` up to a newline, never letting it pass
    /// [`MAX_MESSAGE_BYTES`]. Each buffer is copied and consumed with no
    /// await in between, so cancelling keeps the partial line.
    async fn read_line(&mut self) -> Read {
        loop {
            let (taken, ended, too_large) = {
                // Bytes left from the last read are handed out without a read.
                let fresh = self.read.buffer().is_empty();
                let available = match self.read.fill_buf().await {
                    Ok([]) => return Read::End,
                    Ok(available) => available,
                    Err(error) => {
                        tracing::warn!(%error, "reading an MCP message failed");
                        return Read::End;
                    }
                };
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |at| at + 1);
                let mut too_large = false;
                if !self.discarding {
                    let room = MAX_MESSAGE_BYTES.saturating_sub(self.line.len());
                    too_large = take > room;
                    self.line.extend_from_slice(&available[..take.min(room)]);
                }
                if fresh {
                    self.read_short = available.len() < READ_BUFFER;
                }
                (take, newline.is_some(), too_large)
            };
            self.read.consume(taken);
            if ended {
                self.yielded = false;
            } else if self.read_short && !self.yielded {
                self.yield_to_writer();
            }
            if too_large {
                self.discarding = !ended;
                return Read::TooLarge;
            }
            if ended && !std::mem::take(&mut self.discarding) {
                return Read::Line;
            }
        }
    }

    /// Give up this thread's CPU once for the line being read, when its
    /// bytes so far came from a short read (one that found the pipe empty
    /// before the buffer was full) and no newline.
    ///
    /// A client that writes a message in pieces (one `write(2)` per JSON
    /// token, as a `writeln!` of a `serde_json::Value` into an unbuffered
    /// pipe does) wakes the server for each piece. Where the two share a
    /// CPU, each wake-up preempts the writer and costs the server an
    /// event-loop round for a few bytes (docs/benchmarks/mcp-server.md, "A client's
    /// pieces"). `sched_yield` puts this thread behind the threads runnable
    /// on its CPU, the preempted writer among them, so the writer usually
    /// finishes the message first and the rest arrives in one read.
    ///
    /// The cost: about 0.5 µs where nothing else wants the CPU (a writer on
    /// another CPU gains nothing from it). Where another busy thread shares
    /// the CPU (a call on the long-call lane, another process), this thread,
    /// and with it every task of the serving runtime, waits behind it for up
    /// to a scheduler slice, a few milliseconds: once per line at most,
    /// never per piece. Later pieces of the line are waited for in the event
    /// loop as before.
    fn yield_to_writer(&mut self) {
        self.yielded = true;
        #[cfg(test)]
        {
            self.yields += 1;
        }
        std::thread::yield_now();
    }

    /// Answer a refused message, if its id can be found, on a task of its
    /// own: a cancelled `receive` must not cut a response in half.
    fn answer(&self, refusal: Refusal) {
        let Some(mut response) = guard::error_response(&self.line, refusal) else {
            tracing::debug!(?refusal, "dropped an MCP message without a recoverable id");
            return;
        };
        tracing::warn!(?refusal, "answered an unparsable MCP message with an error");
        response.push(b'\n');
        let write = Arc::clone(&self.write);
        let ticket = self.backlog.ticket();
        tokio::spawn(async move {
            let _ticket = ticket;
            write_line(&write, &response).await
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<W>>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut write = write.lock().await;
    let Some(write) = write.as_mut() else {
        return Err(std::io::ErrorKind::NotConnected.into());
    };
    write.write_all(line).await?;
    write.flush().await
}

/// The line without its `\n`, a `\r` before it, and a UTF-8 byte order mark.
pub(crate) fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        let ticket = self.backlog.ticket();
        async move {
            let _ticket = ticket;
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            write_line(&write, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.backlog.room().await;
            match self.read_line().await {
                Read::End => return None,
                Read::TooLarge => {
                    self.answer(Refusal::TooLarge);
                    self.line.clear();
                    continue;
                }
                Read::Line => {}
            }
            let parsed = {
                let line = trimmed(&self.line);
                if line.is_empty() {
                    None
                } else {
                    Some(crate::parse::message(line))
                }
            };
            match parsed {
                None => {}
                Some(Ok(message)) => {
                    self.line.clear();
                    return Some(message);
                }
                Some(Err(error)) => {
                    let unparsable = matches!(error.classify(), Category::Syntax | Category::Eof);
                    if unparsable || guard::too_deep(&self.line, MAX_DEPTH) {
                        self.answer(Refusal::Unparsable);
                    } else {
                        // Well-formed JSON of the wrong shape (rmcp's own
                        // transport answers it too), with the id when there is one.
                        self.answer(Refusal::NotARequest);
                    }
                }
            }
            self.line.clear();
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use tokio::io::{AsyncRead, ReadBuf};

    use super::*;

    /// A stream that delivers its pieces in order, each over as many reads
    /// as the reader's buffer needs but never two in one read, then ends.
    struct Pieces(VecDeque<Vec<u8>>);

    impl Pieces {
        fn of(pieces: &[&[u8]]) -> Pieces {
            Pieces(pieces.iter().map(|piece| piece.to_vec()).collect())
        }
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(piece) = self.0.front_mut() {
                let n = piece.len().min(buf.remaining());
                buf.put_slice(&piece[..n]);
                piece.drain(..n);
                if piece.is_empty() {
                    self.0.pop_front();
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    fn id_of(message: RxJsonRpcMessage<RoleServer>) -> serde_json::Value {
        serde_json::to_value(message).expect("serializes")["id"].clone()
    }

    #[tokio::test]
    async fn a_line_in_pieces_yields_once() {
        let pieces = Pieces::of(&[
            br#"{"jsonrpc":"2.0","#,
            br#""id":1,"method""#,
            br#":"ping"}"#,
            b"\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
            br#"{"jsonrpc":"2.0","id":3,"#,
            b"\"method\":\"ping\"}\n",
        ]);
        let mut transport = LineTransport::new(pieces, tokio::io::sink());

        let first = transport.receive().await.expect("first message");
        assert_eq!(id_of(first), 1);
        assert_eq!(transport.yields, 1, "once for the line, not once per piece");

        let second = transport.receive().await.expect("second message");
        assert_eq!(id_of(second), 2);
        assert_eq!(transport.yields, 1, "a whole line gives nothing up");

        let third = transport.receive().await.expect("third message");
        assert_eq!(id_of(third), 3);
        assert_eq!(transport.yields, 2, "a new line in pieces yields again");

        assert!(transport.receive().await.is_none(), "the stream ended");
    }

    #[tokio::test]
    async fn a_line_refused_as_too_large_leaves_the_next_line_its_yield() {
        // The refused line: a short first piece (one yield), then a piece
        // whose last read both passes the limit and ends the line.
        let head = br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":""#;
        let tail = br#""}}"#;
        let mut body = vec![b'a'; MAX_MESSAGE_BYTES + 1 - head.len() - tail.len()];
        body.extend_from_slice(tail);
        body.push(b'\n');
        let last_read = body.len() % READ_BUFFER;
        assert!(
            last_read > 1 && head.len() + body.len() - last_read <= MAX_MESSAGE_BYTES,
            "the last read is a short one that passes the limit"
        );
        let pieces = Pieces::of(&[
            head,
            &body,
            br#"{"jsonrpc":"2.0","id":8,"#,
            b"\"method\":\"ping\"}\n",
        ]);
        let mut transport = LineTransport::new(pieces, tokio::io::sink());

        let next = transport
            .receive()
            .await
            .expect("the line after the refused one");
        assert_eq!(id_of(next), 8);
        assert_eq!(transport.yields, 2, "one for each line that came in pieces");
    }

    #[tokio::test]
    async fn a_long_line_after_a_short_one_in_one_write_gives_nothing_up() {
        let mut lines = b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}\n".to_vec();
        lines.extend_from_slice(br#"{"jsonrpc":"2.0","id":11,"method":"ping","params":{"x":""#);
        lines.extend(std::iter::repeat_n(b'a', 100 << 10));
        lines.extend_from_slice(b"\"}}\n");
        let mut transport = LineTransport::new(Pieces::of(&[&lines]), tokio::io::sink());

        let short = transport.receive().await.expect("the short line");
        assert_eq!(id_of(short), 10);
        let long = transport.receive().await.expect("the long line");
        assert_eq!(id_of(long), 11);
        assert_eq!(
            transport.yields, 0,
            "what is left of a full read is not a writer mid-line"
        );
    }

    #[tokio::test]
    async fn a_long_line_written_at_once_gives_nothing_up() {
        let mut line = br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":""#.to_vec();
        line.extend(std::iter::repeat_n(b'a', 100 << 10));
        line.extend_from_slice(b"\"}}\n");
        let mut transport = LineTransport::new(Pieces::of(&[&line]), tokio::io::sink());

        let message = transport.receive().await.expect("the long line");
        assert_eq!(id_of(message), 9);
        assert_eq!(transport.yields, 0, "full reads are not a writer mid-line");
    }

    // rmcp writes each answer on a task of its own: with a client that
    // stopped reading they piled up without end while requests were read.
    #[tokio::test]
    async fn no_request_is_read_while_too_many_answers_wait_to_be_written() {
        // The client's end of its input, left unread for now.
        let (to_client, mut client) = tokio::io::duplex(1);
        let pieces = Pieces::of(&[b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n"]);
        let mut transport = LineTransport::new(pieces, to_client);
        let answer: TxJsonRpcMessage<RoleServer> =
            serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
                .expect("an empty result");
        let writes: Vec<_> = (0..MAX_WAITING_ANSWERS)
            .map(|_| tokio::spawn(transport.send(answer.clone())))
            .collect();
        let held = tokio::time::timeout(Duration::from_millis(200), transport.receive()).await;
        assert!(held.is_err(), "a request was read with the answers stuck");
        // The client reads again.
        tokio::spawn(async move { tokio::io::copy(&mut client, &mut tokio::io::sink()).await });
        for write in writes {
            write.await.unwrap().unwrap();
        }
        let next = transport
            .receive()
            .await
            .expect("read once they are written");
        assert_eq!(id_of(next), 5);
    }
}
