//! `cargo xtask demo`: the README's main job. Bundle the packages, build the
//! `warden` binary, list its tools and call `echo` through the whole host
//! (manifest, registry, authorization, runtime).

use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{bundle, workspace};

/// Run the demo.
pub(crate) fn run() -> Result<()> {
    let started = Instant::now();
    bundle::run(&bundle::Args::default())?;
    println!("demo: bundled in {:.1?}", started.elapsed());
    // The whole workspace, not `-p warden`: the same feature set `cargo xtask
    // test` builds with, so a test run after the demo reuses every dependency.
    println!("demo: building the warden binary (cargo build --workspace)");
    let building = Instant::now();
    let status = workspace::cargo()
        .args(["build", "--workspace"])
        .status()
        .context("starting cargo")?;
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
        "\ndemo: done. Serve these tools to an MCP client with `{} --data-dir {} serve`.",
        binary.display(),
        data_dir.display()
    );
    Ok(())
}
