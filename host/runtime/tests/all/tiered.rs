//! Tiered compilation (x86-64 only: elsewhere there is no baseline compiler):
//! on a cache miss, a tiered external compiler's baseline
//! code runs the first calls — under the same fuel, time and memory limits —
//! until its optimized code replaces it.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use warden_core::net::{
    BoxFuture, CallNetwork, CredentialError, GuestRequest, GuestResponse, HttpError,
};
use warden_runtime::{
    CacheStatus, CallRequest, ExternalCompiler, InstalledComponent, LimitOverrides, Runtime,
    RuntimeError, TrapKind,
};

use crate::support::{
    FakeNetwork, assert_echoed_secret_is_redacted, cached, compile_in, compiling_with, echo_dir,
    hostile_dir, package,
};

/// Another runtime standing in for the compiler process; after the baseline
/// code it counts the announcement and holds the optimized compile until the
/// test opens the gate (or drops its end).
#[derive(Debug)]
struct Tiered {
    other: Runtime,
    gate: Mutex<mpsc::Receiver<()>>,
    announced: Arc<AtomicUsize>,
    /// Say the optimized compile failed (after doing it).
    fail: bool,
}

impl ExternalCompiler for Tiered {
    fn compile(&self, name: &str, wasm: &[u8]) -> Result<(), String> {
        compile_in(&self.other, name, wasm)
    }

    fn compile_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), String> {
        let compiled = self
            .other
            .compile_to_cache_tiered(name, wasm, &mut |ready| {
                if ready {
                    baseline_ready();
                    self.announced.fetch_add(1, Ordering::SeqCst);
                }
                let _ = self.gate.lock().unwrap().recv();
            });
        match compiled {
            Ok(_) if self.fail => Err("the optimized compile failed".into()),
            compiled => compiled.map(drop).map_err(|e| e.to_string()),
        }
    }
}

/// A runtime whose compiler is [`Tiered`], and that compiler's side.
struct Setup {
    runtime: Runtime,
    other: Runtime,
    open: mpsc::Sender<()>,
    /// Baseline code announced so far.
    announced: Arc<AtomicUsize>,
}

fn tiered(dir: &Path) -> Setup {
    tiered_failing(dir, false)
}

fn tiered_failing(dir: &Path, fail: bool) -> Setup {
    let other = Runtime::new(cached(dir)).unwrap();
    let (open, gate) = mpsc::channel();
    let announced = Arc::new(AtomicUsize::new(0));
    let compiler = Tiered {
        other: other.clone(),
        gate: Mutex::new(gate),
        announced: announced.clone(),
        fail,
    };
    let runtime = compiling_with(dir, compiler);
    Setup {
        runtime,
        other,
        open,
        announced,
    }
}

fn artifacts(dir: &Path) -> usize {
    walk(dir)
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .count()
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .flat_map(|e| match e.path() {
            p if p.is_dir() => walk(&p),
            p => vec![p],
        })
        .collect()
}

