//! The GitHub extension end to end against a fake GitHub over HTTPS.

use warden_tests::{FakeGitHub, TOKEN, Warden};

fn connected(fake: &FakeGitHub) -> Warden {
    let warden = crate::warden();
    fake.connect(&warden);
    warden
}

#[tokio::test(flavor = "multi_thread")]
async fn get_repo_returns_the_repo_with_the_token_injected_by_the_host() {
    let fake = FakeGitHub::start().await;
    let warden = connected(&fake);
    let run = tokio::task::spawn_blocking(move || {
        let run = warden.run(&[
            "--json",
            "call",
            "github.get_repo",
            "--input",
            r#"{"owner": "octo", "repo": "hello"}"#,
        ]);
        (warden, run)
    });
    let (_warden, run) = run.await.unwrap();
    assert_eq!(run.code, 0, "{run:?}");
    let out = run.json();
    assert_eq!(out["output"]["full_name"], "octo/hello", "{out}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert!(
        !run.all().contains(TOKEN),
        "the token never reaches the output"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_secret_is_auth_required_before_any_request() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let run = tokio::task::spawn_blocking(move || {
        warden.run(&[
            "--json",
            "call",
            "github.get_repo",
            "--input",
            r#"{"owner": "octo", "repo": "hello"}"#,
        ])
    })
    .await
    .unwrap();
    assert_eq!(run.code, 3, "auth_required has its own exit code: {run:?}");
    let out = run.json();
    assert_eq!(out["code"], "auth_required", "{out}");
    assert_eq!(out["reason"], "missing", "{out}");
    assert_eq!(out["vendor"], "github", "{out}");
    assert_eq!(out["scopes"], serde_json::json!(["repo"]), "{out}");
    assert_eq!(out["extension"], "github", "{out}");
    assert_eq!(out["connect"], "warden auth connect github", "{out}");
    assert!(out["message"].as_str().unwrap().contains("github"), "{out}");
    assert_eq!(out["auth"]["reason"], "missing", "{out}");
    assert_eq!(out["auth"]["vendor"], "github", "{out}");
    assert_eq!(out["auth"]["extension"], "github", "{out}");
    assert_eq!(out["auth"]["scopes"], serde_json::json!(["repo"]), "{out}");
    assert!(
        fake.requests().is_empty(),
        "nothing was sent without a credential"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_issue_waits_for_approval_then_posts_exactly_once() {
    let fake = FakeGitHub::start().await;
    let warden = connected(&fake);
    let input = r#"{"owner": "octo", "repo": "hello", "title": "Found a bug"}"#;
    let (warden, blocked) = tokio::task::spawn_blocking(move || {
        let run = warden.run(&["--json", "call", "github.create_issue", "--input", input]);
        (warden, run)
    })
    .await
    .unwrap();
    assert_eq!(blocked.code, 2, "the call waits for approval: {blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();
    assert_eq!(
        fake.count("POST", "/repos/octo/hello/issues"),
        0,
        "nothing is sent before approval"
    );

    let (warden, listed) = tokio::task::spawn_blocking(move || {
        let run = warden.run(&["--json", "approvals", "list"]);
        (warden, run)
    })
    .await
    .unwrap();
    assert!(listed.stdout.contains(&approval), "{listed:?}");

    let (warden, resumed, again, changed) = tokio::task::spawn_blocking(move || {
        let approve = warden.run(&["approvals", "approve", &approval]);
        assert_eq!(approve.code, 0, "{approve:?}");
        let changed = warden.run(&[
            "--json",
            "call",
            "github.create_issue",
            "--resume",
            &approval,
            "--input",
            r#"{"owner": "octo", "repo": "hello", "title": "Something else"}"#,
        ]);
        let resumed = warden.run(&[
            "--json",
            "call",
            "github.create_issue",
            "--resume",
            &approval,
            "--input",
            input,
        ]);
        let again = warden.run(&[
            "--json",
            "call",
            "github.create_issue",
            "--resume",
            &approval,
            "--input",
            input,
        ]);
        (warden, resumed, again, changed)
    })
    .await
    .unwrap();
    drop(warden);
    assert_eq!(changed.code, 1, "a changed input is refused: {changed:?}");
    assert_eq!(changed.json()["code"], "approval_input_changed");
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(resumed.json()["output"]["number"], 7);
    assert_ne!(
        again.code, 0,
        "a second resume does not dispatch again: {again:?}"
    );
    assert_eq!(
        fake.count("POST", "/repos/octo/hello/issues"),
        1,
        "exactly one POST after approval"
    );
}
