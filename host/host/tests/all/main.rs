//! The host API end to end: install, snapshot, invoke, approvals, egress.

mod accounts;
mod approvals;
mod compat;
mod exfil;
mod identity;
mod install;
mod network;
mod package_reader;

use std::path::{Path, PathBuf};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
