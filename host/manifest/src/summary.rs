//! The one-line package summary `cargo xtask check` prints.

use std::collections::BTreeSet;

use crate::model::{Implementation, Package};

/// `github 0.1.0 (wasm): 3 tools, 2 credentials [github], effects: network, use_secret`.
pub fn summary(package: &Package) -> String {
    let kind = match &package.implementation {
        Implementation::Wasm { .. } => "wasm",
        Implementation::FirstParty { .. } => "first_party",
        Implementation::Mcp(_) => "mcp",
    };
    let mut credentials = BTreeSet::new();
    let mut vendors = BTreeSet::new();
    let mut effects = BTreeSet::new();
    for c in &package.capabilities {
        effects.extend(c.effects.iter().copied());
        for cred in &c.credentials {
            credentials.insert(cred.handle.as_str());
            vendors.insert(cred.vendor.as_str());
        }
    }
    if let Implementation::Mcp(m) = &package.implementation {
        effects.extend(m.effects.iter().copied());
        for cred in &m.credentials {
            credentials.insert(cred.handle.as_str());
            vendors.insert(cred.vendor.as_str());
        }
    }
    let n = package.capabilities.len();
    let effects: Vec<_> = effects.iter().map(|e| e.as_str()).collect();
    let vendors: Vec<_> = vendors.into_iter().collect();
    format!(
        "{} {} ({kind}): {n} tool{}, {} credential{}{}, effects: {}",
        package.id,
        package.version,
        if n == 1 { "" } else { "s" },
        credentials.len(),
        if credentials.len() == 1 { "" } else { "s" },
        if vendors.is_empty() {
            String::new()
        } else {
            format!(" [{}]", vendors.join(", "))
        },
        if effects.is_empty() {
            "none".to_owned()
        } else {
            effects.join(", ")
        },
    )
}
