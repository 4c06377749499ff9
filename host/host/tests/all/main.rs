//! The host API end to end: install, snapshot, invoke, approvals, egress.

mod approvals;
mod exfil;
mod install;
mod network;

use std::path::{Path, PathBuf};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
