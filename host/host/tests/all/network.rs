//! GitHub through the host with a local HTTPS provider: injection, redaction, auth-required.

use std::sync::Arc;

use serde_json::json;
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{TestCa, TestResponse, TestServer};
use warden_host::{CallFailure, Host, HostConfig, Invocation, InvokeOutcome, Location, Origin};

const TOKEN: &str = "gho_hostTestToken0123456789abcdef";

async fn github(secrets: MemoryStore, description: String) -> (Location, TestServer) {
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &["api.github.com"], move |_request| {
        TestResponse::json(&json!({
            "name": "hello", "full_name": "octo/hello", "owner": { "login": "octo" },
            "private": false, "html_url": "https://github.com/octo/hello", "description": description,
            "default_branch": "main", "stargazers_count": 1, "forks_count": 0, "open_issues_count": 0,
            "archived": false, "visibility": "public",
            "created_at": "2011-01-26T19:01:12Z", "updated_at": "2011-01-26T19:14:43Z"
        }))
    })
    .await
    .unwrap();
    let config = HostConfig {
        egress: warden_egress::testing::config(&ca, &[("api.github.com", 443)]),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(server.resolver(&["api.github.com"])))
        .build()
        .unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    (location, server)
}

fn get_repo() -> Invocation {
    Invocation::new(
        "github.get_repo",
        json!({ "owner": "octo", "repo": "hello" }),
        Origin::Product,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_is_injected_and_redacted_from_what_comes_back() {
    let api = AccountAudience {
        scheme: "https".into(),
        host: "api.github.com".into(),
        port: 443,
    };
    let secrets = MemoryStore::new().with(
        AccountKey::new("github", "github_runtime_token", ["repo"]),
        AccountBinding::new("github", [api]),
        TOKEN,
    );
    let (location, server) = github(secrets, format!("leaked {TOKEN} here")).await;
    let outcome = location.invoke(get_repo()).await.unwrap();
    let InvokeOutcome::Completed(done) = outcome else {
        panic!("get_repo runs: {outcome:?}")
    };
    assert_eq!(done.output["full_name"], "octo/hello");
    let description = done.output["description"].as_str().unwrap();
    assert!(
        description.contains("[REDACTED]") && !description.contains(TOKEN),
        "{description}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(done.usage.http_requests, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_secret_is_auth_required_with_vendor_and_scopes() {
    let (location, server) = github(MemoryStore::new(), String::new()).await;
    let InvokeOutcome::Failed(failure) = location.invoke(get_repo()).await.unwrap() else {
        panic!("fails")
    };
    // The host refuses before the guest starts.
    let CallFailure::AuthRequired(_) = &failure else {
        panic!("{failure}")
    };
    assert_eq!(failure.code(), "auth_required", "{failure}");
    let message = failure.message();
    assert!(
        message.contains("github") && message.contains("repo"),
        "{message}"
    );
    assert!(server.requests().is_empty());
}
