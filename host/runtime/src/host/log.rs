//! `warden:tool/log`: bounded, redacted, emitted through `tracing` (see [`CallState::push_log`]).

use crate::bindings::warden::tool::log::{Host, Level};
use crate::outcome::LogLevel;
use crate::state::CallState;

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
        // Keep stdout/stderr lines of a WASI guest in order with its log calls.
        self.drain_stdio(false);
        self.push_log(level, &message);
        Ok(())
    }
}

/// Emit a kept log entry as a `warden::guest` tracing event.
pub(crate) fn emit(level: LogLevel, call_id: &str, capability: &str, message: &str) {
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
