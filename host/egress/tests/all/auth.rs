//! Auth recipes against a local OAuth server (the fake authorization server
//! of `warden_egress::testing`, driven by the test as the browser) and a
//! local API.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use secrecy::{ExposeSecret, SecretString};
use warden_core::spec::{
    ApiKeyRecipe, CredentialSpec, Injection, OAuth2Recipe, TokenResponsePointers, ValidationProbe,
};
use warden_egress::auth::discovery;
use warden_egress::auth::grant::{self, StoredGrant};
use warden_egress::auth::identity;
use warden_egress::auth::loopback::Loopback;
use warden_egress::auth::oauth2::{ClientAuth, OAuth2Client, OAuth2Flow, TokenSet};
use warden_egress::auth::{AuthError, api_key};
use warden_egress::secrets::{AccountAudience, AccountKey, AuthReason, SecretStore};
use warden_egress::testing::{FakeAuthServer, RecordedRequest, TestResponse, follow_redirect};
use warden_egress::{EgressError, resolve::AddressError};

use crate::support::*;

fn form(req: &RecordedRequest) -> HashMap<String, String> {
    url::form_urlencoded::parse(&req.body)
        .into_owned()
        .collect()
}

fn recipe() -> OAuth2Recipe {
    OAuth2Recipe {
        display_name: Some("GitHub account".into()),
        authorization_endpoint: "https://github.com/authorize".into(),
        token_endpoint: "https://github.com/token".into(),
        scopes: vec!["repo".into()],
        authorize_params: [
            ("allow_signup".to_owned(), "false".to_owned()),
            ("state".to_owned(), "evil".to_owned()),
            (
                "redirect_uri".to_owned(),
                "https://evil.test/steal".to_owned(),
            ),
        ]
        .into(),
        token_response: TokenResponsePointers {
            access_token: "/access_token".into(),
            refresh_token: Some("/refresh_token".into()),
            expires_in: Some("/expires_in".into()),
            scope: Some("/scope".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn client(redirect_uri: &str) -> OAuth2Client {
    OAuth2Client {
        client_id: "warden-client".into(),
        client_secret: None,
        redirect_uri: redirect_uri.into(),
        auth: ClientAuth::None,
    }
}

async fn fake(lifetime: u64) -> (Fixture, FakeAuthServer) {
    let auth = FakeAuthServer::new("github.com", lifetime);
    let server = auth.clone();
    (fixture(move |req| server.handle(req)).await, auth)
}

/// Run the whole flow as a user would: start, the browser visits the
/// authorize URL and is redirected to the loopback listener, exchange.
async fn connect(fx: &Fixture, auth: &FakeAuthServer, recipe: &OAuth2Recipe) -> TokenSet {
    let loopback = Loopback::bind().await.unwrap();
    let client = client(loopback.redirect_uri());
    let flow = OAuth2Flow::new(recipe, &client);
    let pending = flow.start(&["repo".to_owned()]).unwrap();
    let location = auth.visit(&pending.url).unwrap();
    let wait = tokio::spawn(loopback.wait(pending.state.clone(), Duration::from_secs(5)));
    assert_eq!(follow_redirect(&location).await.unwrap(), 200);
    let callback = wait.await.unwrap().unwrap();
    flow.exchange(&fx.egress, pending, &callback.code, &callback.state)
        .await
        .unwrap()
}

#[tokio::test]
async fn oauth2_code_flow_with_pkce_loopback_redirect_and_host_owned_parameters() {
    let (fx, auth) = fake(3600).await;
    let recipe = recipe();
    let loopback = Loopback::bind().await.unwrap();
    let client = client(loopback.redirect_uri());
    let flow = OAuth2Flow::new(&recipe, &client);
    let pending = flow.start(&["repo".to_owned()]).unwrap();
    let url = url::Url::parse(&pending.url).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["client_id"], "warden-client");
    assert_eq!(query["scope"], "repo");
    assert_eq!(query["state"], pending.state);
    assert_eq!(query["redirect_uri"], loopback.redirect_uri());
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["allow_signup"], "false");
    for reserved in ["state", "redirect_uri"] {
        assert_eq!(url.query_pairs().filter(|(k, _)| k == reserved).count(), 1);
    }

    let location = auth.visit(&pending.url).unwrap();
    let wait = tokio::spawn(loopback.wait(pending.state.clone(), Duration::from_secs(5)));
    follow_redirect(&location).await.unwrap();
    let callback = wait.await.unwrap().unwrap();
    let tokens = flow
        .exchange(&fx.egress, pending, &callback.code, &callback.state)
        .await
        .unwrap();
    assert!(tokens.access_token.expose_secret().starts_with("at-"));
    assert_eq!(tokens.scopes, ["repo"]);
    assert!(tokens.refresh_token.is_some());
    // The token endpoint saw the verifier (it checks it against the challenge).
    let sent = form(&fx.server.requests()[0]);
    assert!(sent.contains_key("code_verifier"));
    assert!(!sent.contains_key("client_secret"));
}

/// A token endpoint saying its token lives longer than the clock can hold
/// (`u64::MAX` seconds) panicked the host; such a lifetime is cut to ten years.
#[tokio::test]
async fn a_lifetime_past_the_clock_is_cut_not_a_panic() {
    let (fx, auth) = fake(u64::MAX).await;
    let tokens = connect(&fx, &auth, &recipe()).await;
    let expires = tokens.expires_at.expect("an expiry");
    let lifetime = expires
        .duration_since(std::time::SystemTime::now())
        .unwrap()
        .as_secs();
    let year = 365 * 24 * 3600;
    assert!((9 * year..=10 * year).contains(&lifetime), "{lifetime}");
}

#[tokio::test]
async fn a_wrong_state_sends_nothing_and_a_replayed_code_is_refused() {
    let (fx, auth) = fake(3600).await;
    let recipe = recipe();
    let client = client("http://127.0.0.1:9/callback");
    let flow = OAuth2Flow::new(&recipe, &client);
    let pending = flow.start(&[]).unwrap();
    let location = auth.visit(&pending.url).unwrap();
    let code = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let err = flow
        .exchange(&fx.egress, pending, &code, "forged-state")
        .await
        .unwrap_err();
    assert!(matches!(err, AuthError::StateMismatch), "{err:?}");
    assert!(fx.server.requests().is_empty());

    // The code used once cannot be used again.
    let pending = flow.start(&[]).unwrap();
    let state = pending.state.clone();
    let location = auth.visit(&pending.url).unwrap();
    let code = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    flow.exchange(&fx.egress, pending, &code, &state)
        .await
        .unwrap();
    let replay = flow.start(&[]).unwrap();
    let state = replay.state.clone();
    let err = flow
        .exchange(&fx.egress, replay, &code, &state)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AuthError::Rejected { status: 400, error: Some(e) } if e == "invalid_grant"),
        "{err:?}"
    );
    // The provider's description never passes through.
    assert!(!err.to_string().contains("nope"), "{err}");
}

