//! Support for the end-to-end tests: the `warden` binary, a data directory
//! wired to local fake providers, and a fake GitHub over HTTPS.
//!
//! The fake GitHub runs on 127.0.0.1 with a certificate from a generated CA.
//! The manifest keeps its real audience (`api.github.com`): the data dir's
//! `warden.toml` trusts the test CA, maps `api.github.com` to the loopback
//! address with a resolver override, and allows exactly `api.github.com:443`
//! to resolve to a private address. No security check is relaxed beyond that.

pub mod archive;
mod fake_github;
pub mod fake_mcp;
pub mod package;
mod warden;

pub use fake_github::{FakeGitHub, TOKEN};
pub use warden::{Run, Warden};
