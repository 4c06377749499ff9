//! `[trust]`: the operator's trust in packages it installs, each pinned to
//! the content it vouches for.
//!
//! ```toml
//! [trust.slack]
//! digest = "3f1c…"        # the package's content digest (`warden list --json`)
//! trust = "first_party"   # third_party, first_party or system
//! ```
//!
//! A package with that id and digest is the deployment's own: it may ask
//! for first-party trust and carry an `[admin_configuration]` (the format's
//! bundled tier), and runs with the trust named here (or less, when its
//! manifest asks for less). Other content under the id installs as any
//! package would.
//!
//! ```toml
//! [trust]
//! require_signature = true   # refuse an installed package no trusted key signed
//!
//! [trust.signers.acme]
//! key = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
//! trust = "first_party"      # the most trust a package it signed runs with
//! ```
//!
//! A package signed (minisign, see `warden_host::signature`) by a key named
//! here runs with the signer's trust; at `first_party` or above it is the
//! deployment's own as a pinned one is. `signers` and `require_signature`
//! are the only keys of `[trust]` that are not package ids.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use warden_host::{EffectiveTrust, TrustPin, TrustedSigner};

use super::{Settings, is_package_id};

/// `[trust]`: the policy keys and one table per pinned package id.
#[derive(Debug, Default, Deserialize)]
pub(super) struct TrustTable {
    #[serde(default)]
    require_signature: bool,
    #[serde(default)]
    signers: BTreeMap<String, SignerSettings>,
    #[serde(flatten)]
    pins: BTreeMap<String, TrustSettings>,
}

/// One `[trust.<id>]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TrustSettings {
    digest: String,
    trust: String,
}

/// One `[trust.signers.<name>]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SignerSettings {
    key: String,
    trust: String,
}

/// A trust word of `[trust]`.
fn trust_word(word: &str, at: &str) -> Result<EffectiveTrust> {
    Ok(match word {
        "third_party" => EffectiveTrust::ThirdParty,
        "first_party" => EffectiveTrust::FirstParty,
        "system" => EffectiveTrust::System,
        other => bail!("{at} trust: {other:?} is not one of third_party, first_party, system"),
    })
}

impl Settings {
    /// `[trust] require_signature`.
    pub(crate) fn require_signature(&self) -> bool {
        self.trust.require_signature
    }

    /// `[trust.signers]`, checked: minisign public keys, known trust words.
    pub(crate) fn signers(&self) -> Result<Vec<TrustedSigner>> {
        let mut signers = Vec::new();
        for (name, signer) in &self.trust.signers {
            let at = format!("[trust.signers.{name}]");
            let trust = trust_word(&signer.trust, &at)?;
            let signer = TrustedSigner::new(name.clone(), &signer.key, trust).context(at)?;
            signers.push(signer);
        }
        Ok(signers)
    }

    /// `[trust]`, checked: package ids, 64-hex digests, known trust words.
    pub(crate) fn trust_pins(&self) -> Result<BTreeMap<String, TrustPin>> {
        let mut pins = BTreeMap::new();
        for (id, pin) in &self.trust.pins {
            if !is_package_id(id) {
                bail!("[trust.{id:?}]: not a package id");
            }
            let digest = pin.digest.to_ascii_lowercase();
            if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!(
                    "[trust.{id}] digest: {:?} is not a content digest (64 hex digits, as \
                     `warden list --json` shows a package's)",
                    pin.digest
                );
            }
            let trust = trust_word(&pin.trust, &format!("[trust.{id}]"))?;
            pins.insert(id.clone(), TrustPin { digest, trust });
        }
        Ok(pins)
    }
}
