//! `warden:tool/log`: bounded, redacted, emitted through `tracing` (see [`CallState::push_log`]).

use crate::outcome::LogLevel;
use crate::state::CallState;

/// The prefix the guest SDK's panic hook logs a panic with.
const PANIC_PREFIX: &str = "panic: ";

/// `log` of one contract version (the same interface in each).
macro_rules! log_host {
    ($version:ident) => {
        mod $version {
            use crate::bindings::$version::warden::tool::log::{Host, Level};
            use crate::outcome::LogLevel;
            use crate::state::CallState;

            impl Host for CallState {
                async fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
                    let level = match level {
                        Level::Trace => LogLevel::Trace,
                        Level::Debug => LogLevel::Debug,
                        Level::Info => LogLevel::Info,
                        Level::Warn => LogLevel::Warn,
                        Level::Error => LogLevel::Error,
                    };
                    self.guest_log(level, &message);
                    Ok(())
                }
            }
        }
    };
}

log_host!(v0_1);
log_host!(v0_2);

impl CallState {
    /// One entry the guest logged.
    fn guest_log(&mut self, level: LogLevel, message: &str) {
        if level == LogLevel::Error && message.starts_with(PANIC_PREFIX) {
            self.logs.panicked = true;
        }
        // Keep stdout/stderr lines of a WASI guest in order with its log calls.
        self.drain_stdio(false);
        self.push_log(level, message);
    }
}

/// Emit a kept log entry as a `warden::guest` tracing event, on one line:
/// a guest's `\n` or `\r` (which the log writer passes as they are) forged
/// whole lines of the host's log (`ERROR warden_host::audit: …`). What the
/// call returns keeps the message as it was.
pub(crate) fn emit(level: LogLevel, call_id: &str, capability: &str, message: &str) {
    let message = one_line(message);
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

/// `text` with every control character (line breaks included) a space.
pub(crate) fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_guest_log_line_cannot_start_another() {
        let forged = "ok\n2026-01-01T00:00:00Z ERROR warden_host::audit: forged\r\u{85}x";
        let shown = one_line(forged);
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert!(shown.starts_with("ok 2026-01-01"), "{shown:?}");
        assert!(matches!(
            one_line("plain"),
            std::borrow::Cow::Borrowed("plain")
        ));
    }
}
