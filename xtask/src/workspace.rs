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

/// The cargo the xtask was started with, in the caller's environment.
///
/// `cargo run` gives the xtask its own package's variables
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …); a child cargo that inherited
/// them would see build scripts that watch them (ring's does, through
/// `rerun-if-env-changed`) as changed, and compile those crates and their
/// dependents again after every plain `cargo build` or `cargo test`.
pub(crate) fn cargo() -> std::process::Command {
    let mut command =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(name);
        }
    }
    command
}

/// A variable `cargo run` sets for the program it runs (not one a user sets
/// to configure cargo, such as `CARGO_HOME` or `CARGO_TARGET_DIR`).
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
        )
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    /// `cargo test` runs this test with the package's variables set, as
    /// `cargo run` runs the xtask.
    #[test]
    fn a_child_cargo_does_not_inherit_the_xtasks_package_variables() {
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let command = super::cargo();
        let removed: Vec<&OsStr> = command
            .get_envs()
            .filter_map(|(name, value)| value.is_none().then_some(name))
            .collect();
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
        ] {
            assert!(removed.contains(&OsStr::new(name)), "{name} is inherited");
        }
        // Set in this process, so these two check the command itself.
        for name in ["CARGO", "PATH"] {
            assert!(!removed.contains(&OsStr::new(name)), "{name} is dropped");
        }
        // Configuration a user may set (usually unset here): kept.
        for name in ["CARGO_HOME", "CARGO_TARGET_DIR", "CARGO_INCREMENTAL"] {
            assert!(!super::set_by_cargo_run(name), "{name} would be dropped");
        }
    }
}
