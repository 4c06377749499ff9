//! [`EffectiveTrust`]: the trust a package runs with, decided by the host.
//!
//! A manifest's `trust` is only a request (`first_party_requested`,
//! `system_requested`, …). Packages built into the binary (verified by
//! digest) get what the host composition assigns to bundled packages
//! ([`crate::HostBuilder::bundled_trust`]), capped by an explicit lower
//! request; every package installed from a directory or an archive is
//! third-party, whatever it requests.

use warden_manifest::{Package, Trust};

use crate::source::Provenance;

/// The trust a package runs with. Ordered from least to most trusted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum EffectiveTrust {
    /// Nothing vouches for the package.
    Untrusted,
    /// Installed by a user or from a registry.
    ThirdParty,
    /// Shipped with the host by its vendor.
    FirstParty,
    /// Part of the host itself.
    System,
}

impl EffectiveTrust {
    /// The word shown by `list`, `describe` and the MCP `_meta`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EffectiveTrust::Untrusted => "untrusted",
            EffectiveTrust::ThirdParty => "third_party",
            EffectiveTrust::FirstParty => "first_party",
            EffectiveTrust::System => "system",
        }
    }

    /// The most a manifest's request can lead to (a request never raises trust).
    fn of_request(requested: Trust) -> Option<Self> {
        match requested {
            // No claim: the composition decides alone.
            Trust::Untrusted => None,
            Trust::ThirdParty => Some(EffectiveTrust::ThirdParty),
            Trust::FirstPartyRequested => Some(EffectiveTrust::FirstParty),
            Trust::SystemRequested => Some(EffectiveTrust::System),
        }
    }
}

impl std::fmt::Display for EffectiveTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The trust a package runs with: a bundled package gets what the host
/// composition assigns to bundled packages (`bundled`), or less when its
/// manifest asks for less; anything installed is third-party whatever its
/// manifest requests.
pub fn effective_trust(
    package: &Package,
    provenance: Provenance,
    bundled: EffectiveTrust,
) -> EffectiveTrust {
    match provenance {
        Provenance::Bundled => EffectiveTrust::of_request(package.requested_trust)
            .map_or(bundled, |requested| requested.min(bundled)),
        Provenance::Installed => EffectiveTrust::ThirdParty,
    }
}