#[tokio::test]
async fn a_token_response_without_the_pointed_field_is_named() {
    let (fx, auth) = fake(3600).await;
    let mut recipe = recipe();
    recipe.token_response.access_token = "/data/token".into();
    let loopback = Loopback::bind().await.unwrap();
    let client = client(loopback.redirect_uri());
    let flow = OAuth2Flow::new(&recipe, &client);
    let pending = flow.start(&[]).unwrap();
    let location = auth.visit(&pending.url).unwrap();
    let wait = tokio::spawn(loopback.wait(pending.state.clone(), Duration::from_secs(5)));
    follow_redirect(&location).await.unwrap();
    let callback = wait.await.unwrap().unwrap();
    let err = flow
        .exchange(&fx.egress, pending, &callback.code, &callback.state)
        .await
        .unwrap_err();
    assert!(
        matches!(err, AuthError::TokenResponse(m) if m.contains("access_token")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_confidential_client_authenticates_with_basic_when_the_recipe_says_so() {
    let (fx, auth) = fake(3600).await;
    auth.require_client_secret("shh-secret");
    let mut recipe = recipe();
    recipe.exchange_auth = Some("basic".into());
    let loopback = Loopback::bind().await.unwrap();
    let mut client = client(loopback.redirect_uri());
    client.client_secret = Some(SecretString::from("shh-secret"));
    client.auth = ClientAuth::for_recipe(&recipe, true);
    assert_eq!(client.auth, ClientAuth::Basic);
    let flow = OAuth2Flow::new(&recipe, &client);
    let pending = flow.start(&[]).unwrap();
    let location = auth.visit(&pending.url).unwrap();
    let wait = tokio::spawn(loopback.wait(pending.state.clone(), Duration::from_secs(5)));
    follow_redirect(&location).await.unwrap();
    let callback = wait.await.unwrap().unwrap();
    flow.exchange(&fx.egress, pending, &callback.code, &callback.state)
        .await
        .unwrap();
    let sent = &fx.server.requests()[0];
    assert!(sent.header("authorization").unwrap().starts_with("Basic "));
    assert!(!form(sent).contains_key("client_secret"));
}

#[tokio::test]
async fn an_authorization_server_on_http_or_a_private_address_is_refused() {
    let (fx, _auth) = fake(3600).await;
    let client = client("http://127.0.0.1:9/callback");
    let mut plain = recipe();
    plain.authorization_endpoint = "http://github.com/authorize".into();
    let err = OAuth2Flow::new(&plain, &client).start(&[]).unwrap_err();
    assert!(
        matches!(err, AuthError::InvalidRecipe(m) if m.contains("https")),
        "{err:?}"
    );

    let mut private = recipe();
    private.token_endpoint = "https://loopback.test/token".into();
    let flow = OAuth2Flow::new(&private, &client);
    let pending = flow.start(&[]).unwrap();
    let state = pending.state.clone();
    let err = flow
        .exchange(&fx.egress, pending, "code", &state)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            AuthError::Egress(EgressError::Address(AddressError::NonPublic { .. }))
        ),
        "{err:?}"
    );
    assert!(fx.server.requests().is_empty());
}

fn github_spec() -> CredentialSpec {
    CredentialSpec::bearer("gh_oauth", "github", &["repo"], "api.github.com")
}

/// Store an OAuth account for extension `github` as the host does.
async fn store_account(fx: &Fixture, recipe: &OAuth2Recipe, tokens: &TokenSet) -> AccountKey {
    let key = AccountKey::new("github", "gh_oauth", ["repo"]);
    let grant = StoredGrant::new(recipe, &client("http://127.0.0.1:9/callback"), tokens);
    let store = fx.egress.store();
    grant::save(store.as_ref(), &key, &grant).await.unwrap();
    store
        .put_bound(&key, &github_account(), tokens.access_token.clone())
        .await
        .unwrap();
    key
}

/// A removal waits for a refresh under way (here: the account's turn, held
/// as a refresh holds it while it asks the provider), so the refresh's
/// write-back cannot bring the account back. Without the turn the removal
/// ran at once and the refreshed tokens were stored after it.
#[tokio::test]
async fn removing_an_account_waits_for_its_refresh() {
    let (fx, auth) = fake(3600).await;
    let recipe = recipe();
    let tokens = connect(&fx, &auth, &recipe).await;
    let key = store_account(&fx, &recipe, &tokens).await;
    let refreshing = grant::hold_account(&fx.egress, &key).await.unwrap();
    let removal = tokio::spawn({
        let (egress, key) = (fx.egress.clone(), key.clone());
        async move { grant::remove_account(&egress, &key).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!removal.is_finished(), "the removal waits for the refresh");
    // The refresh writes its new tokens back, then ends its turn.
    store_account(&fx, &recipe, &tokens).await;
    drop(refreshing);
    assert!(removal.await.unwrap().unwrap(), "a value was stored");
    let store = fx.egress.store();
    assert!(store.get(&key).await.unwrap().is_none());
    assert!(grant::load(store.as_ref(), &key).await.unwrap().is_none());
}

#[tokio::test]
async fn concurrent_calls_refresh_once_and_the_rotated_token_is_stored() {
    // Tokens live 5 s: within the 60 s skew, so they are due at once.
    let (fx, auth) = fake(5).await;
    let recipe = recipe();
    let tokens = connect(&fx, &auth, &recipe).await;
    let key = store_account(&fx, &recipe, &tokens).await;
    let first_refresh = auth.refresh_token().unwrap();
    auth.set_lifetime(3600);

    let spec = [github_spec()];
    let (a, b) = tokio::join!(
        grant::refresh_due(&fx.egress, "github", &spec, SystemTime::now()),
        grant::refresh_due(&fx.egress, "github", &spec, SystemTime::now()),
    );
    assert!(a.unwrap().is_empty() && b.unwrap().is_empty());
    assert_eq!(auth.refreshes(), 1);
    let store = fx.egress.store();
    let access = store.get(&key).await.unwrap().unwrap();
    assert_ne!(access.expose_secret(), tokens.access_token.expose_secret());
    let stored = grant::load(store.as_ref(), &key).await.unwrap().unwrap();
    let rotated = auth.refresh_token().unwrap();
    assert_ne!(rotated, first_refresh);
    assert_eq!(stored.refresh_token.as_deref(), Some(rotated.as_str()));
    // The binding survived the refresh.
    assert_eq!(store.binding(&key).await.unwrap(), Some(github_account()));

    // Another extension's call never refreshes an account it cannot use.
    auth.set_lifetime(5);
    let before = auth.refreshes();
    let err = grant::refresh_due(
        &fx.egress,
        "thief",
        &spec,
        SystemTime::now() + Duration::from_secs(7200),
    )
    .await
    .unwrap();
    assert!(err.is_empty());
    assert_eq!(auth.refreshes(), before);
}

/// Who the account is comes from the recipe's identity endpoint, with the
/// new token, only when that endpoint is one of the account's audiences:
/// one elsewhere is refused before anything (the token least of all) is sent.
#[tokio::test]
async fn identity_is_read_from_an_endpoint_in_the_audience_only() {
    let (fx, auth) = fake(3600).await;
    let tokens = connect(&fx, &auth, &recipe()).await;
    let pointers: std::collections::BTreeMap<String, String> =
        [("account_id".to_owned(), "/login".to_owned())].into();
    let audiences = [AccountAudience {
        scheme: "https".into(),
        host: "api.github.com".into(),
        port: 443,
    }];
    let claims = identity::fetch(
        &fx.egress,
        "github",
        "https://api.github.com/user",
        &pointers,
        &audiences,
        &tokens.access_token,
    )
    .await
    .unwrap();
    assert_eq!(claims["account_id"], "octocat");

    let err = identity::fetch(
        &fx.egress,
        "github",
        "https://evil.test/whoami?who=me",
        &pointers,
        &audiences,
        &tokens.access_token,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, AuthError::ProbeOutsideAudience { url, .. } if url == "https://evil.test/whoami"),
        "{err:?}"
    );
    assert!(
        fx.server
            .requests()
            .iter()
            .all(|r| r.server_name.as_deref() != Some("evil.test")),
        "a request went to the endpoint outside the audience"
    );
}

/// A hostile package points its identity claims at the token response's
/// secrets: no claim keeps a token (what `auth status` would print).
#[tokio::test]
async fn identity_pointers_at_the_tokens_yield_no_claim() {
    let (fx, auth) = fake(3600).await;
    let mut recipe = recipe();
    recipe.identity = [
        ("account_id", "/access_token"),
        ("team_id", "/refresh_token"),
        ("kind", "/token_type"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let tokens = connect(&fx, &auth, &recipe).await;
    assert!(tokens.refresh_token.is_some());
    assert!(
        !tokens.claims.contains_key("account_id") && !tokens.claims.contains_key("team_id"),
        "{:?}",
        tokens.claims.keys()
    );
    // Not vacuous: a pointer at a field that is no secret is read.
    assert_eq!(
        tokens.claims.get("kind").map(String::as_str),
        Some("bearer")
    );
}

/// A connected account whose token is due (5 s left, within the skew);
/// the provider's next tokens live an hour.
async fn due_account() -> (Fixture, FakeAuthServer, AccountKey) {
    let (fx, auth) = fake(5).await;
    let recipe = recipe();
    let tokens = connect(&fx, &auth, &recipe).await;
    let key = store_account(&fx, &recipe, &tokens).await;
    auth.set_lifetime(3600);
    (fx, auth, key)
}

/// Two hosts on a store that locks refreshes across hosts (PostgreSQL's
/// does) refresh the same due account at once: they take turns, so the
/// provider gets one refresh request and never the rotated refresh token
/// again (a provider that detects its reuse would revoke the grant).
#[tokio::test]
async fn hosts_on_a_store_with_a_refresh_lock_send_one_refresh() {
    let (fx, auth, key) = due_account().await;
    let shared: Arc<dyn SecretStore> = Arc::new(TurnTaking::new(fx.egress.store().clone()));
    let (one, two) = (fx.host_on(shared.clone()), fx.host_on(shared));
    let spec = [github_spec()];
    let (a, b) = tokio::join!(
        grant::refresh_due(&one, "github", &spec, SystemTime::now()),
        grant::refresh_due(&two, "github", &spec, SystemTime::now()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.is_empty() && b.is_empty(), "{a:?}\n{b:?}");
    let refresh_requests = fx
        .server
        .requests()
        .iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains("grant_type=refresh_token"))
        .count();
    assert_eq!(refresh_requests, 1);
    let stored = grant::load(fx.egress.store().as_ref(), &key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.refresh_token, auth.refresh_token());
}

/// Two hosts on one store refresh the same due account at once: each holds
/// only its own lock, the provider rotates the refresh token for the first
/// and refuses the stale one from the second. The second finds the first's
/// fresh grant in the store and uses it instead of asking the user to
/// connect again.
#[tokio::test]
async fn a_refresh_lost_to_another_host_uses_the_grant_it_stored() {
    let (fx, auth, key) = due_account().await;
    let other = fx.another_host();
    let spec = [github_spec()];
    let (a, b) = tokio::join!(
        grant::refresh_due(&fx.egress, "github", &spec, SystemTime::now()),
        grant::refresh_due(&other, "github", &spec, SystemTime::now()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.is_empty() && b.is_empty(), "{a:?}\n{b:?}");
    let stored = grant::load(fx.egress.store().as_ref(), &key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.refresh_token, auth.refresh_token());
    assert!(!stored.due(SystemTime::now()));
}

#[tokio::test]
async fn revoking_sends_the_refresh_token_to_the_recipes_endpoint() {
    let (fx, auth) = fake(3600).await;
    let mut recipe = recipe();
    recipe.revoke = Some(warden_core::spec::RevokeSettings {
        endpoint: "https://github.com/revoke".into(),
        token_param: None,
    });
    let tokens = connect(&fx, &auth, &recipe).await;
    let key = store_account(&fx, &recipe, &tokens).await;
    let refresh = auth.refresh_token().unwrap();
    assert!(
        grant::revoke(&fx.egress, &key, &tokens.access_token)
            .await
            .unwrap()
    );
    assert_eq!(auth.revoked(), [refresh]);
    assert!(auth.refresh_token().is_none());
}

/// A revoke endpoint on another origin than the token endpoint is sent
/// nothing: a recipe naming a vendor's real token endpoint (to be given the
/// operator's client) could name a revoke endpoint of its own, where the
/// refresh token and the client's secret would go.
#[tokio::test]
async fn a_revoke_endpoint_on_another_origin_is_sent_nothing() {
    let (fx, auth) = fake(3600).await;
    let mut recipe = recipe();
    recipe.revoke = Some(warden_core::spec::RevokeSettings {
        endpoint: "https://api.github.com/revoke".into(),
        token_param: None,
    });
    let tokens = connect(&fx, &auth, &recipe).await;
    let key = store_account(&fx, &recipe, &tokens).await;
    let before = fx.server.requests().len();
    assert!(
        !grant::revoke(&fx.egress, &key, &tokens.access_token)
            .await
            .unwrap()
    );
    assert_eq!(fx.server.requests().len(), before, "a request was sent");
    assert!(auth.revoked().is_empty());
}

#[tokio::test]
async fn a_refused_refresh_is_auth_required_expired() {
    let (fx, auth) = fake(5).await;
    let recipe = recipe();
    let tokens = connect(&fx, &auth, &recipe).await;
    let key = store_account(&fx, &recipe, &tokens).await;
    auth.refuse_refresh();
    let expired = grant::refresh_due(&fx.egress, "github", &[github_spec()], SystemTime::now())
        .await
        .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].reason, AuthReason::Expired);
    assert_eq!(expired[0].needed.vendor, "github");
    assert_eq!(expired[0].needed.scopes, ["repo"]);
    // The account is still there (nothing lost), with its old token.
    let kept = fx.egress.store().get(&key).await.unwrap().unwrap();
    assert_eq!(kept.expose_secret(), tokens.access_token.expose_secret());
}

#[tokio::test]
async fn discovery_checks_the_issuer_and_registers_a_public_loopback_client() {
    let (fx, auth) = fake(3600).await;
    let metadata = discovery::server_metadata(&fx.egress, "https://github.com")
        .await
        .unwrap();
    let registration = discovery::register(&fx.egress, &metadata, "http://127.0.0.1:5000/callback")
        .await
        .unwrap();
    assert_eq!(registration.client_id, "dcr-client-1");
    assert_eq!(auth.registered(), ["dcr-client-1"]);
    let sent: serde_json::Value =
        serde_json::from_slice(&fx.server.requests().last().unwrap().body).unwrap();
    assert_eq!(sent["token_endpoint_auth_method"], "none");
    assert_eq!(
        sent["redirect_uris"],
        serde_json::json!(["http://127.0.0.1:5000/callback"])
    );

    // Keys for a resource server: the metadata must name the issuer byte
    // for byte (tokens carry it as `iss`); with a slash more, the server
    // started and refused every token.
    let fx = fixture(|req| match req.target.as_str() {
        "/jwks" => TestResponse::json(&serde_json::json!({"keys": []})),
        _ => TestResponse::json(&serde_json::json!({
            "issuer": "https://github.com/", "jwks_uri": "https://github.com/jwks"})),
    })
    .await;
    let err = discovery::issuer_jwks(&fx.egress, "https://github.com")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AuthError::Metadata(m) if m.contains("`https://github.com/`")),
        "{err:?}"
    );
    assert!(
        discovery::issuer_jwks(&fx.egress, "https://github.com/")
            .await
            .is_ok()
    );

    // A metadata document naming another issuer is refused.
    let fx =
        fixture(|_| TestResponse::json(&serde_json::json!({"issuer": "https://evil.test"}))).await;
    let err = discovery::server_metadata(&fx.egress, "https://github.com")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AuthError::Metadata(m) if m.contains("evil.test")),
        "{err:?}"
    );

    // A registration endpoint on another origin is refused before anything is sent.
    let mut elsewhere = metadata.clone();
    elsewhere.registration_endpoint = Some("https://evil.test/register".into());
    let before = fx.server.requests().len();
    let err = discovery::register(&fx.egress, &elsewhere, "http://127.0.0.1:5000/callback")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AuthError::Registration(m) if m.contains("another origin")),
        "{err:?}"
    );
    assert_eq!(fx.server.requests().len(), before);
}

