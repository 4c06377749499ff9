//! Compile limits (issue 42, finding 5): a component of a few huge
//! functions held a compiler for 93 s and 1.2 GiB, unbounded. Its code size
//! is refused before anything compiles; a compiler process that hits its
//! time or memory limit refuses the component for good, never handing it to
//! an unbounded compile in this process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use warden_runtime::{
    CallRequest, CompileLimit, CompileLimits, ComponentSpec, ExternalCompiler, ExternalFailure,
    Runtime, RuntimeConfig, RuntimeError,
};

use crate::support::{cached, echo_dir, package};

/// A component whose core module holds one function of `additions`
/// additions (3 bytes each) that nothing calls: code a compiler compiles
/// all the same.
fn component_with_big_function(additions: usize) -> Vec<u8> {
    crate::imports::component_of(
        "package test:big; world w { export run: func() -> u32; }",
        |_, _| {
            let body = "i32.const 1 i32.add ".repeat(additions);
            wat::parse_str(format!(
                r#"(module
                    (func (export "run") (result i32) i32.const 7)
                    (func $unused (result i32) i32.const 0 {body}))"#
            ))
            .expect("core module")
        },
    )
}

/// Counts its compiles (none should happen) and refuses each with `refusal`.
#[derive(Debug)]
struct Refusing {
    compiles: Arc<AtomicUsize>,
    refusal: Option<RuntimeError>,
}

impl ExternalCompiler for Refusing {
    fn compile(&self, _: &str, _: &[u8]) -> Result<(), String> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        Err("refused".into())
    }

    fn compile_checked(
        &self,
        _: &str,
        _: &[u8],
        _: &mut dyn FnMut(),
    ) -> Result<(), ExternalFailure> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        Err(match &self.refusal {
            Some(error) => ExternalFailure::Refused(error.clone()),
            None => ExternalFailure::Unavailable("not started".into()),
        })
    }
}

fn runtime(
    dir: &std::path::Path,
    max_code_bytes: u64,
    refusal: Option<RuntimeError>,
) -> (Runtime, Arc<AtomicUsize>) {
    let compiles = Arc::new(AtomicUsize::new(0));
    let runtime = Runtime::new(RuntimeConfig {
        compile_limits: CompileLimits {
            max_code_bytes,
            ..CompileLimits::DEFAULT
        },
        external_compiler: Some(Arc::new(Refusing {
            compiles: compiles.clone(),
            refusal,
        })),
        ..cached(dir)
    })
    .expect("runtime");
    (runtime, compiles)
}

#[test]
fn code_past_the_size_limit_is_refused_before_any_compiler_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 64 << 10;
    let wasm = component_with_big_function(30_000);
    let (runtime, compiles) = runtime(dir.path(), limit, None);

    for lazily in [false, true] {
        let spec = ComponentSpec::new("bomb", wasm.clone());
        let error = if lazily {
            runtime.install_lazy(spec).unwrap_err()
        } else {
            runtime.install(spec).unwrap_err()
        };
        assert_eq!(error.code(), "compile_limit_exceeded", "{error}");
        let RuntimeError::CompileLimitExceeded {
            component,
            limit:
                CompileLimit::CodeSize {
                    actual_bytes,
                    limit_bytes,
                },
        } = &error
        else {
            panic!("not the code size limit: {error:?}");
        };
        assert_eq!(component, "bomb");
        assert_eq!(*limit_bytes, limit);
        assert!(*actual_bytes > 90_000, "{actual_bytes}");
        let message = error.to_string();
        assert!(
            message.contains("code size limit of 65536 bytes"),
            "{message}"
        );
    }
    assert_eq!(compiles.load(Ordering::SeqCst), 0, "no compiler ran");
    assert_eq!(runtime.stats().compiled, 0, "nothing compiled here");

    // The same component, its code exempt (a host's vendor shipped it),
    // gets past the check: it compiles and fails for what it is, a
    // component without the tool export.
    let error = runtime
        .install(ComponentSpec::new("bomb", wasm).unbounded_code())
        .unwrap_err();
    assert_eq!(error.code(), "export_missing", "{error}");
    assert_eq!(runtime.stats().compiled, 1);
}

/// A compiler process killed at a limit has refused the component: this
/// runtime does not compile it instead (without a bound on time or memory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compiler_refusing_at_a_limit_is_final() {
    let limits = [
        CompileLimit::Time {
            limit: Duration::from_millis(5),
        },
        CompileLimit::Memory {
            limit_bytes: 64 << 20,
        },
    ];
    for limit in limits {
        let dir = tempfile::tempdir().unwrap();
        let refusal = RuntimeError::CompileLimitExceeded {
            component: "echo".into(),
            limit,
        };
        let (runtime, compiles) = runtime(dir.path(), u64::MAX, Some(refusal.clone()));
        let error = runtime.install(package(&echo_dir())).unwrap_err();
        assert_eq!(error, refusal);
        assert_eq!(compiles.load(Ordering::SeqCst), 1);
        assert_eq!(runtime.stats().compiled, 0, "not compiled here instead");

        // Installed lazily, its calls fail with the refusal.
        let echo = runtime.install_lazy(package(&echo_dir())).unwrap();
        let outcome = echo
            .call(CallRequest::new("echo.echo", r#"{"text": "x"}"#))
            .await;
        assert_eq!(outcome.result.unwrap_err(), refusal);
        assert_eq!(runtime.stats().compiled, 0, "not compiled here instead");
    }
}

/// A compiler that could not run at all is not the component's fault: the
/// runtime compiles it here, as before.
#[test]
fn a_compiler_that_cannot_run_still_means_compiling_here() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, compiles) = runtime(dir.path(), u64::MAX, None);
    let echo = runtime.install(package(&echo_dir())).expect("installs");
    assert_eq!(compiles.load(Ordering::SeqCst), 1);
    assert_eq!(runtime.stats().compiled, 1);
    assert!(echo.report().is_some());
}
