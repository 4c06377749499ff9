//! Wassette beside Warden in `bench-mcp --cold --wassette <path>`: the same
//! cold and warm starts, measured the same way, on an echo component that
//! does the work of Warden's `echo` tool (`xtask/bench/wassette-echo`).
//!
//! Cold is a component directory holding only the `.wasm`, as after copying
//! it there; Wassette then compiles it in the background after start and
//! answers a call to it with "Tool not found" until it has, so the client
//! calls again (every millisecond) until the call succeeds: spawn → first
//! call is spawn → first successful call. Warm is a directory where a
//! previous run left the compiled component. Wassette does not exit when its
//! stdin closes; the server is killed after each run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::cold::{Start, compiled_in};
use super::{Server, temp_data_dir};
use crate::guests::WASIP2_TARGET;
use crate::workspace;

/// How long a start may take before the run is given up.
const PATIENCE: Duration = Duration::from_secs(60);

pub(super) struct Wassette {
    binary: PathBuf,
    /// The echo component.
    component: PathBuf,
    /// `HOME` and the XDG directories of every run: nothing of the user's.
    home: PathBuf,
}

impl Wassette {
    /// Build the echo component and check that `binary` runs.
    pub(super) fn new(binary: &Path) -> Result<Wassette> {
        let version = Command::new(binary)
            .arg("--version")
            .output()
            .with_context(|| format!("starting {}", binary.display()))?;
        if !version.status.success() {
            bail!(
                "{} --version failed: {}",
                binary.display(),
                String::from_utf8_lossy(&version.stderr).trim()
            );
        }
        println!(
            "Wassette: {}",
            String::from_utf8_lossy(&version.stdout)
                .split_whitespace()
                .next()
                .unwrap_or("?")
        );
        Ok(Wassette {
            binary: binary.to_owned(),
            component: build_echo()?,
            home: temp_data_dir("wassette-home")?,
        })
    }

    /// A component directory holding only the echo component.
    pub(super) fn cold_dir(&self, name: &str) -> Result<PathBuf> {
        let dir = temp_data_dir(name)?;
        std::fs::copy(&self.component, dir.join("echo.wasm"))?;
        Ok(dir)
    }

    /// A component directory where Wassette has compiled the echo component.
    pub(super) fn warm_dir(&self) -> Result<PathBuf> {
        let dir = self.cold_dir("wassette-warm")?;
        self.start(&dir)?;
        if compiled_in(&dir) == 0 {
            bail!("Wassette left no compiled component in {}", dir.display());
        }
        Ok(dir)
    }

    /// Start Wassette on `dir` and call echo until it answers.
    pub(super) fn start(&self, dir: &Path) -> Result<Start> {
        let spawned = Instant::now();
        let child = Command::new(&self.binary)
            .args(["run", "--disable-builtin-tools", "--component-dir"])
            .arg(dir)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", self.home.join("data"))
            .env("XDG_CONFIG_HOME", self.home.join("config"))
            .env("XDG_CACHE_HOME", self.home.join("cache"))
            .env("RUST_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        let mut server = Server::over(child);
        server.initialize()?;
        server.request("tools/list", json!({}))?;
        let to_list = spawned.elapsed();
        loop {
            let answer = server.request("tools/call", echo_call())?;
            if answer["result"]["isError"] != json!(true) {
                check_echo(&answer)?;
                break;
            }
            if spawned.elapsed() > PATIENCE {
                bail!("Wassette did not run the echo component: {answer}");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let to_call = spawned.elapsed();
        Ok(Start {
            to_list,
            to_call,
            peak_rss_mib: server.peak_rss_kib()? as f64 / 1024.0,
            private_rss_mib: server.private_rss_kib()? as f64 / 1024.0,
        })
    }
}

impl Drop for Wassette {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn echo_call() -> Value {
    json!({ "name": "echo", "arguments": { "text": "hello 0", "transform": "upper" } })
}

fn check_echo(answer: &Value) -> Result<()> {
    let result = &answer["result"];
    let text = result["structuredContent"]["result"]
        .as_str()
        .or_else(|| result["content"][0]["text"].as_str());
    if text != Some("HELLO 0") {
        bail!("Wassette's echo answered {answer}");
    }
    Ok(())
}

/// `cargo build` of the echo component for wasm32-wasip2 (a target of its
/// own under `target/`, outside both workspaces).
fn build_echo() -> Result<PathBuf> {
    let root = workspace::root();
    let target = root.join("target/wassette-echo");
    let status = workspace::cargo()
        .args([
            "build",
            "--release",
            "--target",
            WASIP2_TARGET,
            "--manifest-path",
        ])
        .arg(root.join("xtask/bench/wassette-echo/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .status()?;
    if !status.success() {
        bail!("building the Wassette echo component failed");
    }
    Ok(target
        .join(WASIP2_TARGET)
        .join("release/wassette_echo.wasm"))
}
