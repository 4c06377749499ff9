//! The on-disk artifact cache: a restart compiles nothing; bad entries are rebuilt.

use warden_runtime::{CacheStatus, Runtime, RuntimeConfig, RuntimeStats};

use crate::support::{Host, echo_dir, hostile_dir, package};

fn config(dir: &std::path::Path) -> RuntimeConfig {
    RuntimeConfig {
        cache_dir: Some(dir.to_owned()),
        max_concurrent: 4,
        ..RuntimeConfig::default()
    }
}

fn install_both(runtime: &Runtime) -> Vec<CacheStatus> {
    [echo_dir(), hostile_dir()]
        .iter()
        .map(|dir| {
            runtime
                .install(package(dir))
                .expect("install")
                .report()
                .expect("installed eagerly")
                .cache
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_runtime_on_the_same_cache_compiles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let first = Runtime::new(config(dir.path())).unwrap();
    assert_eq!(install_both(&first), [CacheStatus::Compiled; 2]);
    assert_eq!(
        first.stats(),
        RuntimeStats {
            compiled: 2,
            cache_hits: 0,
            cache_rebuilt: 0,
            long_calls: 0,
            compiled_external: 0,
            ..RuntimeStats::default()
        }
    );
    drop(first);

    let host = Host::new(config(dir.path()));
    assert_eq!(
        host.runtime.stats(),
        RuntimeStats {
            compiled: 0,
            cache_hits: 2,
            cache_rebuilt: 0,
            long_calls: 0,
            compiled_external: 0,
            ..RuntimeStats::default()
        },
        "the restart deserialized every component"
    );
    assert_eq!(
        host.echo.report().expect("installed eagerly").cache,
        CacheStatus::Hit
    );
    host.assert_echo_works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_entries_are_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    install_both(&Runtime::new(config(dir.path())).unwrap());
    let mut entries = 0;
    for engine_dir in std::fs::read_dir(dir.path()).unwrap() {
        for entry in std::fs::read_dir(engine_dir.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            let mut bytes = std::fs::read(&path).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
            entries += 1;
        }
    }
    assert_eq!(entries, 2);

    let host = Host::new(config(dir.path()));
    assert_eq!(
        host.echo.report().expect("installed eagerly").cache,
        CacheStatus::Rebuilt
    );
    assert_eq!(host.runtime.stats().cache_rebuilt, 2);
    assert_eq!(host.runtime.stats().compiled, 2);
    host.assert_echo_works().await;

    let again = Runtime::new(config(dir.path())).unwrap();
    assert_eq!(
        install_both(&again),
        [CacheStatus::Hit; 2],
        "the rebuilt entries are good"
    );
}

#[test]
fn an_engine_with_another_configuration_does_not_reuse_entries() {
    let dir = tempfile::tempdir().unwrap();
    install_both(&Runtime::new(config(dir.path())).unwrap());
    let unmetered = Runtime::new(RuntimeConfig {
        fuel_metering: false,
        ..config(dir.path())
    })
    .unwrap();
    assert_eq!(install_both(&unmetered), [CacheStatus::Compiled; 2]);
    assert_eq!(
        unmetered.stats().cache_rebuilt,
        0,
        "a separate key, not a failed load"
    );
}
