//! `cargo xtask test`: the README's test command and what `.ci/run` runs.

use anyhow::{Context, Result, bail};

use crate::{bundle, workspace};

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
    // The store tests start throwaway PostgreSQL clusters.
    ensure_postgres()?;
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
    step("cargo test", &test)
}

fn step(what: &str, args: &[&str]) -> Result<()> {
    println!("xtask test: {what}");
    let started = std::time::Instant::now();
    let status = workspace::cargo()
        .args(args)
        .current_dir(workspace::root())
        .status()
        .with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed after {:.1?}", started.elapsed());
    }
    println!("xtask test: {what} passed in {:.1?}", started.elapsed());
    Ok(())
}

/// Installs the distribution's PostgreSQL server when no `initdb` is found
/// where the test harness (`warden_tests::postgres`) looks for it.
fn ensure_postgres() -> Result<()> {
    if postgres_installed() {
        return Ok(());
    }
    println!("xtask test: installing PostgreSQL (apt-get install postgresql)");
    let apt = |args: &[&str]| {
        std::process::Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    let install = ["install", "-y", "--no-install-recommends", "postgresql"];
    // A fresh machine's package lists may be empty: update once, then retry.
    let installed = apt(&install) || (apt(&["update"]) && apt(&install));
    if !installed {
        bail!(
            "PostgreSQL is needed by the store tests and apt-get could not install it; \
             install the `postgresql` package (or set WARDEN_PG_BIN to its bin directory)"
        );
    }
    if !postgres_installed() {
        bail!("apt-get installed postgresql, but no initdb is in /usr/lib/postgresql/*/bin");
    }
    Ok(())
}

fn postgres_installed() -> bool {
    if std::env::var_os("WARDEN_PG_BIN").is_some() {
        return true;
    }
    let packaged = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|version| version.path().join("bin/initdb").is_file());
    packaged
        || std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join("initdb").is_file())
        })
}
