//! The conformance suite's server scenarios, with Warden as the server:
//! `warden serve --http` on loopback, serving the conformance fixture
//! packages (never part of the default catalog): `test`
//! (`guests/fixtures/conformance`, on `warden:tool@0.2.0`), whose tools are
//! published as the names the suite calls (`test_simple_text`, …), and
//! `json` (`guests/fixtures/json-schema`), whose one tool is listed as
//! `json_schema_2020_12_tool`. Each tool the suite calls is granted for the
//! `loop_run` origin first (as an operator would, through `warden approvals
//! approve --grant`), so the suite's calls run.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use crate::workspace;

/// The server scenarios run, each a real pass: the fixture provides what
/// it calls.
pub(crate) const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "tools-call-error",
    "logging-set-level",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];

/// The server scenarios not run, with why.
pub(crate) const NOT_RUN: &[(&str, &str)] = &[
    (
        "completion-complete",
        "warden serve offers no completions (it serves tools only)",
    ),
    (
        "resources-list",
        "warden serve serves tools only, no resources",
    ),
    ("resources-read-text", "no resources"),
    ("resources-read-binary", "no resources"),
    ("resources-templates-read", "no resources"),
    ("resources-subscribe", "no resources"),
    ("resources-unsubscribe", "no resources"),
    ("prompts-list", "warden serve serves tools only, no prompts"),
    ("prompts-get-simple", "no prompts"),
    ("prompts-get-with-args", "no prompts"),
    ("prompts-get-embedded-resource", "no prompts"),
    ("prompts-get-with-image", "no prompts"),
];

/// The fixture packages, by directory under `tests/fixtures/packages/`,
/// and the component each needs.
pub(crate) const PACKAGES: &[(&str, &str)] = &[
    ("test", "wasm/conformance.wasm"),
    ("json", "wasm/json_schema.wasm"),
];

/// The fixture tools the scenarios call, granted before they run.
const TOOLS: &[&str] = &[
    "simple_text",
    "image_content",
    "audio_content",
    "embedded_resource",
    "multiple_content_types",
    "tool_with_logging",
    "tool_with_progress",
    "reconnection",
    "error_handling",
];

/// Run every scenario of [`SCENARIOS`] against `binary`; `conformance` is
/// the suite's command and `dir` its working directory. Returns the names
/// of the scenarios that failed.
pub(crate) fn run(
    binary: &Path,
    conformance: &Path,
    path: &std::ffi::OsStr,
    dir: &Path,
) -> Result<Vec<&'static str>> {
    let fixtures = workspace::root().join("tests/fixtures/packages");
    for (package, component) in PACKAGES {
        if !fixtures.join(package).join(component).exists() {
            bail!(
                "the fixture package `{package}` has no {component}: run `cargo xtask bundle` first"
            );
        }
    }
    let data = dir.join("server-data");
    if data.exists() {
        std::fs::remove_dir_all(&data)?;
    }
    std::fs::create_dir_all(&data)?;
    let warden = |args: &[&str]| {
        let output = Command::new(binary)
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .output()
            .context("running warden")?;
        anyhow::Ok(output)
    };
    for (package, _) in PACKAGES {
        let dir = fixtures.join(package).display().to_string();
        let installed = warden(&["install", &dir])?;
        if !installed.status.success() {
            bail!(
                "installing the fixture package `{package}` failed: {}",
                String::from_utf8_lossy(&installed.stderr)
            );
        }
    }
    for tool in TOOLS {
        grant(&warden, &format!("test.{tool}"), "{}")?;
    }
    let mut failed = run_scenarios(binary, &data, conformance, path, SCENARIOS)?;
    failed.extend(super::hosted::run(binary, conformance, path, dir)?);
    Ok(failed)
}

/// Serve `data` with `warden serve --http` on loopback and run each of
/// `scenarios` against it; the names of those that failed.
pub(super) fn run_scenarios(
    binary: &Path,
    data: &Path,
    conformance: &Path,
    path: &std::ffi::OsStr,
    scenarios: &[&'static str],
) -> Result<Vec<&'static str>> {
    let address = free_loopback()?;
    let _serve = Serve(
        Command::new(binary)
            .arg("--data-dir")
            .arg(data)
            .args(["serve", "--http", &address.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting warden serve")?,
    );
    wait_for(address)?;
    let url = format!("http://{address}/mcp");
    let mut failed = Vec::new();
    for scenario in scenarios {
        let started = Instant::now();
        let output = Command::new(conformance)
            .args(["server", "--url", &url, "--scenario", scenario])
            .env("PATH", path)
            .output()
            .context("running the conformance suite")?;
        let out = String::from_utf8_lossy(&output.stdout);
        if output.status.success() && out.contains(" 0 failed") {
            println!(
                "conformance: server {scenario} passed ({:.1?})",
                started.elapsed()
            );
        } else {
            print!("{out}");
            eprint!("{}", String::from_utf8_lossy(&output.stderr));
            println!("conformance: server {scenario} FAILED");
            failed.push(*scenario);
        }
    }
    Ok(failed)
}

/// Grant `capability` for `loop_run`: call it with `input` as a model
/// would (which asks for approval, before anything runs) and approve the
/// request with `--grant`.
pub(super) fn grant(
    warden: &dyn Fn(&[&str]) -> Result<std::process::Output>,
    capability: &str,
    input: &str,
) -> Result<()> {
    let asked = warden(&[
        "--json", "call", capability, "-i", input, "--origin", "loop-run",
    ])?;
    let answer: serde_json::Value = serde_json::from_slice(&asked.stdout)
        .with_context(|| format!("`warden call {capability}` did not print JSON"))?;
    let Some(id) = answer["approval_id"].as_str() else {
        bail!("`warden call {capability}` asked for no approval: {answer}");
    };
    let approved = warden(&["approvals", "approve", "--grant", id])?;
    if !approved.status.success() {
        bail!(
            "granting {capability} failed: {}",
            String::from_utf8_lossy(&approved.stderr)
        );
    }
    Ok(())
}

/// A loopback address no one listens on now.
pub(super) fn free_loopback() -> Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Wait until something listens on `address` (10 s at most).
pub(super) fn wait_for(address: SocketAddr) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
        if Instant::now() > deadline {
            bail!("warden serve did not listen on {address} within 10 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// A child process (`warden serve`, the fixture server), stopped when dropped.
pub(super) struct Serve(pub(super) Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::{NOT_RUN, SCENARIOS};

    #[test]
    fn a_scenario_is_either_run_or_named_with_why() {
        for scenario in SCENARIOS {
            assert!(
                !NOT_RUN.iter().any(|(name, _)| name == scenario),
                "{scenario} is both run and not run"
            );
        }
        assert!(NOT_RUN.iter().all(|(_, why)| !why.is_empty()));
    }
}
