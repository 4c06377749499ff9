//! What a call returns: output or a typed error, plus usage and logs, always.

use warden_core::ErrorCode;

use crate::error::RuntimeError;

/// The result of one call. Usage and logs are reported whether it succeeded or not.
#[derive(Debug)]
pub struct CallOutcome {
    /// The output JSON (already validated) or why there is none. `null`
    /// when a `warden:tool@0.2.0` tool returned content only.
    pub result: Result<serde_json::Value, RuntimeError>,
    /// The content blocks the tool returned beside its output (0.2.0
    /// tools; redacted, scanned, bounded), in order.
    pub content: Vec<warden_core::content::ContentBlock>,
    /// What the call consumed.
    pub usage: Usage,
    /// Guest log entries kept for this call (redacted, bounded).
    pub logs: Vec<LogEntry>,
}

impl CallOutcome {
    pub(crate) fn refused(error: RuntimeError, usage: Usage) -> CallOutcome {
        CallOutcome {
            result: Err(error),
            content: Vec::new(),
            usage,
            logs: Vec::new(),
        }
    }
}

pub use warden_core::lane::{LogEntry, LogLevel, Usage};

/// The closed set of failure kinds a tool reports (the WIT `failure-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The input is unacceptable.
    Input,
    /// A credential is missing, expired or lacks scopes.
    AuthRequired,
    /// The host refused the tool's network request.
    NetworkDenied,
    /// The result would exceed what the tool may return.
    OutputTooLarge,
    /// The provider rejected the request.
    Client,
    /// The operation failed upstream.
    OperationFailed,
    /// The tool itself is broken.
    Executor,
}

impl FailureKind {
    /// The contract's word for the kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureKind::Input => "input",
            FailureKind::AuthRequired => "auth-required",
            FailureKind::NetworkDenied => "network-denied",
            FailureKind::OutputTooLarge => "output-too-large",
            FailureKind::Client => "client",
            FailureKind::OperationFailed => "operation-failed",
            FailureKind::Executor => "executor",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a guest trapped (other than by a limit).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrapKind {
    /// The guest panicked (Rust guests abort through `unreachable` after logging it).
    Panic,
    /// The guest executed `unreachable`.
    Unreachable,
    /// The guest exhausted its wasm stack.
    StackOverflow,
    /// Any other trap; the text names it (no guest data).
    Other(String),
}

impl TrapKind {
    /// Stable code of this trap kind.
    pub fn code(&self) -> ErrorCode {
        match self {
            TrapKind::Panic => ErrorCode::GuestPanic,
            TrapKind::Unreachable => ErrorCode::GuestUnreachable,
            TrapKind::StackOverflow => ErrorCode::GuestStackOverflow,
            TrapKind::Other(_) => ErrorCode::GuestTrap,
        }
    }
}

impl std::fmt::Display for TrapKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrapKind::Panic => f.write_str("panicked"),
            TrapKind::Unreachable => f.write_str("reached unreachable code"),
            TrapKind::StackOverflow => f.write_str("overflowed its stack"),
            TrapKind::Other(what) => write!(f, "trapped ({what})"),
        }
    }
}

pub use warden_core::schema::InputError;

/// Why the runtime is not serving a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unavailable {
    /// No execution slot became free within the queue timeout.
    Overloaded,
    /// The call's memory did not fit in the host-wide memory budget beside
    /// the running calls within the queue timeout.
    MemoryBudget,
    /// The runtime is shutting down.
    ShuttingDown,
    /// The instance could not be created (e.g. the pool is exhausted).
    Resources,
    /// The host could not prepare the call's network service (for embedders:
    /// log the cause, return this).
    NetworkSetup,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unavailable::Overloaded => "too many calls are running; retry later",
            Unavailable::MemoryBudget => "running calls hold the host's memory budget; retry later",
            Unavailable::ShuttingDown => "the host is shutting down",
            Unavailable::Resources => "the host could not allocate an instance; retry later",
            Unavailable::NetworkSetup => "the host could not prepare network access for this call",
        })
    }
}
