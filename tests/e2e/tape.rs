//! `warden call --record` / `--replay`: a tool author's offline test loop.

use base64::Engine as _;
use warden_tests::{FakeGitHub, TOKEN, Warden};

const LEAKY: &str = r#"{"owner": "octo", "repo": "leaky"}"#;

/// The committed recording of `github.get_repo` the GitHub package's tests
/// replay. Regenerate it against the fake GitHub with
/// `cargo test --workspace --test e2e -- --ignored record_the_committed_get_repo_tape`.
const GET_REPO_TAPE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/tapes/github_get_repo.json"
);

/// Run `warden <args>` off the async workers (a test server may be serving on them).
async fn call(warden: Warden, args: Vec<String>) -> (Warden, warden_tests::Run) {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = warden.run(&args);
        (warden, run)
    })
    .await
    .unwrap()
}

fn args(input: &str, tape: (&str, &std::path::Path)) -> Vec<String> {
    [
        "--json",
        "call",
        "github.get_repo",
        "--input",
        input,
        tape.0,
        tape.1.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recording_holds_no_secret_and_replays_byte_identically_offline() {
    let fake = FakeGitHub::start().await;
    let live = crate::warden();
    fake.connect(&live);
    let tape_dir = tempfile::tempdir().unwrap();
    let tape = tape_dir.path().join("leaky.json");
    let (_live, recorded) = call(live, args(LEAKY, ("--record", &tape))).await;
    assert_eq!(recorded.code, 0, "{recorded:?}");
    assert_eq!(fake.requests().len(), 1);

    let text = std::fs::read_to_string(&tape).unwrap();
    let forms = [
        TOKEN.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(TOKEN),
        TOKEN.replace('_', "%5F"),
    ];
    for form in &forms {
        assert!(
            !text.contains(form.as_str()),
            "{form} is in the tape:\n{text}"
        );
    }
    assert!(
        text.contains("header authorization: Bearer {{secret:github_runtime_token}}"),
        "{text}"
    );

    // Another data dir: no account, no CA, no resolver; the fake is gone.
    drop(fake);
    let mut outputs = Vec::new();
    for _ in 0..2 {
        let offline = crate::warden();
        let args = args(LEAKY, ("--replay", &tape));
        let (_offline, replayed) = call(offline, args).await;
        assert_eq!(replayed.code, 0, "{replayed:?}");
        outputs.push(deterministic_part(&replayed));
    }
    assert_eq!(outputs[0], outputs[1], "a replay is deterministic");
    assert_eq!(
        outputs[0],
        deterministic_part(&recorded),
        "a replay gives what was recorded"
    );
}

/// The tool's output, as bytes, and the fuel it burned: everything of a
/// call's report but its wall time and memory peak.
fn deterministic_part(run: &warden_tests::Run) -> (String, serde_json::Value) {
    let report = run.json();
    (
        serde_json::to_string_pretty(&report["output"]).unwrap(),
        report["usage"]["fuel"].clone(),
    )
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "writes tests/fixtures/tapes/github_get_repo.json"]
async fn record_the_committed_get_repo_tape() {
    let fake = FakeGitHub::start().await;
    let live = crate::warden();
    fake.connect(&live);
    let tape = std::path::Path::new(GET_REPO_TAPE).to_path_buf();
    let args = args(r#"{"owner": "octo", "repo": "hello"}"#, ("--record", &tape));
    let (_live, run) = call(live, args).await;
    assert_eq!(run.code, 0, "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_repo_replays_from_the_committed_recording() {
    let warden = crate::warden();
    let tape = std::path::Path::new(GET_REPO_TAPE).to_path_buf();
    let args = args(r#"{"owner": "octo", "repo": "hello"}"#, ("--replay", &tape));
    let (_warden, run) = call(warden, args).await;
    assert_eq!(run.code, 0, "{run:?}");
    let out = run.json();
    assert_eq!(out["output"]["full_name"], "octo/hello", "{out}");
    assert_eq!(out["output"]["default_branch"], "main", "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_the_recording_does_not_hold_fails_with_a_diff() {
    let warden = crate::warden();
    let tape = std::path::Path::new(GET_REPO_TAPE).to_path_buf();
    let args = args(r#"{"owner": "octo", "repo": "other"}"#, ("--replay", &tape));
    let (_warden, run) = call(warden, args).await;
    assert_eq!(run.code, 4, "{run:?}");
    assert!(run.stderr.contains("error[replay_mismatch]"), "{run:?}");
    assert!(
        run.stderr.contains("request #1 differs from the tape"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("- tape:  https://api.github.com/repos/octo/hello"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("+ guest: https://api.github.com/repos/octo/other"),
        "{run:?}"
    );
}

#[test]
fn a_tape_for_another_tool_or_not_a_tape_is_refused_by_name() {
    let warden = crate::warden();
    let run = warden.run(&[
        "call",
        "echo.echo",
        "--input",
        r#"{"text": "x"}"#,
        "--replay",
        GET_REPO_TAPE,
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("was recorded for `github.get_repo`, not `echo.echo`"),
        "{run:?}"
    );
    let junk = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(junk.path(), "{}").unwrap();
    let run = warden.run(&[
        "call",
        "echo.echo",
        "--input",
        r#"{"text": "x"}"#,
        "--replay",
        junk.path().to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is not a usable tape"), "{run:?}");
}

/// A hosted MCP tool talks MCP to its server over a session of its own,
/// which a tape does not hold: `--record` and `--replay` refuse it before
/// anything is sent (a replay that went live performed the real call, with
/// the account's token, and exited 0).
#[tokio::test(flavor = "multi_thread")]
async fn a_hosted_tool_is_never_called_live_under_a_tape() {
    use warden_tests::fake_mcp::{FakeMcp, MCP_TOKEN, MCP_URL, Script, write_package};
    let fake = FakeMcp::start(Script::default()).await;
    let warden = crate::warden();
    fake.configure(&warden);
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), MCP_URL);
    let installed = warden.run(&["install", dir.path().to_str().unwrap()]);
    assert_eq!(installed.code, 0, "{}", installed.all());
    let set = warden.run_with_stdin(&["secret", "set", "example", "mcp_token"], MCP_TOKEN);
    assert_eq!(set.code, 0, "{}", set.all());
    // A live call lists the tools (the catalog is kept for later processes).
    let live = warden.run(&["call", "fake-mcp.weather", "--input", "{}"]);
    assert_eq!(live.code, 0, "{}", live.all());
    let live_calls = || fake.methods().iter().filter(|m| *m == "tools/call").count();
    assert_eq!(live_calls(), 1);

    let tapes = tempfile::tempdir().unwrap();
    let recorded = tapes.path().join("weather.json");
    let record = warden.run(&[
        "--json",
        "call",
        "fake-mcp.weather",
        "--input",
        "{}",
        "--record",
        recorded.to_str().unwrap(),
    ]);
    assert_eq!(record.code, 1, "{}", record.all());
    assert!(
        record.all().contains("tape_unsupported"),
        "{}",
        record.all()
    );
    assert!(!recorded.exists(), "no tape is written for a refused call");

    assert_eq!(live_calls(), 1, "nothing went live under --record");
    let sent_before = fake.requests().len();
    let tape = tapes.path().join("hand-written.json");
    let json = r#"{"format": "warden.tape.v1", "capability": "fake-mcp.weather", "exchanges": []}"#;
    std::fs::write(&tape, json).unwrap();
    let replay = warden.run(&[
        "call",
        "fake-mcp.weather",
        "--input",
        "{}",
        "--replay",
        tape.to_str().unwrap(),
    ]);
    assert_eq!(replay.code, 1, "{}", replay.all());
    assert!(
        replay.stderr.contains("cannot be replayed"),
        "{}",
        replay.all()
    );
    assert_eq!(
        fake.requests().len(),
        sent_before,
        "a replay sends nothing, not even a listing"
    );
}
