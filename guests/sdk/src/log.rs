//! Log through the host. Entries are bounded and redacted by the host.

use crate::bindings::warden::tool::log::{Level, log};

/// Log at `trace`.
pub fn trace(message: &str) {
    log(Level::Trace, message);
}

/// Log at `debug`.
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Log at `info`.
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Log at `warn`.
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Log at `error`.
pub fn error(message: &str) {
    log(Level::Error, message);
}
