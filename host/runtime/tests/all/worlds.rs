//! `warden:tool@0.2.0` beside 0.1.0: content blocks, progress and
//! cancellation from the conformance fixture (package `test`, 0.2.0), and
//! the 0.1.0 fixture (`world-0-1`, raw 0.1.0 bindings) running unchanged.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_core::content::{Body, ResourceContents};
use warden_core::lane::{Progress, ProgressSink};
use warden_runtime::{
    CallRequest, ComponentWorld, FailureKind, InstalledComponent, LimitOverrides, LogLevel,
    Runtime, RuntimeError,
};

use crate::support::{config, package, root};

fn install(name: &str) -> InstalledComponent {
    let runtime = Runtime::new(config()).expect("runtime");
    runtime
        .install(package(&root().join("tests/fixtures/packages").join(name)))
        .expect("install")
}

/// A sink that keeps every report.
fn collecting() -> (ProgressSink, Arc<Mutex<Vec<Progress>>>) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let kept = reports.clone();
    (
        ProgressSink::new(move |p| kept.lock().unwrap().push(p)),
        reports,
    )
}

#[tokio::test]
async fn a_0_1_0_component_runs_unchanged_beside_0_2_0() {
    let old = install("world-0-1");
    assert_eq!(old.world(), ComponentWorld::Warden01);
    assert_eq!(old.world().as_str(), "warden:tool@0.1.0");
    let outcome = old
        .call(CallRequest::new("world-0-1.echo", r#"{"n":1}"#))
        .await;
    assert_eq!(
        outcome.result.unwrap(),
        json!({"echo": {"n": 1}, "undeclared": "none"})
    );
    assert!(outcome.content.is_empty());
    assert_eq!(outcome.logs[0].level, LogLevel::Info);
    assert_eq!(outcome.logs[0].message, "echo from loop-run");
    let failed = old.call(CallRequest::new("world-0-1.fail", "{}")).await;
    match failed.result {
        Err(RuntimeError::GuestFailure { kind, code, .. }) => {
            assert_eq!((kind, code.as_str()), (FailureKind::Client, "not_found"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(install("test").world(), ComponentWorld::Warden);
}

#[tokio::test]
async fn content_blocks_come_back_beside_or_instead_of_json() {
    let test = install("test");
    let only = test.call(CallRequest::new("test.simple_text", "{}")).await;
    assert_eq!(only.result.unwrap(), Value::Null, "content only: no JSON");
    assert_eq!(
        only.content[0].body,
        Body::Text("This is a simple text response for testing.".into())
    );

    let picture = test
        .call(CallRequest::new("test.picture", r#"{"pad":1000}"#))
        .await;
    let output = picture.result.unwrap();
    let Body::Image(image) = &picture.content[0].body else {
        panic!("{:?}", picture.content)
    };
    assert_eq!(image.mime_type, "image/png");
    assert!(image.data.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(output, json!({"bytes": image.data.len()}));
    let mcp = picture.content[0].to_mcp();
    assert_eq!(
        mcp["annotations"],
        json!({"audience": ["user"], "priority": 0.5})
    );

    let mixed = test
        .call(CallRequest::new("test.multiple_content_types", "{}"))
        .await;
    let kinds: Vec<_> = mixed.content.iter().map(|b| b.body.kind()).collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let Body::Resource(resource) = &mixed.content[2].body else {
        unreachable!()
    };
    assert_eq!(
        resource.contents,
        ResourceContents::Text(r#"{"test":"data","value":123}"#.into())
    );
}

#[tokio::test]
async fn content_counts_against_the_output_limit() {
    let test = install("test");
    let limits = LimitOverrides {
        max_output_bytes: Some(64 << 10),
        ..LimitOverrides::default()
    };
    let outcome = test
        .call(CallRequest::new("test.picture", r#"{"pad":100000}"#).limits(limits))
        .await;
    match outcome.result {
        Err(RuntimeError::OutputTooLarge { limit, actual }) => {
            assert_eq!(limit, 64 << 10);
            assert!(actual > 100_000, "{actual}");
        }
        other => panic!("{other:?}"),
    }
    assert!(outcome.content.is_empty());
}

#[tokio::test]
async fn progress_reports_reach_the_sink_as_they_come() {
    let test = install("test");
    let (sink, reports) = collecting();
    let outcome = test
        .call(CallRequest::new("test.steps", r#"{"steps":5}"#).reporting(sink))
        .await;
    assert_eq!(outcome.result.unwrap(), json!({"steps": 5}));
    let reports = reports.lock().unwrap().clone();
    let seen: Vec<_> = reports.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(
        seen,
        (1..=5)
            .map(|n| (f64::from(n), Some(5.0)))
            .collect::<Vec<_>>()
    );
    assert_eq!(reports[4].message.as_deref(), Some("step 5"));

    // Past the cap, reports are dropped; the call goes on.
    let (sink, reports) = collecting();
    let outcome = test
        .call(CallRequest::new("test.steps", r#"{"steps":1000}"#).reporting(sink))
        .await;
    assert!(outcome.result.is_ok());
    assert_eq!(reports.lock().unwrap().len(), 256);
}

#[tokio::test]
async fn a_cancelled_0_2_0_guest_sees_it_and_stops_within_the_grace() {
    let test = install("test");
    let cancel = CancellationToken::new();
    let (sink, _) = {
        let cancel = cancel.clone();
        // Cancel at the first report: the guest is between steps.
        let sink = ProgressSink::new(move |_| cancel.cancel());
        (sink, ())
    };
    let request = CallRequest::new("test.steps", r#"{"steps":1000000,"work":20000}"#)
        .reporting(sink)
        .cancelled_by(cancel)
        .limits(LimitOverrides {
            timeout_ms: Some(30_000),
            fuel: Some(u64::MAX / 2),
            ..LimitOverrides::default()
        });
    let outcome = test.call(request).await;
    assert!(
        matches!(outcome.result, Err(RuntimeError::Cancelled)),
        "{:?}",
        outcome.result
    );
    assert_eq!(
        outcome.result.as_ref().unwrap_err().code().as_str(),
        "cancelled"
    );
    let messages: Vec<_> = outcome.logs.iter().map(|l| l.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("cancelled after 1 steps")),
        "the guest saw the cancellation: {messages:?}"
    );
    assert!(
        outcome.usage.fuel_consumed > 0,
        "usage of the stopped guest is kept"
    );
}

#[tokio::test]
async fn a_cancelled_guest_that_ignores_it_is_stopped_after_the_grace() {
    let hostile = Runtime::new(config())
        .expect("runtime")
        .install(package(&crate::support::hostile_dir()))
        .expect("install");
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let outcome = hostile
        .call(
            CallRequest::new("hostile.spin", "{}")
                .cancelled_by(cancel)
                .limits(LimitOverrides {
                    timeout_ms: Some(20_000),
                    fuel: Some(u64::MAX / 2),
                    ..LimitOverrides::default()
                }),
        )
        .await;
    assert!(
        matches!(outcome.result, Err(RuntimeError::Cancelled)),
        "{:?}",
        outcome.result
    );
    // Stopped by the host after the grace, not returned: the instance and
    // its store went with the future, so no usage was read from them.
    assert_eq!(outcome.usage.fuel_consumed, 0, "{:?}", outcome.usage);
}