fn probe_recipe(url: &str) -> ApiKeyRecipe {
    ApiKeyRecipe {
        validation: Some(ValidationProbe {
            method: None,
            url: url.into(),
            handle: None,
            injection: Injection::Header {
                name: "authorization".into(),
                prefix: Some("token ".into()),
            },
            expect_status: vec![],
        }),
        fields: vec![warden_core::spec::ApiKeyField {
            handle: "gh_key".into(),
            label: "API key".into(),
            secret: true,
        }],
        ..Default::default()
    }
}

fn api_github() -> Vec<AccountAudience> {
    vec![AccountAudience {
        scheme: "https".into(),
        host: "api.github.com".into(),
        port: 443,
    }]
}

fn value(v: &str) -> Vec<(String, SecretString)> {
    vec![("gh_key".to_owned(), SecretString::from(v.to_owned()))]
}

#[tokio::test]
async fn an_api_key_passes_only_when_its_probe_does() {
    let fx = fixture(|req| match req.header("authorization") {
        Some("token good-key-123") if req.target == "/user" => TestResponse::ok("{}"),
        _ => TestResponse::status(401),
    })
    .await;
    let recipe = probe_recipe("https://api.github.com/user");
    let err = api_key::validate(
        &fx.egress,
        "github",
        &recipe,
        &api_github(),
        &value("wrong-key-456"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AuthError::Rejected { status: 401, .. }),
        "{err:?}"
    );
    api_key::validate(
        &fx.egress,
        "github",
        &recipe,
        &api_github(),
        &value("good-key-123"),
    )
    .await
    .unwrap();
    assert_eq!(fx.server.requests().len(), 2);
}

