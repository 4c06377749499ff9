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
