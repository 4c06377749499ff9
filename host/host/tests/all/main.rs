//! The host API end to end: install, snapshot, invoke, approvals, egress.

mod accounts;
mod approvals;
mod caller_accounts;
mod compat;
mod compile_limits;
mod connect;
mod data_dir;
mod exfil;
mod first_party;
mod hosted;
mod identity;
mod install;
mod lanes;
mod metrics;
mod network;
mod package_reader;
mod signing;
mod vendor_family;

use std::path::{Path, PathBuf};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
