//! Runtime benchmarks, each read as a ratio of two entries of the same run:
//!
//! - (a) `dispatch/warden_call` vs `dispatch/bare_instance_pre`; output
//!   redaction: `dispatch/warden_call_redacting` vs `dispatch/warden_call`
//! - (b) `dispatch/bare_new_wasi_linker_per_call` vs `dispatch/warden_call`
//!   (and, for the contract alone, `dispatch/bare_new_linker_per_call`)
//! - (c) `cold_start/empty_cache` vs `cold_start/warm_cache` (install N packages)
//! - (d) `fuel/on` vs `fuel/off` (CPU-bound guest)
//! - (e) `throughput/concurrent_1000` vs `throughput/sequential_1000`
//! - (f) `deadline/spin_100ms` minus 100 ms: how far past its deadline a
//!   guest that never stops on its own is stopped
//!
//! Run: `cargo bench -p warden-runtime --bench runtime` (after `cargo xtask bundle`).

use std::sync::{Arc, LazyLock};

use divan::Bencher;
use warden_core::net::{
    BoxFuture, CallNetwork, CredentialError, DenyAll, GuestRequest, GuestResponse, HttpError,
};
use warden_runtime::{
    Allocator, CallRequest, InstalledComponent, Runtime, RuntimeConfig, RuntimeStats,
};

mod support;

use support::{BareHost, ECHO_INPUT, TOKIO, echo_request, package};

/// Packages installed by the cold-start benchmark.
const N_PACKAGES: usize = 4;

fn main() {
    divan::main();
}

fn runtime(config: RuntimeConfig) -> Runtime {
    Runtime::new(config).expect("runtime")
}

static WARDEN_ECHO: LazyLock<InstalledComponent> = LazyLock::new(|| {
    runtime(RuntimeConfig {
        max_concurrent: 1024,
        ..RuntimeConfig::default()
    })
    .install(package("packages/echo", None))
    .expect("install echo")
});

static BARE: LazyLock<BareHost> =
    LazyLock::new(|| BareHost::new(&package("packages/echo", None).wasm));

fn echo_call() -> CallRequest {
    CallRequest::new("echo.echo", ECHO_INPUT)
}

/// A call network whose only job is the staged-secret redactor of a call with
/// one credential (what `CallSession::redact` runs), built once: the
/// difference from `warden_call` is the redaction of the output.
struct Redacting(warden_egress::redact::Redactor);

impl CallNetwork for Redacting {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        DenyAll.acquire(handle)
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        remaining: std::time::Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        DenyAll.send(request, credential, remaining)
    }

    fn redact(&self, text: &str) -> String {
        self.0.redact_str(text)
    }
}

static REDACTING: LazyLock<Arc<Redacting>> = LazyLock::new(|| {
    let secret = b"ghp_BenchToken0123456789abcdefABCDEF0123";
    Arc::new(Redacting(warden_egress::redact::Redactor::new([
        secret.as_slice()
    ])))
});

mod dispatch {
    use super::*;

    /// Warden's full dispatch: validate, queue, fresh store + instance, limits, validate output.
    #[divan::bench]
    fn warden_call(b: Bencher<'_, '_>) {
        let echo = &*WARDEN_ECHO;
        b.bench(|| {
            let outcome = TOKIO.block_on(echo.call(echo_call()));
            assert!(outcome.result.is_ok());
        });
    }

    /// The same with a staged secret's redactor on the output.
    #[divan::bench]
    fn warden_call_redacting(b: Bencher<'_, '_>) {
        let echo = &*WARDEN_ECHO;
        let network: Arc<dyn CallNetwork> = REDACTING.clone();
        b.bench(|| {
            let call = echo_call().network(Arc::clone(&network));
            let outcome = TOKIO.block_on(echo.call(call));
            assert!(outcome.result.is_ok());
        });
    }

    /// Bare wasmtime: `InstancePre::instantiate` + call, default engine.
    #[divan::bench]
    fn bare_instance_pre(b: Bencher<'_, '_>) {
        let bare = &*BARE;
        let request = echo_request();
        b.bench(|| bare.call(&request));
    }

    /// A host that builds a new `Linker` and instantiates per call.
    #[divan::bench]
    fn bare_new_linker_per_call(b: Bencher<'_, '_>) {
        let bare = &*BARE;
        let request = echo_request();
        b.bench(|| bare.call_with_new_linker(&request));
    }

    /// A host that builds a new `Linker` with WASI 0.2 and the contract, and
    /// instantiates per call.
    #[divan::bench]
    fn bare_new_wasi_linker_per_call(b: Bencher<'_, '_>) {
        let bare = &*BARE;
        let request = echo_request();
        b.bench(|| bare.call_with_new_wasi_linker(&request));
    }
}

mod cold_start {
    use super::*;

