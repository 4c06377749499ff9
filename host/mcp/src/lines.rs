//! The newline-delimited JSON-RPC transport of [`crate::serve_io`]: rmcp's
//! stdio framing, plus an answer for a message over the limits of
//! [`crate::guard`] instead of silently dropping it.

use std::sync::Arc;

use rmcp::{
    RoleServer,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::error::Category;
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::Mutex,
};

use crate::guard::{self, MAX_DEPTH, MAX_MESSAGE_BYTES, Refusal};

/// One connection over a `(reader, writer)` pair of byte streams.
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read. `receive` is polled inside a `select!` and may be
    /// cancelled between reads, so a partial line lives here, not on a stack.
    line: Vec<u8>,
    /// Dropping the rest of a line already refused as too large.
    discarding: bool,
    /// The CPU was given up once for the line being read (see [`Self::read_line`]).
    yielded: bool,
    write: Arc<Mutex<Option<W>>>,
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
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            yielded: false,
            write: Arc::new(Mutex::new(Some(write))),
        }
    }

    /// Read into `line` up to a newline, never letting it pass
    /// [`MAX_MESSAGE_BYTES`]. Each buffer is copied and consumed with no
    /// await in between, so cancelling keeps the partial line.
    async fn read_line(&mut self) -> Read {
        loop {
            let (taken, ended, too_large) = {
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
                (take, newline.is_some(), too_large)
            };
            self.read.consume(taken);
            if !ended && !std::mem::replace(&mut self.yielded, true) {
                yield_to_writer();
            }
            if too_large {
                self.discarding = !ended;
                return Read::TooLarge;
            }
            if ended {
                self.yielded = false;
                let was_discarding = std::mem::take(&mut self.discarding);
                if !was_discarding {
                    return Read::Line;
                }
            }
        }
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
        tokio::spawn(async move { write_line(&write, &response).await });
    }
}

/// Give this thread's CPU to a runnable writer once, when a read ended in
/// the middle of a line.
///
/// A client that writes a message in pieces (one `write(2)` per JSON token,
/// as a `writeln!` into an unbuffered pipe does) wakes the server for each
/// piece; where the two share a CPU, each wake-up preempts the writer and
/// costs the server a full poll round for a few bytes: 3.9 reads and 4.9
/// context switches per call instead of one (BENCHMARKS.md, "A client's
/// pieces"). Yielding once per line lets the writer finish the message
/// first, so the rest arrives in one read. Where no other thread wants this
/// CPU, `sched_yield` returns at once. It is not repeated for further pieces
/// of the same line: a writer that pauses mid-line is waited for in the
/// event loop as before.
fn yield_to_writer() {
    #[cfg(test)]
    tests::YIELDS.with(|count| count.set(count.get() + 1));
    std::thread::yield_now();
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
fn trimmed(line: &[u8]) -> &[u8] {
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
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            write_line(&write, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
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
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, ReadBuf};

    use super::*;

    thread_local! {
        /// Times this thread gave up its CPU to a writer.
        pub(super) static YIELDS: Cell<usize> = const { Cell::new(0) };
    }

    /// A stream that delivers its pieces one read at a time, then ends.
    struct Pieces(VecDeque<&'static [u8]>);

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if let Some(piece) = self.0.pop_front() {
                buf.put_slice(piece);
            }
            Poll::Ready(Ok(()))
        }
    }

    fn id_of(message: RxJsonRpcMessage<RoleServer>) -> serde_json::Value {
        serde_json::to_value(message).expect("serializes")["id"].clone()
    }

    #[tokio::test]
    async fn a_line_in_pieces_is_read_whole_after_one_yield() {
        let pieces = Pieces(VecDeque::from([
            &br#"{"jsonrpc":"2.0","#[..],
            br#""id":1,"method""#,
            br#":"ping"}"#,
            b"\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
            br#"{"jsonrpc":"2.0","id":3,"#,
            b"\"method\":\"ping\"}\n",
        ]));
        let mut transport = LineTransport::new(pieces, tokio::io::sink());
        YIELDS.with(|count| count.set(0));
        let yields = || YIELDS.with(Cell::get);

        let first = transport.receive().await.expect("first message");
        assert_eq!(id_of(first), 1);
        assert_eq!(yields(), 1, "once for the line, not once per piece");

        let second = transport.receive().await.expect("second message");
        assert_eq!(id_of(second), 2);
        assert_eq!(yields(), 1, "a whole line gives nothing up");

        let third = transport.receive().await.expect("third message");
        assert_eq!(id_of(third), 3);
        assert_eq!(yields(), 2, "a new line in pieces yields again");

        assert!(transport.receive().await.is_none(), "the stream ended");
    }
}
