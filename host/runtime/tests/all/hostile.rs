//! Each hostile fixture ends with its own error kind (what stopped it: the
//! fuel, memory or output limit, a trap, the deadline) and the host keeps
//! serving. How soon a deadline stops a guest is measured by the
//! `deadline` benchmark (`benches/runtime.rs`), not asserted here: a
//! wall-clock bound tight enough to say so fails on a loaded machine.

use std::time::Duration;

use warden_runtime::{CallOutcome, CallRequest, LimitOverrides, RuntimeError, TrapKind};

use crate::support::{Host, config};

/// Slack on top of a deadline before a test calls the guest unstopped:
/// seconds, which scheduling on a loaded machine never takes, where a guest
/// the deadline failed to stop runs on (a spin for ever).
const SLACK: Duration = Duration::from_secs(5);

/// The deadline of a fixture the test does not stop by its deadline: far
/// past what any of them takes on a loaded machine, so what stops it is the
/// limit under test, never the clock.
const GENEROUS_MS: u64 = 60_000;

/// Run `hostile.<op>` (with [`GENEROUS_MS`] as its deadline unless `limits`
/// sets one), check it ended within its deadline (give or take [`SLACK`]),
/// then check echo still works.
async fn run(host: &Host, op: &str, input: &str, limits: Option<LimitOverrides>) -> CallOutcome {
    let mut limits = limits.unwrap_or_default();
    let deadline_ms = *limits.timeout_ms.get_or_insert(GENEROUS_MS);
    let bound = Duration::from_millis(deadline_ms);
    let mut request = CallRequest::new(format!("hostile.{op}"), input);
    request.limits = Some(limits);
    let call = host.hostile.call(request);
    let outcome = tokio::time::timeout(bound + 2 * SLACK, call)
        .await
        .unwrap_or_else(|_| panic!("{op} was never stopped"));
    assert!(
        outcome.usage.wall_time <= bound + SLACK,
        "{op} took {:?}, deadline {bound:?}",
        outcome.usage.wall_time
    );
    host.assert_echo_works().await;
    outcome
}

/// The deadline stops a spin that fuel never would: the kind of stop is
/// the deadline's, the guest ran (fuel was spent, far from the limit), and
/// it ended no sooner than its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_times_out() {
    let host = Host::new(config());
    let deadline = Duration::from_millis(300);
    let limits = LimitOverrides {
        timeout_ms: Some(300),
        fuel: Some(u64::MAX),
        ..LimitOverrides::default()
    };
    let outcome = run(&host, "spin", "{}", Some(limits)).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::Timeout { limit: deadline }
    );
    assert!(outcome.usage.fuel_consumed > 0, "the guest ran");
    assert!(
        outcome.usage.fuel_consumed < u64::MAX / 2,
        "not out of fuel"
    );
    assert!(outcome.usage.wall_time >= deadline);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loop_runs_out_of_fuel() {
    let host = Host::new(config());
    let limits = LimitOverrides {
        fuel: Some(5_000_000),
        ..LimitOverrides::default()
    };
    let outcome = run(&host, "spin", "{}", Some(limits)).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::FuelExhausted { limit: 5_000_000 }
    );
    assert_eq!(outcome.usage.fuel_consumed, 5_000_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_hits_the_memory_limit() {
    let host = Host::new(config());
    let outcome = run(&host, "memory_bomb", "{}", None).await;
    let limit = warden_runtime::Limits::DEFAULT.memory_bytes;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::MemoryLimit { limit_bytes: limit }
    );
    assert!(outcome.usage.peak_memory_bytes <= limit);
    assert!(outcome.usage.peak_memory_bytes > limit / 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_recursion_overflows_the_stack() {
    let host = Host::new(config());
    let outcome = run(&host, "recurse", "{}", None).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::GuestTrap {
            kind: TrapKind::StackOverflow
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_output_is_too_large() {
    let host = Host::new(config());
    let outcome = run(&host, "huge_output", "{}", None).await;
    let Err(RuntimeError::OutputTooLarge { limit, actual }) = outcome.result else {
        panic!("expected output too large, got {:?}", outcome.result);
    };
    assert_eq!(limit, warden_runtime::Limits::DEFAULT.max_output_bytes);
    assert!(actual > 4 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_json_output_is_invalid() {
    let host = Host::new(config());
    let outcome = run(&host, "not_json", "{}", None).await;
    let Err(RuntimeError::InvalidOutput { reason }) = outcome.result else {
        panic!("expected invalid output, got {:?}", outcome.result);
    };
    assert!(reason.contains("not valid JSON"), "{reason}");
    assert!(
        !reason.contains("this is"),
        "the output is not echoed: {reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_breaking_its_schema_is_invalid() {
    let host = Host::new(config());
    let outcome = run(&host, "bad_output", "{}", None).await;
    let Err(RuntimeError::InvalidOutput { reason }) = outcome.result else {
        panic!("expected invalid output, got {:?}", outcome.result);
    };
    assert!(
        reason.contains("output schema of `hostile.bad_output`"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panic_is_a_guest_panic_with_its_message_logged() {
    let host = Host::new(config());
    let outcome = run(&host, "panic", "{}", None).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::GuestTrap {
            kind: TrapKind::Panic
        }
    );
    assert!(
        outcome
            .logs
            .iter()
            .any(|l| l.message.contains("panics on purpose")),
        "{:?}",
        outcome.logs
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_is_a_guest_trap() {
    let host = Host::new(config());
    let outcome = run(&host, "unreachable", "{}", None).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::GuestTrap {
            kind: TrapKind::Unreachable
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_flood_is_capped_and_counted() {
    let host = Host::new(config());
    let outcome = run(&host, "log_flood", "{}", None).await;
    let cap = warden_runtime::Limits::DEFAULT.max_log_entries;
    assert_eq!(
        outcome.result.expect("logging never fails")["logged"],
        100_000
    );
    assert_eq!(outcome.logs.len(), cap as usize);
    assert_eq!(outcome.usage.log_entries_dropped, 100_000 - cap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_flood_hits_the_request_limit() {
    let host = Host::new(config());
    let outcome = run(&host, "http_flood", "{}", None).await;
    let cap = warden_runtime::Limits::DEFAULT.max_http_requests;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::RequestLimit { limit: cap }
    );
    assert_eq!(
        outcome.usage.http_requests, 5_000,
        "every attempt is counted"
    );
}
