//! Guest stdout and stderr, captured (bounded) and turned into log entries.
//!
//! A [`LogPipe`] accepts every write so a chatty guest never traps on
//! output, keeps at most its capacity, and counts what it dropped. When the
//! call logs through the contract and when it ends, the complete lines are
//! handed to the call's log like `warden:tool/log` entries: bounded per
//! entry, counted against the entry cap, redacted.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes a guest may write per `check-write` permit.
const PERMIT: usize = 64 << 10;

/// What a pipe kept and how much it dropped.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    pub(crate) bytes: Vec<u8>,
    pub(crate) dropped: u64,
    /// How many of `bytes` are known to hold no newline: a guest that
    /// wrote a megabyte without one and then logged in a loop had the whole
    /// buffer searched again on every log call.
    scanned: usize,
}

impl Captured {
    /// Take the complete lines written so far (everything when `all`),
    /// leaving an unfinished line in the buffer.
    pub(crate) fn take_lines(&mut self, all: bool) -> Vec<String> {
        let end = if all {
            self.bytes.len()
        } else {
            let from = self.scanned.min(self.bytes.len());
            match self.bytes[from..].iter().rposition(|&b| b == b'\n') {
                Some(newline) => from + newline + 1,
                None => {
                    self.scanned = self.bytes.len();
                    return Vec::new();
                }
            }
        };
        let taken: Vec<u8> = self.bytes.drain(..end).collect();
        // What is left follows the last newline.
        self.scanned = self.bytes.len();
        String::from_utf8_lossy(&taken)
            .lines()
            .map(|line| line.strip_suffix('\r').unwrap_or(line).to_owned())
            .filter(|line| !line.trim().is_empty())
            .collect()
    }
}

/// A bounded in-memory stdout/stderr shared by every stream the guest opens.
#[derive(Debug, Clone)]
pub(crate) struct LogPipe {
    capacity: usize,
    captured: Arc<Mutex<Captured>>,
}

impl LogPipe {
    pub(crate) fn new(capacity: usize) -> LogPipe {
        LogPipe {
            capacity,
            captured: Arc::default(),
        }
    }

    /// Run `f` on what was captured.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Captured) -> R) -> R {
        f(&mut self.captured.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        // Only the WASI 0.2 (`p2_stream`) interfaces are linked.
        Box::new(tokio::io::sink())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogPipe {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl OutputStream for LogPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let capacity = self.capacity;
        self.with(|captured| {
            let room = capacity.saturating_sub(captured.bytes.len());
            let kept = bytes.len().min(room);
            captured.bytes.extend_from_slice(&bytes[..kept]);
            captured.dropped = captured.dropped.saturating_add((bytes.len() - kept) as u64);
        });
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(PERMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_past_capacity_are_dropped_and_counted() {
        let mut pipe = LogPipe::new(8);
        pipe.write(Bytes::from_static(b"hello\nworld\n")).unwrap();
        pipe.with(|c| {
            assert_eq!(c.bytes, b"hello\nwo");
            assert_eq!(c.dropped, 4);
        });
    }

    #[test]
    fn only_complete_lines_are_taken_until_the_end() {
        let pipe = LogPipe::new(1024);
        pipe.with(|c| c.bytes.extend_from_slice(b"one\r\n\ntwo\nthr"));
        assert_eq!(pipe.with(|c| c.take_lines(false)), ["one", "two"]);
        assert_eq!(pipe.with(|c| c.take_lines(false)), Vec::<String>::new());
        assert_eq!(pipe.with(|c| c.take_lines(true)), ["thr"]);
    }

    /// A line written in pieces, looked at between them: each piece is
    /// searched once, and the line is whole when its newline comes.
    #[test]
    fn a_line_written_in_pieces_is_searched_once_and_taken_whole() {
        let mut pipe = LogPipe::new(1024);
        pipe.write(Bytes::from_static(b"par")).unwrap();
        assert!(pipe.with(|c| c.take_lines(false)).is_empty());
        assert_eq!(pipe.with(|c| c.scanned), 3);
        pipe.write(Bytes::from_static(b"tial")).unwrap();
        assert!(pipe.with(|c| c.take_lines(false)).is_empty());
        assert_eq!(pipe.with(|c| c.scanned), 7);
        pipe.write(Bytes::from_static(b"\nnext")).unwrap();
        assert_eq!(pipe.with(|c| c.take_lines(false)), ["partial"]);
        assert_eq!(pipe.with(|c| (c.scanned, c.bytes.len())), (4, 4));
        pipe.write(Bytes::from_static(b" line\n")).unwrap();
        assert_eq!(pipe.with(|c| c.take_lines(false)), ["next line"]);
    }
}
