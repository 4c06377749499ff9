//! Support for the end-to-end tests: the `warden` binary, a data directory
//! wired to local fake providers, a fake GitHub over HTTPS, and a real rmcp
//! MCP server ([`rmcp_mcp`]).
//!
//! The fake GitHub runs on 127.0.0.1 with a certificate from a generated CA.
//! The manifest keeps its real audience (`api.github.com`): the data dir's
//! `warden.toml` trusts the test CA, maps `api.github.com` to the loopback
//! address with a resolver override, and allows exactly `api.github.com:443`
//! to resolve to a private address. No security check is relaxed beyond that.

pub mod archive;
pub mod direct_mcp;
pub mod everything;
mod fake_github;
pub mod fake_mcp;
pub mod files;
pub mod jwt_issuer;
pub mod oci_registry;
pub mod otlp;
pub mod package;
pub mod postgres;
pub mod prometheus;
pub mod rmcp_mcp;
pub mod tls;
mod warden;
pub mod webdriver;

pub use fake_github::{ALICE_TOKEN, FakeGitHub, TOKEN};
pub use postgres::TestPostgres;
pub use prometheus::TestPrometheus;
pub use warden::{Run, Serving, Warden};
