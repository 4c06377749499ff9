//! Integration tests of `warden-manifest`, one binary.

mod contract;
mod format;
mod packages;
mod parser_never_panics;
mod ui;

use std::path::{Path, PathBuf};

use warden_manifest::{Diagnostics, DirFiles, Package, ValidationOptions};

/// `host/manifest/tests/ui`.
pub(crate) fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui")
}

/// Options the fixtures are checked with: as host-bundled packages (the
/// tier that allows every feature of the format), with one capability
/// allowlisted for ungated loop_run.
pub(crate) fn fixture_options() -> ValidationOptions {
    ValidationOptions::default()
        .source(warden_manifest::Source::Bundled)
        .allow_ungated_loop_run("example.status")
}

/// Validate `text` as a manifest whose files live in `tests/ui/assets`.
pub(crate) fn check(name: &str, text: &str) -> Result<Package, Diagnostics> {
    check_with(name, text, &fixture_options())
}

/// [`check`] with other options.
pub(crate) fn check_with(
    name: &str,
    text: &str,
    opts: &ValidationOptions,
) -> Result<Package, Diagnostics> {
    let root = ui_dir().join("assets");
    warden_manifest::load_from_files(name, text.as_bytes(), &root, &DirFiles::new(&root), opts)
}
