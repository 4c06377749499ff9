//! Per-call authorization: origin gate matrix + `default_permission` +
//! effect floors + grants, with the deciding rule in every decision.
//!
//! The evaluation order, first match decides:
//!
//! 0. a `loop_run` call of a tool whose visibility is not `model` → deny
//!    ([`Rule::NotModelVisible`]): `product` and `hidden` tools are never
//!    invocable by the model, whatever the gate says;
//! 1. the origin's gate is `forbidden` (the default for an omitted origin)
//!    → deny ([`Rule::GateForbidden`]);
//! 2. `consent_sufficient` from any origin but `product` → deny
//!    ([`Rule::ConsentOutsideProduct`]);
//! 3. `default_permission = "deny"` → deny ([`Rule::DefaultPermissionDeny`]);
//! 4. an effect that always asks (`financial`) → approval, grants never
//!    count ([`Rule::EffectFloor`]);
//! 5. `ask_always` → approval, grants never count ([`Rule::AskAlways`]);
//! 6. `ungated` from `loop_run` for a capability not on the host's reviewed
//!    allowlist is treated as `gated_unless_granted` (it still runs when a
//!    grant covers it, otherwise asks with [`Rule::UngatedNotAllowlisted`]):
//!    a missing review downgrades to asking, it does not silently run. An
//!    allowlist entry counts only for the package it was reviewed in (see
//!    [`AllowlistEntry`]) and only for a tool that declares no effect;
//! 7. `gated_unless_granted` → allow if a grant covers
//!    ([`Rule::GrantCovers`]), else approval ([`Rule::GatedNoGrant`]);
//! 8. `consent_sufficient` (product) → allow: the person's gesture is the
//!    consent, and it also answers `default_permission = "ask"`
//!    ([`Rule::ConsentSufficient`]);
//! 9. `ungated` → with `allow`, allow ([`Rule::Ungated`] /
//!    [`Rule::UngatedAllowlisted`]); with `ask`, allow if a grant covers,
//!    else approval ([`Rule::DefaultPermissionAsk`]).
//!
//! A grant covers only the package it was given to (its content digest):
//! a replaced or changed package needs fresh grants.

mod allowlist;
mod grant;

use std::collections::BTreeSet;
use std::fmt;

use warden_core::{Effect, GateMatrix, GatePolicy, Origin, Permission, Visibility};

pub use allowlist::{AllowlistEntry, AllowlistError};
pub use grant::{Grant, GrantId, InvocationScope};

use crate::{PackageIdentity, ToolDef, UnixMillis};

/// The policy half of a tool that authorization reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPolicy {
    /// The capability id grants and allowlists are keyed by.
    pub capability_id: String,
    /// Per-origin gates.
    pub gate: GateMatrix,
    /// The manifest's `default_permission`.
    pub default_permission: Permission,
    /// Declared effects.
    pub effects: Vec<Effect>,
    /// Declared visibility; only `model` tools are invocable from `loop_run`.
    pub visibility: Visibility,
    /// The package the tool came from; grants and allowlist entries bind to it.
    pub package: Option<PackageIdentity>,
}

impl ToolPolicy {
    /// The digest grants of this tool are bound to (`None`: not from a package).
    pub fn package_digest(&self) -> Option<&str> {
        self.package.as_ref().map(|p| p.digest.as_str())
    }
}

impl From<&ToolDef> for ToolPolicy {
    fn from(def: &ToolDef) -> Self {
        ToolPolicy {
            capability_id: def.capability_id().to_owned(),
            gate: def.gate,
            default_permission: def.default_permission,
            effects: def.effects.clone(),
            visibility: def.visibility,
            package: def.package.clone(),
        }
    }
}

