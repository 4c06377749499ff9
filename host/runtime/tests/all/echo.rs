//! The install + call path with a real tool.

use warden_core::Origin;
use warden_runtime::{CallRequest, RuntimeConfig, RuntimeError, TABLE_ELEMENT_BYTES};

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
async fn the_input_checked_flag_is_trusted_not_verified() {
    // Input the schema accepts but over this runtime's size limit: only
    // the flag decides whether the call checks it.
    let host = Host::new(RuntimeConfig {
        max_input_bytes: 40,
        ..config()
    });
    let input = r#"{"text": "abcdefghijklmnopqrstu", "transform": "upper"}"#;
    assert!(matches!(
        host.echo.check_input("echo.echo", input),
        Err(RuntimeError::InvalidInput { .. })
    ));

    let unflagged = host.echo.call(CallRequest::new("echo.echo", input)).await;
    assert!(
        matches!(unflagged.result, Err(RuntimeError::InvalidInput { .. })),
        "{:?}",
        unflagged.result
    );
    assert_eq!(unflagged.usage.fuel_consumed, 0, "no guest code ran");

    let flagged = host
        .echo
        .call(CallRequest::new("echo.echo", input).input_checked(true))
        .await;
    assert_eq!(
        flagged.result.expect("the guest ran on it"),
        serde_json::json!({"text": "ABCDEFGHIJKLMNOPQRSTU", "chars": 21})
    );
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

/// Bytes the limiter charges an instance of `wasm` before any guest code
/// runs: every defined memory's and table's initial size, across the
/// component's core modules.
fn initial_footprint(wasm: &[u8]) -> u64 {
    use wasmparser::{Parser, Payload};
    let mut bytes = 0;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.expect("the component parses") {
            Payload::MemorySection(memories) => {
                for memory in memories {
                    let memory = memory.expect("memory type");
                    let page = memory.page_size_log2.map_or(64 << 10, |log2| 1 << log2);
                    bytes += memory.initial * page;
                }
            }
            Payload::TableSection(tables) => {
                for table in tables {
                    bytes += table.expect("table").ty.initial * TABLE_ELEMENT_BYTES;
                }
            }
            _ => {}
        }
    }
    bytes
}

/// The SDK's allocator starts in an arena inside the initial memory, so a
/// call whose heap fits never grows memory (no `mprotect` for the host), and
/// one that outgrows it grows memory as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sdk_tool_grows_memory_only_past_its_arena() {
    use crate::support::{echo_dir, hostile_dir, package};
    let host = Host::new(config());

    let echo_initial = initial_footprint(&package(&echo_dir()).wasm);
    assert!(echo_initial > 0);
    let text = "x".repeat(32 << 10);
    let input = serde_json::json!({ "text": text, "transform": "upper" }).to_string();
    let small = host.echo.call(CallRequest::new("echo.echo", input)).await;
    assert_eq!(small.result.expect("echo succeeds")["chars"], 32 << 10);
    assert_eq!(
        small.usage.peak_memory_bytes, echo_initial,
        "a call with a 32 KiB text stays in the initial memory"
    );

    let hostile_initial = initial_footprint(&package(&hostile_dir()).wasm);
    let large = host.hostile("huge_output", "{}").await;
    assert_eq!(large.result.unwrap_err().code(), "output_too_large");
    assert!(
        large.usage.peak_memory_bytes > hostile_initial + (4 << 20),
        "a 4 MiB string grows memory past the arena: {} bytes at peak, {hostile_initial} initially",
        large.usage.peak_memory_bytes
    );
}
