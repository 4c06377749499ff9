//! Compile limits through the binary (issue 42, finding 5): a component
//! whose code is over `[compile] max_code_bytes` is refused before compiling;
//! a compiler process past `[compile] timeout_ms` or `memory_bytes` is
//! killed; each surfaces from `install`, `check` and `call` as
//! `compile_limit_exceeded`, naming the limit and its value, and the
//! component is never compiled in the host's process instead.

use std::path::{Path, PathBuf};

use warden_tests::package::echo_variant;

/// A copy of echo installed as the third-party package `other`.
fn other_echo(dir: &Path) -> PathBuf {
    echo_variant(
        &dir.join("other"),
        &[
            ("id = \"echo\"", "id = \"other\""),
            ("id = \"echo.echo\"", "id = \"other.echo\""),
        ],
    )
}

/// Compiled components in the data directory's cache.
fn compiled(warden: &warden_tests::Warden) -> usize {
    warden_tests::files::compiled_artifacts(&warden.data_dir().join("cache"))
}

/// `install` and `check` of `other` both fail, saying `expected`; nothing
/// is installed.
fn refused(warden: &warden_tests::Warden, package: &Path, expected: &str) {
    let package = package.to_str().unwrap();
    let check = warden.run(&["check", package]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(check.all().contains(expected), "check: {check:?}");
    let install = warden.run(&["install", package]);
    assert_eq!(install.code, 1, "{install:?}");
    assert!(install.stderr.contains(expected), "install: {install:?}");
    assert!(!warden.data_dir().join("packages/other").exists());
}

#[test]
fn code_over_the_size_limit_is_refused_before_compiling() {
    let warden = crate::warden();
    warden.configure("[compile]\nmax_code_bytes = 1000\n");
    let scratch = tempfile::tempdir().unwrap();
    let other = other_echo(scratch.path());
    refused(&warden, &other, "code size limit of 1000 bytes");
    assert_eq!(compiled(&warden), 0, "nothing was compiled");
    // The bundled echo is the vendor's code: not held to it.
    let call = warden.run(&["call", "echo.echo", "--input", r#"{"text": "ok"}"#]);
    assert_eq!(call.code, 0, "{call:?}");
}

#[test]
fn a_compiler_past_its_time_limit_is_killed_and_the_component_refused() {
    let warden = crate::warden();
    // No compiler process starts, reads a component and compiles it in 1 ms.
    warden.configure("[compile]\ntimeout_ms = 1\n");
    let scratch = tempfile::tempdir().unwrap();
    refused(
        &warden,
        &other_echo(scratch.path()),
        "compile time limit of 1 ms",
    );
    // Not compiled in the host's process instead: a call of the bundled
    // echo (compiled on first use) fails the same way.
    let call = warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--input",
        r#"{"text": "ok"}"#,
    ]);
    assert_ne!(call.code, 0, "{call:?}");
    assert!(call.all().contains("compile_limit_exceeded"), "{call:?}");
    assert_eq!(compiled(&warden), 0);
}

#[test]
fn a_compiler_past_its_memory_limit_is_stopped_and_the_component_refused() {
    let warden = crate::warden();
    warden.configure("[compile]\nmemory_bytes = 4194304\n");
    let scratch = tempfile::tempdir().unwrap();
    refused(
        &warden,
        &other_echo(scratch.path()),
        "compile memory limit of 4194304 bytes",
    );
    assert_eq!(compiled(&warden), 0);
}
