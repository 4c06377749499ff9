//! The conformance suite's server scenarios, with Warden as the server:
//! `warden serve --http` on loopback, serving the conformance fixture
//! package (`tests/fixtures/packages/test`, built from
//! `guests/fixtures/conformance` on `warden:tool@0.2.0`; never part of the
//! default catalog). Its extension is `test`, so its tools are published as
//! the names the suite calls (`test_simple_text`, …). Each tool is granted
//! for the `loop_run` origin first (as an operator would, through
//! `warden approvals approve --grant`), so the suite's calls run.

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
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// The server scenarios not run, with why.
pub(crate) const NOT_RUN: &[(&str, &str)] = &[
    (
        "tools-call-sampling",
        "a guest cannot sample by design; through a hosted fixture server it needs an \
         [mcp] package named `test` behind a local TLS front, not built yet (sampling \
         through warden serve is covered by the server-everything e2e test)",
    ),
    (
        "tools-call-elicitation",
        "a guest cannot elicit by design; same as tools-call-sampling (covered by the \
         server-everything e2e test)",
    ),
    (
        "elicitation-sep1034-defaults",
        "elicitation from a tool: needs the hosted fixture server, as tools-call-elicitation",
    ),
    (
        "elicitation-sep1330-enums",
        "elicitation from a tool: needs the hosted fixture server, as tools-call-elicitation",
    ),
    (
        "json-schema-2020-12",
        "calls `json_schema_2020_12_tool`, a name outside the fixture's `test_` prefix",
    ),
    (
        "server-sse-polling",
        "needs `test_reconnection`, whose server closes the POST stream mid-call and \
         resumes on a GET with Last-Event-ID (SEP-1699); warden serve keeps a call's \
         stream open until its answer",
    ),
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

/// The fixture tools the scenarios call, granted before they run.
const TOOLS: &[&str] = &[
    "simple_text",
    "image_content",
    "audio_content",
    "embedded_resource",
    "multiple_content_types",
    "tool_with_logging",
    "tool_with_progress",
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
    let fixture = workspace::root().join("tests/fixtures/packages/test");
    if !fixture.join("wasm/conformance.wasm").exists() {
        bail!(
            "{} has no component: run `cargo xtask bundle --guest conformance` first",
            fixture.display()
        );
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
    let installed = warden(&["install", &fixture.display().to_string()])?;
    if !installed.status.success() {
        bail!(
            "installing the conformance fixture failed: {}",
            String::from_utf8_lossy(&installed.stderr)
        );
    }
    for tool in TOOLS {
        grant(&warden, tool)?;
    }
    let address = free_loopback()?;
    let serve = Serve(
        Command::new(binary)
            .arg("--data-dir")
            .arg(&data)
            .args(["serve", "--http", &address.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting warden serve")?,
    );
    wait_for(address)?;
    let url = format!("http://{address}/mcp");
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
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
    drop(serve);
    Ok(failed)
}

/// Grant `test.<tool>` for `loop_run`: call it as a model would (which asks
/// for approval) and approve the request with `--grant`.
fn grant(warden: &dyn Fn(&[&str]) -> Result<std::process::Output>, tool: &str) -> Result<()> {
    let capability = format!("test.{tool}");
    let asked = warden(&[
        "--json",
        "call",
        &capability,
        "-i",
        "{}",
        "--origin",
        "loop-run",
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
fn free_loopback() -> Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// Wait until something listens on `address` (10 s at most).
fn wait_for(address: SocketAddr) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
        if Instant::now() > deadline {
            bail!("warden serve did not listen on {address} within 10 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// `warden serve`, stopped when dropped.
struct Serve(Child);

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
