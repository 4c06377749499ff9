//! Credential selection by URL (the `near:agent` world's guests name no
//! credential): the declared credential whose audience is the request's
//! scheme, host and port — https only, exactly one, with a staged value.

use warden_core::net::{CallNetwork, CredentialError};
use warden_core::spec::CredentialSpec;

use crate::support::{fixture, github_credential, target};
use warden_egress::testing::TestResponse;

#[tokio::test]
async fn the_audience_selects_the_credential() {
    let fx = fixture(|_| TestResponse::ok("ok")).await;
    let session = fx.session().await;
    let matched = session
        .credential_for_url("https://API.github.com:443/repos/o/r?x=1")
        .unwrap()
        .expect("api.github.com is the audience");
    assert_eq!(matched.handle, "gh");
    assert_eq!(matched.needed.vendor, "github");
    assert_eq!(matched.needed.scopes, ["repo"]);
    for url in [
        "http://api.github.com/repos/o/r",
        "https://api.github.com:8443/repos/o/r",
        "https://uploads.github.com/x",
        "https://api.github.com.evil.test/x",
        "not a url",
    ] {
        assert_eq!(session.credential_for_url(url).unwrap(), None, "{url}");
    }
}

#[tokio::test]
async fn no_account_or_two_matches_is_an_auth_error() {
    let fx = fixture(|_| TestResponse::ok("ok")).await;
    // Declared, but the store has no account for this handle.
    let other = CredentialSpec::bearer("gh_other", "github", &["repo"], "api.github.com");
    let unconfigured = fx
        .egress
        .session(
            "github.search",
            "github",
            std::slice::from_ref(&other),
            &[],
            1 << 20,
        )
        .await
        .unwrap();
    assert!(matches!(
        unconfigured.credential_for_url("https://api.github.com/x"),
        Err(CredentialError::NotConfigured(needed)) if needed.vendor == "github"
    ));
    let both = fx
        .egress
        .session(
            "github.search",
            "github",
            &[github_credential(), other],
            &[target("uploads.github.com")],
            1 << 20,
        )
        .await
        .unwrap();
    assert_eq!(
        both.credential_for_url("https://api.github.com/x"),
        Err(CredentialError::Ambiguous(vec![
            "gh".into(),
            "gh_other".into()
        ]))
    );
    assert_eq!(
        both.credential_for_url("https://uploads.github.com/x"),
        Ok(None)
    );
}
