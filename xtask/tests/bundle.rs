//! `cargo xtask bundle` as a user runs it. These tests expect the tree to be
//! bundled already (`cargo xtask test` bundles before it runs them).

mod support;

use std::path::{Path, PathBuf};

use support::{root, text, xtask};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if src.is_dir() {
            copy_dir(&src, &dst)
        } else {
            std::fs::copy(&src, &dst).map(drop).unwrap()
        }
    }
}

/// Every package a bundled guest writes: its wasm, digests and archive exist.
fn bundled_packages() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("packages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("manifest.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn check_passes_after_bundling_and_fails_after_a_source_changes() {
    let copy = tempfile::tempdir().unwrap();
    for dir in ["guests", "wit", "packages", "tests/fixtures/packages"] {
        if root().join(dir).is_dir() {
            copy_dir(&root().join(dir), &copy.path().join(dir));
        }
    }
    let fresh = xtask(copy.path(), &["bundle", "--check"]);
    assert!(
        fresh.status.success(),
        "bundle --check right after bundling:\n{}",
        text(&fresh)
    );
    assert!(text(&fresh).contains("fresh  echo"), "{}", text(&fresh));

    let source = copy.path().join("guests/echo/src/lib.rs");
    let mut code = std::fs::read_to_string(&source).unwrap();
    code.push_str("\n// touched\n");
    std::fs::write(&source, code).unwrap();
    let stale = xtask(copy.path(), &["bundle", "--check"]);
    assert!(
        !stale.status.success(),
        "bundle --check after touching a source must fail:\n{}",
        text(&stale)
    );
    assert!(
        text(&stale).contains("stale  echo: sources of `echo` changed"),
        "{}",
        text(&stale)
    );
}

#[test]
fn a_manifest_edit_makes_the_package_stale() {
    let copy = tempfile::tempdir().unwrap();
    for dir in ["guests", "wit", "packages", "tests/fixtures/packages"] {
        if root().join(dir).is_dir() {
            copy_dir(&root().join(dir), &copy.path().join(dir));
        }
    }
    let manifest = copy.path().join("packages/echo/manifest.toml");
    let edited = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("Returns text", "Gives text");
    std::fs::write(&manifest, edited).unwrap();
    let stale = xtask(copy.path(), &["bundle", "--check", "--guest", "echo"]);
    assert!(!stale.status.success());
    assert!(
        text(&stale).contains("files of packages/echo changed"),
        "{}",
        text(&stale)
    );
}

#[test]
fn a_guest_importing_outside_the_contract_is_refused_by_name() {
    let out = xtask(&root(), &["bundle", "--guest", "bad-import"]);
    assert!(
        !out.status.success(),
        "bundling bad-import must fail:\n{}",
        text(&out)
    );
    let message = text(&out);
    assert!(
        message.contains("imports `wasi:sockets/tcp@0.2.0`, outside the contract world"),
        "{message}"
    );
    assert!(
        !root()
            .join("tests/fixtures/packages/bad-import/wasm/bad_import.wasm")
            .exists()
    );
}

#[test]
fn bundled_components_import_only_contract_interfaces() {
    let packages = bundled_packages();
    assert!(
        packages.iter().any(|p| p.ends_with("echo")),
        "echo is bundled: {packages:?}"
    );
    for dir in packages {
        let sums = std::fs::read_to_string(dir.join("SHA256SUMS"))
            .expect("every bundled package has SHA256SUMS");
        let wasm: Vec<&str> = sums
            .lines()
            .filter_map(|l| l.split_once("  "))
            .map(|(_, p)| p)
            .filter(|p| p.ends_with(".wasm"))
            .collect();
        let manifest = std::fs::read_to_string(dir.join("manifest.toml")).unwrap();
        let moduleless = |l: &str| l == "[mcp]" || l == "kind = \"first_party\"";
        if manifest.lines().any(|l| moduleless(l.trim())) {
            // A hosted MCP server or a first-party service: no module at all.
            assert!(
                wasm.is_empty(),
                "{}: an [mcp] or first_party package has no module",
                dir.display()
            );
            continue;
        }
        assert_eq!(wasm.len(), 1, "{}: one module per package", dir.display());
        let bytes = std::fs::read(dir.join(wasm[0])).unwrap();
        for import in component_imports(&bytes) {
            assert!(
                import.starts_with("warden:tool/"),
                "{}: imports {import}",
                dir.display()
            );
            assert!(!import.starts_with("wasi:"));
        }
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert!(
            root()
                .join(format!("target/packages/{name}.tar.gz"))
                .is_file(),
            "archive for {name}"
        );
    }
}

/// Top-level import names of a component, read with wasmparser.
fn component_imports(bytes: &[u8]) -> Vec<String> {
    use wasmparser::{Parser, Payload};
    let mut depth = 0usize;
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.expect("valid component") {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    names.push(import.unwrap().name.name.to_string());
                }
            }
            _ => {}
        }
    }
    assert!(
        !names.is_empty(),
        "a tool component imports at least the log interface"
    );
    names
}
