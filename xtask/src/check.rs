//! Manifest validation through `warden-manifest`.

use std::path::PathBuf;

use anyhow::{Result, bail};

/// Validate each package directory; print a one-line summary per valid package.
pub(crate) fn packages(dirs: &[PathBuf]) -> Result<()> {
    bail!(
        "manifest validation is not wired yet ({} package(s) requested)",
        dirs.len()
    )
}
