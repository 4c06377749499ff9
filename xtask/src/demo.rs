//! `cargo xtask demo`: the README's main job. Bundle the packages, build the
//! `warden` binary, list its tools and call `echo` through the whole host
//! (manifest, registry, authorization, runtime).

use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{bundle, workspace};

/// Options of `cargo xtask demo`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Pass `--timings` to the build of `warden` (a report in `target/cargo-timings/`).
    #[arg(long)]
    pub(crate) timings: bool,
}

/// Run the demo.
pub(crate) fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    bundle::run(&bundle::Args::default())?;
    println!("demo: bundled in {:.1?}", started.elapsed());
    // `--workspace --bin warden`: features resolved for the whole workspace
    // (as `cargo xtask test` resolves them, so a test run after the demo
    // reuses every dependency), and only the binary built.
    println!("demo: building the warden binary (cargo build --workspace --bin warden)");
    let building = Instant::now();
    let mut cargo = workspace::cargo();
    cargo.args(["build", "--workspace", "--bin", "warden"]);
    if args.timings {
        cargo.arg("--timings");
    }
    let status = cargo.status().context("starting cargo")?;
    if !status.success() {
        bail!("building warden failed");
    }
    println!("demo: built in {:.1?}", building.elapsed());
    let binary = workspace::root().join("target/debug/warden");
    let data_dir = workspace::root().join("target/demo-data");
    let warden = |args: &[&str]| -> Result<()> {
        println!("\n$ warden {}", args.join(" "));
        let status = std::process::Command::new(&binary)
            .arg("--data-dir")
            .arg(&data_dir)
            .args(args)
            .status()
            .with_context(|| format!("running {}", binary.display()))?;
        if !status.success() {
            bail!("`warden {}` failed", args.join(" "));
        }
        Ok(())
    };
    warden(&["list"])?;
    warden(&["describe", "echo.echo"])?;
    warden(&[
        "call",
        "echo.echo",
        "--input",
        r#"{"text": "Hello, Warden!", "transform": "reverse"}"#,
    ])?;
    println!(
        "\ndemo: done in {:.1?}. Serve these tools to an MCP client with `{} --data-dir {} serve`.",
        started.elapsed(),
        binary.display(),
        data_dir.display()
    );
    Ok(())
}
