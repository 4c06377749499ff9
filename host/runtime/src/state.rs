//! The data of one call's `Store`: limits, counters, logs, resources, network.

use std::sync::Arc;
use std::time::Instant;

use warden_core::net::{AuthNeeded, CallNetwork};
use wasmtime::component::ResourceTable;

use crate::config::Limits;
use crate::limits::MemoryLimiter;
use crate::outcome::LogEntry;

/// Per-call state; dropped with the store when the call ends.
pub(crate) struct CallState {
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) network: Arc<dyn CallNetwork>,
    pub(crate) limits: Limits,
    pub(crate) deadline: Instant,
    pub(crate) call_id: String,
    pub(crate) capability_id: String,
    pub(crate) logs: LogSink,
    pub(crate) http: HttpCounters,
    /// Live credential handles (bounded).
    pub(crate) handles: u32,
    /// The last `not-configured` answer of `credential.acquire`.
    pub(crate) auth_needed: Option<AuthNeeded>,
    /// The last `denied` answer of `http.send`, already redacted.
    pub(crate) denied: Option<String>,
}

impl std::fmt::Debug for CallState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallState")
            .field("call_id", &self.call_id)
            .field("capability_id", &self.capability_id)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Kept log entries of a call and what was dropped.
#[derive(Debug, Default)]
pub(crate) struct LogSink {
    pub(crate) entries: Vec<LogEntry>,
    pub(crate) dropped: u32,
    /// The guest SDK's panic hook logged a panic (`panic: ...` at error level).
    pub(crate) panicked: bool,
}

/// HTTP usage of a call.
#[derive(Debug, Default)]
pub(crate) struct HttpCounters {
    pub(crate) requests: u32,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    /// A request was refused because the per-call cap was reached.
    pub(crate) limit_hit: bool,
}

impl CallState {
    pub(crate) fn new(
        network: Arc<dyn CallNetwork>,
        limits: Limits,
        deadline: Instant,
        call_id: String,
        capability_id: String,
    ) -> Self {
        CallState {
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(limits.memory_bytes),
            network,
            limits,
            deadline,
            call_id,
            capability_id,
            logs: LogSink::default(),
            http: HttpCounters::default(),
            handles: 0,
            auth_needed: None,
            denied: None,
        }
    }
}

/// Cut `text` to at most `max` bytes on a char boundary; whether it was cut.
pub(crate) fn truncate(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// Redact then bound `text`. Very long text is first cut far past `max`
/// (so a secret near the cut cannot survive into the kept prefix) to bound
/// the cost of redaction.
pub(crate) fn redact_bounded(network: &dyn CallNetwork, text: &str, max: usize) -> (String, bool) {
    let pre = max.saturating_mul(64).max(4096);
    let mut head = text.to_owned();
    let cut_early = truncate(&mut head, pre);
    let mut redacted = network.redact(&head);
    let cut = truncate(&mut redacted, max);
    (redacted, cut || cut_early)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_core::net::DenyAll;

    #[test]
    fn truncate_respects_char_boundaries() {
        let mut text = "héllo".to_owned();
        assert!(truncate(&mut text, 2));
        assert_eq!(text, "h");
        let mut short = "ok".to_owned();
        assert!(!truncate(&mut short, 10));
    }

    #[test]
    fn redact_bounded_cuts_after_redaction() {
        let (text, cut) = redact_bounded(&DenyAll, &"x".repeat(10_000), 100);
        assert_eq!(text.len(), 100);
        assert!(cut);
    }
}