/// The attack: a package's probe URL points at its own collector; the key
/// would be sent there although the account may only go to api.github.com.
#[tokio::test]
async fn a_probe_outside_the_credentials_audience_is_refused_before_sending() {
    // evil.test is reachable here (as a public collector would be).
    let fx = fixture_with(
        |c| c.allow_private_address("evil.test", 443),
        |_| TestResponse::ok("{}"),
    )
    .await;
    let recipe = probe_recipe("https://evil.test/collect?k=1");
    let err = api_key::validate(
        &fx.egress,
        "github",
        &recipe,
        &api_github(),
        &value("good-key-123"),
    )
    .await
    .unwrap_err();
    match &err {
        AuthError::ProbeOutsideAudience { url, audiences } => {
            assert_eq!(url, "https://evil.test/collect");
            assert!(audiences.contains("api.github.com"), "{audiences}");
        }
        other => panic!("{other:?}"),
    }
    assert!(fx.server.requests().is_empty(), "the key reached a server");
}

/// The reusable pieces an MCP server that requires OAuth needs: its
/// protected-resource metadata must name the resource asked about, and the
/// flow sends the RFC 8707 `resource` on authorize and token requests.
#[tokio::test]
async fn resource_metadata_must_name_the_resource_and_the_flow_sends_it() {
    let fx = fixture(|req| {
        TestResponse::json(&serde_json::json!({
            "resource": "https://api.github.com/mcp",
            "authorization_servers": ["https://github.com"],
            "scopes_supported": ["repo"],
        }))
        .with_header("x-path", &req.target)
    })
    .await;
    let url = "https://api.github.com/.well-known/oauth-protected-resource/mcp";
    let metadata = discovery::resource_metadata(&fx.egress, url, "https://api.github.com/mcp")
        .await
        .unwrap()
        .expect("published");
    assert_eq!(metadata.authorization_servers, ["https://github.com"]);
    let err = discovery::resource_metadata(&fx.egress, url, "https://api.github.com/other")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AuthError::Metadata(m) if m.contains("not `https://api.github.com/other`")),
        "{err:?}"
    );

    let (fx, auth) = fake(3600).await;
    let recipe = recipe();
    let loopback = Loopback::bind().await.unwrap();
    let client = client(loopback.redirect_uri());
    let flow = OAuth2Flow::new(&recipe, &client).with_resource("https://api.github.com/mcp");
    let pending = flow.start(&[]).unwrap();
    assert!(
        pending
            .url
            .contains("resource=https%3A%2F%2Fapi.github.com%2Fmcp"),
        "{}",
        pending.url
    );
    let location = auth.visit(&pending.url).unwrap();
    let wait = tokio::spawn(loopback.wait(pending.state.clone(), Duration::from_secs(5)));
    follow_redirect(&location).await.unwrap();
    let callback = wait.await.unwrap().unwrap();
    flow.exchange(&fx.egress, pending, &callback.code, &callback.state)
        .await
        .unwrap();
    assert_eq!(
        form(&fx.server.requests()[0])["resource"],
        "https://api.github.com/mcp"
    );
}

