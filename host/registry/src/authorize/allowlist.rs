//! The host's reviewed allowlist of capabilities that may run `ungated` from
//! `loop_run`, bound to package identity.
//!
//! An entry names a capability id *and* the package it was reviewed in: a
//! content digest, or (without one) the package built into the binary. An
//! entry never applies to a package installed from outside under the same
//! id, so taking over a bundled id does not take over its review. Only
//! effect-free tools belong on the list: an entry that applies to a
//! capability declaring any effect is refused ([`AllowlistError`]) when the
//! package is installed, and never allows a call.

use warden_core::Effect;

use crate::PackageIdentity;

/// One reviewed allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct AllowlistEntry {
    /// The reviewed capability (`echo.echo`).
    pub capability_id: String,
    /// The digest of the reviewed package's content; `None` means the
    /// package built into the host binary (and tools the embedder registers
    /// from its own code), never one installed from outside.
    pub package_digest: Option<String>,
}

impl AllowlistEntry {
    /// An entry for `capability_id` in the package built into the binary.
    pub fn bundled(capability_id: impl Into<String>) -> Self {
        AllowlistEntry {
            capability_id: capability_id.into(),
            package_digest: None,
        }
    }

    /// An entry for `capability_id` in the package whose content digest is
    /// `digest` (wherever it is installed from).
    pub fn reviewed(capability_id: impl Into<String>, digest: impl Into<String>) -> Self {
        AllowlistEntry {
            capability_id: capability_id.into(),
            package_digest: Some(digest.into()),
        }
    }

    /// Whether the entry is about `capability_id` as provided by `package`.
    pub fn applies_to(&self, capability_id: &str, package: Option<&PackageIdentity>) -> bool {
        if self.capability_id != capability_id {
            return false;
        }
        match (&self.package_digest, package) {
            (Some(digest), Some(package)) => &package.digest == digest,
            (Some(_), None) => false,
            (None, Some(package)) => package.bundled,
            // Registered by the embedder's own code: part of the host.
            (None, None) => true,
        }
    }
}

/// A plain capability id is an entry for the package built into the binary.
impl From<&str> for AllowlistEntry {
    fn from(capability_id: &str) -> Self {
        AllowlistEntry::bundled(capability_id)
    }
}

/// A plain capability id is an entry for the package built into the binary.
impl From<String> for AllowlistEntry {
    fn from(capability_id: String) -> Self {
        AllowlistEntry::bundled(capability_id)
    }
}

impl From<&warden_core::ReviewedUngated> for AllowlistEntry {
    fn from(entry: &warden_core::ReviewedUngated) -> Self {
        AllowlistEntry {
            capability_id: entry.capability_id.to_owned(),
            package_digest: entry.package_digest.map(str::to_owned),
        }
    }
}

/// A reviewed allowlist entry that cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllowlistError {
    /// The entry applies to a capability that declares effects; only
    /// effect-free tools may run ungated from `loop_run`.
    #[error(
        "capability `{capability_id}` is on the reviewed ungated allowlist but declares effects [{}]; only effect-free tools may run ungated from loop_run",
        effects.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ")
    )]
    DeclaresEffects {
        /// The capability.
        capability_id: String,
        /// Its declared effects.
        effects: Vec<Effect>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_without_digest_applies_only_to_the_bundled_package() {
        let entry = AllowlistEntry::bundled("echo.echo");
        let bundled = PackageIdentity::bundled("echo", "aa");
        let impostor = PackageIdentity::installed("echo", "aa");
        assert!(entry.applies_to("echo.echo", Some(&bundled)));
        assert!(!entry.applies_to("echo.echo", Some(&impostor)));
        assert!(!entry.applies_to("echo.other", Some(&bundled)));
        assert!(entry.applies_to("echo.echo", None));
    }

    #[test]
    fn an_entry_with_digest_applies_only_to_that_content() {
        let entry = AllowlistEntry::reviewed("echo.echo", "aa");
        assert!(entry.applies_to("echo.echo", Some(&PackageIdentity::installed("echo", "aa"))));
        assert!(entry.applies_to("echo.echo", Some(&PackageIdentity::bundled("echo", "aa"))));
        assert!(!entry.applies_to("echo.echo", Some(&PackageIdentity::installed("echo", "bb"))));
        assert!(!entry.applies_to("echo.echo", None));
    }
}
