//! Every package under the workspace's `packages/*/` (as the bundled
//! packages they are) and `tests/fixtures/packages/*/` (as installed)
//! validates, and the shipped packages pass the
//! repository review rules (the lint ratchet). Packages are written
//! independently of this crate, so an empty `packages/` passes; an invalid
//! package fails with its diagnostics.

use std::path::Path;

use warden_manifest::{Source, ValidationOptions, load_package};

/// Check every `<dir>/*/manifest.toml` as coming from `source`; the
/// summaries, or every failure rendered.
fn check_packages(dir: &Path, source: Source) -> Result<Vec<String>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new()); // no packages/ directory: nothing to check
    };
    let opts = ValidationOptions::reviewed().source(source);
    let (mut summaries, mut failures) = (Vec::new(), Vec::new());
    let mut paths: Vec<_> = entries.map(|e| e.expect("entry").path()).collect();
    paths.sort();
    for path in paths {
        if !path.join("manifest.toml").is_file() {
            continue; // a package being written has no manifest yet
        }
        match load_package(&path, &opts) {
            Ok(package) => {
                let lints = warden_manifest::lints(&package, &opts);
                if lints.is_empty() {
                    summaries.push(warden_manifest::summary(&package));
                } else {
                    let lines: Vec<_> = lints.iter().map(ToString::to_string).collect();
                    failures.push(format!("{}:\n{}", path.display(), lines.join("\n")));
                }
            }
            Err(diags) => failures.push(diags.to_string()),
        }
    }
    if failures.is_empty() {
        Ok(summaries)
    } else {
        Err(failures.join("\n\n"))
    }
}

#[test]
fn workspace_packages_validate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages");
    match check_packages(&dir, Source::Bundled) {
        Ok(summaries) => summaries.iter().for_each(|s| println!("{s}")),
        Err(failures) => panic!("{failures}"),
    }
}

#[test]
fn fixture_packages_validate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/packages");
    match check_packages(&dir, Source::Installed) {
        Ok(summaries) => assert!(!summaries.is_empty()),
        Err(failures) => panic!("{failures}"),
    }
}

#[test]
fn an_invalid_package_fails_and_an_empty_dir_passes() {
    let dir = std::env::temp_dir().join(format!("warden-packages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("half-written")).expect("mkdir");
    assert_eq!(check_packages(&dir, Source::Installed), Ok(Vec::new()));
    std::fs::create_dir_all(dir.join("broken")).expect("mkdir");
    std::fs::write(
        dir.join("broken/manifest.toml"),
        "schema_version = \"reborn.extension_manifest.v2\"\n",
    )
    .expect("write");
    let err = check_packages(&dir, Source::Installed).expect_err("broken package");
    assert!(
        err.contains("error[schema_version]") && err.contains("broken/manifest.toml"),
        "{err}"
    );
    // The ratchet: a package the format accepts but the review rules flag fails too.
    std::fs::remove_dir_all(dir.join("broken")).expect("rm");
    std::fs::create_dir_all(dir.join("lax/schemas")).expect("mkdir");
    std::fs::write(dir.join("lax/schemas/in.json"), "{}").expect("write");
    std::fs::write(
        dir.join("lax/manifest.toml"),
        r#"schema_version = "reborn.extension_manifest.v3"
id = "lax"
name = "Lax"
version = "1"
description = "Accepted by the format, flagged by review."

[runtime]
kind = "wasm"
module = "wasm/lax.wasm"

[[tools]]
id = "lax.go"
description = "Go."
default_permission = "allow"
origin_gate_matrix = { loop_run = "gated_unless_granted", automation = "consent_sufficient" }
input_schema_ref = "schemas/in.json"
"#,
    )
    .expect("write");
    let err = check_packages(&dir, Source::Installed).expect_err("lint");
    assert!(err.contains("warning[consent_sufficient]"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
