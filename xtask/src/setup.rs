//! What `cargo xtask test` installs on a fresh machine besides Rust
//! targets: PostgreSQL for the store tests, Prometheus for the metrics
//! test, minisign for the signing test, the CNCF Distribution registry and
//! skopeo for the OCI distribution test, Chromium for the console's browser
//! test, and the official Python MCP SDK
//! (in a virtual environment under `target/`) for the Python client test.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};

use crate::workspace;

/// The SDK version the Python client test is written against (2.x).
const PYTHON_MCP: &str = "mcp>=2,<3";

/// Installs the distribution's PostgreSQL server when no `initdb` is found
/// where the test harness (`warden_tests::postgres`) looks for it.
pub(crate) fn ensure_postgres() -> Result<()> {
    if postgres_installed() {
        return Ok(());
    }
    apt_install(
        "postgresql",
        "PostgreSQL is needed by the store tests; install the `postgresql` package \
         (or set WARDEN_PG_BIN to its bin directory)",
    )?;
    if !postgres_installed() {
        bail!("apt-get installed postgresql, but no initdb is in /usr/lib/postgresql/*/bin");
    }
    Ok(())
}

/// Installs the distribution's Prometheus server when neither
/// `$WARDEN_PROMETHEUS` nor a `prometheus` on `PATH` is there (what the
/// test harness, `warden_tests::prometheus`, runs).
pub(crate) fn ensure_prometheus() -> Result<()> {
    let on_path = || {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join("prometheus").is_file())
        })
    };
    if std::env::var_os("WARDEN_PROMETHEUS").is_some() || on_path() {
        return Ok(());
    }
    apt_install(
        "prometheus",
        "Prometheus scrapes `warden serve --metrics` in the metrics test; install the \
         `prometheus` package (or set WARDEN_PROMETHEUS to its binary)",
    )?;
    if !on_path() {
        bail!("apt-get installed prometheus, but no `prometheus` is on PATH");
    }
    Ok(())
}

/// Installs the distribution's `minisign` when none is on `PATH`: the
/// signing test checks Warden's signatures with it, and Warden checks its.
pub(crate) fn ensure_minisign() -> Result<()> {
    let on_path = || {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join("minisign").is_file())
        })
    };
    if on_path() {
        return Ok(());
    }
    apt_install(
        "minisign",
        "minisign is needed by the package signing test; install the `minisign` package",
    )?;
    if !on_path() {
        bail!("apt-get installed minisign, but no `minisign` is on PATH");
    }
    Ok(())
}

/// Installs Debian's `docker-registry` (the CNCF Distribution registry the
/// OCI test runs, unless `$WARDEN_REGISTRY` names another binary) and
/// `skopeo` (the independent client that reads what Warden pushed) when
/// either is missing from `PATH`.
pub(crate) fn ensure_registry_tools() -> Result<()> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
    };
    if std::env::var_os("WARDEN_REGISTRY").is_none() && !on_path("docker-registry") {
        apt_install(
            "docker-registry",
            "the OCI distribution test runs a real registry; install the `docker-registry` \
             package (or set WARDEN_REGISTRY to a Distribution registry binary)",
        )?;
    }
    if !on_path("skopeo") {
        apt_install(
            "skopeo",
            "the OCI distribution test checks what Warden pushed with skopeo; install the \
             `skopeo` package",
        )?;
    }
    for tool in ["docker-registry", "skopeo"] {
        let wanted = tool == "skopeo" || std::env::var_os("WARDEN_REGISTRY").is_none();
        if wanted && !on_path(tool) {
            bail!("apt-get installed {tool}, but no `{tool}` is on PATH");
        }
    }
    Ok(())
}

