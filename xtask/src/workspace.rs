//! Paths of the repository.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The repository root: the parent of `xtask/`, or `$WARDEN_XTASK_ROOT` when
/// set (tests run the xtask on a copy of the tree).
pub(crate) fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| match std::env::var_os("WARDEN_XTASK_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives below the root")
            .to_path_buf(),
    })
}

/// The guest workspace.
pub(crate) fn guests_dir() -> PathBuf {
    root().join("guests")
}

/// The contract.
pub(crate) fn wit_dir() -> PathBuf {
    root().join("wit")
}

/// Where package archives are written.
pub(crate) fn archives_dir() -> PathBuf {
    root().join("target").join("packages")
}

/// The cargo the xtask was started with.
pub(crate) fn cargo() -> std::process::Command {
    std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}
