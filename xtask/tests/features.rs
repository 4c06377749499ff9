//! `cargo build --workspace` (what `cargo xtask demo` and `cargo xtask`
//! itself build) and `cargo test --workspace` must give every shared
//! dependency the same features; otherwise the test run after a demo
//! compiles them again. Cargo turns on dev-dependencies' features only when
//! it builds tests, so a feature a test needs is also named by a normal
//! dependency (`warden-tests`' dependencies, the workspace's `clap` and
//! `wit-component`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Each package of the workspace's graph (name and version) with every
/// feature set it is built with, following `edges` (`normal,build` or
/// `normal,build,dev`), for the host's target: the builds this test guards
/// run here, and `--target all` would need every other platform's crates in
/// the local registry (a fresh machine has only this one's, and the suite runs
/// offline).
fn feature_sets(edges: &str) -> BTreeMap<String, BTreeSet<String>> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["tree", "--workspace", "--offline", "--locked"])
        .args(["--prefix", "none", "-e", edges, "-f", "{p}|{f}"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -e {edges}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        // `name vX.Y.Z (path)` for members; drop the path, keep name and version.
        let package = package.split(" (").next().unwrap_or(package).trim();
        let features = features
            .split(" (")
            .next()
            .unwrap_or(features)
            .trim()
            .to_owned();
        sets.entry(package.to_owned()).or_default().insert(features);
    }
    sets
}

#[test]
fn building_and_testing_the_workspace_build_shared_dependencies_alike() {
    let build = feature_sets("normal,build");
    let test = feature_sets("normal,build,dev");
    assert!(
        build.keys().any(|p| p.starts_with("wasmtime ")),
        "the build graph was read: {} packages",
        build.len()
    );
    let differing: Vec<String> = build
        .iter()
        .filter_map(|(package, built)| {
            let tested = test.get(package)?;
            (tested != built).then(|| format!("{package}: build {built:?}, test {tested:?}"))
        })
        .collect();
    assert!(
        differing.is_empty(),
        "a test build would compile these again with other features (name the \
         feature in a normal dependency, e.g. warden-tests'):\n{}",
        differing.join("\n")
    );
}
