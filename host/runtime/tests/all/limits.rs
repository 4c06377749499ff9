//! Tool and call overrides, bounded by the host maxima; allocators.

use std::time::Duration;

use warden_runtime::{
    ActiveAllocator, Allocator, CallRequest, LimitOverrides, Limits, RuntimeConfig, RuntimeError,
};

use crate::support::{Host, config, hostile_dir, package};

fn small_maxima() -> RuntimeConfig {
    RuntimeConfig {
        maxima: Limits {
            fuel: 20_000_000,
            memory_bytes: 8 << 20,
            timeout: Duration::from_millis(400),
            max_output_bytes: 64,
            ..Limits::MAXIMA
        },
        ..config()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_overrides_are_capped_by_host_maxima() {
    let host = Host::new(small_maxima());
    let greedy = LimitOverrides {
        fuel: Some(u64::MAX),
        memory_bytes: Some(u64::MAX),
        timeout_ms: Some(60_000),
        max_output_bytes: Some(u64::MAX),
    };
    let spin = host
        .hostile
        .call(CallRequest::new("hostile.spin", "{}").limits(greedy))
        .await;
    assert_eq!(
        spin.result.unwrap_err(),
        RuntimeError::FuelExhausted { limit: 20_000_000 },
        "fuel raised to at most the maximum"
    );
    let bomb = host
        .hostile
        .call(CallRequest::new("hostile.memory_bomb", "{}").limits(greedy))
        .await;
    assert_eq!(
        bomb.result.unwrap_err(),
        RuntimeError::MemoryLimit {
            limit_bytes: 8 << 20
        }
    );
    let echo = host
        .echo
        .call(CallRequest::new("echo.echo", r#"{"text": "x"}"#).limits(greedy))
        .await;
    assert!(echo.result.is_ok(), "small output fits the 64-byte maximum");
    let long = host
        .echo
        .call(
            CallRequest::new("echo.echo", format!(r#"{{"text": "{}"}}"#, "x".repeat(100)))
                .limits(greedy),
        )
        .await;
    assert_eq!(long.result.unwrap_err().code(), "output_too_large");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_override_is_capped_by_the_maximum() {
    let config = RuntimeConfig {
        maxima: Limits {
            timeout: Duration::from_millis(400),
            ..Limits::MAXIMA
        },
        ..config()
    };
    let host = Host::new(config);
    let outcome = host.spin(60_000).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::Timeout {
            limit: Duration::from_millis(400)
        }
    );
    // Stopped by the capped deadline, not the 60 s asked for (seconds of
    // slack, which a loaded machine keeps).
    assert!(
        outcome.usage.wall_time < Duration::from_millis(400) + Duration::from_secs(5),
        "{:?}",
        outcome.usage.wall_time
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_limits_from_the_manifest_apply_and_calls_can_lower_them() {
    let runtime = warden_runtime::Runtime::new(config()).unwrap();
    let mut spec = package(&hostile_dir());
    for capability in &mut spec.capabilities {
        if capability.id == "hostile.memory_bomb" {
            capability.limits.memory_bytes = Some(4 << 20);
        }
    }
    let hostile = runtime.install(spec).unwrap();
    assert_eq!(
        hostile.limits("hostile.memory_bomb").unwrap().memory_bytes,
        4 << 20
    );
    let outcome = hostile
        .call(CallRequest::new("hostile.memory_bomb", "{}"))
        .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::MemoryLimit {
            limit_bytes: 4 << 20
        }
    );
    let small_fuel = LimitOverrides {
        fuel: Some(1_000),
        ..LimitOverrides::default()
    };
    let outcome = hostile
        .call(CallRequest::new("hostile.healthy", "{}").limits(small_fuel))
        .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::FuelExhausted { limit: 1_000 }
    );
}

async fn allocator_works(allocator: Allocator) -> ActiveAllocator {
    let host = Host::new(RuntimeConfig {
        allocator,
        max_concurrent: 4,
        ..config()
    });
    for _ in 0..3 {
        host.assert_echo_works().await;
    }
    let bomb = host.hostile("memory_bomb", "{}").await;
    assert_eq!(bomb.result.unwrap_err().code(), "memory_limit");
    host.assert_echo_works().await;
    host.runtime.allocator()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooling_allocator_works() {
    assert_eq!(
        allocator_works(Allocator::Pooling).await,
        ActiveAllocator::Pooling
    );
}

/// With a single pooled slot every call reuses the same memory, which the
/// pool resets in place (only the dirtied pages, where the kernel reports
/// them). The global that `state` bumps must read as fresh on every call,
/// also after a memory bomb dirtied the slot far past the range kept resident.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_pool_slot_starts_clean() {
    let host = Host::new(RuntimeConfig {
        allocator: Allocator::Pooling,
        max_concurrent: 1,
        ..config()
    });
    for _ in 0..2 {
        let state = host.hostile("state", "{}").await;
        assert_eq!(state.result.expect("state runs")["calls"], 1);
        let bomb = host.hostile("memory_bomb", "{}").await;
        assert_eq!(bomb.result.unwrap_err().code(), "memory_limit");
    }
    let state = host.hostile("state", "{}").await;
    assert_eq!(state.result.expect("state runs")["calls"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_demand_allocator_works() {
    assert_eq!(
        allocator_works(Allocator::OnDemand).await,
        ActiveAllocator::OnDemand
    );
}

#[test]
fn auto_falls_back_to_on_demand_when_the_pool_cannot_be_reserved() {
    // Millions of 4 GiB slots exceed the address space: the pool cannot be reserved.
    let huge = |allocator| RuntimeConfig {
        allocator,
        max_concurrent: 1 << 20,
        ..config()
    };
    let error = warden_runtime::Runtime::new(huge(Allocator::Pooling)).unwrap_err();
    assert_eq!(error.code(), "engine_error");
    let runtime = warden_runtime::Runtime::new(huge(Allocator::Auto)).expect("falls back");
    assert_eq!(runtime.allocator(), ActiveAllocator::OnDemand);
}
