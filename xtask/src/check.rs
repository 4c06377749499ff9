//! Manifest validation through `warden-manifest`, as the host loads packages.

use std::path::PathBuf;

use anyhow::{Result, bail};
use warden_manifest::{ValidationOptions, load_package, summary};

/// Validate each package directory; print a one-line summary per valid
/// package and every diagnostic of an invalid one.
pub(crate) fn packages(dirs: &[PathBuf]) -> Result<()> {
    let opts = ValidationOptions::reviewed();
    let mut invalid = 0;
    for dir in dirs {
        match load_package(dir, &opts) {
            Ok(package) => println!("ok    {}", summary(&package)),
            Err(diagnostics) => {
                invalid += 1;
                eprintln!("{diagnostics}");
                eprintln!(
                    "error: {} is invalid ({} problem(s))",
                    dir.display(),
                    diagnostics.len()
                );
            }
        }
    }
    if invalid > 0 {
        bail!("{invalid} of {} package(s) invalid", dirs.len());
    }
    Ok(())
}
