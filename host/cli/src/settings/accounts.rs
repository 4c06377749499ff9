//! `[accounts]`: which deployment accounts serve authenticated callers.
//!
//! On an endpoint whose callers authenticate as people (JWT subjects), each
//! caller's calls use that caller's own accounts (`warden secret set
//! --owner SUBJECT`). The deployment's accounts (stored without an owner:
//! stdio, the CLI, the static bearer token) serve a caller only for the
//! vendors listed in `shared`: service accounts the operator means every
//! caller to act through.

use anyhow::{Result, bail};
use serde::Deserialize;

use super::Settings;

/// `[accounts]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AccountSettings {
    /// Vendors whose deployment accounts every caller may use.
    #[serde(default)]
    shared: Vec<String>,
}

impl Settings {
    /// `[accounts] shared`, each a credential vendor (`github`).
    pub(crate) fn shared_accounts(&self) -> Result<Vec<String>> {
        let vendors = &self.accounts.shared;
        // The manifest's rule for a name.
        let vendor_name = |v: &str| {
            (1..=128).contains(&v.len())
                && v.as_bytes()[0].is_ascii_alphanumeric()
                && !v.contains("..")
                && !v.ends_with('.')
                && v.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b))
        };
        if let Some(bad) = vendors.iter().find(|v| !vendor_name(v)) {
            bail!(
                "[accounts] shared: {bad:?} is not a credential vendor (lowercase letters, \
                 digits, `_`, `-` and `.`, as a manifest's `vendor` is written)"
            );
        }
        Ok(vendors.clone())
    }
}