/// Installs Debian's `chromium` and `chromium-driver` when `chromedriver`
/// is missing from `PATH`: the console's browser test drives a headless
/// Chromium through WebDriver.
pub(crate) fn ensure_chromium() -> Result<()> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
    };
    if std::env::var_os("WARDEN_CHROMEDRIVER").is_some() || on_path("chromedriver") {
        return Ok(());
    }
    for package in ["chromium", "chromium-driver"] {
        apt_install(
            package,
            "the web console's browser test drives headless Chromium; install the `chromium` \
             and `chromium-driver` packages (or set WARDEN_CHROMEDRIVER and WARDEN_CHROMIUM)",
        )?;
    }
    if !on_path("chromedriver") {
        bail!("apt-get installed chromium-driver, but no `chromedriver` is on PATH");
    }
    Ok(())
}

/// Installs the distribution's `npm` (with Node) when none is on `PATH`:
/// the MCP conformance suite is installed with it.
pub(crate) fn ensure_npm() -> Result<()> {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("npm").is_file()));
    if on_path {
        return Ok(());
    }
    apt_install(
        "npm",
        "npm is needed to install the MCP conformance suite; install Node.js with npm",
    )
}

/// The reference server the e2e tests put behind Warden (pinned: its tool
/// names are part of the tests).
const SERVER_EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// `target/everything`: Node 22 and `@modelcontextprotocol/server-everything`,
/// installed with npm once; the directory the e2e tests read as
/// `$WARDEN_EVERYTHING`.
pub(crate) fn ensure_everything() -> Result<PathBuf> {
    let dir = workspace::root().join("target/everything");
    let modules = dir.join("node_modules");
    let ready = modules.join(".bin/node").exists()
        && modules
            .join("@modelcontextprotocol/server-everything/dist/index.js")
            .exists();
    if ready {
        return Ok(dir);
    }
    ensure_npm()?;
    println!("xtask test: installing Node 22 and {SERVER_EVERYTHING} into target/everything (npm)");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    npm_install(&dir, &["node@22", SERVER_EVERYTHING])?;
    Ok(dir)
}

/// `npm install <packages>` in `dir`.
pub(crate) fn npm_install(dir: &std::path::Path, packages: &[&str]) -> Result<()> {
    let status = std::process::Command::new("npm")
        .args(["install", "--no-audit", "--no-fund"])
        .args(packages)
        .current_dir(dir)
        .status()
        .context("running npm (is Node.js with npm installed?)")?;
    if !status.success() {
        bail!("npm install {} failed", packages.join(" "));
    }
    Ok(())
}

/// `apt-get install -y <package>` (updating the package lists once if the
/// first try fails); `why` is the error when it cannot.
pub(crate) fn apt_install(package: &str, why: &str) -> Result<()> {
    println!("xtask: installing {package} (apt-get install {package})");
    let apt = |args: &[&str]| {
        std::process::Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    let install = ["install", "-y", "--no-install-recommends", package];
    // A fresh machine's package lists may be empty: update once, then retry.
    if apt(&install) || (apt(&["update"]) && apt(&install)) {
        Ok(())
    } else {
        bail!("{why}; apt-get could not install `{package}`")
    }
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

/// `target/python`: a virtual environment with the `mcp` package; its
/// interpreter (what the e2e tests run as `$WARDEN_PYTHON`).
pub(crate) fn ensure_python_mcp() -> Result<PathBuf> {
    let venv = workspace::root().join("target/python");
    let python = venv.join("bin/python");
    let has_sdk = |python: &PathBuf| {
        std::process::Command::new(python)
            .args(["-c", "import mcp"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_sdk(&python) {
        return Ok(python);
    }
    println!("xtask test: installing the Python MCP SDK into target/python (pip)");
    if !python.exists() {
        let made = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv (is Python 3 installed?)")?;
        if !made.success() {
            bail!("python3 -m venv failed (on Debian: apt-get install python3-venv)");
        }
    }
    let installed = std::process::Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", PYTHON_MCP])
        .status()
        .context("running pip")?;
    if !installed.success() || !has_sdk(&python) {
        bail!("pip could not install the Python MCP SDK ({PYTHON_MCP})");
    }
    Ok(python)
}
