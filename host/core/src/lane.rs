//! What every lane reports about a call, whatever runs it: the resources
//! it used ([`Usage`]; a field a lane does not measure stays 0), the log
//! entries it kept ([`LogEntry`]), while it runs its [`Progress`], and
//! what its tool's server may ask the caller's client ([`Relay`]). The
//! WASM runtime fills every usage field; the hosted and first-party lanes
//! the ones they measure.

use std::sync::Arc;
use std::time::Duration;

/// One report of how far a running call has come (MCP's
/// `notifications/progress`): already redacted and bounded by the lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far; grows with each report.
    pub progress: f64,
    /// Out of how much, when known.
    pub total: Option<f64>,
    /// What it is doing, one line.
    pub message: Option<String>,
}

/// Where what a running call reports goes, as it happens: its
/// [`Progress`] ([`ProgressSink`]) or its log entries ([`LogSink`]), e.g.
/// to an MCP client. Called from the lane's tasks: it must not block.
pub struct Sink<T>(Arc<dyn Fn(T) + Send + Sync>);

/// Where a call's progress reports go (an MCP client's `progressToken`).
pub type ProgressSink = Sink<Progress>;

/// Where a call's log entries go while it runs (an MCP client that set a
/// level with `logging/setLevel`).
pub type LogSink = Sink<LogEntry>;

impl<T> Sink<T> {
    /// A sink that hands each report to `report`.
    pub fn new(report: impl Fn(T) + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    /// Pass `item` on.
    pub fn report(&self, item: T) {
        (self.0)(item);
    }
}

impl<T> Clone for Sink<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> std::fmt::Debug for Sink<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

/// Resources one call consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Fuel consumed by the guest.
    pub fuel_consumed: u64,
    /// Peak bytes of linear memory plus tables of the instance (each table
    /// element charged `warden_runtime::TABLE_ELEMENT_BYTES`).
    pub peak_memory_bytes: u64,
    /// Time from the call's start (after queuing) to its end.
    pub wall_time: Duration,
    /// Time spent waiting for an execution slot and the call's share of the
    /// host-wide memory budget.
    pub queue_time: Duration,
    /// HTTP requests the guest asked to send (including refused ones).
    pub http_requests: u32,
    /// Bytes of request bodies, URLs and headers handed to the network.
    pub http_bytes_sent: u64,
    /// Bytes of response bodies and headers handed back to the guest.
    pub http_bytes_received: u64,
    /// Log entries dropped past the per-call cap.
    pub log_entries_dropped: u32,
}

/// Severity of a guest log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Very detailed.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal information.
    Info,
    /// Something unexpected.
    Warn,
    /// A failure.
    Error,
}

/// One guest log entry, redacted and bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Severity.
    pub level: LogLevel,
    /// The message (secrets redacted, at most the per-entry byte cap).
    pub message: String,
    /// Whether the message was cut to the per-entry cap.
    pub truncated: bool,
}

/// Why a request relayed to the caller's client got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The caller's client cannot be asked this (it declared no such
    /// capability, or there is no client to ask): the tool's server should
    /// fall back.
    #[error("the caller's client does not support this request")]
    Unsupported,
    /// The client was asked and failed to answer.
    #[error("the caller's client did not answer: {0}")]
    Failed(String),
}

/// What the caller's client can be asked on a running call's behalf: a
/// hosted server's MCP elicitation and sampling requests, relayed within
/// the call that caused them. Parameters and results are JSON as MCP
/// writes them (`elicitation/create`, `sampling/createMessage`); the
/// implementation checks what its client declared.
pub trait Relay: Send + Sync + std::fmt::Debug {
    /// Ask the client's user (an `elicitation/create` request's params);
    /// the client's result.
    fn elicit(
        &self,
        params: serde_json::Value,
    ) -> crate::net::BoxFuture<'_, Result<serde_json::Value, RelayError>>;

    /// Ask the client's model (a `sampling/createMessage` request's
    /// params); the client's result.
    fn sample(
        &self,
        params: serde_json::Value,
    ) -> crate::net::BoxFuture<'_, Result<serde_json::Value, RelayError>>;
}
