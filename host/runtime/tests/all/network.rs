//! The `credential`, `http` and `log` imports against a fake `CallNetwork`.

use warden_runtime::{CallRequest, FailureKind, RuntimeError};

use crate::support::{FakeNetwork, Host, assert_echoed_secret_is_redacted, config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_carries_the_handle_name_and_never_a_secret() {
    let host = Host::new(config());
    let network = FakeNetwork::new(true, false);
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.fetch", "{}").network(network.clone()))
        .await;
    let output = outcome.result.expect("fetch succeeds");
    assert_eq!(output["status"], 200);
    let seen = network.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (request, credential) = &seen[0];
    assert_eq!(request.url, "https://api.example.com/fetch");
    assert_eq!(credential.as_deref(), Some("hostile_token"));
    assert!(request.timeout.is_some(), "the deadline bounds the request");
    assert_eq!(outcome.usage.http_requests, 1);
    assert!(outcome.usage.http_bytes_sent > 0 && outcome.usage.http_bytes_received > 0);
    assert!(
        outcome
            .logs
            .iter()
            .any(|l| l.message == "fetched with handle hostile_token")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_credential_is_auth_required_with_vendor_and_scopes() {
    let host = Host::new(config());
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.auth", "{}").network(FakeNetwork::new(false, false)))
        .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::AuthRequired {
            vendor: Some("example".into()),
            scopes: vec!["records.read".into()],
            extension: "hostile".into(),
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_request_is_network_denied_with_the_host_reason_redacted() {
    let host = Host::new(config());
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.fetch", "{}").network(FakeNetwork::new(true, true)))
        .await;
    let Err(RuntimeError::NetworkDenied { reason }) = outcome.result else {
        panic!("expected network denied, got {:?}", outcome.result);
    };
    assert_eq!(reason, "api.example.com is not allowed (token [REDACTED])");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_egress_credentials_are_undeclared() {
    let host = Host::new(config());
    let outcome = host.hostile("fetch", "{}").await;
    let Err(RuntimeError::GuestFailure { kind, code, .. }) = outcome.result else {
        panic!("expected a tool failure, got {:?}", outcome.result);
    };
    assert_eq!(
        (kind, code.as_str()),
        (FailureKind::Executor, "credential_not_declared")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_messages_and_logs_are_redacted_and_bounded() {
    let host = Host::new(config());
    let network = FakeNetwork::new(true, false);
    let input = serde_json::json!({
        "code": "upstream_broke",
        "message": format!("token s3cr3t leaked {}", "z".repeat(10_000)),
    });
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.fail", input.to_string()).network(network.clone()))
        .await;
    let Err(RuntimeError::GuestFailure {
        kind,
        code,
        message: Some(message),
    }) = outcome.result
    else {
        panic!("expected a tool failure, got {:?}", outcome.result);
    };
    assert_eq!(
        (kind, code.as_str()),
        (FailureKind::OperationFailed, "upstream_broke")
    );
    assert!(message.starts_with("token [REDACTED] leaked"), "{message}");
    assert!(message.len() <= 1024);

    // A code is an identifier the model sees: one holding the secret is
    // replaced whole.
    let input = serde_json::json!({ "code": "token_s3cr3t", "message": "m" });
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.fail", input.to_string()).network(network.clone()))
        .await;
    let Err(RuntimeError::GuestFailure { code, .. }) = outcome.result else {
        panic!("expected a tool failure, got {:?}", outcome.result);
    };
    assert_eq!(code, "redacted_code");

    let flood = host
        .hostile
        .call(CallRequest::new("hostile.log_flood", "{}").network(network))
        .await;
    assert!(flood.logs.iter().all(|l| !l.message.contains("s3cr3t")));
    assert!(flood.logs[0].message.contains("secret=[REDACTED]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_origin_and_call_id_reach_the_guest_from_the_host() {
    let host = Host::new(config());
    let outcome = host
        .hostile
        .call(
            CallRequest::new("hostile.healthy", r#"{"a": 1}"#)
                .call_id("abc")
                .origin(warden_core::Origin::Automation),
        )
        .await;
    let output = outcome.result.expect("healthy");
    assert_eq!(output["input"]["a"], 1);
    assert_eq!(output["call_id"], "abc");
    assert_eq!(output["origin"], "automation");
}

/// A network that accepts credentials and never answers.
struct Hanging;

impl warden_core::net::CallNetwork for Hanging {
    fn acquire(&self, _handle: &str) -> Result<(), warden_core::net::CredentialError> {
        Ok(())
    }

    fn send<'a>(
        &'a self,
        _request: warden_core::net::GuestRequest,
        _credential: Option<&'a str>,
        _remaining: std::time::Duration,
    ) -> warden_core::net::BoxFuture<
        'a,
        Result<warden_core::net::GuestResponse, warden_core::net::HttpError>,
    > {
        Box::pin(std::future::pending())
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_never_answers_is_cut_at_the_deadline() {
    let host = Host::new(config());
    let limits = warden_runtime::LimitOverrides {
        timeout_ms: Some(300),
        ..Default::default()
    };
    let deadline = std::time::Duration::from_millis(300);
    // A request the deadline failed to cut would never end: the test's own
    // bound turns that into a failure.
    let slack = std::time::Duration::from_secs(5);
    let outcome = tokio::time::timeout(
        deadline + 2 * slack,
        host.hostile.call(
            CallRequest::new("hostile.fetch", "{}")
                .limits(limits)
                .network(std::sync::Arc::new(Hanging)),
        ),
    )
    .await
    .expect("the hanging request was never cut");
    // Either the guest reports the request's timeout before the next epoch
    // tick, or the deadline interrupts it first: the kind of stop is one of
    // the deadline's.
    match &outcome.result {
        Err(RuntimeError::Timeout { limit }) => {
            assert_eq!(*limit, std::time::Duration::from_millis(300));
        }
        Err(RuntimeError::GuestFailure { kind, code, .. }) => {
            assert_eq!(
                (*kind, code.as_str()),
                (FailureKind::OperationFailed, "upstream_timeout")
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        outcome.usage.wall_time < deadline + slack,
        "{:?}",
        outcome.usage.wall_time
    );
    host.assert_echo_works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_raised_by_the_host_keeps_its_cause() {
    let host = Host::new(config());
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.handle_flood", "{}").network(FakeNetwork::new(true, false)))
        .await;
    let error = outcome.result.unwrap_err();
    assert_eq!(error.code(), "guest_trap");
    assert_eq!(
        error.to_string(),
        "the tool crashed: it trapped (more than 256 credential handles in one call)",
        "the host's reason, without wasmtime's backtrace header"
    );
    host.assert_echo_works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_output_is_redacted_before_it_is_parsed() {
    let host = Host::new(config());
    assert_echoed_secret_is_redacted(&host.hostile).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_broken_by_redaction_is_a_typed_error() {
    let host = Host::new(config());
    // A secret holding JSON syntax: redacting it cuts through the output.
    let network = std::sync::Arc::new(crate::support::FakeNetwork {
        secret: "a\",",
        configured: true,
        deny: false,
        seen: Default::default(),
    });
    let outcome = host
        .hostile
        .call(CallRequest::new("hostile.healthy", r#"{"k": ["a", "b"]}"#).network(network))
        .await;
    let Err(RuntimeError::InvalidOutput { reason }) = outcome.result else {
        panic!("expected invalid output, got {:?}", outcome.result);
    };
    assert!(reason.contains("staged secret"), "{reason}");
}