/// The rule that decided (see the module docs for the order).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// The model (`loop_run`) called a tool that is not `visibility = "model"`.
    NotModelVisible {
        /// The tool's visibility.
        visibility: Visibility,
    },
    /// The origin's gate is `forbidden` (or omitted).
    GateForbidden {
        /// The calling origin.
        origin: Origin,
    },
    /// `consent_sufficient` is only valid for `product`.
    ConsentOutsideProduct {
        /// The calling origin.
        origin: Origin,
    },
    /// `default_permission = "deny"`.
    DefaultPermissionDeny,
    /// An effect that always asks, whatever the gate and grants say.
    EffectFloor {
        /// The effect.
        effect: Effect,
    },
    /// `ask_always`: every call asks; grants never count.
    AskAlways,
    /// A scoped grant covers the call.
    GrantCovers {
        /// The covering grant.
        grant_id: GrantId,
    },
    /// `gated_unless_granted` and no grant covers the call.
    GatedNoGrant,
    /// `ungated` with `default_permission = "ask"` and no covering grant.
    DefaultPermissionAsk,
    /// `consent_sufficient` from `product`: the gesture is the consent.
    ConsentSufficient,
    /// `ungated` from `product` or `automation`.
    Ungated,
    /// `ungated` from `loop_run` for an allowlisted capability.
    UngatedAllowlisted,
    /// `ungated` from `loop_run`, not allowlisted, no covering grant.
    UngatedNotAllowlisted,
}

impl Rule {
    /// The rule's stable name (its `rule` tag when serialized), without the
    /// details a variant carries: what a metric is labelled with.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::NotModelVisible { .. } => "not_model_visible",
            Rule::GateForbidden { .. } => "gate_forbidden",
            Rule::ConsentOutsideProduct { .. } => "consent_outside_product",
            Rule::DefaultPermissionDeny => "default_permission_deny",
            Rule::EffectFloor { .. } => "effect_floor",
            Rule::AskAlways => "ask_always",
            Rule::GrantCovers { .. } => "grant_covers",
            Rule::GatedNoGrant => "gated_no_grant",
            Rule::DefaultPermissionAsk => "default_permission_ask",
            Rule::ConsentSufficient => "consent_sufficient",
            Rule::Ungated => "ungated",
            Rule::UngatedAllowlisted => "ungated_allowlisted",
            Rule::UngatedNotAllowlisted => "ungated_not_allowlisted",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::NotModelVisible { visibility } => {
                write!(f, "a `{visibility}` tool is not invocable by the model")
            }
            Rule::GateForbidden { origin } => write!(f, "origin `{origin}` is forbidden"),
            Rule::ConsentOutsideProduct { origin } => {
                write!(f, "consent_sufficient is not valid for origin `{origin}`")
            }
            Rule::DefaultPermissionDeny => f.write_str("default_permission is deny"),
            Rule::EffectFloor { effect } => write!(f, "effect `{effect}` always asks"),
            Rule::AskAlways => f.write_str("gate is ask_always"),
            Rule::GrantCovers { grant_id } => write!(f, "grant `{grant_id}` covers the call"),
            Rule::GatedNoGrant => f.write_str("gated_unless_granted and no grant covers it"),
            Rule::DefaultPermissionAsk => {
                f.write_str("default_permission is ask and no grant covers it")
            }
            Rule::ConsentSufficient => f.write_str("the product gesture is the consent"),
            Rule::Ungated => f.write_str("gate is ungated"),
            Rule::UngatedAllowlisted => f.write_str("ungated and on the reviewed allowlist"),
            Rule::UngatedNotAllowlisted => {
                f.write_str("ungated for loop_run but not on the reviewed allowlist")
            }
        }
    }
}

/// The outcome of authorizing one call, with the rule that decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow(Rule),
    /// Ask a person first (create an approval request).
    NeedsApproval(Rule),
    /// Never run it; the model sees a typed denial.
    Deny(Rule),
}

