//! The `near:agent@0.4.1` compatibility lane through the host, against a
//! local HTTPS provider (test CA, resolver override: the manifest keeps its
//! real host `api.github.com`). The fixture guest never names a credential:
//! the host injects it by audience.

use std::sync::Arc;

use serde_json::{Value, json};
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{self, RecordedRequest, TestCa, TestResponse, TestServer};
use warden_host::{
    CallFailure, ComponentWorld, Host, HostConfig, Invocation, InvokeOutcome, Location, Origin,
    PackageSource,
};
use warden_runtime::RuntimeError;

use crate::root;

const TOKEN: &str = "exmpl-compat-token-0123456789abcdef";
const HOSTS: [&str; 3] = ["api.github.com", "objects.example.net", "evil.example.org"];

fn provider(request: &RecordedRequest) -> TestResponse {
    let seen = request.header("authorization").unwrap_or("none").to_owned();
    match request.target.as_str() {
        "/repos/octo/hello" => TestResponse::json(&json!({
            "full_name": "octo/hello",
            "seen_authorization": seen,
        }))
        .with_header("link", "<https://api.github.com/a>")
        .with_header("link", "<https://api.github.com/b>")
        .with_header("x-oauth-scopes", "repo"),
        "/repos/octo/private" => TestResponse::status(401),
        "/repos/octo/gone" => TestResponse::status(404).with_body(r#"{"message":"Not Found"}"#),
        "/redirect" => TestResponse::redirect(302, "https://objects.example.net/blob"),
        "/blob" => TestResponse::ok(format!("blob; authorization: {seen}")),
        _ => TestResponse::ok("elsewhere"),
    }
}

async fn host(connected: bool) -> (Location, TestServer) {
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &HOSTS, provider).await.unwrap();
    let mut secrets = MemoryStore::new();
    if connected {
        let api = AccountAudience {
            scheme: "https".into(),
            host: "api.github.com".into(),
            port: 443,
        };
        secrets = secrets.with(
            AccountKey::new("github", "github_runtime_token", [] as [&str; 0]),
            AccountBinding::new("near-probe", [api]),
            TOKEN,
        );
    }
    let origins: Vec<(&str, u16)> = HOSTS.iter().map(|h| (*h, 443)).collect();
    let mut config = HostConfig {
        egress: testing::config(&ca, &origins),
        ..HostConfig::default()
    };
    // Fuel at the maximum, so the manifest's 100 ms wall clock is what stops
    // the busy loop even when a loaded machine slows the epoch ticker.
    config.runtime.defaults.fuel = config.runtime.maxima.fuel;
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(server.resolver(&HOSTS)))
        .build()
        .unwrap();
    let location = host.open_location("p");
    location
        .install(&PackageSource::Dir(
            root().join("tests/fixtures/packages/near-probe"),
        ))
        .expect("the near:agent fixture installs");
    (location, server)
}

async fn invoke(location: &Location, op: &str, input: Value) -> InvokeOutcome {
    let invocation = Invocation::new(format!("near-probe.{op}"), input, Origin::Product);
    location.invoke(invocation).await.unwrap()
}

async fn output(location: &Location, op: &str, input: Value) -> Value {
    match invoke(location, op, input).await {
        InvokeOutcome::Completed(done) => done.output,
        other => panic!("near-probe.{op} completes: {other:?}"),
    }
}

