//! The data of one call's `Store`: limits, counters, logs, resources, network.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use warden_core::lane::ProgressSink;
use warden_core::net::{AuthNeeded, CallNetwork};
use wasmtime::component::ResourceTable;

use crate::config::Limits;
use crate::limits::MemoryLimiter;
use crate::outcome::{LogEntry, LogLevel};
use crate::wasi::WasiState;

/// Most bytes kept of each of a WASI guest's stdout and stderr per call.
const MAX_STDIO_CAPTURE_BYTES: usize = 1 << 20;

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
    /// WASI context and captured stdio, created on the first WASI call
    /// (never for a contract-only component).
    pub(crate) wasi: Option<Box<WasiState>>,
    /// The caller's cancellation, for a guest that can see it (0.2.0).
    pub(crate) cancel: Option<CancellationToken>,
    /// Where the guest's progress reports go, and how many went.
    pub(crate) progress: ProgressState,
}

/// The progress reports of a call (`warden:tool/call.report-progress`).
#[derive(Debug, Default)]
pub(crate) struct ProgressState {
    pub(crate) sink: Option<ProgressSink>,
    /// Reports passed on.
    pub(crate) sent: u32,
    /// The last report's `progress`: the next must be larger.
    pub(crate) last: Option<f64>,
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
            wasi: None,
            cancel: None,
            progress: ProgressState::default(),
        }
    }

    /// Whether the caller cancelled the call (and the guest may see it).
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Record `message` at `level` in the call's log: counted against the
    /// entry cap, redacted, bounded, and emitted through `tracing`.
    pub(crate) fn push_log(&mut self, level: LogLevel, message: &str) {
        if self.logs.entries.len() >= self.limits.max_log_entries as usize {
            self.logs.dropped = self.logs.dropped.saturating_add(1);
            return;
        }
        let (message, truncated) = redact_bounded(
            self.network.as_ref(),
            message,
            self.limits.max_log_entry_bytes as usize,
        );
        crate::host::log::emit(level, &self.call_id, &self.capability_id, &message);
        self.logs.entries.push(LogEntry {
            level,
            message,
            truncated,
        });
    }

    /// Bytes each of stdout and stderr may hold before the log takes them:
    /// what the log could keep, plus a newline per entry.
    pub(crate) fn stdio_capture_bytes(&self) -> usize {
        let entries = self.limits.max_log_entries as usize;
        entries
            .saturating_mul(self.limits.max_log_entry_bytes as usize + 1)
            .min(MAX_STDIO_CAPTURE_BYTES)
    }

    /// Move captured stdout (`info`) and stderr (`warn`) lines into the log;
    /// with `all`, also an unfinished last line (the call is over).
    pub(crate) fn drain_stdio(&mut self, all: bool) {
        let Some(wasi) = &self.wasi else {
            return;
        };
        let mut lines = Vec::new();
        for (pipe, level) in [
            (&wasi.stdout, LogLevel::Info),
            (&wasi.stderr, LogLevel::Warn),
        ] {
            let (taken, dropped) =
                pipe.with(|c| (c.take_lines(all), std::mem::take(&mut c.dropped)));
            lines.extend(taken.into_iter().map(|line| (level, line)));
            if dropped > 0 {
                lines.push((level, format!("[{dropped} bytes of output dropped]")));
            }
        }
        for (level, line) in lines {
            self.push_log(level, &line);
        }
    }
}

/// Resolves when `cancel` is cancelled; never without one.
pub(crate) async fn cancelled(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Cut `text` to at most `max` bytes on a char boundary; whether it was cut.
pub(crate) fn truncate(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    text.truncate(text.floor_char_boundary(max));
    true
}

/// Redact then bound `text`. Very long text is first cut far past `max`
/// (so a secret near the cut cannot survive into the kept prefix) to bound
/// the cost of redaction.
pub(crate) fn redact_bounded(network: &dyn CallNetwork, text: &str, max: usize) -> (String, bool) {
    let pre = max.saturating_mul(64).max(4096);
    // Cut before copying: a guest's log line may be tens of megabytes.
    let end = text.floor_char_boundary(pre);
    let (head, cut_early) = (&text[..end], end < text.len());
    let mut redacted = network.redact(head);
    let cut = truncate(&mut redacted, max);
    (redacted, cut || cut_early)
}

/// Bytes of a guest's failure code searched for secrets; a longer code is
/// no code (see [`code_without_secrets`]).
const MAX_RAW_CODE_BYTES: usize = 64 << 10;

/// The code a guest failure shows: `kept` (what its world keeps of the
/// guest's `raw` code: filtered, cut), or `redacted_code` when `raw` holds a
/// staged secret. The code reaches the model ("the tool failed
/// (kind/code)"), and a guest that came by a secret through an encoding
/// the response's redaction missed could spell it there, where the
/// output's redaction never looks. `raw` is searched, not `kept`: cutting
/// or filtering can leave a part of a secret that no form matches. A code
/// is an identifier, so it is replaced whole; one longer than 64 KiB is not
/// searched and is `redacted_code` too.
pub(crate) fn code_without_secrets(network: &dyn CallNetwork, raw: &str, kept: String) -> String {
    if raw.len() <= MAX_RAW_CODE_BYTES && network.redact(raw) == raw {
        kept
    } else {
        "redacted_code".to_owned()
    }
}

/// A network that redacts one secret and sends nothing (unit tests).
#[cfg(test)]
pub(crate) struct OneSecret(pub(crate) &'static str);

#[cfg(test)]
impl CallNetwork for OneSecret {
    fn acquire(&self, handle: &str) -> Result<(), warden_core::net::CredentialError> {
        warden_core::net::DenyAll.acquire(handle)
    }

    fn send<'a>(
        &'a self,
        request: warden_core::net::GuestRequest,
        credential: Option<&'a str>,
        remaining: std::time::Duration,
    ) -> warden_core::net::BoxFuture<
        'a,
        Result<warden_core::net::GuestResponse, warden_core::net::HttpError>,
    > {
        warden_core::net::DenyAll.send(request, credential, remaining)
    }

    fn redact(&self, text: &str) -> String {
        text.replace(self.0, "[REDACTED]")
    }
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
    fn a_code_is_searched_as_the_guest_sent_it() {
        let network = OneSecret("tok+en/42");
        let kept = |raw: &str| code_without_secrets(&network, raw, raw.replace(['+', '/'], ""));
        // Filtered (`token42`) or cut, what is kept matches no form; the
        // code as sent does.
        assert_eq!(kept("failed_tok+en/42"), "redacted_code");
        assert_eq!(
            kept(&format!("{}tok+en/42", "x".repeat(60))),
            "redacted_code"
        );
        assert_eq!(kept("rate_limited"), "rate_limited");
        // Longer than any code: not searched, not kept.
        assert_eq!(kept(&"x".repeat(MAX_RAW_CODE_BYTES + 1)), "redacted_code");
    }

    #[test]
    fn redact_bounded_cuts_after_redaction() {
        let (text, cut) = redact_bounded(&DenyAll, &"x".repeat(10_000), 100);
        assert_eq!(text.len(), 100);
        assert!(cut);
    }
}
