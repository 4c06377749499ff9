//! Calls made for an authenticated caller (`Invocation::for_caller`) on a
//! hosted MCP server: each caller's go over a session of their own with
//! their own account; the deployment's account serves a caller only for a
//! vendor the operator shares.

use std::sync::Arc;

use serde_json::json;
use warden_core::Origin;
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing;
use warden_host::{Host, HostConfig, Invocation, InvokeOutcome, PackageSource};
use warden_tests::fake_mcp::{FakeMcp, MCP_HOST, MCP_TOKEN, MCP_URL, Script, write_package};

/// The accounts of vendor `example` bound to `fake-mcp`: the deployment's
/// holding `deployment`, and Alice's own holding `alices` when given.
fn accounts(deployment: &str, alices: Option<&str>) -> MemoryStore {
    let binding = || {
        let audience = AccountAudience {
            scheme: "https".into(),
            host: MCP_HOST.into(),
            port: 443,
        };
        AccountBinding::new("fake-mcp", [audience])
    };
    let key = AccountKey::new("example", "mcp_token", Vec::<String>::new());
    let store = MemoryStore::new().with(key.clone(), binding(), deployment);
    match alices {
        Some(token) => store.with(key.owned_by("alice"), binding(), token),
        None => store,
    }
}

/// The echo of package `fake-mcp` for caller `alice`, on a host sharing
/// `shared`; and the requests the server got.
async fn echo_for_alice(secrets: MemoryStore, shared: &[&str]) -> (InvokeOutcome, usize) {
    // The server checks the token: a call that rode another account fails.
    let fake = FakeMcp::start(Script {
        require_token: true,
        ..Script::default()
    })
    .await;
    let config = HostConfig {
        egress: testing::config(fake.ca(), &[(MCP_HOST, 443)]),
        shared_accounts: shared.iter().map(|v| (*v).to_owned()).collect(),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(fake.server().resolver(&[MCP_HOST])))
        .build()
        .unwrap();
    let location = host.open_location("p");
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), MCP_URL);
    location
        .install(&PackageSource::Dir(dir.path().into()))
        .unwrap();
    let call = Invocation::new("fake-mcp.echo", json!({ "text": "hi" }), Origin::Product)
        .for_caller("alice");
    let outcome = location.invoke(call).await.unwrap();
    (outcome, fake.requests().len())
}

#[tokio::test]
async fn a_callers_call_to_a_hosted_server_uses_their_own_account() {
    // The deployment's token is one the server refuses: only Alice's works.
    let (outcome, sent) = echo_for_alice(accounts("not-the-token", Some(MCP_TOKEN)), &[]).await;
    assert!(
        matches!(outcome, InvokeOutcome::Completed(_)),
        "{outcome:?}"
    );
    assert!(sent > 0);
}

#[tokio::test]
async fn a_caller_without_an_account_never_rides_the_deployments_unshared_one() {
    let (outcome, sent) = echo_for_alice(accounts(MCP_TOKEN, None), &[]).await;
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("the call is refused: {outcome:?}")
    };
    assert_eq!(failure.code(), "auth_required", "{failure}");
    assert_eq!(sent, 0, "nothing reached the server");
}

#[tokio::test]
async fn a_shared_vendor_serves_a_caller_on_a_hosted_server() {
    let (outcome, sent) = echo_for_alice(accounts(MCP_TOKEN, None), &["example"]).await;
    assert!(
        matches!(outcome, InvokeOutcome::Completed(_)),
        "{outcome:?}"
    );
    assert!(sent > 0);
}
