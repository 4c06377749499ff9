//! Package identity through the `warden` binary: a package that takes over
//! a bundled id inherits neither its reviewed allowlist entry, nor its
//! grants, nor approvals given while another version was installed.

use warden_tests::package::{changed_echo, hostile_echo};

const INPUT: &str = r#"{"text": "hi"}"#;

#[test]
fn an_impostor_echo_installed_over_the_bundled_one_never_runs_ungated() {
    let warden = crate::warden();
    let genuine = warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--origin",
        "loop-run",
        "--input",
        INPUT,
    ]);
    assert_eq!(
        genuine.code, 0,
        "the bundled echo runs ungated: {genuine:?}"
    );

    let packages = tempfile::tempdir().unwrap();
    let hostile = hostile_echo(packages.path());
    let hostile = hostile.to_str().unwrap();
    // Its new effects and credential are shown, and need a yes.
    let install = warden.run(&["install", "--replace", hostile]);
    assert_eq!(install.code, 1, "{install:?}");
    assert!(
        install.stderr.contains("+ echo.echo: effect network added")
            && install
                .stderr
                .contains("+ echo.echo: credential github/github_runtime_token to https://collector.thief.example:443 added"),
        "{install:?}"
    );
    let install = warden.run(&["install", "--replace", "--yes", hostile]);
    assert_eq!(install.code, 0, "{install:?}");
    let call = warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--origin",
        "loop-run",
        "--input",
        INPUT,
    ]);
    assert_eq!(
        call.code, 2,
        "the impostor must wait for approval: {call:?}"
    );
    assert!(call.json()["approval_id"].is_string(), "{call:?}");
}

#[test]
fn a_resume_after_the_package_changed_is_refused_and_says_so() {
    let warden = crate::warden();
    let blocked = warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--origin",
        "automation",
        "--input",
        INPUT,
    ]);
    assert_eq!(blocked.code, 2, "automation asks: {blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();

    // v2 arrives while the question waits; then the person approves.
    let packages = tempfile::tempdir().unwrap();
    let v2 = changed_echo(packages.path());
    assert_eq!(
        warden
            .run(&["install", "--replace", v2.to_str().unwrap()])
            .code,
        0
    );
    let approve = warden.run(&["approvals", "approve", &approval]);
    assert_eq!(approve.code, 0, "{approve:?}");
    let resumed = warden.run(&[
        "--json",
        "call",
        "echo.echo",
        "--origin",
        "automation",
        "--resume",
        &approval,
        "--input",
        INPUT,
    ]);
    assert_eq!(resumed.code, 1, "{resumed:?}");
    let out = resumed.json();
    assert_eq!(out["code"], "approval_package_changed", "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("`echo` changed since this call was approved"),
        "{out}"
    );
}

#[test]
fn a_grant_keeps_working_across_runs_and_a_replacement_needs_a_new_one() {
    let warden = crate::warden();
    let call = || {
        warden.run(&[
            "--json",
            "call",
            "echo.echo",
            "--origin",
            "automation",
            "--input",
            INPUT,
        ])
    };
    let blocked = call();
    assert_eq!(blocked.code, 2, "{blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();
    let approve = warden.run(&["approvals", "approve", "--grant", &approval]);
    assert_eq!(approve.code, 0, "{approve:?}");
    // Every `warden` run is a new process: the stored grant covers the bundled echo.
    assert_eq!(call().code, 0, "the grant covers the bundled package");

    let packages = tempfile::tempdir().unwrap();
    let v2 = changed_echo(packages.path());
    assert_eq!(
        warden
            .run(&["install", "--replace", v2.to_str().unwrap()])
            .code,
        0
    );
    assert_eq!(call().code, 2, "a replacement inherits no grant");
}

#[test]
fn grants_are_listed_and_a_revoked_one_covers_nothing() {
    let warden = crate::warden();
    let call = || {
        warden.run(&[
            "--json",
            "call",
            "echo.echo",
            "--origin",
            "automation",
            "--input",
            INPUT,
        ])
    };
    let none = warden.run(&["--json", "grants", "list"]);
    assert_eq!(none.json(), serde_json::json!([]), "{none:?}");
    let blocked = call();
    assert_eq!(blocked.code, 2, "{blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();
    let approve = warden.run(&["approvals", "approve", "--grant", &approval]);
    assert_eq!(approve.code, 0, "{approve:?}");
    assert_eq!(call().code, 0, "the grant covers the call");

    let listed = warden.run(&["--json", "grants", "list"]).json();
    let grants = listed.as_array().expect("a list");
    assert_eq!(grants.len(), 1, "{listed}");
    assert_eq!(grants[0]["capability_id"], "echo.echo");
    assert_eq!(grants[0]["origin"], "automation");
    let id = grants[0]["id"].as_str().unwrap().to_owned();

    let revoke = warden.run(&["grants", "revoke", &id]);
    assert_eq!(revoke.code, 0, "{revoke:?}");
    assert_eq!(call().code, 2, "a revoked grant covers nothing");
    let listed = warden.run(&["--json", "grants", "list"]);
    assert_eq!(listed.json(), serde_json::json!([]));
    let again = warden.run(&["grants", "revoke", &id]);
    assert_ne!(again.code, 0, "{again:?}");
    assert!(again.stderr.contains("no live grant"), "{again:?}");
}
