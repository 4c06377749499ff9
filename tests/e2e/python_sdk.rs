//! The official Python MCP SDK (2.x) as a real client of `warden serve`:
//! a client without an elicitation callback gets the approval id, a person
//! approves it with the CLI, and the identical call then runs exactly once
//! (`tests/clients/python_approve_again.py`); a call whose account is not
//! connected shows the structured `auth_required` in `structuredContent`
//! and `_meta` (`tests/clients/python_auth_required.py`).
//!
//! The interpreter is `$WARDEN_PYTHON`, else `target/python/bin/python`;
//! `cargo xtask test` creates that virtual environment with the SDK.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("host/cli is two levels below the workspace root")
}

fn python() -> PathBuf {
    std::env::var_os("WARDEN_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/python/bin/python"))
}

/// Run `tests/clients/<script>` with the SDK's interpreter and the
/// `warden` binary; it must succeed and print `ok_line`.
fn run_client(script: &str, ok_line: &str) {
    let python = python();
    assert!(
        python.exists(),
        "no Python with the `mcp` SDK at {}: run `cargo xtask test` (it installs one into \
         target/python) or set WARDEN_PYTHON",
        python.display()
    );
    let out = Command::new(&python)
        .arg(root().join("tests/clients").join(script))
        .arg(env!("CARGO_BIN_EXE_warden"))
        .output()
        .expect("python starts");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(ok_line), "{stdout}\n{stderr}");
}

#[test]
fn a_python_client_without_elicitation_approves_out_of_band_and_runs_once() {
    run_client(
        "python_approve_again.py",
        "OK: approved out of band, the identical call ran once",
    );
}

#[test]
fn a_python_client_sees_a_structured_auth_required() {
    run_client(
        "python_auth_required.py",
        "OK: auth_required is structured for the Python SDK",
    );
}