/// The composed discovery an MCP server that requires OAuth needs: from the
/// resource (and its 401 challenge) to a recipe, then the flow with
/// `resource`, against the fake authorization server.
#[tokio::test]
async fn a_protected_resource_is_authorized_from_its_metadata() {
    use warden_egress::auth::challenge::BearerChallenge;
    use warden_egress::auth::resource;

    let (fx, auth) = fake(3600).await;
    let mcp = "https://api.github.com/mcp";
    let found = resource::discover(&fx.egress, mcp, None).await.unwrap();
    assert_eq!(found.server.issuer, "https://github.com");
    assert_eq!(
        found.scopes,
        ["repo"],
        "scopes_supported when no challenge names any"
    );
    let challenge = BearerChallenge::parse(
        r#"Bearer resource_metadata="https://api.github.com/.well-known/oauth-protected-resource/mcp", scope="issues:read""#,
    )
    .unwrap();
    let found = resource::discover(&fx.egress, mcp, Some(&challenge))
        .await
        .unwrap();
    assert_eq!(found.scopes, ["issues:read"], "the challenge's scope wins");
    // Metadata that describes another resource is refused.
    let err = resource::discover(&fx.egress, "https://api.github.com/other", Some(&challenge))
        .await
        .unwrap_err();
    assert!(matches!(err, AuthError::Metadata(_)), "{err:?}");

    let recipe = found.recipe().unwrap();
    let loopback = Loopback::bind().await.unwrap();
    let metadata = &found.server;
    let registration = discovery::register(&fx.egress, metadata, loopback.redirect_uri())
        .await
        .unwrap();
    let client = registration.client(loopback.redirect_uri());
    let flow = OAuth2Flow::new(&recipe, &client).with_resource(mcp);
    let pending = flow.start(&found.scopes).unwrap();
    let location = auth.visit(&pending.url).unwrap();
    let wait = tokio::spawn(loopback.wait(pending.state.clone(), Duration::from_secs(5)));
    follow_redirect(&location).await.unwrap();
    let callback = wait.await.unwrap().unwrap();
    let tokens = flow
        .exchange(&fx.egress, pending, &callback.code, &callback.state)
        .await
        .unwrap();
    assert_eq!(tokens.scopes, ["issues:read"]);
    let token_request = fx.server.requests().last().unwrap().clone();
    assert_eq!(form(&token_request)["resource"], mcp);
    assert_eq!(form(&token_request)["client_id"], "dcr-client-1");
}

