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
            if too_large {
                self.discarding = !ended;
                return Read::TooLarge;
            }
            if ended {
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
