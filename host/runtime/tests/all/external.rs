//! The external compiler: a cache miss is compiled elsewhere and loaded from
//! the cache; whatever goes wrong there, the runtime compiles itself.

use warden_runtime::{CacheStatus, ExternalCompiler, Runtime, RuntimeConfig};

use crate::support::{cached, compile_in, compiling_with, echo_dir, package};

/// Another runtime, standing in for the other process.
#[derive(Debug)]
struct OtherRuntime(Runtime);

impl ExternalCompiler for OtherRuntime {
    fn compile(&self, name: &str, wasm: &[u8]) -> Result<(), String> {
        compile_in(&self.0, name, wasm)
    }
}

#[derive(Debug)]
struct Broken;

impl ExternalCompiler for Broken {
    fn compile(&self, _: &str, _: &[u8]) -> Result<(), String> {
        Err("no such compiler".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miss_is_compiled_elsewhere_and_loaded_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    // Compiling on a pool of threads, as `warden compile-component` does:
    // its artifacts must be the ones a host compiling on one thread loads.
    let other = Runtime::new(RuntimeConfig {
        parallel_compilation: true,
        ..cached(dir.path())
    })
    .unwrap();
    let runtime = compiling_with(dir.path(), OtherRuntime(other.clone()));
    let echo = runtime.install(package(&echo_dir())).expect("install");
    assert_eq!(echo.report().unwrap().cache, CacheStatus::External);
    assert_eq!(
        runtime.stats().compiled,
        0,
        "nothing compiled in this runtime"
    );
    assert_eq!(runtime.stats().compiled_external, 1);
    assert_eq!(other.stats().compiled, 1);
    let output = echo
        .call(warden_runtime::CallRequest::new(
            "echo.echo",
            r#"{"text": "x"}"#,
        ))
        .await
        .result
        .expect("runs");
    assert_eq!(output["text"], "x");
}

#[test]
fn a_failing_external_compiler_means_compiling_here() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = compiling_with(dir.path(), Broken);
    let echo = runtime.install(package(&echo_dir())).expect("install");
    assert_eq!(echo.report().unwrap().cache, CacheStatus::Compiled);
    assert_eq!(runtime.stats().compiled, 1);
}

#[test]
fn an_entry_for_another_engine_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    // The other side compiles without fuel metering: a different engine.
    let other = Runtime::new(RuntimeConfig {
        fuel_metering: false,
        ..cached(dir.path())
    })
    .unwrap();
    let runtime = compiling_with(dir.path(), OtherRuntime(other.clone()));
    let echo = runtime.install(package(&echo_dir())).expect("install");
    assert_eq!(other.stats().compiled, 1);
    assert_eq!(echo.report().unwrap().cache, CacheStatus::Compiled);
    assert_eq!(runtime.stats().compiled, 1, "compiled here after all");
    assert_eq!(runtime.stats().compiled_external, 0);
}
