//! The CLI on the built-in packages: list, describe, check, call echo.

#[test]
fn list_shows_the_built_in_tools() {
    let warden = crate::warden();
    let run = warden.run(&["--json", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    let names: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"echo_echo".to_owned()), "{names:?}");
    assert!(names.contains(&"github_get_repo".to_owned()), "{names:?}");
}

#[test]
fn call_echo_runs_through_the_host() {
    let warden = crate::warden();
    let run = warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--input",
        r#"{"text": "Hello", "transform": "reverse"}"#,
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = run.json();
    assert_eq!(out["status"], "ok");
    assert_eq!(
        out["output"],
        serde_json::json!({ "text": "olleH", "chars": 5 })
    );
}

/// Compiled components in the data directory's cache.
fn compiled_artifacts(warden: &warden_tests::Warden) -> usize {
    warden_tests::files::compiled_artifacts(&warden.data_dir().join("cache"))
}

#[test]
fn listing_compiles_nothing_and_a_call_compiles_only_its_own_component() {
    let warden = crate::warden();
    assert_eq!(warden.run(&["list"]).code, 0);
    let described = warden.run(&["--json", "describe", "echo.echo"]);
    assert_eq!(described.code, 0, "{described:?}");
    assert_eq!(described.json()["world"], "warden:tool@0.2.0");
    assert_eq!(
        compiled_artifacts(&warden),
        0,
        "the catalog needs no compiler"
    );
    let run = warden
        .command()
        .env("RUST_LOG", "warden_runtime=debug")
        .args(["call", "echo.echo", "--input", r#"{"text": "a"}"#])
        .output()
        .expect("warden runs");
    assert!(run.status.success(), "{run:?}");
    assert_eq!(compiled_artifacts(&warden), 1, "only echo was compiled");
    // ... in a `warden compile-component` process, whose artifact the host loaded.
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(
        log.contains("component prepared") && log.contains("cache=External"),
        "{log}"
    );
}

#[test]
fn the_compiler_process_refuses_what_is_not_a_component() {
    let warden = crate::warden();
    let run = warden.run_with_stdin(&["compile-component", "--name", "junk"], "not wasm");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("junk"), "{run:?}");
    assert_eq!(compiled_artifacts(&warden), 0);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_compiler_process_announces_baseline_code_and_leaves_only_the_optimized_code() {
    use std::io::Write as _;
    let warden = crate::warden();
    let wasm =
        std::fs::read(warden_tests::package::repo_root().join("packages/echo/wasm/echo.wasm"))
            .expect("run `cargo xtask bundle` first");
    let compile = || {
        let mut child = warden
            .command()
            .args(["compile-component", "--name", "echo", "--baseline"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("warden runs");
        child.stdin.take().unwrap().write_all(&wasm).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(compile(), "baseline\n");
    assert_eq!(
        compiled_artifacts(&warden),
        1,
        "the baseline entry is gone once the optimized code is stored"
    );
    // The optimized code is there: nothing to announce, nothing compiled.
    assert_eq!(compile(), "");
    assert_eq!(compiled_artifacts(&warden), 1);
}

#[test]
fn invalid_input_is_refused_with_its_pointer() {
    let warden = crate::warden();
    let run = warden.run(&["--json", "call", "echo_echo", "--input", r#"{"text": 5}"#]);
    assert_eq!(run.code, 1, "{run:?}");
    let out = run.json();
    assert_eq!(out["code"], "invalid_input", "{out}");
    assert!(out["message"].as_str().unwrap().contains("/text"), "{out}");
}

#[test]
fn describe_shows_gates_and_credentials() {
    let warden = crate::warden();
    let run = warden.run(&["--json", "describe", "github.create_issue"]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = run.json();
    assert_eq!(out["default_permission"], "ask");
    assert!(
        out["effects"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("external_write"))
    );
    assert_eq!(out["credentials"][0]["vendor"], "github");
    assert_eq!(
        out["origin_gate_matrix"]["loop_run"],
        "gated_unless_granted"
    );
}

#[test]
fn check_reports_an_invalid_package_and_passes_a_valid_one() {
    let warden = crate::warden();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ok = warden.run(&["check", root.join("packages/echo").to_str().unwrap()]);
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(ok.stdout.contains("echo 0.1.0"), "{ok:?}");

    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("manifest.toml"),
        "schema_version = \"reborn.extension_manifest.v3\"\nid = \"Bad/Id\"\n",
    )
    .unwrap();
    let run = warden.run(&["check", bad.path().to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("manifest.toml:2"),
        "diagnostic names the line: {run:?}"
    );
}

/// `warden check --as bundled|installed|user`: the tier decides which
/// features are allowed; a lane this host does not run fails the check with
/// install's reason (check never says ok for what install refuses), and a
/// review rule is a warning.
#[test]
fn check_takes_the_package_source_and_prints_notes_and_warnings() {
    let warden = crate::warden();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("schemas")).unwrap();
    std::fs::write(dir.path().join("schemas/in.json"), "{}").unwrap();
    std::fs::write(
        dir.path().join("manifest.toml"),
        r#"schema_version = "reborn.extension_manifest.v3"
id = "pager"
name = "Pager"
version = "1"
description = "Pages."
trust = "first_party_requested"

[runtime]
kind = "first_party"
service = "pager"

[[tools]]
id = "pager.page"
description = "Page someone."
effects = ["external_write"]
default_permission = "allow"
origin_gate_matrix = { loop_run = "gated_unless_granted" }
input_schema_ref = "schemas/in.json"
"#,
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();
    let installed = warden.run(&["check", path]);
    assert_eq!(installed.code, 1, "{installed:?}");
    assert!(
        installed.stderr.contains("error[source_tier]"),
        "{installed:?}"
    );
    assert!(
        installed.stderr.contains("checked as installed"),
        "{installed:?}"
    );

    // Valid as bundled, but this host registers no service `pager`:
    // install would refuse it, so check does not say ok either.
    let bundled = warden.run(&["check", "--as", "bundled", path]);
    assert_eq!(bundled.code, 1, "{bundled:?}");
    assert!(!bundled.stdout.contains("ok    pager"), "{bundled:?}");
    assert!(
        bundled
            .stderr
            .contains("package `pager` needs what this host does not run")
            && bundled
                .stderr
                .contains("\n  - first_party service `pager`, which this host has not registered"),
        "{bundled:?}"
    );
    assert!(
        bundled.stderr.contains("warning[write_defaults_to_ask]"),
        "{bundled:?}"
    );

    let wrong = warden.run(&["check", "--as", "system", path]);
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(
        wrong.stderr.contains("unknown package source `system`"),
        "{wrong:?}"
    );
}
