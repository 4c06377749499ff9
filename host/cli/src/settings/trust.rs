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

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Deserialize;
use warden_host::{EffectiveTrust, TrustPin};

use super::{Settings, is_package_id};

/// One `[trust.<id>]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TrustSettings {
    digest: String,
    trust: String,
}

impl Settings {
    /// `[trust]`, checked: package ids, 64-hex digests, known trust words.
    pub(crate) fn trust_pins(&self) -> Result<BTreeMap<String, TrustPin>> {
        let mut pins = BTreeMap::new();
        for (id, pin) in &self.trust {
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
            let trust = match pin.trust.as_str() {
                "third_party" => EffectiveTrust::ThirdParty,
                "first_party" => EffectiveTrust::FirstParty,
                "system" => EffectiveTrust::System,
                other => bail!(
                    "[trust.{id}] trust: {other:?} is not one of third_party, first_party, system"
                ),
            };
            pins.insert(id.clone(), TrustPin { digest, trust });
        }
        Ok(pins)
    }
}
