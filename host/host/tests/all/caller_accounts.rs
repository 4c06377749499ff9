//! Calls made for an authenticated caller (`Invocation::for_caller`): a
//! hosted MCP server's session holds the deployment's account, so such a
//! call runs there only where the operator shares the vendor.

use std::sync::Arc;

use serde_json::json;
use warden_core::Origin;
use warden_egress::testing;
use warden_host::{Host, HostConfig, Invocation, InvokeOutcome, PackageSource};
use warden_tests::fake_mcp::{FakeMcp, MCP_HOST, MCP_URL, Script, token_store, write_package};

/// The echo of package `fake-mcp` (credential vendor `example`) for caller
/// `alice`, on a host sharing `shared`; and the requests the server got.
async fn echo_for_alice(shared: &[&str]) -> (InvokeOutcome, usize) {
    let fake = FakeMcp::start(Script::default()).await;
    let config = HostConfig {
        egress: testing::config(fake.ca(), &[(MCP_HOST, 443)]),
        shared_accounts: shared.iter().map(|v| (*v).to_owned()).collect(),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(token_store("fake-mcp")))
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
async fn a_callers_call_never_rides_the_deployments_unshared_account() {
    let (outcome, sent) = echo_for_alice(&[]).await;
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("the call is refused: {outcome:?}")
    };
    assert_eq!(failure.code(), "account_not_shared", "{failure}");
    assert!(failure.message().contains("`example`"), "{failure}");
    assert_eq!(sent, 0, "nothing reached the server");
}

#[tokio::test]
async fn a_shared_vendor_serves_a_caller_on_a_hosted_server() {
    let (outcome, sent) = echo_for_alice(&["example"]).await;
    assert!(
        matches!(outcome, InvokeOutcome::Completed(_)),
        "{outcome:?}"
    );
    assert!(sent > 0);
}
