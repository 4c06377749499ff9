//! The executor contract as a caller sees it: a tool runs only through the
//! lane its installed registration bound, and a lane's typed error stays
//! reachable.

use serde_json::json;
use warden_host::{
    CallFailure, Host, HostConfig, Invocation, InvokeOutcome, Origin, PackageSource, Replace,
};
use warden_runtime::RuntimeError;

use crate::root;

fn echo(text: serde_json::Value) -> Invocation {
    Invocation::new("echo_echo", json!({ "text": text }), Origin::Product)
}

#[tokio::test]
async fn an_uninstalled_package_never_runs_from_an_older_snapshot() {
    let host = Host::builder(HostConfig::default()).build().unwrap();
    let location = host.open_location("p");
    location
        .install(&PackageSource::Dir(root().join("packages/echo")))
        .unwrap();
    let snapshot = location.snapshot();
    assert!(location.uninstall("echo").is_some());
    // The model was shown the tool, but its package is gone: nothing runs.
    let outcome = location
        .invoke_in(&snapshot, echo(json!("hi")))
        .await
        .unwrap();
    let InvokeOutcome::Failed(CallFailure::UnknownTool { name }) = outcome else {
        panic!("the uninstalled tool does not run: {outcome:?}")
    };
    assert_eq!(name, "echo_echo");
}

#[tokio::test]
async fn a_replaced_package_is_not_run_from_a_snapshot_of_the_old_one() {
    let host = Host::builder(HostConfig::default()).build().unwrap();
    let location = host.open_location("p");
    let dir = root().join("packages/echo");
    location.install(&PackageSource::Dir(dir.clone())).unwrap();
    let old = location.snapshot();
    location
        .install_with(&PackageSource::Dir(dir), Replace::Yes)
        .unwrap();
    let outcome = location.invoke_in(&old, echo(json!("hi"))).await.unwrap();
    assert!(
        matches!(
            outcome,
            InvokeOutcome::Failed(CallFailure::UnknownTool { .. })
        ),
        "{outcome:?}"
    );
    // A fresh snapshot runs the replacement.
    let fresh = location.snapshot();
    let outcome = location.invoke_in(&fresh, echo(json!("hi"))).await.unwrap();
    assert!(
        matches!(outcome, InvokeOutcome::Completed(_)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn the_wasm_lane_keeps_its_typed_error() {
    let host = Host::builder(HostConfig::default()).build().unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let outcome = location.invoke(echo(json!(42))).await.unwrap();
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("a number is not a text: {outcome:?}")
    };
    assert_eq!(failure.code(), "invalid_input");
    assert!(
        matches!(
            failure.runtime_error(),
            Some(RuntimeError::InvalidInput { .. })
        ),
        "{failure:?}"
    );
}

/// A call the rules let run needs nobody's approval, and the runtime trusts
/// the host's check of its input: input the check refuses (over the size
/// limit, or not the schema's shape) must never reach the guest.
#[tokio::test]
async fn input_the_host_refuses_never_reaches_the_guest() {
    let mut config = HostConfig::default();
    config.runtime.max_input_bytes = 64;
    let host = Host::builder(config).build().unwrap();
    let location = host.open_location("p");
    location.install_embedded().unwrap();
    let refused = [
        json!({ "text": "x".repeat(100) }),
        json!({ "text": "x", "transform": "upper", "also": "run me" }),
    ];
    for input in refused {
        let call = Invocation::new("echo_echo", input.clone(), Origin::Product);
        let outcome = location.invoke(call).await.unwrap();
        let InvokeOutcome::Failed(failure @ CallFailure::Runtime { usage, .. }) = &outcome else {
            panic!("{input} must be refused: {outcome:?}")
        };
        assert!(
            matches!(
                failure.runtime_error(),
                Some(RuntimeError::InvalidInput { .. })
            ),
            "{failure:?}"
        );
        assert_eq!(usage.fuel_consumed, 0, "the guest ran on {input}");
    }
    let fits = location.invoke(echo(json!("fits"))).await.unwrap();
    assert!(matches!(fits, InvokeOutcome::Completed(_)), "{fits:?}");
}

/// Issue 44: a client's cancellation did not reach a running guest. A
/// cancelled call of a guest that loops forever now ends `cancelled` at
/// once, and its instance is gone: the memory its call reserved is free
/// again well before its 10 s deadline.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_guest_stops_and_its_instance_is_released() {
    let host = Host::builder(HostConfig::default()).build().unwrap();
    let location = host.open_location("p");
    location
        .install(&PackageSource::Dir(
            root().join("tests/fixtures/packages/hostile"),
        ))
        .unwrap();
    let cancel = warden_host::CancellationToken::new();
    let invocation =
        Invocation::new("hostile.spin", json!({}), Origin::Product).cancelled_by(cancel.clone());
    let running = tokio::spawn({
        let location = location.clone();
        async move { location.invoke(invocation).await }
    });
    let reserved = || host.runtime().memory().reserved_bytes;
    let wait = async {
        while reserved() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .expect("the guest started");
    cancel.cancel();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), running)
        .await
        .expect("the cancelled call ends before its deadline")
        .unwrap()
        .unwrap();
    let InvokeOutcome::Failed(failure) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(failure.code(), warden_core::ErrorCode::Cancelled);
    // A call moved to the long-call lane is dropped there at its next
    // yield (every epoch tick): soon, and long before its deadline.
    let released = async {
        while reserved() != 0 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), released)
        .await
        .expect("the guest's instance is gone before its 10 s deadline");
}
