//! `cargo xtask test`: the README's test command and what `.ci/run` runs.

use anyhow::{Context, Result, bail};

use crate::{bundle, setup, workspace};

/// Options of `cargo xtask test`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Skip `cargo fmt --check` and `cargo clippy`.
    #[arg(long)]
    pub(crate) no_lint: bool,
    /// Extra arguments for `cargo test` (after `--`).
    #[arg(last = true)]
    pub(crate) cargo_args: Vec<String>,
}

/// Bundle what is stale, lint, then run every test of the workspace.
pub(crate) fn run(args: &Args) -> Result<()> {
    // The store tests start throwaway PostgreSQL clusters; one e2e test
    // drives `warden serve` with the official Python MCP SDK.
    setup::ensure_postgres()?;
    // The metrics test is scraped by a real Prometheus.
    setup::ensure_prometheus()?;
    setup::ensure_minisign()?;
    setup::ensure_registry_tools()?;
    setup::ensure_chromium()?;
    let python = setup::ensure_python_mcp()?;
    // And one with `@modelcontextprotocol/server-everything` behind Warden.
    let everything = setup::ensure_everything()?;
    // Every guest with `bundle = true`: the bundled packages and the test fixtures.
    bundle::run(&bundle::Args::default())?;
    if !args.no_lint {
        step("cargo fmt --check", &["fmt", "--all", "--", "--check"])?;
        step(
            "cargo clippy",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        )?;
    }
    // The guests' pure logic (validation, URL building, compaction) runs natively.
    let guests = workspace::guests_dir().join("Cargo.toml");
    let guests = guests
        .to_str()
        .context("guest workspace path is not UTF-8")?;
    step(
        "guest unit tests",
        &[
            "test",
            "--manifest-path",
            guests,
            "-p",
            "warden-guest",
            "-p",
            "github",
        ],
    )?;
    let mut test = vec!["test", "--workspace"];
    test.extend(args.cargo_args.iter().map(String::as_str));
    step_with(
        "cargo test",
        &test,
        &[
            ("WARDEN_PYTHON", python.as_os_str()),
            ("WARDEN_EVERYTHING", everything.as_os_str()),
        ],
    )?;
    // The documentation: links, the book's contents, and every `warden`
    // command line against the `--help` of the binary `cargo test` built
    // (`target/debug/warden`); the book itself when `mdbook` is installed.
    println!("xtask test: docs");
    crate::docs::run(&crate::docs::Args::default())?;
    // The fuzz targets over their corpus and every regression input, in a
    // plain build (`tests/fuzz` is its own workspace; the AFL campaign is
    // `cargo xtask fuzz`).
    let fuzz = workspace::root().join("tests/fuzz/Cargo.toml");
    let fuzz = fuzz.to_str().context("fuzz crate path is not UTF-8")?;
    if !args.no_lint {
        step(
            "cargo fmt --check (tests/fuzz)",
            &["fmt", "--manifest-path", fuzz, "--", "--check"],
        )?;
    }
    step(
        "fuzz corpus replay",
        &["test", "--manifest-path", fuzz, "--test", "replay"],
    )?;
    // The official MCP conformance suite's client scenarios (auth among
    // them) and server scenarios (the fixture package bundled above), with
    // the `warden` binary `cargo test` just built.
    println!("xtask test: MCP conformance client and server scenarios");
    crate::conformance::run_with(&workspace::root().join("target/debug/warden"))
}

fn step(what: &str, args: &[&str]) -> Result<()> {
    step_with(what, args, &[])
}

/// Every cargo step builds without incremental state unless the caller set
/// `CARGO_INCREMENTAL`: the suite is a build-once run, and on a fresh clone
/// that state is 1.7 GB, a third of `target/` (CI on a machine with little
/// free disk ran out of space while linking the test binaries). Edit-rebuild
/// loops (`cargo test -p …`) keep their incremental state; going back and
/// forth recompiles only the workspace's own crates.
fn step_with(what: &str, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Result<()> {
    println!("xtask test: {what}");
    let started = std::time::Instant::now();
    let mut cargo = workspace::cargo();
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        cargo.env("CARGO_INCREMENTAL", "0");
    }
    let status = cargo
        .args(args)
        .envs(env.iter().copied())
        .current_dir(workspace::root())
        .status()
        .with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed after {:.1?}", started.elapsed());
    }
    println!("xtask test: {what} passed in {:.1?}", started.elapsed());
    Ok(())
}
