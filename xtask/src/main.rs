//! `cargo xtask`: the project's build tasks.
//!
//! - `bundle [--check] [--guest NAME]...`: build every guest crate to a
//!   component, check its imports against the contract, and write its package
//!   (`packages/<ext>/wasm/<module>.wasm`, `SHA256SUMS`, an archive under
//!   `target/packages/`). `--check` only reports what is stale.
//! - `check <package-dir>...`: validate manifests and print a summary per package.
//! - `test [-- <cargo test args>]`: bundle what is stale, then run the whole suite.
//! - `demo`: bundle, build `warden`, and call a tool through the host.
//! - `bench-mcp`: the MCP round-trip benchmark of `warden serve`.
//! - `conformance`: the MCP conformance suite's client scenarios with
//!   `warden` as the client (Node 22 and the suite via npm).
//! - `new <name> [--http <host>]`: scaffold a tool (guest crate and package).
//! - `fuzz --minutes N [--target T]`: the AFL campaign of `tests/fuzz`.
//! - `docs [--no-build]`: check the documentation's links, the book's
//!   table of contents and every `warden` command line against
//!   `warden --help`; build the book with `mdbook` when it is installed.

mod bench_mcp;
mod bundle;
mod check;
mod component;
mod conformance;
mod demo;
mod digest;
mod docs;
mod fuzz;
mod guests;
mod new;
mod setup;
mod test;
mod workspace;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Warden build tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build guests into components and write their packages.
    Bundle(bundle::Args),
    /// Validate package manifests.
    Check {
        /// Package directories (default: every bundled package).
        dirs: Vec<std::path::PathBuf>,
    },
    /// Bundle what is stale, then run fmt, clippy and the whole test suite.
    Test(test::Args),
    /// Bundle, build `warden` and call a tool through the host.
    Demo(demo::Args),
    /// Benchmark the MCP round trip of `warden serve` over stdio.
    BenchMcp(bench_mcp::Args),
    /// Run the MCP conformance suite's client scenarios with `warden` as the client.
    Conformance,
    /// Scaffold a new tool: a guest crate and its package.
    New(new::Args),
    /// Fuzz the parsers of untrusted input with AFL (`tests/fuzz`).
    Fuzz(fuzz::Args),
    /// Check the documentation (links, the book's contents, `warden` command
    /// lines against `--help`) and build the book when `mdbook` is installed.
    Docs(docs::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bundle(args) => bundle::run(&args),
        Command::Check { dirs } => bundle::check_manifests(&dirs),
        Command::Test(args) => test::run(&args),
        Command::BenchMcp(args) => bench_mcp::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Conformance => conformance::run(),
        Command::New(args) => new::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Docs(args) => docs::run(&args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
