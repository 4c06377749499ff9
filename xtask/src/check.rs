//! Manifest validation through `warden-manifest`, as the host loads packages.

use std::path::PathBuf;

use anyhow::{Result, bail};
use warden_manifest::{Source, ValidationOptions, lints, load_package, summary};

/// Validate each package directory as a bundled package (this repository's
/// packages are built into the host); print a one-line summary per valid
/// package with its review lints as warnings (the ratchet test in
/// `warden-manifest` fails on them), a note when the host will not run it,
/// and every diagnostic of an invalid one.
pub(crate) fn packages(dirs: &[PathBuf]) -> Result<()> {
    let opts = ValidationOptions::reviewed().source(Source::Bundled);
    let mut invalid = 0;
    for dir in dirs {
        match load_package(dir, &opts) {
            Ok(package) => {
                println!("ok    {}", summary(&package));
                for lint in lints(&package, &opts) {
                    eprintln!("{lint}");
                }
                // A first_party service is registered by the binary's
                // composition (`warden-services`), not known here; `warden
                // check` through the binary reports one it lacks.
                let mut reasons = package.unsupported(&[]);
                reasons
                    .retain(|r| !matches!(r, warden_manifest::Unsupported::FirstPartyService(_)));
                if let Some(note) = warden_manifest::refusal(&package.id, &reasons) {
                    eprintln!("note: {note}");
                }
            }
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
