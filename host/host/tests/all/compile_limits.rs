//! The code size limit holds installed packages (issue 42, finding 5).

use warden_host::{Host, HostConfig, HostError, PackageSource};
use warden_runtime::{CompileLimit, CompileLimits, RuntimeError};

fn host_with_code_limit(max_code_bytes: u64) -> Host {
    let mut config = HostConfig::default();
    config.runtime.cache_dir = None;
    config.runtime.compile_limits = CompileLimits {
        max_code_bytes,
        ..CompileLimits::DEFAULT
    };
    Host::builder(config).build().expect("host")
}

#[test]
fn an_installed_package_past_the_code_limit_is_refused_and_a_bundled_one_is_not() {
    let host = host_with_code_limit(1000);
    let location = host.open_location("p");
    let scratch = tempfile::tempdir().unwrap();
    let echo = warden_tests::package::echo_variant(&scratch.path().join("echo"), &[]);
    let error = location.install(&PackageSource::Dir(echo)).unwrap_err();
    let HostError::Install {
        source:
            RuntimeError::CompileLimitExceeded {
                limit: CompileLimit::CodeSize { limit_bytes, .. },
                ..
            },
        ..
    } = &error
    else {
        panic!("not refused for its code size: {error:?}");
    };
    assert_eq!(*limit_bytes, 1000);
    assert!(
        error.to_string().contains("code size limit of 1000 bytes"),
        "{error}"
    );
    assert_eq!(
        host.runtime().stats().compiled,
        0,
        "refused before compiling"
    );
}
