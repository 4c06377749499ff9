//! Fuzz targets for Warden's parsers of untrusted input.
//!
//! Each target takes arbitrary bytes and asserts properties of what the
//! parser makes of them (a failed property is a panic, which AFL records as
//! a crash); none only checks that nothing panics. The same functions run
//! under `afl-fuzz` (`cargo xtask fuzz`, the `warden-fuzz` binary) and as a
//! plain replay of every corpus and regression file (`tests/replay.rs`,
//! part of `cargo xtask test`).
//!
//! Inputs live in `corpus/<target>/` (seeds) and `regressions/<target>/`
//! (every crash found, kept once fixed).

pub mod targets;

/// A fuzz target: its name (the corpus directory) and its function.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Name on the command line and of its corpus directory.
    pub name: &'static str,
    /// Runs one input; panics when a property fails.
    pub run: fn(&[u8]),
}

/// Every target, in the order a campaign runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "manifest",
        run: targets::manifest::run,
    },
    #[cfg(feature = "host")]
    Target {
        name: "package",
        run: targets::package::run,
    },
    #[cfg(feature = "host")]
    Target {
        name: "sums",
        run: targets::sums::run,
    },
    Target {
        name: "mcp_line",
        run: targets::mcp_line::run,
    },
    Target {
        name: "mcp_http",
        run: targets::mcp_http::run,
    },
    Target {
        name: "tape",
        run: targets::tape::run,
    },
    Target {
        name: "jwt",
        run: targets::jwt::run,
    },
    Target {
        name: "redact",
        run: targets::redact::run,
    },
    #[cfg(feature = "host")]
    Target {
        name: "headers_json",
        run: targets::headers_json::run,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