    fn config(dir: &std::path::Path) -> RuntimeConfig {
        RuntimeConfig {
            cache_dir: Some(dir.to_owned()),
            allocator: Allocator::OnDemand,
            max_concurrent: 4,
            ..RuntimeConfig::default()
        }
    }

    fn install_all(runtime: &Runtime) -> RuntimeStats {
        for tag in 0..N_PACKAGES {
            runtime
                .install(package("packages/echo", Some(tag)))
                .expect("install");
        }
        runtime.stats()
    }

    /// Install N packages into a runtime whose cache is empty (compiles N).
    #[divan::bench(sample_count = 5, sample_size = 1)]
    fn empty_cache(b: Bencher<'_, '_>) {
        b.with_inputs(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let runtime = runtime(config(dir.path()));
            (dir, runtime)
        })
        .bench_local_values(|(dir, runtime)| {
            let stats = install_all(&runtime);
            assert_eq!(stats.compiled, N_PACKAGES as u64);
            (dir, runtime)
        });
    }

    /// Install the same N packages into a fresh runtime on a warm cache (compiles none).
    #[divan::bench(sample_count = 20, sample_size = 1)]
    fn warm_cache(b: Bencher<'_, '_>) {
        let dir = tempfile::tempdir().expect("tempdir");
        install_all(&runtime(config(dir.path())));
        b.with_inputs(|| runtime(config(dir.path())))
            .bench_local_values(|runtime| {
                let stats = install_all(&runtime);
                assert_eq!(stats.compiled, 0);
                runtime
            });
    }
}

mod fuel {
    use super::*;

    const BURN: &str = r#"{"rounds": 1000000}"#;

    fn hostile(fuel_metering: bool) -> InstalledComponent {
        runtime(RuntimeConfig {
            fuel_metering,
            max_concurrent: 4,
            ..RuntimeConfig::default()
        })
        .install(package("tests/fixtures/packages/hostile", None))
        .expect("install hostile")
    }

    fn burn(b: Bencher<'_, '_>, fuel_metering: bool) {
        let hostile = hostile(fuel_metering);
        b.bench(|| {
            let outcome = TOKIO.block_on(hostile.call(CallRequest::new("hostile.burn", BURN)));
            assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        });
    }

    /// A CPU-bound guest (1M xorshift rounds) with fuel metering.
    #[divan::bench(sample_count = 20)]
    fn on(b: Bencher<'_, '_>) {
        burn(b, true);
    }

    /// The same guest without fuel metering (epoch deadline only).
    #[divan::bench(sample_count = 20)]
    fn off(b: Bencher<'_, '_>) {
        burn(b, false);
    }
}

mod throughput {
    use super::*;

    const CALLS: usize = 1000;

    /// 1,000 echo calls at once on a 2-worker Tokio runtime.
    #[divan::bench(sample_count = 10)]
    fn concurrent_1000(b: Bencher<'_, '_>) {
        let echo = &*WARDEN_ECHO;
        b.bench(|| {
            TOKIO.block_on(async {
                let tasks: Vec<_> = (0..CALLS)
                    .map(|_| {
                        let echo = echo.clone();
                        tokio::spawn(async move { echo.call(echo_call()).await })
                    })
                    .collect();
                for task in tasks {
                    assert!(task.await.expect("task").result.is_ok());
                }
            });
        });
    }

    /// The same 1,000 calls one after another in one task.
    #[divan::bench(sample_count = 10)]
    fn sequential_1000(b: Bencher<'_, '_>) {
        let echo = &*WARDEN_ECHO;
        b.bench(|| {
            TOKIO.block_on(async {
                for _ in 0..CALLS {
                    assert!(echo.call(echo_call()).await.result.is_ok());
                }
            });
        });
    }
}

mod deadline {
    use warden_runtime::{LimitOverrides, RuntimeError};

    use super::*;

    /// The deadline of the spin below.
    const DEADLINE_MS: u64 = 100;

    /// How soon a deadline stops a guest that never stops on its own: an
    /// endless loop with unlimited fuel and a 100 ms deadline. The time past
    /// 100 ms is the overshoot (an epoch tick, the interrupt, scheduling).
    /// The hostile tests assert only what stopped the guest (a wall-clock
    /// bound tight enough to say "promptly" fails on a loaded machine).
    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn spin_100ms(b: Bencher<'_, '_>) {
        let hostile = runtime(RuntimeConfig::default())
            .install(package("tests/fixtures/packages/hostile", None))
            .expect("install hostile");
        let limits = LimitOverrides {
            timeout_ms: Some(DEADLINE_MS),
            fuel: Some(u64::MAX),
            ..LimitOverrides::default()
        };
        b.bench(|| {
            let call = CallRequest::new("hostile.spin", "{}").limits(limits);
            let outcome = TOKIO.block_on(hostile.call(call));
            assert!(
                matches!(outcome.result, Err(RuntimeError::Timeout { .. })),
                "{:?}",
                outcome.result
            );
        });
    }
}