fn to(server: &TestServer, host: &str) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.server_name.as_deref() == Some(host))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_read_call_carries_the_credential_injected_by_audience() {
    let (location, server) = host(true).await;
    assert_eq!(
        location.package("near-probe").unwrap().world,
        Some(ComponentWorld::NearAgent)
    );
    let repo = output(
        &location,
        "get_repo",
        json!({"owner": "octo", "repo": "hello"}),
    )
    .await;
    assert_eq!(repo["full_name"], "octo/hello");
    // The provider echoed the header it received: redacted on the way back.
    assert_eq!(repo["seen_authorization"], "Bearer [REDACTED]");
    let requests = to(&server, "api.github.com");
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.target, "/repos/octo/hello");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(
        request.header("accept"),
        Some("application/vnd.github+json")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_undeclared_host_is_refused_and_never_reached() {
    let (location, server) = host(true).await;
    let out = output(
        &location,
        "fetch",
        json!({"url": "https://evil.example.org/x"}),
    )
    .await;
    assert_eq!(out["failure"]["kind"], "network-denied", "{out}");
    assert_eq!(out["failure"]["code"], "policy_denied");
    assert_eq!(out["failure"]["request_sent"], false);
    assert!(to(&server, "evil.example.org").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_off_the_audience_drops_the_credential() {
    let (location, server) = host(true).await;
    let out = output(
        &location,
        "fetch",
        json!({"url": "https://api.github.com/redirect"}),
    )
    .await;
    assert_eq!(out["response"]["status"], 200, "{out}");
    assert_eq!(out["response"]["body"], "blob; authorization: none");
    assert_eq!(
        to(&server, "api.github.com")[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    let blob = to(&server, "objects.example.net");
    assert_eq!(blob.len(), 1);
    assert_eq!(blob[0].header("authorization"), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn guest_supplied_authorization_and_credential_queries_are_refused() {
    let (location, server) = host(true).await;
    for input in [
        json!({"url": "https://api.github.com/repos/octo/hello", "headers": {"Authorization": "Bearer mine"}}),
        json!({"url": "https://objects.example.net/blob", "headers": {"X-Api-Key": "k"}}),
        json!({"url": "https://api.github.com/repos/octo/hello?access_token=abc"}),
    ] {
        let out = output(&location, "fetch", input.clone()).await;
        assert_eq!(out["failure"]["kind"], "network-denied", "{input}: {out}");
        assert_eq!(out["failure"]["request_sent"], false);
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_non_2xx_status_is_a_response_with_headers_json() {
    let (location, _server) = host(true).await;
    let out = output(
        &location,
        "fetch",
        json!({"url": "https://api.github.com/repos/octo/gone"}),
    )
    .await;
    assert_eq!(out["response"]["status"], 404, "{out}");
    assert_eq!(out["response"]["body"], r#"{"message":"Not Found"}"#);
    let out = output(
        &location,
        "fetch",
        json!({"url": "https://api.github.com/repos/octo/hello"}),
    )
    .await;
    let headers = &out["response"]["headers"];
    assert_eq!(
        headers["link"], "<https://api.github.com/a>, <https://api.github.com/b>",
        "{headers}"
    );
    assert_eq!(
        headers["x-oauth-scopes"],
        Value::Null,
        "credential-like names are hidden"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn auth_required_when_no_account_is_connected_or_the_provider_refuses() {
    let (location, server) = host(false).await;
    let InvokeOutcome::Failed(failure) = invoke(
        &location,
        "get_repo",
        json!({"owner": "octo", "repo": "hello"}),
    )
    .await
    else {
        panic!("fails without an account")
    };
    let CallFailure::AuthRequired(needed) = &failure else {
        panic!("{failure}")
    };
    assert_eq!(needed.needed.vendor, "github");
    assert_eq!(needed.extension_id, "near-probe");
    assert!(server.requests().is_empty());

    let (location, _server) = host(true).await;
    let InvokeOutcome::Failed(failure) = invoke(
        &location,
        "get_repo",
        json!({"owner": "octo", "repo": "private"}),
    )
    .await
    else {
        panic!("a 401 fails")
    };
    // The provider refused the injected credential: auth-required for its
    // vendor and extension, whether the guest or the host's 401 mapping says it.
    assert_eq!(failure.code(), "auth_required", "{failure}");
    let details = failure.auth_details().expect("auth details");
    assert_eq!(details.vendor.as_deref(), Some("github"));
    assert_eq!(details.extension, "near-probe");
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_follow_the_manifest_resource_profile() {
    let (location, _server) = host(false).await;
    let failure = |outcome: InvokeOutcome| match outcome {
        InvokeOutcome::Failed(failure) => failure
            .runtime_error()
            .cloned()
            .unwrap_or_else(|| panic!("fails in the runtime: {failure:?}")),
        other => panic!("fails in the runtime: {other:?}"),
    };
    // `hard_ceiling.max_wall_clock_ms = 100` (well before the default fuel runs out)
    let error = failure(invoke(&location, "spin", json!({})).await);
    assert_eq!(
        error,
        RuntimeError::Timeout {
            limit: std::time::Duration::from_millis(100)
        }
    );
    // `hard_ceiling.sandbox.memory_bytes = 16777216`
    let error = failure(invoke(&location, "hog", json!({"mib": 32})).await);
    assert_eq!(
        error,
        RuntimeError::MemoryLimit {
            limit_bytes: 16 << 20
        }
    );
    assert!(output(&location, "hog", json!({"mib": 4})).await["allocated_mib"] == 4);
    // `hard_ceiling.max_output_bytes = 65536`
    let error = failure(invoke(&location, "emit", json!({"bytes": 70000})).await);
    assert!(
        matches!(error, RuntimeError::OutputTooLarge { limit: 65536, .. }),
        "{error:?}"
    );
}