async fn echo(component: &InstalledComponent, text: &str) -> u64 {
    let input = serde_json::json!({ "text": text }).to_string();
    let outcome = component.call(CallRequest::new("echo.echo", input)).await;
    let output = outcome.result.expect("echo runs");
    assert_eq!(output["text"], text);
    outcome.usage.fuel_consumed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_calls_run_baseline_code_until_the_optimized_code_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        runtime,
        other,
        open,
        ..
    } = tiered(dir.path());
    let component = runtime.install_lazy(package(&echo_dir())).unwrap();

    let baseline_fuel = echo(&component, "first").await;
    assert_eq!(component.report().unwrap().cache, CacheStatus::Baseline);
    assert_eq!(runtime.stats().baseline_served, 1);
    assert_eq!(runtime.stats().baseline_resident, 1, "calls run it");
    assert_eq!(other.stats().baseline_compiled, 1);
    assert_eq!(other.stats().compiled, 0, "the optimized compile waits");
    assert_eq!(runtime.stats().compiled, 0, "nothing compiled here");
    assert_eq!(artifacts(dir.path()), 1, "the baseline code");

    open.send(()).unwrap();
    // Waits for the swap, not only for the first code.
    let report = component.prepare_async().await.unwrap();
    assert_eq!(report.cache, CacheStatus::External);
    assert_eq!(component.report().unwrap().cache, CacheStatus::External);
    assert_eq!(other.stats().compiled, 1);
    assert_eq!(runtime.stats().compiled_external, 1);
    assert_eq!(
        runtime.stats().baseline_resident,
        0,
        "the baseline code was freed"
    );
    assert_eq!(
        artifacts(dir.path()),
        1,
        "the optimized code replaced the baseline entry"
    );

    // Both tiers meter the same guest work alike, to within 1 % (each
    // compiler counts at its own block boundaries: 5430 and 5465 units for
    // this call with wasmtime 48).
    let optimized_fuel = echo(&component, "first").await;
    let (low, high) = (
        baseline_fuel.min(optimized_fuel),
        baseline_fuel.max(optimized_fuel),
    );
    assert!(
        high - low <= high / 100,
        "baseline {baseline_fuel}, optimized {optimized_fuel}"
    );

    // A later runtime finds the optimized code and runs no baseline code.
    let later = tiered(dir.path()).runtime;
    let component = later.install(package(&echo_dir())).unwrap();
    assert_eq!(component.report().unwrap().cache, CacheStatus::Hit);
    assert_eq!(later.stats().baseline_served, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_hold_on_baseline_code() {
    let dir = tempfile::tempdir().unwrap();
    // The gate stays shut: every call below runs baseline code.
    let setup = tiered(dir.path());
    let runtime = &setup.runtime;
    let hostile = runtime.install_lazy(package(&hostile_dir())).unwrap();
    let call = |op: &str, limits: Option<LimitOverrides>| {
        let mut request = CallRequest::new(format!("hostile.{op}"), "{}");
        request.limits = limits;
        hostile.call(request)
    };

    let fuel = LimitOverrides {
        fuel: Some(5_000_000),
        ..LimitOverrides::default()
    };
    let outcome = call("spin", Some(fuel)).await;
    assert_eq!(hostile.report().unwrap().cache, CacheStatus::Baseline);
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::FuelExhausted { limit: 5_000_000 }
    );
    assert_eq!(outcome.usage.fuel_consumed, 5_000_000);

    let time = LimitOverrides {
        timeout_ms: Some(300),
        fuel: Some(u64::MAX),
        ..LimitOverrides::default()
    };
    let outcome = call("spin", Some(time)).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::Timeout {
            limit: Duration::from_millis(300)
        }
    );

    let outcome = call("memory_bomb", None).await;
    let limit = warden_runtime::Limits::DEFAULT.memory_bytes;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::MemoryLimit { limit_bytes: limit }
    );

    let outcome = call("recurse", None).await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::GuestTrap {
            kind: TrapKind::StackOverflow
        }
    );
    assert_eq!(hostile.report().unwrap().cache, CacheStatus::Baseline);
}

/// Announces baseline code it never compiled.
#[derive(Debug)]
struct Announcing(Runtime);

impl ExternalCompiler for Announcing {
    fn compile(&self, name: &str, wasm: &[u8]) -> Result<(), String> {
        compile_in(&self.0, name, wasm)
    }

