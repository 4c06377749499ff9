//! The data directory is its owner's alone (issue 42, finding 7): under
//! umask 022 the directory was 0755 and `approvals.sqlite3` (every
//! approval's input, its callers' subjects) and `audit.jsonl` were 0644, so
//! any local user could read them.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::json;
use warden_host::{
    AuditLog, DEFAULT_AUDIT_MAX_BYTES, Host, HostConfig, Invocation, Origin, PackageSource,
};
use warden_tests::files::readable_by_others;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A host on the data directory `dir`, with its audit log there.
fn host_on(dir: &Path) -> Host {
    let config = HostConfig {
        data_dir: Some(dir.to_owned()),
        ..HostConfig::default()
    };
    Host::builder(config)
        .audit_log(AuditLog::new(
            dir.join("audit.jsonl"),
            DEFAULT_AUDIT_MAX_BYTES,
        ))
        .build()
        .expect("host")
}

/// The process's umask is what an ordinary shell gives: 022. (Set for the
/// whole test process: the other tests only create temporary files.)
fn loose_umask() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_the_host_creates_is_readable_by_others_under_umask_022() {
    loose_umask();
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    let host = host_on(&data);
    let location = host.open_location("p");
    // An installed package: compiled into the cache, and gated (it was not
    // reviewed here), so calling it records an approval and an audit line.
    let echo = warden_tests::package::echo_variant(&scratch.path().join("echo"), &[]);
    location.install(&PackageSource::Dir(echo)).unwrap();
    let call = Invocation::new("echo_echo", json!({ "text": "a" }), Origin::LoopRun);
    location.invoke(call).await.unwrap();

    for file in ["approvals.sqlite3", "cache"] {
        assert!(data.join(file).exists(), "{file} was created");
    }
    // While the host is open (SQLite's `-wal` and `-shm` files exist).
    assert_eq!(readable_by_others(&data), vec![]);
    drop((location, host));
    assert_eq!(readable_by_others(&data), vec![]);
}

#[test]
fn a_loose_data_dir_is_tightened_when_a_host_opens_it() {
    loose_umask();
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data");
    // As an earlier Warden left it under umask 022.
    std::fs::create_dir_all(data.join("cache/engine")).unwrap();
    for file in ["approvals.sqlite3", "audit.jsonl", "audit.jsonl.1"] {
        std::fs::write(data.join(file), b"").unwrap();
    }
    let set = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set(&data, 0o755);
    set(&data.join("approvals.sqlite3"), 0o644);
    set(&data.join("audit.jsonl"), 0o644);
    // Tightening only: an owner's bits stay as they are.
    set(&data.join("audit.jsonl.1"), 0o444);
    set(&data.join("cache"), 0o755);
    // Not the data directory's own: a link is left alone, its target too.
    let outside = scratch.path().join("outside");
    std::fs::write(&outside, b"").unwrap();
    set(&outside, 0o644);
    std::os::unix::fs::symlink(&outside, data.join("link")).unwrap();

    let _host = host_on(&data);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("approvals.sqlite3")), 0o600);
    assert_eq!(mode(&data.join("audit.jsonl")), 0o600);
    assert_eq!(mode(&data.join("audit.jsonl.1")), 0o400);
    assert_eq!(mode(&data.join("cache")), 0o700);
    assert_eq!(mode(&outside), 0o644, "a link's target is not the host's");
}
