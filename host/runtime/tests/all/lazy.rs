//! Lazy installs: the catalog needs no compiler, a component compiles once at
//! its first call (however many calls arrive together), and a component that
//! fails to prepare fails its calls with the reason.

use warden_runtime::{
    CallRequest, CapabilitySpec, ComponentSpec, ComponentWorld, Runtime, RuntimeConfig,
    RuntimeError,
};

use crate::imports::{component, socket_importing_component};
use crate::support::{echo_dir, package, root};

/// No cache: every preparation is a real compilation, counted.
fn uncached() -> RuntimeConfig {
    RuntimeConfig {
        cache_dir: None,
        max_concurrent: 16,
        ..RuntimeConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_install_compiles_once_however_many_first_calls_arrive_together() {
    let runtime = Runtime::new(uncached()).unwrap();
    let echo = runtime.install_lazy(package(&echo_dir())).expect("install");
    assert_eq!(runtime.stats().compiled, 0, "installing compiled nothing");
    assert!(!echo.is_prepared());
    assert!(echo.report().is_none());
    assert_eq!(echo.world(), ComponentWorld::Warden);
    // Input is checked against the schemas without the code.
    let refused = echo.check_input("echo.echo", r#"{"text": 7}"#).unwrap_err();
    assert_eq!(refused.code(), "invalid_input");
    assert_eq!(runtime.stats().compiled, 0);

    let calls = (0..8).map(|i| {
        let echo = echo.clone();
        tokio::spawn(async move {
            let input = format!(r#"{{"text": "call {i}", "transform": "upper"}}"#);
            echo.call(CallRequest::new("echo.echo", input)).await
        })
    });
    for (i, call) in futures_join(calls).await.into_iter().enumerate() {
        let output = call.result.expect("every first call runs");
        assert_eq!(output["text"], format!("CALL {i}"));
    }
    assert_eq!(
        runtime.stats().compiled,
        1,
        "eight first calls, one compilation"
    );
    assert!(echo.is_prepared());
    assert!(echo.report().is_some());
    // Preparing again is free.
    echo.prepare_async().await.expect("prepared");
    assert_eq!(runtime.stats().compiled, 1);
}

async fn futures_join<T: Send + 'static>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let mut out = Vec::new();
    for handle in handles.collect::<Vec<_>>() {
        out.push(handle.await.expect("task"));
    }
    out
}

#[test]
fn the_world_is_read_from_the_exports_before_compiling() {
    let runtime = Runtime::new(uncached()).unwrap();
    let probe = runtime
        .install_lazy(package(&root().join("tests/fixtures/packages/near-probe")))
        .expect("install");
    assert_eq!(probe.world(), ComponentWorld::NearAgent);
    assert_eq!(runtime.stats().compiled, 0);
    // Another version of the world is refused by name, still without compiling.
    let wasm = component(
        "package test:other;
        world w { export near:agent/tool@0.5.0; }
        package near:agent@0.5.0 { interface tool { execute: func() -> u32; } }",
    );
    let error = runtime
        .install_lazy(ComponentSpec::new("other", wasm))
        .unwrap_err();
    assert_eq!(error.code(), "export_missing");
    assert!(
        error.to_string().contains("near:agent/tool@0.5.0"),
        "{error}"
    );
    // Bytes that are not WebAssembly at all are refused at once.
    let error = runtime
        .install_lazy(ComponentSpec::new("junk", b"not wasm".to_vec()))
        .unwrap_err();
    assert_eq!(error.code(), "compile_failed");
    assert_eq!(runtime.stats().compiled, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_that_fails_to_prepare_fails_every_call_with_the_reason() {
    let wasm = socket_importing_component();
    let runtime = Runtime::new(uncached()).unwrap();
    let bad = runtime
        .install_lazy(
            ComponentSpec::new("bad", wasm).with_capability(CapabilitySpec::new("bad.run")),
        )
        .expect("nothing compiled yet, nothing refused");
    let expected = RuntimeError::ImportNotAllowed {
        component: "bad".into(),
        import: "wasi:sockets/tcp@0.2.0".into(),
    };
    for _ in 0..2 {
        let outcome = bad.call(CallRequest::new("bad.run", "{}")).await;
        assert_eq!(outcome.result.unwrap_err(), expected);
    }
    assert_eq!(
        runtime.stats().compiled,
        1,
        "the failure is kept, not retried"
    );
    assert_eq!(bad.prepare().unwrap_err(), expected);
}