    fn compile_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), String> {
        baseline_ready();
        self.compile(name, wasm)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announced_baseline_code_that_is_not_there_means_waiting_for_the_optimized_code() {
    let dir = tempfile::tempdir().unwrap();
    let other = Runtime::new(cached(dir.path())).unwrap();
    let runtime = compiling_with(dir.path(), Announcing(other));
    let component = runtime.install_lazy(package(&echo_dir())).unwrap();
    echo(&component, "x").await;
    assert_eq!(component.report().unwrap().cache, CacheStatus::External);
    assert_eq!(runtime.stats().baseline_served, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_waiting_call_loads_baseline_code() {
    let dir = tempfile::tempdir().unwrap();
    let Setup {
        runtime,
        other,
        open,
        announced,
    } = tiered(dir.path());
    // A warm-up nobody waits for: the baseline code stays in the cache.
    let hostile = runtime.install_lazy(package(&hostile_dir())).unwrap();
    open.send(()).unwrap();
    let report = hostile.prepare_async().await.unwrap();
    assert_eq!(report.cache, CacheStatus::External);
    assert_eq!(other.stats().baseline_compiled, 1);
    assert_eq!(runtime.stats().baseline_served, 0);

    // A call that starts waiting while a warm-up is at the optimized code
    // gets the baseline code the compiler announced before it came.
    let echo_component = runtime.install_lazy(package(&echo_dir())).unwrap();
    let warm_up = tokio::spawn({
        let component = echo_component.clone();
        async move { component.prepare_async().await }
    });
    while announced.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(runtime.stats().baseline_served, 0, "nobody waited yet");
    echo(&echo_component, "late").await;
    assert_eq!(
        echo_component.report().unwrap().cache,
        CacheStatus::Baseline
    );
    assert_eq!(runtime.stats().baseline_served, 1);
    open.send(()).unwrap();
    let report = warm_up.await.unwrap().unwrap();
    assert_eq!(report.cache, CacheStatus::External);
}

/// Announces baseline code, then panics.
#[derive(Debug)]
struct Panicking(Runtime);

impl ExternalCompiler for Panicking {
    fn compile(&self, _: &str, _: &[u8]) -> Result<(), String> {
        unreachable!("only the tiered path is used")
    }

    fn compile_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), String> {
        let _ = self.0.compile_to_cache_tiered(name, wasm, &mut |ready| {
            if ready {
                baseline_ready();
            }
        });
        panic!("the compiler broke");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compiler_that_panics_after_announcing_means_compiling_here() {
    let dir = tempfile::tempdir().unwrap();
    let other = Runtime::new(cached(dir.path())).unwrap();
    let runtime = compiling_with(dir.path(), Panicking(other));
    // A warm-up (nobody waits, so the announced code stays in the cache):
    // the panic ends it, and the component compiles here.
    let component = runtime.install_lazy(package(&echo_dir())).unwrap();
    let report = component.prepare_async().await.unwrap();
    assert_eq!(report.cache, CacheStatus::Compiled);
    echo(&component, "after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_optimized_code_from_the_compiler_it_is_compiled_here() {
    let dir = tempfile::tempdir().unwrap();
    let setup = tiered_failing(dir.path(), true);
    let component = setup.runtime.install_lazy(package(&echo_dir())).unwrap();
    echo(&component, "first").await;
    assert_eq!(component.report().unwrap().cache, CacheStatus::Baseline);
    setup.open.send(()).unwrap();
    let report = component.prepare_async().await.unwrap();
    assert_eq!(report.cache, CacheStatus::Compiled);
    assert_eq!(setup.runtime.stats().compiled, 1);
    echo(&component, "after").await;
}

/// A hostile guest on baseline code meets the same network boundary: its
/// request carries the handle's name, never a secret, and a secret it echoes
/// back (spelled with a JSON escape in its input) leaves redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_boundary_holds_on_baseline_code() {
    let dir = tempfile::tempdir().unwrap();
    // The gate stays shut: both calls run baseline code.
    let setup = tiered(dir.path());
    let hostile = setup.runtime.install_lazy(package(&hostile_dir())).unwrap();

    let network = FakeNetwork::new(true, false);
    let outcome = hostile
        .call(CallRequest::new("hostile.fetch", "{}").network(network.clone()))
        .await;
    assert_eq!(hostile.report().unwrap().cache, CacheStatus::Baseline);
    assert_eq!(outcome.result.expect("fetch succeeds")["status"], 200);
    let seen = network.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.as_deref(), Some("hostile_token"));
    assert!(!format!("{:?}", seen[0].0).contains(network.secret));

    assert_echoed_secret_is_redacted(&hostile).await;
    assert_eq!(hostile.report().unwrap().cache, CacheStatus::Baseline);
}

/// A network whose one request waits until the test lets it through.
struct HeldNetwork {
    arrived: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    release: tokio::sync::Semaphore,
}

impl CallNetwork for HeldNetwork {
    fn acquire(&self, _handle: &str) -> Result<(), CredentialError> {
        Ok(())
    }

    fn send<'a>(
        &'a self,
        _request: GuestRequest,
        _credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        if let Some(arrived) = self.arrived.lock().unwrap().take() {
            let _ = arrived.send(());
        }
        Box::pin(async move {
            let _permit = self.release.acquire().await.expect("open");
            Ok(crate::support::empty_json_answer())
        })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_running_baseline_code_keeps_it_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let Setup { runtime, open, .. } = tiered(dir.path());
    let hostile = runtime.install_lazy(package(&hostile_dir())).unwrap();
    let (arrived, request_arrived) = tokio::sync::oneshot::channel();
    let network = Arc::new(HeldNetwork {
        arrived: Mutex::new(Some(arrived)),
        release: tokio::sync::Semaphore::new(0),
    });

    // A call on baseline code, held inside its request (with room for the
    // optimized compile of a debug build, so its deadline does not end it).
    let mut running = tokio::spawn({
        let (hostile, network) = (hostile.clone(), network.clone());
        async move {
            let limits = LimitOverrides {
                timeout_ms: Some(120_000),
                ..LimitOverrides::default()
            };
            let request = CallRequest::new("hostile.fetch", "{}")
                .network(network)
                .limits(limits);
            hostile.call(request).await
        }
    });
    tokio::select! {
        arrived = request_arrived => arrived.unwrap(),
        ended = &mut running => panic!("the call ended before its request: {:?}", ended.unwrap().result),
    }
    assert_eq!(hostile.report().unwrap().cache, CacheStatus::Baseline);
    assert_eq!(runtime.stats().baseline_resident, 1);

    // The optimized code replaces it; the running call still holds it.
    open.send(()).unwrap();
    let report = hostile.prepare_async().await.unwrap();
    assert_eq!(report.cache, CacheStatus::External);
    assert_eq!(runtime.stats().baseline_resident, 1, "the call runs it");

    // The call ends on the code it started on, and then it is freed.
    network.release.add_permits(1);
    let outcome = running.await.unwrap();
    assert_eq!(outcome.result.expect("fetch succeeds")["status"], 200);
    assert_eq!(runtime.stats().baseline_resident, 0);
}

/// The baseline tier is freed with the last baseline code and built again for
/// the next: the epoch of the new engine advances, so a deadline still ends
/// a guest that never stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_holds_on_a_rebuilt_baseline_tier() {
    let dir = tempfile::tempdir().unwrap();
    let Setup { runtime, open, .. } = tiered(dir.path());
    let first = runtime.install_lazy(package(&echo_dir())).unwrap();
    echo(&first, "first").await;
    assert_eq!(first.report().unwrap().cache, CacheStatus::Baseline);
    open.send(()).unwrap();
    first.prepare_async().await.unwrap();
    assert_eq!(runtime.stats().baseline_resident, 0, "its tier is gone");

    // The gate stays shut for this one: it runs baseline code on a new tier.
    let hostile = runtime.install_lazy(package(&hostile_dir())).unwrap();
    let limits = LimitOverrides {
        timeout_ms: Some(300),
        fuel: Some(u64::MAX),
        ..LimitOverrides::default()
    };
    let outcome = hostile
        .call(CallRequest::new("hostile.spin", "{}").limits(limits))
        .await;
    assert_eq!(hostile.report().unwrap().cache, CacheStatus::Baseline);
    assert_eq!(runtime.stats().baseline_resident, 1);
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::Timeout {
            limit: Duration::from_millis(300)
        }
    );
}
