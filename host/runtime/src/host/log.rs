//! `warden:tool/log`: bounded, redacted, emitted through `tracing`.

use crate::bindings::warden::tool::log::{Host, Level};
use crate::outcome::{LogEntry, LogLevel};
use crate::state::{CallState, redact_bounded};

/// The prefix the guest SDK's panic hook logs a panic with.
const PANIC_PREFIX: &str = "panic: ";

impl Host for CallState {
    async fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        let level = match level {
            Level::Trace => LogLevel::Trace,
            Level::Debug => LogLevel::Debug,
            Level::Info => LogLevel::Info,
            Level::Warn => LogLevel::Warn,
            Level::Error => LogLevel::Error,
        };
        if level == LogLevel::Error && message.starts_with(PANIC_PREFIX) {
            self.logs.panicked = true;
        }
        if self.logs.entries.len() >= self.limits.max_log_entries as usize {
            self.logs.dropped = self.logs.dropped.saturating_add(1);
            return Ok(());
        }
        let (message, truncated) = redact_bounded(
            self.network.as_ref(),
            &message,
            self.limits.max_log_entry_bytes as usize,
        );
        emit(level, &self.call_id, &self.capability_id, &message);
        self.logs.entries.push(LogEntry {
            level,
            message,
            truncated,
        });
        Ok(())
    }
}

fn emit(level: LogLevel, call_id: &str, capability: &str, message: &str) {
    macro_rules! event {
        ($level:expr) => {
            tracing::event!(target: "warden::guest", $level, call_id, capability, "{message}")
        };
    }
    match level {
        LogLevel::Trace => event!(tracing::Level::TRACE),
        LogLevel::Debug => event!(tracing::Level::DEBUG),
        LogLevel::Info => event!(tracing::Level::INFO),
        LogLevel::Warn => event!(tracing::Level::WARN),
        LogLevel::Error => event!(tracing::Level::ERROR),
    }
}
