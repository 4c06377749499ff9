//! The `near:agent@0.4.1` compatibility lane through the binary: a package
//! built for that world installs, and `describe` names the world; so does
//! one built for `warden:tool@0.1.0`, beside today's 0.2.0.

use std::path::{Path, PathBuf};

fn near_probe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/packages/near-probe")
}

#[test]
fn describe_shows_which_world_a_component_uses() {
    let warden = crate::warden();
    let install = warden.run(&["install", near_probe().to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:?}");

    let described = warden.run(&["--json", "describe", "near-probe.get_repo"]);
    assert_eq!(described.code, 0, "{described:?}");
    assert_eq!(described.json()["world"], "near:agent@0.4.1");
    let text = warden.run(&["describe", "near-probe.get_repo"]);
    assert!(
        text.stdout
            .contains("world       near:agent@0.4.1 (compatibility world)"),
        "{text:?}"
    );

    let echo = warden.run(&["--json", "describe", "echo.echo"]);
    assert_eq!(echo.json()["world"], "warden:tool@0.2.0", "{echo:?}");

    // A component built against 0.1.0 installs and runs unchanged.
    let old = near_probe().with_file_name("world-0-1");
    let install = warden.run(&["install", old.to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:?}");
    let described = warden.run(&["--json", "describe", "world-0-1.echo"]);
    assert_eq!(
        described.json()["world"],
        "warden:tool@0.1.0",
        "{described:?}"
    );
    let run = warden.run(&["--json", "call", "world-0-1.echo", "--input", r#"{"x": 1}"#]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["output"]["echo"],
        serde_json::json!({"x": 1}),
        "{run:?}"
    );
}

#[test]
fn a_near_agent_tool_runs_through_the_binary() {
    let warden = crate::warden();
    let install = warden.run(&["install", near_probe().to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:?}");
    let run = warden.run(&[
        "--json",
        "call",
        "near-probe.host_calls",
        "--input",
        r#"{"x": 1}"#,
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let output = &run.json()["output"];
    assert_eq!(output["capability_id"], "near-probe.host_calls", "{run:?}");
    assert_eq!(output["secret_exists"]["github_runtime_token"], false);
}
