//! The install + call path with a real tool.

use warden_core::Origin;
use warden_runtime::{CallRequest, RuntimeError};

use crate::support::{Host, config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_returns_validated_output_with_usage() {
    let host = Host::new(config());
    let outcome = host
        .echo
        .call(
            CallRequest::new("echo.echo", r#"{"text": "héllo", "transform": "reverse"}"#)
                .call_id("c-1")
                .origin(Origin::Product),
        )
        .await;
    let output = outcome.result.expect("echo succeeds");
    assert_eq!(output, serde_json::json!({"text": "olléh", "chars": 5}));
    assert!(outcome.usage.fuel_consumed > 0);
    assert!(
        outcome.usage.peak_memory_bytes >= 64 << 10,
        "{:?}",
        outcome.usage
    );
    assert_eq!(outcome.usage.http_requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_is_refused_before_the_guest_runs() {
    let host = Host::new(config());
    let outcome = host
        .echo
        .call(CallRequest::new(
            "echo.echo",
            r#"{"text": 5, "transform": "sideways", "extra": 1}"#,
        ))
        .await;
    let Err(RuntimeError::InvalidInput { errors, omitted }) = &outcome.result else {
        panic!("expected invalid input, got {:?}", outcome.result);
    };
    let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
    assert!(pointers.contains(&"/text"), "{pointers:?}");
    assert!(pointers.contains(&"/transform"), "{pointers:?}");
    assert_eq!(*omitted, 0);
    assert_eq!(outcome.usage.fuel_consumed, 0, "no guest code ran");
    assert_eq!(
        outcome.usage.peak_memory_bytes, 0,
        "no instance was created"
    );

    let not_json = host.echo.call(CallRequest::new("echo.echo", "{nope")).await;
    assert_eq!(not_json.result.unwrap_err().code(), "invalid_input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_capability_is_refused() {
    let host = Host::new(config());
    let outcome = host
        .echo
        .call(CallRequest::new("echo.hidden_admin", "{}"))
        .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::UnknownCapability {
            capability_id: "echo.hidden_admin".into()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capability_id_comes_from_the_request_not_the_input() {
    let host = Host::new(config());
    // The input names a hostile operation; the host's capability id decides.
    let outcome = host
        .hostile(
            "healthy",
            r#"{"capability_id": "hostile.spin", "op": "spin"}"#,
        )
        .await;
    let output = outcome.result.expect("healthy runs");
    assert_eq!(output["ok"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_state_passes_between_calls() {
    let host = Host::new(config());
    for _ in 0..3 {
        let outcome = host.hostile("state", "{}").await;
        assert_eq!(outcome.result.expect("state runs")["calls"], 1);
    }
}
