//! [`EffectiveTrust`]: the trust a package runs with, decided by the host.
//!
//! A manifest's `trust` is only a request (`first_party_requested`,
//! `system_requested`, …). Packages built into the binary (verified by
//! digest) get what the host composition assigns to bundled packages
//! ([`crate::HostBuilder::bundled_trust`]), capped by an explicit lower
//! request; every package installed from a directory or an archive is
//! third-party, whatever it requests — unless the operator pinned its
//! content ([`TrustPin`], `[trust.<id>]` in warden.toml).

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

/// The operator's grant of trust to a package it did not build into the
/// binary (`[trust.<package-id>]` in warden.toml), pinned to the content
/// digest it vouches for. A package with that id and digest validates as
/// the deployment's own (the format's bundled tier:
/// `first_party_requested`/`system_requested` and `[admin_configuration]`
/// allowed) and runs with `trust`, or less when its manifest asks for less.
/// Other content under the id is an ordinary installed package (refused
/// where it needs the bundled tier, naming both digests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustPin {
    /// The content digest (hex sha256, as `warden list --json` shows it).
    pub digest: String,
    /// The most trust the package runs with.
    pub trust: EffectiveTrust,
}

/// [`effective_trust`] with the operator's `pins` and the trust of the
/// signer who `signed` it: an installed package whose id and digest are
/// pinned gets the pin's trust, one a trusted signer signed the signer's
/// (each capped by a lower request).
pub(crate) fn granted_trust(
    package: &Package,
    provenance: Provenance,
    digest: &str,
    bundled: EffectiveTrust,
    pins: &std::collections::BTreeMap<String, TrustPin>,
    signed: Option<EffectiveTrust>,
) -> EffectiveTrust {
    let capped = |most: EffectiveTrust| {
        EffectiveTrust::of_request(package.requested_trust)
            .map_or(most, |requested| requested.min(most))
    };
    match (provenance, pins.get(&package.id), signed) {
        (Provenance::Installed, Some(pin), _) if pin.digest == digest => capped(pin.trust),
        // Signed by a key the operator trusts: that signer's trust.
        (Provenance::Installed, _, Some(trust)) => capped(trust),
        _ => effective_trust(package, provenance, bundled),
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