impl Decision {
    /// The rule that decided.
    pub fn rule(&self) -> &Rule {
        match self {
            Decision::Allow(r) | Decision::NeedsApproval(r) | Decision::Deny(r) => r,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self {
            Decision::Allow(_) => "allowed",
            Decision::NeedsApproval(_) => "needs approval",
            Decision::Deny(_) => "denied",
        };
        write!(f, "{verb}: {}", self.rule())
    }
}

/// Authorizes calls; holds the host's reviewed allowlist of capabilities
/// that may run `ungated` from `loop_run`, each bound to the package it was
/// reviewed in. Additions to it are a security review, not a manifest edit.
#[derive(Debug, Clone, Default)]
pub struct Authorizer {
    ungated_loop_run: BTreeSet<AllowlistEntry>,
}

impl Authorizer {
    /// An authorizer with the given reviewed allowlist (a plain capability
    /// id is an entry for the package built into the binary).
    pub fn new<I, S>(ungated_loop_run_allowlist: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<AllowlistEntry>,
    {
        Authorizer {
            ungated_loop_run: ungated_loop_run_allowlist
                .into_iter()
                .map(Into::into)
                .collect(),
        }
    }

    /// Whether the reviewed allowlist lets `policy` run ungated from
    /// `loop_run`: an entry applies to its capability id *and* package, and
    /// the tool declares no effect.
    pub fn is_allowlisted(&self, policy: &ToolPolicy) -> bool {
        policy.effects.is_empty() && self.has_entry_for(policy)
    }

    /// Refuses a tool an allowlist entry applies to when it declares any
    /// effect (the host calls it when a package is installed, so the
    /// mistake shows at install rather than as a silent downgrade).
    pub fn review(&self, policy: &ToolPolicy) -> Result<(), AllowlistError> {
        if !policy.effects.is_empty() && self.has_entry_for(policy) {
            return Err(AllowlistError::DeclaresEffects {
                capability_id: policy.capability_id.clone(),
                effects: policy.effects.clone(),
            });
        }
        Ok(())
    }

    fn has_entry_for(&self, policy: &ToolPolicy) -> bool {
        self.ungated_loop_run
            .iter()
            .any(|entry| entry.applies_to(&policy.capability_id, policy.package.as_ref()))
    }

    /// Decides one call of `policy` from `origin` in `scope` at `now`, given
    /// the grants that might cover it (extra grants are ignored).
    pub fn authorize(
        &self,
        policy: &ToolPolicy,
        scope: &InvocationScope,
        origin: Origin,
        grants: &[Grant],
        now: UnixMillis,
    ) -> Decision {
        let gate = policy.gate.policy(origin);
        let covering = || {
            grants
                .iter()
                .find(|g| {
                    g.covers(
                        &policy.capability_id,
                        policy.package_digest(),
                        scope,
                        origin,
                        now,
                    )
                })
                .map(|g| Rule::GrantCovers {
                    grant_id: g.id.clone(),
                })
        };
        let granted_or = |ask: Rule| match covering() {
            Some(rule) => Decision::Allow(rule),
            None => Decision::NeedsApproval(ask),
        };
        if origin == Origin::LoopRun && policy.visibility != Visibility::Model {
            return Decision::Deny(Rule::NotModelVisible {
                visibility: policy.visibility,
            });
        }
        match gate {
            GatePolicy::Forbidden => return Decision::Deny(Rule::GateForbidden { origin }),
            GatePolicy::ConsentSufficient if origin != Origin::Product => {
                return Decision::Deny(Rule::ConsentOutsideProduct { origin });
            }
            _ => {}
        }
        if policy.default_permission == Permission::Deny {
            return Decision::Deny(Rule::DefaultPermissionDeny);
        }
        if let Some(effect) = policy.effects.iter().find(|e| e.always_asks()) {
            return Decision::NeedsApproval(Rule::EffectFloor { effect: *effect });
        }
        let ask = policy.default_permission == Permission::Ask;
        match gate {
            GatePolicy::AskAlways => Decision::NeedsApproval(Rule::AskAlways),
            GatePolicy::Ungated if origin == Origin::LoopRun && !self.is_allowlisted(policy) => {
                granted_or(Rule::UngatedNotAllowlisted)
            }
            GatePolicy::GatedUnlessGranted => granted_or(Rule::GatedNoGrant),
            GatePolicy::ConsentSufficient => Decision::Allow(Rule::ConsentSufficient),
            GatePolicy::Ungated if ask => granted_or(Rule::DefaultPermissionAsk),
            GatePolicy::Ungated if origin == Origin::LoopRun => {
                Decision::Allow(Rule::UngatedAllowlisted)
            }
            GatePolicy::Ungated => Decision::Allow(Rule::Ungated),
            GatePolicy::Forbidden => Decision::Deny(Rule::GateForbidden { origin }),
        }
    }
}

#[cfg(test)]
mod tests;
