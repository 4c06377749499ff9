//! Which package a tool came from: the identity grants, approvals and the
//! reviewed ungated allowlist bind to.

use std::fmt;

/// A package as the host installed it: its extension id *and* the digest of
/// its content, plus whether it is the package built into the binary.
///
/// Two packages with the same id but different content are different
/// packages: a grant, a lease or an allowlist entry given to one never covers
/// the other, so a replaced or changed package inherits nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PackageIdentity {
    /// The extension id (`github`).
    pub extension_id: String,
    /// The content digest (lowercase hex sha256, see
    /// `warden_host::content_digest`).
    pub digest: String,
    /// Whether the package is the one built into the host binary (embedded
    /// and verified by digest), rather than installed from outside.
    pub bundled: bool,
}

impl PackageIdentity {
    /// A package installed from outside the binary (a directory, an archive).
    pub fn installed(extension_id: impl Into<String>, digest: impl Into<String>) -> Self {
        PackageIdentity {
            extension_id: extension_id.into(),
            digest: digest.into(),
            bundled: false,
        }
    }

    /// The package built into the binary.
    pub fn bundled(extension_id: impl Into<String>, digest: impl Into<String>) -> Self {
        PackageIdentity {
            bundled: true,
            ..PackageIdentity::installed(extension_id, digest)
        }
    }
}

impl fmt::Display for PackageIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = self.digest.get(..12).unwrap_or(&self.digest);
        let provenance = if self.bundled {
            "built-in"
        } else {
            "installed"
        };
        write!(f, "{} ({provenance}, sha256 {short})", self.extension_id)
    }
}
