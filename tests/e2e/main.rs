//! End-to-end tests through the `warden` binary. They expect the packages to
//! be bundled (`cargo xtask test` bundles before it runs them).

mod accounts;
mod approve_again;
mod audit;
mod auth;
mod cache;
mod caller_accounts;
mod cli;
mod compat;
mod compile_limits;
mod connect_server;
mod console;
mod everything;
mod github;
mod hosted;
mod hosted_rmcp;
mod identity;
mod install;
mod live_catalog;
mod mcp;
mod messaging;
mod metrics;
mod oci;
mod operator;
mod package_set;
mod postgres;
mod private_data;
mod python_sdk;
mod resolve;
mod serve_auth;
mod services;
mod signing;
mod stateless;
mod store_clock;
mod tape;
mod terminal;
mod traces;

/// A fresh data directory for the `warden` binary cargo built for this test.
fn warden() -> warden_tests::Warden {
    warden_tests::Warden::new(env!("CARGO_BIN_EXE_warden"))
}
