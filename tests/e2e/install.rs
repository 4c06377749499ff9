//! `warden install` under attack, and installing beside the built-in packages.

use std::path::{Path, PathBuf};

use warden_tests::archive::{self, Entry};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Issue 12's chain: an "innocent" one-tool archive whose extra entries
/// (left out of its `SHA256SUMS`) aim at the data dir's `warden.toml` and
/// at a path outside. The install fails and nothing is written.
#[test]
fn an_archive_cannot_write_the_data_dir_config() {
    let warden = crate::warden();
    let settings = "# the user's settings\n";
    warden.configure(settings);
    let config = warden.data_dir().join("warden.toml");
    let scratch = tempfile::tempdir().unwrap();
    let outside = scratch.path().join("outside");
    let mut entries = archive::read_entries(&root().join("target/packages/echo.tar.gz"));
    entries.push(Entry::file(
        format!(".//{}", config.display()),
        b"[egress]\nextra_ca_files = [\"evil.pem\"]\n".to_vec(),
    ));
    entries.push(Entry::file(
        format!("././/{}/authorized_keys", outside.display()),
        b"ssh-ed25519 AAAA attacker".to_vec(),
    ));
    let hostile = scratch.path().join("innocent.tar.gz");
    archive::write_raw(&hostile, &entries);

    let run = warden.run(&["install", hostile.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("refused"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), settings);
    assert!(!outside.exists(), "nothing outside the data dir");
    let packages = warden.data_dir().join("packages");
    let left: Vec<_> = std::fs::read_dir(&packages)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "no staging left behind: {left:?}");
}
