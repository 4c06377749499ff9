//! The shipped first-party services through the host API, against fake
//! Google and Exa servers over HTTPS with a generated CA (a resolver override
//! keeps the real host names): every tool of the three packages, the token
//! injected toward its audience only and never in an output, and the
//! provider's "token no good" answers as `auth_required` with the scopes.

mod calendar;
mod gmail;
mod web_access;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{RecordedRequest, TestCa, TestResponse, TestServer};
use warden_host::{
    CallFailure, Host, HostConfig, Invocation, InvokeOutcome, Location, Origin, PackageSource,
    Resolution,
};

/// The token every fake account holds; no output may carry it.
pub(crate) const TOKEN: &str = "ya29.fake-google-token-4f1c";

/// The built-in package `name` of this repository.
fn package(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../packages")
        .join(name)
}

/// A host running the shipped services, package `name` installed, its
/// credential `handle` connected with `scopes` for `audience`, and a fake
/// provider answering `hosts` with `handler`.
pub(crate) struct Fixture {
    pub(crate) location: Location,
    pub(crate) server: TestServer,
    _host: Host,
}

impl Fixture {
    pub(crate) async fn start(
        name: &str,
        account: Option<(&str, &str, &[&str])>,
        hosts: &[&str],
        handler: impl Fn(&RecordedRequest) -> TestResponse + Send + Sync + 'static,
    ) -> Fixture {
        let ca = TestCa::new();
        let server = TestServer::start(&ca, hosts, handler)
            .await
            .expect("server");
        let mut secrets = MemoryStore::new();
        if let Some((handle, audience, scopes)) = account {
            let audience = AccountAudience {
                scheme: "https".into(),
                host: audience.into(),
                port: 443,
            };
            secrets = secrets.with(
                AccountKey::new("google", handle, scopes.iter().copied()),
                AccountBinding::new(name, [audience]),
                TOKEN,
            );
        }
        let origins: Vec<(&str, u16)> = hosts.iter().map(|h| (*h, 443)).collect();
        let config = HostConfig {
            egress: warden_egress::testing::config(&ca, &origins),
            ..HostConfig::default()
        };
        let host = warden_services::register(
            Host::builder(config)
                .secret_store(Arc::new(secrets))
                .resolver(Arc::new(server.resolver(hosts))),
        )
        .build()
        .expect("host");
        let location = host.open_location("services");
        location
            .install(&PackageSource::BundledDir(package(name)))
            .expect("the package installs");
        Fixture {
            location,
            server,
            _host: host,
        }
    }

    /// Call `tool` as a person would, approving once when it asks; the
    /// output, or the failure.
    pub(crate) async fn call(&self, tool: &str, input: Value) -> Result<Value, CallFailure> {
        let invocation = Invocation::new(tool, input, Origin::Product);
        let outcome = match self.location.invoke(invocation.clone()).await.unwrap() {
            InvokeOutcome::NeedsApproval(request) => self
                .location
                .answer_and_resume(&request.id, Resolution::ApproveOnce, invocation)
                .await
                .unwrap(),
            other => other,
        };
        match outcome {
            InvokeOutcome::Completed(done) => {
                let text = done.output.to_string();
                assert!(!text.contains(TOKEN), "the token is in the output: {text}");
                Ok(done.output)
            }
            InvokeOutcome::Failed(failure) => {
                assert!(!failure.message().contains(TOKEN), "{failure}");
                Err(failure)
            }
            InvokeOutcome::NeedsApproval(request) => panic!("asked twice: {request:?}"),
        }
    }

    /// Every request the fake received carried the token, and only it.
    pub(crate) fn assert_token_on_every_request(&self) {
        let requests = self.server.requests();
        assert!(!requests.is_empty());
        for request in requests {
            assert_eq!(
                request.header("authorization"),
                Some(format!("Bearer {TOKEN}").as_str()),
                "{} {}",
                request.method,
                request.target
            );
        }
    }
}

/// A request's JSON body.
pub(crate) fn body(request: &RecordedRequest) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON body")
}

/// Google's answer that the token lacks a scope.
pub(crate) fn insufficient_scope() -> TestResponse {
    let mut response = TestResponse::json(&serde_json::json!({"error": {
        "code": 403, "status": "PERMISSION_DENIED",
        "message": "Request had insufficient authentication scopes.",
        "errors": [{"reason": "insufficientPermissions"}],
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT"}]
    }}));
    response.status = 403;
    response
}

/// Google's answer to an expired or revoked token.
pub(crate) fn expired() -> TestResponse {
    let mut response = TestResponse::json(&serde_json::json!({"error": {
        "code": 401, "status": "UNAUTHENTICATED", "message": "Invalid Credentials"}}));
    response.status = 401;
    response
}
