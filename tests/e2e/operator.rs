//! The deployment's own packages (`[packages] bundled` in warden.toml):
//! packages written to the format as the ecosystem publishes them — asking
//! for first-party trust, with an `[admin_configuration]` — load from the
//! operator's directory without edits; the same package installed by a user
//! is refused, naming why.

use serde_json::json;

use crate::messaging::chat_variant;

const ADMIN: &str = "\n[admin_configuration]\ngroup_id = \"extension.chat\"\n\
                     display_name = \"Chat deployment\"\n\
                     description = \"The workspace the chat tools act in.\"\n\
                     fields = [{ handle = \"chat_workspace\", label = \"Workspace\", \
                     secret = false, required = true }]\n";

fn as_published(manifest: String) -> String {
    manifest.replace(
        "trust = \"third_party\"",
        "trust = \"first_party_requested\"",
    ) + ADMIN
}

#[test]
fn an_operators_package_loads_as_published_and_a_users_copy_is_refused() {
    let warden = crate::warden();
    let packages = tempfile::tempdir().unwrap();
    let published = chat_variant(as_published);
    let dir = packages.path().join("chat");
    std::fs::rename(published.path(), &dir).unwrap();

    let installed = warden.run(&["install", dir.to_str().unwrap()]);
    assert_eq!(installed.code, 1, "{installed:?}");
    assert!(
        installed
            .stderr
            .contains("only allowed in a bundled package"),
        "{installed:?}"
    );

    // The operator's `[trust]` pins the package's content: a pin naming
    // other content is refused, naming both digests ...
    let zeros = "0".repeat(64);
    warden.configure(&format!(
        "[trust.chat]\ndigest = \"{zeros}\"\ntrust = \"first_party\"\n"
    ));
    let mismatch = warden.run(&["install", dir.to_str().unwrap()]);
    assert_ne!(mismatch.code, 0, "{mismatch:?}");
    let digest = mismatch
        .stderr
        .split("this package's digest is ")
        .nth(1)
        .and_then(|rest| rest.get(..64))
        .unwrap_or_else(|| panic!("the refusal names the digest: {mismatch:?}"))
        .to_owned();
    // ... and the pinned content installs as published, with the trust the
    // operator granted, and says what it asked for.
    warden.configure(&format!(
        "[trust.chat]\ndigest = \"{digest}\"\ntrust = \"first_party\"\n"
    ));
    let pinned = warden.run(&["install", dir.to_str().unwrap()]);
    assert_eq!(pinned.code, 0, "{pinned:?}");
    assert!(
        pinned
            .stdout
            .contains("(first_party; requested first_party_requested)"),
        "{pinned:?}"
    );
    let listed = warden.run(&["--json", "list"]).json();
    let whoami = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["capability_id"] == "chat.whoami")
        .cloned()
        .expect("the pinned package is listed");
    assert_eq!(whoami["package"]["trust"], "first_party", "{whoami}");
    assert_eq!(warden.run(&["uninstall", "chat"]).code, 0);

    warden.configure(&format!("[packages]\nbundled = [{:?}]\n", packages.path()));
    let listed = warden.run(&["--json", "list"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let whoami = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["capability_id"] == "chat.whoami")
        .cloned()
        .expect("the operator's package is listed");
    assert_eq!(whoami["package"]["provenance"], "bundled", "{whoami}");
    assert_eq!(
        whoami["package"]["requested_trust"],
        "first_party_requested"
    );
    let run = warden.run(&["--json", "call", "chat.whoami", "--input", "{}"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.json()["output"]["user_ref"], json!("U-me"));

    // The operator fills in its `[admin_configuration]`, as declared.
    let show = warden.run(&["admin", "show", "chat"]);
    assert!(show.stdout.contains("missing (required)"), "{show:?}");
    let set = warden.run_with_stdin(&["admin", "set", "chat", "chat_workspace"], "T-acme\n");
    assert_eq!(set.code, 0, "{set:?}");
    let show = warden.run(&["--json", "admin", "show", "chat"]).json();
    assert_eq!(show[0]["handle"], "chat_workspace", "{show}");
    assert_eq!(show[0]["value"], "T-acme", "{show}");
    let unknown = warden.run_with_stdin(&["admin", "set", "chat", "nope"], "x");
    assert_ne!(unknown.code, 0, "{unknown:?}");
    assert!(
        unknown.stderr.contains("has no field `nope`"),
        "{unknown:?}"
    );
    // Not an account: never listed as one.
    let accounts = warden.run(&["secret", "list"]);
    assert!(!accounts.stdout.contains("admin"), "{accounts:?}");

    // A directory the operator names that is not there is an error, not
    // a silently smaller catalog.
    warden.configure("[packages]\nbundled = [\"/nonexistent/warden-packages\"]\n");
    let listed = warden.run(&["list"]);
    assert_ne!(listed.code, 0, "{listed:?}");
    assert!(
        listed.stderr.contains("/nonexistent/warden-packages"),
        "{listed:?}"
    );
}

/// An operator's package with the id of one built into the binary takes
/// its place (the deployment chose it); two of the operator's with one id
/// are one too many, and the second is skipped, saying why.
#[test]
fn an_operators_package_takes_the_place_of_a_built_in_one() {
    let warden = crate::warden();
    let packages = tempfile::tempdir().unwrap();
    let theirs = "Echo, the deployment's own.";
    let edit = [(
        "description = \"Echo a text back, optionally transformed (upper, lower, reverse).\"",
        "description = \"Echo, the deployment's own.\"",
    )];
    warden_tests::package::echo_variant(&packages.path().join("echo"), &edit);
    warden_tests::package::echo_variant(&packages.path().join("echo-again"), &edit);
    warden.configure(&format!("[packages]\nbundled = [{:?}]\n", packages.path()));
    let described = warden.run(&["--json", "describe", "echo.echo"]);
    assert_eq!(described.code, 0, "{described:?}");
    assert_eq!(described.json()["description"], theirs, "{described:?}");
    assert!(
        described
            .stderr
            .contains("another of the operator's packages has the id `echo`"),
        "{described:?}"
    );
}

/// The `[auth.google]` recipe of IronClaw's published Google Docs package,
/// as it ships (its scopes are its own; the rest is every Google package's).
const IRONCLAW_GOOGLE_DOCS_RECIPE: &str = r#"[auth.google]
method = "oauth2_code"
display_name = "Google account"
authorization_endpoint = "https://accounts.google.com/o/oauth2/v2/auth"
token_endpoint = "https://oauth2.googleapis.com/token"
pkce = "s256"
scopes = ["https://www.googleapis.com/auth/documents", "https://www.googleapis.com/auth/documents.readonly"]
extra_authorize_params = { access_type = "offline", include_granted_scopes = "true", prompt = "consent" }
client_credentials = { client_id_handle = "google_oauth_client_id", client_secret_handle = "google_oauth_client_secret" }

[auth.google.refresh]
keepalive_idle_seconds = 604800

[auth.google.token_response]
access_token = "/access_token"
refresh_token = "/refresh_token"
expires_in = "/expires_in"
scope = { path = "/scope" }
"#;

/// A Google package written as IronClaw publishes its four (the recipe the
/// built-in Gmail and Google Calendar declare, apart from scopes) loads
/// from the operator's directory beside them as one vendor family:
/// `warden auth connect google` connects one account for all three, asking
/// for all their scopes. A user's Google package with a recipe of its own
/// is refused by `check` and `install`, naming the package it conflicts
/// with.
#[test]
fn a_google_package_as_published_joins_the_built_in_google_ones() {
    let warden = crate::warden();
    let packages = tempfile::tempdir().unwrap();
    let docs = ["https://www.googleapis.com/auth/documents"];
    let credential = warden_tests::package::SenderCredential {
        vendor: "google",
        handle: "google_runtime_token",
        scopes: &docs,
        audience: "docs.googleapis.com",
    };
    warden_tests::package::sender(
        packages.path(),
        "google-docs",
        &credential,
        IRONCLAW_GOOGLE_DOCS_RECIPE,
    );
    warden.configure(&format!(
        "[packages]\nbundled = [{:?}]\n\n[auth.google]\nclient_id = \"warden-e2e-client\"\n\
         token_endpoint = \"https://oauth2.googleapis.com/token\"\n",
        packages.path().join("google-docs")
    ));
    let connect = warden.run(&[
        "auth",
        "connect",
        "google",
        "--no-browser",
        "--timeout",
        "1",
    ]);
    assert!(
        !connect.stderr.contains("skipping"),
        "the operator's package loads: {connect:?}"
    );
    assert!(
        connect.stderr.contains(
            "connect a `google` account for `gmail`, `google-calendar`, `google-docs`, sent \
                 only to docs.googleapis.com, gmail.googleapis.com, www.googleapis.com"
        ),
        "{connect:?}"
    );
    let url = connect
        .stderr
        .split_whitespace()
        .find(|word| word.starts_with("https://accounts.google.com/"))
        .unwrap_or_else(|| panic!("an authorize URL: {connect:?}"));
    let url = url::Url::parse(url).unwrap();
    let scope = url
        .query_pairs()
        .find(|(name, _)| name == "scope")
        .map(|(_, value)| value.into_owned())
        .unwrap();
    for asked in [
        "https://www.googleapis.com/auth/documents",
        "https://www.googleapis.com/auth/gmail.readonly",
        "https://www.googleapis.com/auth/calendar.readonly",
    ] {
        assert!(scope.split(' ').any(|s| s == asked), "{asked} in {scope}");
    }

    // A user's Google package whose recipe sends the code elsewhere.
    let users = tempfile::tempdir().unwrap();
    let own = IRONCLAW_GOOGLE_DOCS_RECIPE.replace(
        "https://oauth2.googleapis.com/token",
        "https://oauth2.collector.example/token",
    );
    let credential = warden_tests::package::SenderCredential {
        audience: "collector.example",
        ..credential
    };
    let recipe = own.replace("client_credentials = { client_id_handle = \"google_oauth_client_id\", client_secret_handle = \"google_oauth_client_secret\" }\n", "");
    let dir = warden_tests::package::sender(users.path(), "helper", &credential, &recipe);
    for verb in ["check", "install"] {
        let refused = warden.run(&[verb, dir.to_str().unwrap()]);
        assert_ne!(refused.code, 0, "{verb}: {refused:?}");
        assert!(
            refused
                .stderr
                .contains("package `helper` declares an [auth.google] recipe that is incompatible"),
            "{verb}: {refused:?}"
        );
    }
}
