//! The data directory is its owner's alone, through the binary (issue 42,
//! finding 7): under umask 022 the directory was 0755 and
//! `approvals.sqlite3` and `audit.jsonl` were 0644, so any local user read
//! every approval's input and its callers' subjects.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output};

use warden_tests::files::readable_by_others;
use warden_tests::package::echo_variant;

/// `warden --data-dir <data> <args>` started with umask 022, as from an
/// ordinary shell.
fn warden_022(data: &Path, args: &[&str]) -> Output {
    let output = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 022 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_warden"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .expect("sh runs");
    assert!(
        output.status.success(),
        "warden {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn nothing_warden_writes_is_readable_by_others_under_umask_022() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    let other = echo_variant(
        &scratch.path().join("other"),
        &[
            ("id = \"echo\"", "id = \"other\""),
            ("id = \"echo.echo\"", "id = \"other.echo\""),
        ],
    );
    warden_022(&data, &["install", other.to_str().unwrap()]);
    warden_022(&data, &["call", "echo.echo", "--input", r#"{"text": "a"}"#]);
    warden_022(&data, &["--json", "approvals", "list"]);
    // What the finding named, and what else holds a caller's data.
    for file in [
        "approvals.sqlite3",
        "audit.jsonl",
        "cache",
        "packages/other",
    ] {
        assert!(data.join(file).exists(), "{file} was written");
    }
    assert_eq!(readable_by_others(&data), vec![]);
}

#[test]
fn a_loose_data_dir_is_tightened_when_warden_opens_it() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    warden_022(&data, &["call", "echo.echo", "--input", r#"{"text": "a"}"#]);
    // As an earlier Warden left it under umask 022.
    let set = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set(&data, 0o755);
    set(&data.join("approvals.sqlite3"), 0o644);
    set(&data.join("audit.jsonl"), 0o644);
    set(&data.join("cache"), 0o755);
    assert!(!readable_by_others(&data).is_empty());

    warden_022(&data, &["--json", "list"]);
    assert_eq!(readable_by_others(&data), vec![]);
}