/// A server of MCP's 2025-03-26 revision publishes no protected-resource
/// metadata: its origin is its authorization server, described by RFC 8414
/// metadata there (whose issuer may carry a path, on that origin only) or,
/// without any, at the revision's default endpoints.
#[tokio::test]
async fn a_server_without_resource_metadata_is_authorized_by_its_origin() {
    use warden_egress::auth::resource;
    let server = "https://api.github.com/mcp";
    let fx = fixture(|_| TestResponse::status(404)).await;
    let found = resource::discover(&fx.egress, server, None).await.unwrap();
    let recipe = found.recipe().unwrap();
    assert_eq!(
        recipe.authorization_endpoint,
        "https://api.github.com/authorize"
    );
    assert_eq!(recipe.token_endpoint, "https://api.github.com/token");
    assert_eq!(
        found.server.registration_endpoint.as_deref(),
        Some("https://api.github.com/register")
    );
    assert_eq!(found.resource, server);
    assert!(found.assumed_endpoints, "nothing was published");

    let metadata = |issuer: &'static str| {
        move |req: &RecordedRequest| {
            if req.target == "/.well-known/oauth-authorization-server" {
                TestResponse::json(&serde_json::json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                }))
            } else {
                TestResponse::status(404)
            }
        }
    };
    let fx = fixture(metadata("https://api.github.com/oauth")).await;
    let found = resource::discover(&fx.egress, server, None).await.unwrap();
    assert_eq!(
        found.recipe().unwrap().token_endpoint,
        "https://api.github.com/oauth/token"
    );
    assert!(!found.assumed_endpoints);
    let fx = fixture(metadata("https://github.com")).await;
    let err = resource::discover(&fx.egress, server, None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AuthError::Metadata(m) if m.contains("not one on https://api.github.com")),
        "{err:?}"
    );
}
