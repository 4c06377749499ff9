//! End-to-end tests through the `warden` binary. They expect the packages to
//! be bundled (`cargo xtask test` bundles before it runs them).

mod accounts;
mod cli;
mod compat;
mod github;
mod identity;
mod install;
mod mcp;

/// A fresh data directory for the `warden` binary cargo built for this test.
fn warden() -> warden_tests::Warden {
    warden_tests::Warden::new(env!("CARGO_BIN_EXE_warden"))
}
