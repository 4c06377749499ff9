//! `cargo xtask new` as a tool author runs it, in a copy of the tree:
//! scaffold, bundle, then install and call the tool with the `warden` binary
//! of this workspace (built by `cargo test --workspace` for its own tests).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{root, text, xtask};

/// The `warden` binary next to the xtask binary.
fn warden() -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_xtask")).with_file_name("warden");
    assert!(
        binary.is_file(),
        "{} is missing: build it first (`cargo build --workspace`); `cargo test --workspace` does",
        binary.display()
    );
    binary
}

/// Copy the source tree, and the guests' release build outputs so the copy
/// builds only the new crate.
fn copy_tree(to: &Path) {
    for dir in ["guests", "wit", "packages", "tests/fixtures/packages"] {
        copy_dir(&root().join(dir), &to.join(dir), true);
    }
    for dir in ["release", "wasm32-unknown-unknown"] {
        let from = root().join("guests/target").join(dir);
        if from.is_dir() {
            copy_dir(&from, &to.join("guests/target").join(dir), false);
        }
    }
}

fn copy_dir(from: &Path, to: &Path, skip_target: bool) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if skip_target && name == "target" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&src, &dst, skip_target)
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map(drop).unwrap()
        }
    }
}

fn run_warden(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(warden())
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()
        .expect("warden runs")
}

#[test]
fn a_scaffolded_tool_bundles_installs_and_answers_a_call() {
    let tree = tempfile::tempdir().unwrap();
    copy_tree(tree.path());

    let created = xtask(tree.path(), &["new", "demo_tool"]);
    assert!(created.status.success(), "{}", text(&created));
    assert!(
        text(&created).contains("call demo_tool.hello"),
        "{}",
        text(&created)
    );
    let members = std::fs::read_to_string(tree.path().join("guests/Cargo.toml")).unwrap();
    assert!(members.contains("\"demo_tool\""), "{members}");

    let bundled = xtask(tree.path(), &["bundle", "--guest", "demo_tool"]);
    assert!(bundled.status.success(), "{}", text(&bundled));
    let package = tree.path().join("packages/demo_tool");
    assert!(package.join("wasm/demo_tool.wasm").is_file());

    let data = tempfile::tempdir().unwrap();
    let installed = run_warden(data.path(), &["install", package.to_str().unwrap()]);
    assert!(installed.status.success(), "{}", text(&installed));
    let called = run_warden(
        data.path(),
        &[
            "call",
            "demo_tool.hello",
            "--input",
            r#"{"name": "Ada"}"#,
            "--json",
        ],
    );
    assert!(called.status.success(), "{}", text(&called));
    let output: serde_json::Value = serde_json::from_slice(&called.stdout).unwrap();
    assert_eq!(output["output"]["greeting"], "Hello, Ada!", "{output}");
}

#[test]
fn an_http_tool_declares_its_credential_for_its_host_only() {
    let tree = tempfile::tempdir().unwrap();
    copy_tree(tree.path());
    let created = xtask(
        tree.path(),
        &["new", "weather", "--http", "api.weather.example"],
    );
    assert!(created.status.success(), "{}", text(&created));
    let manifest =
        std::fs::read_to_string(tree.path().join("packages/weather/manifest.toml")).unwrap();
    assert!(
        manifest.contains(r#"audience = { scheme = "https", host = "api.weather.example" }"#),
        "{manifest}"
    );

    let bundled = xtask(tree.path(), &["bundle", "--guest", "weather"]);
    assert!(bundled.status.success(), "{}", text(&bundled));
    let data = tempfile::tempdir().unwrap();
    let package = tree.path().join("packages/weather");
    let installed = run_warden(data.path(), &["install", package.to_str().unwrap()]);
    assert!(installed.status.success(), "{}", text(&installed));
    // No account connected yet: the host says which one, before any request.
    let called = run_warden(
        data.path(),
        &[
            "call",
            "weather.get",
            "--input",
            r#"{"path": "/"}"#,
            "--json",
        ],
    );
    assert!(!called.status.success());
    let failure: serde_json::Value = serde_json::from_slice(&called.stdout).unwrap();
    assert_eq!(failure["code"], "auth_required", "{failure}");
    assert_eq!(failure["auth"]["vendor"], "weather", "{failure}");
    assert_eq!(failure["auth"]["handle"], "weather_api_key", "{failure}");
}

#[test]
fn an_existing_or_invalid_name_is_refused_and_nothing_is_written() {
    let tree = tempfile::tempdir().unwrap();
    copy_tree(tree.path());
    let before = std::fs::read_to_string(tree.path().join("guests/Cargo.toml")).unwrap();

    let existing = xtask(tree.path(), &["new", "echo"]);
    assert!(!existing.status.success());
    assert!(
        text(&existing).contains("`echo` already exists"),
        "{}",
        text(&existing)
    );

    for (name, expected) in [("My-Tool", "not a valid tool name"), ("sdk", "reserved")] {
        let refused = xtask(tree.path(), &["new", name]);
        assert!(!refused.status.success(), "{name} accepted");
        assert!(text(&refused).contains(expected), "{}", text(&refused));
        assert!(!tree.path().join("packages").join(name).exists());
    }
    let bad_host = xtask(
        tree.path(),
        &["new", "weather", "--http", "https://x.example/"],
    );
    assert!(!bad_host.status.success());
    assert!(
        text(&bad_host).contains("`--http https://x.example/`"),
        "{}",
        text(&bad_host)
    );
    assert!(!tree.path().join("guests/weather").exists());
    assert_eq!(
        std::fs::read_to_string(tree.path().join("guests/Cargo.toml")).unwrap(),
        before
    );
}
