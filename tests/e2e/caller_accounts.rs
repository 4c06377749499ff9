//! Accounts per caller: on an endpoint whose callers authenticate with
//! JWTs, each caller's calls use that caller's own account and never
//! another's; the deployment's account serves a caller only for a vendor
//! the operator shares (`[accounts] shared`).

use rmcp::model::CallToolResult;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use warden_tests::jwt_issuer::JwtIssuer;
use warden_tests::{ALICE_TOKEN, FakeGitHub, TOKEN, Warden};

use crate::serve_auth::serve_on;
use crate::stateless::{approval_id, get_repo};

pub(crate) const ISSUER: &str = "https://issuer.test";
pub(crate) const AUDIENCE: &str = "https://warden.test/mcp";

async fn client(port: u16, issuer: &JwtIssuer, subject: &str) -> RunningService<RoleClient, ()> {
    let bearer = issuer.bearer_for(subject, AUDIENCE, "mcp", 600);
    let token = bearer.trim_start_matches("Bearer ").to_owned();
    let uri = format!("http://127.0.0.1:{port}/mcp");
    let config = StreamableHttpClientTransportConfig::with_uri(uri).auth_header(token);
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.expect("initialize over HTTP")
}

/// `warden serve` on loopback for JWT callers of `issuer`.
fn serve(warden: &Warden, issuer: &JwtIssuer) -> (warden_tests::Serving, u16) {
    serve_for_jwt(warden, issuer, "127.0.0.1:0", &[])
}

/// `warden serve --http <addr> <more>` for JWT callers of `issuer`
/// (audience [`AUDIENCE`], scope `mcp`).
pub(crate) fn serve_for_jwt(
    warden: &Warden,
    issuer: &JwtIssuer,
    addr: &str,
    more: &[&str],
) -> (warden_tests::Serving, u16) {
    let jwks = warden.data_dir().join("jwks.json");
    std::fs::write(&jwks, issuer.jwks()).unwrap();
    let mut args = vec![
        "--oauth-issuer",
        ISSUER,
        "--oauth-audience",
        AUDIENCE,
        "--oauth-jwks-file",
        jwks.to_str().unwrap(),
        "--oauth-scope",
        "mcp",
    ];
    args.extend(more);
    serve_on(warden, addr, &args)
}

/// `github_get_repo` for `client`, approved by the operator in between.
async fn approved_get_repo(
    warden: &Warden,
    client: &RunningService<RoleClient, ()>,
) -> CallToolResult {
    let asked = approval_id(&get_repo(client).await).expect("an approval id");
    let approved = warden.run(&["approvals", "approve", &asked]);
    assert_eq!(approved.code, 0, "{approved:?}");
    get_repo(client).await
}

fn error_code(result: &CallToolResult) -> Option<String> {
    let meta = &result.meta.as_ref()?.0;
    meta["warden/errorCode"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_caller_uses_their_own_account_and_never_anothers() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    // The deployment's account (stored by the operator for nobody) ...
    fake.connect(&warden);
    // ... and Alice's own.
    FakeGitHub::store_token_of(&warden, Some("alice"), ALICE_TOKEN);
    let listed = warden.run(&["secret", "list"]);
    assert!(listed.stdout.contains("owner       alice"), "{listed:?}");
    let status = warden.run(&["auth", "status"]);
    assert!(status.stdout.contains("[repo] of alice"), "{status:?}");
    let issuer = JwtIssuer::new(ISSUER);
    let (serving, port) = serve(&warden, &issuer);
    let (alice, bob) = (
        client(port, &issuer, "alice").await,
        client(port, &issuer, "bob").await,
    );

    let ran = approved_get_repo(&warden, &alice).await;
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    // Bob has no account of his own, and the deployment's is not shared.
    let refused = approved_get_repo(&warden, &bob).await;
    assert_eq!(
        error_code(&refused).as_deref(),
        Some("auth_required"),
        "{refused:?}"
    );
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .filter_map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(sent, [format!("Bearer {ALICE_TOKEN}")]);
    let _ = tokio::join!(alice.cancel(), bob.cancel());
    drop(serving);

    // The operator shares the deployment's GitHub account: Bob's calls use
    // it; Alice's still use hers.
    warden.configure_more("[accounts]\nshared = [\"github\"]\n");
    let (_serving, port) = serve(&warden, &issuer);
    let (alice, bob) = (
        client(port, &issuer, "alice").await,
        client(port, &issuer, "bob").await,
    );
    // Bob's approval was handed back when his call stopped for want of an
    // account: his identical call runs on it now.
    let ran = get_repo(&bob).await;
    assert_eq!(approval_id(&ran), None, "{ran:?}");
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let ran = approved_get_repo(&warden, &alice).await;
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .skip(1)
        .filter_map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        sent,
        [format!("Bearer {TOKEN}"), format!("Bearer {ALICE_TOKEN}")]
    );
    let _ = tokio::join!(alice.cancel(), bob.cancel());
}

/// Approve, then connect, then call again: the approval the call claimed
/// before it stopped for want of an account is handed back, and the
/// identical call runs without a second approval.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_stopped_for_an_account_keeps_its_approval() {
    let fake = FakeGitHub::start().await;
    let warden = crate::warden();
    fake.configure(&warden);
    let issuer = JwtIssuer::new(ISSUER);
    let (_serving, port) = serve(&warden, &issuer);
    let bob = client(port, &issuer, "bob").await;
    let refused = approved_get_repo(&warden, &bob).await;
    assert_eq!(
        error_code(&refused).as_deref(),
        Some("auth_required"),
        "{refused:?}"
    );
    FakeGitHub::store_token_of(&warden, Some("bob"), TOKEN);
    let ran = get_repo(&bob).await;
    assert_eq!(approval_id(&ran), None, "no second approval: {ran:?}");
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(fake.count("GET", "/repos/octo/hello"), 1);
    let _ = bob.cancel().await;
}
