//! The locked-down WASI 0.2 a third-party component may import.
//!
//! A component built for `wasm32-wasip2` imports a dozen WASI interfaces
//! even when it never touches a file or a socket (Rust's std pulls them in).
//! The runtime links exactly [`WASI_ALLOWED`] — with no preopened directory,
//! no environment, no arguments, empty stdin and stdio captured into the
//! call's log — and the xtask's bundle check accepts exactly the same list.
//! Sockets (`wasi:sockets/*`), HTTP (`wasi:http/*`) and every other
//! interface stay unlinked, so a component importing one is refused at
//! install, naming the import.
//!
//! ```
//! use warden_core::wasi::is_allowed_import;
//! assert!(is_allowed_import("wasi:cli/stdout@0.2.6"));
//! assert!(!is_allowed_import("wasi:sockets/tcp@0.2.6"));
//! assert!(!is_allowed_import("wasi:cli/stdout@0.3.0"));
//! ```

/// The WASI interfaces (without version) a component may import.
///
/// `wasi:filesystem/*` is here because std imports it unconditionally; the
/// runtime preopens no directory, so no path can be opened.
pub const WASI_ALLOWED: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/preopens",
    "wasi:filesystem/types",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:random/random",
];

/// The WASI release line the allowed interfaces must come from (`0.2.x`).
pub const WASI_VERSION_PREFIX: &str = "0.2.";

/// Whether `import` (`ns:pkg/iface@version`, as a component names it) is an
/// allowed WASI 0.2 interface.
pub fn is_allowed_import(import: &str) -> bool {
    let Some((interface, version)) = import.split_once('@') else {
        return false;
    };
    version.starts_with(WASI_VERSION_PREFIX) && WASI_ALLOWED.contains(&interface)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_wasi_0_2_interfaces_are_allowed() {
        assert!(is_allowed_import("wasi:io/streams@0.2.0"));
        assert!(is_allowed_import("wasi:filesystem/preopens@0.2.9"));
        for refused in [
            "wasi:io/streams",
            "wasi:sockets/tcp@0.2.0",
            "wasi:sockets/instance-network@0.2.0",
            "wasi:http/outgoing-handler@0.2.0",
            "wasi:cli/stdout@0.3.0-rc-2025-09-16",
            "warden:tool/log@0.1.0",
        ] {
            assert!(!is_allowed_import(refused), "{refused}");
        }
    }
}
