//! `cargo xtask conformance`: the official MCP conformance suite's client
//! scenarios, with Warden as the client.
//!
//! Installs Node 22 and `@modelcontextprotocol/conformance` with npm into
//! `target/conformance/` (once), builds `warden`, and runs
//! `conformance client --scenario <name> --command <script>` per scenario.
//! The script runs `warden mcp probe --loopback-http` against the URL the
//! suite appends: the suite's server is plain http on localhost, which the
//! probe allows for exactly that origin; everything else is Warden's hosted
//! lane as a package uses it (rmcp client, egress transport, bounded
//! discovery).

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::workspace;

/// The scenarios and the probe arguments each needs.
const SCENARIOS: &[(&str, &str)] = &[
    ("initialize", ""),
    (
        "tools_call",
        r#"--call add_numbers --input '{"a":5,"b":3}'"#,
    ),
];

/// Run `cargo xtask conformance`.
pub(crate) fn run() -> Result<()> {
    let dir = workspace::root().join("target/conformance");
    std::fs::create_dir_all(&dir)?;
    install_suite(&dir)?;
    println!("conformance: building the warden binary");
    let status = workspace::cargo()
        .args(["build", "--quiet", "-p", "warden"])
        .status()?;
    if !status.success() {
        bail!("building warden failed");
    }
    let binary = workspace::root().join("target/debug/warden");
    let data = dir.join("data");
    std::fs::create_dir_all(&data)?;
    let bin = dir.join("node_modules/.bin");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))?;
    let mut failed = Vec::new();
    for (scenario, args) in SCENARIOS {
        let script = dir.join(format!("{scenario}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nexec {:?} --data-dir {:?} mcp probe --loopback-http {args} \"$@\"\n",
                binary.display().to_string(),
                data.display().to_string()
            ),
        )?;
        make_executable(&script)?;
        println!("conformance: scenario {scenario}");
        let output = std::process::Command::new(bin.join("conformance"))
            .args(["client", "--scenario", scenario, "--command"])
            .arg(&script)
            .env("PATH", &path)
            .output()
            .context("running the conformance suite")?;
        let (out, err) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        print!("{out}");
        eprint!("{err}");
        // The suite prints its verdict on stderr and exits 0 when it passed.
        let passed = out.contains("OVERALL: PASSED") || err.contains("OVERALL: PASSED");
        if !output.status.success() || !passed {
            failed.push(*scenario);
        }
    }
    if !failed.is_empty() {
        bail!("conformance scenarios failed: {}", failed.join(", "));
    }
    println!("conformance: {} scenarios passed", SCENARIOS.len());
    Ok(())
}

/// `npm install node@22 @modelcontextprotocol/conformance` into `dir`, once.
fn install_suite(dir: &Path) -> Result<()> {
    let bin = dir.join("node_modules/.bin");
    if bin.join("conformance").exists() && bin.join("node").exists() {
        return Ok(());
    }
    println!("conformance: installing Node 22 and the suite with npm");
    let status = std::process::Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "node@22",
            "@modelcontextprotocol/conformance",
        ])
        .current_dir(dir)
        .status()
        .context("running npm (is Node.js with npm installed?)")?;
    if !status.success() {
        bail!("npm install failed");
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    bail!("the conformance task needs a Unix shell")
}
