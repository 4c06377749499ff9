//! Golden tests: `tests/ui/valid/*.toml` must load and match `<name>.out` (summary
//! and resolved package as JSON); `tests/ui/invalid/*.toml` must fail and match
//! `<name>.stderr` (the human rendering). Files the fixtures refer to live in
//! `tests/ui/assets`. `BLESS=1 cargo test -p warden-manifest` rewrites expectations.
//!
//! An invalid fixture is named after the rule it breaks: `<code>.toml` or
//! `<code>-<variant>.toml`, and must report that code.

use std::fs;
use std::path::{Path, PathBuf};

use warden_manifest::Code;

use crate::{check, ui_dir};

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let mut out: Vec<_> = fs::read_dir(ui_dir().join(kind))
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    out.sort();
    out
}

fn name_of(path: &Path) -> String {
    path.file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned()
}

/// Compare `actual` with the file at `expected`, or rewrite it under `BLESS=1`.
fn compare(expected: &Path, actual: &str, failures: &mut Vec<String>) {
    if std::env::var_os("BLESS").is_some() {
        fs::write(expected, actual).expect("bless");
        return;
    }
    match fs::read_to_string(expected) {
        Ok(want) if want == actual => {}
        Ok(want) => failures.push(format!(
            "{} differs (BLESS=1 to accept)\n--- expected\n{want}\n--- actual\n{actual}",
            expected.display()
        )),
        Err(_) => failures.push(format!(
            "{} is missing (BLESS=1 to create)\n--- actual\n{actual}",
            expected.display()
        )),
    }
}

#[test]
fn valid_fixtures_load() {
    let paths = fixtures("valid");
    assert!(!paths.is_empty());
    let mut failures = Vec::new();
    for path in &paths {
        let name = name_of(path);
        let text = fs::read_to_string(path).expect("read");
        match check(&format!("valid/{name}.toml"), &text) {
            Ok(package) => {
                let json = serde_json::to_string_pretty(&package).expect("json");
                let out = format!("{}\n{json}\n", warden_manifest::summary(&package));
                compare(&path.with_extension("out"), &out, &mut failures);
            }
            Err(diags) => failures.push(format!("{name} should be valid:\n{diags}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn invalid_fixtures_fail_with_their_rule() {
    let paths = fixtures("invalid");
    assert!(!paths.is_empty());
    let mut failures = Vec::new();
    for path in &paths {
        let name = name_of(path);
        let rule = name.split('-').next().expect("rule");
        let text = fs::read_to_string(path).expect("read");
        match check(&format!("invalid/{name}.toml"), &text) {
            Ok(_) => failures.push(format!("{name} should be invalid")),
            Err(diags) => {
                if !diags.iter().any(|d| d.code.as_str() == rule) {
                    failures.push(format!("{name} does not report `{rule}`:\n{diags}"));
                }
                if diags.iter().any(|d| d.line == 0 || d.column == 0) {
                    failures.push(format!("{name}: a diagnostic has no position"));
                }
                compare(
                    &path.with_extension("stderr"),
                    &format!("{diags}\n"),
                    &mut failures,
                );
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every rule code has an invalid fixture, except those a `.toml` file cannot show
/// (they are covered by tests in `contract.rs`).
#[test]
fn every_rule_has_a_fixture() {
    let covered_elsewhere = [
        Code::ManifestTooLarge,
        Code::ManifestNotUtf8,
        Code::ManifestUnreadable,
        Code::ModuleMissing,
    ];
    let names: Vec<String> = fixtures("invalid").iter().map(|p| name_of(p)).collect();
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| !covered_elsewhere.contains(c))
        .map(|c| c.as_str())
        .filter(|code| !names.iter().any(|n| n.split('-').next() == Some(code)))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without an invalid fixture: {missing:?}"
    );
}
