//! Approvals with leases: block, answer, resume, dispatch exactly once.
//!
//! ```text
//! check()   -> authorization needs approval
//!           -> ApprovalRequest stored with its fingerprint (before anyone can answer)
//! resolve() -> approve once / approve and grant / deny / deny with feedback / dismiss
//!           -> approval issues a lease (expires after ApprovalConfig::lease_ttl)
//! resume()  -> recompute the fingerprint, refuse changed input
//!           -> claim the lease atomically -> Dispatch (exactly one caller gets it)
//! check()   of a call identical to an approved one (same fingerprint: tool,
//!           package, input, origin, scope) -> claims its lease -> Gate::Approved
//! ```
//!
//! Resuming by id and calling again are two ways to claim the same lease, so
//! an approval dispatches once whichever a client uses. A client that cannot
//! be asked in-band (no MCP elicitation) is told the approval id, a person
//! approves it out of band, and the client simply repeats the call.

mod error;
mod fingerprint;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use warden_core::Origin;

pub use error::{ApprovalError, ToolFailure};
pub use fingerprint::{Fingerprint, canonical_json};

use crate::store::{
    ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, Lease, LeaseId, LeaseState,
    Resolved, StoreError,
};
use crate::{
    Authorizer, Decision, Grant, GrantId, InvocationScope, LocationId, PackageIdentity, Rule,
    ToolPolicy, UnixMillis,
};

/// One call as the host received it. The capability id comes from the
/// host's lookup of the tool, never from the model's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatedCall {
    /// The capability called.
    pub capability_id: String,
    /// Where it is called.
    pub scope: InvocationScope,
    /// Who calls it.
    pub origin: Origin,
    /// The model's (or product's) input.
    pub input: Value,
    /// The package that provides the capability (from the host's lookup);
    /// approvals and leases are bound to it through the fingerprint.
    pub package: Option<PackageIdentity>,
}

impl GatedCall {
    /// The invocation's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(
            &self.capability_id,
            self.package.as_ref(),
            &self.scope,
            self.origin,
            &self.input,
        )
    }
}

/// Tunables of the approval flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalConfig {
    /// How long an approval's lease stays claimable (default 10 minutes).
    pub lease_ttl: Duration,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            lease_ttl: Duration::from_secs(600),
        }
    }
}

/// What a grant made by [`Resolution::ApproveAndGrant`] covers. It always
/// covers only the approved capability, Location and origin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantTerms {
    /// Cover only the approved call's session (default: the whole Location).
    pub session_only: bool,
    /// How long the grant lives (default: until revoked).
    pub ttl: Option<Duration>,
}

/// A person's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Run this call once.
    ApproveOnce,
    /// Run this call and make a scoped persistent grant for later ones.
    /// (`ask_always` gates and effect floors never honor it.)
    ApproveAndGrant(GrantTerms),
    /// Do not run it.
    Deny,
    /// Do not run it; tell the model why.
    DenyWithFeedback(String),
    /// The question was dismissed without an answer.
    Dismiss,
}

/// What [`Approvals::check`] tells the call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Run the call now.
    Run(Rule),
    /// Run the call now: a person approved this very call (same
    /// fingerprint) earlier, and this caller claimed that approval's lease.
    Approved(Dispatch),
    /// The call waits for this (already persisted) request.
    Blocked(Box<ApprovalRequest>),
}

/// Proof that this caller claimed the lease: dispatch the call exactly once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a claimed lease is spent; dispatch the call"]
pub struct Dispatch {
    /// The approval.
    pub approval_id: ApprovalId,
    /// The claimed lease.
    pub lease_id: LeaseId,
    /// The call to run.
    pub invocation: GatedCall,
}

/// The approval flow over an [`ApprovalStore`].
#[derive(Debug, Clone)]
pub struct Approvals {
    store: Arc<dyn ApprovalStore>,
    config: ApprovalConfig,
}

impl Approvals {
    /// The flow over `store`.
    pub fn new(store: Arc<dyn ApprovalStore>, config: ApprovalConfig) -> Self {
        Approvals { store, config }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ApprovalStore> {
        &self.store
    }

    /// Authorizes `invocation` against `policy` with the stored grants (a
    /// grant counts only for the package it was given to):
    /// allowed calls run, gated ones claim an earlier approval of the same
    /// call or wait on a persisted approval request, denied ones fail with
    /// [`ToolFailure::Denied`].
    pub async fn check(
        &self,
        authorizer: &Authorizer,
        policy: &ToolPolicy,
        invocation: &GatedCall,
        now: UnixMillis,
    ) -> Result<Gate, ApprovalError> {
        // Grants can only turn "needs approval" into "allow", so the store is
        // read only when the decision without grants is to ask.
        let scope = &invocation.scope;
        match authorizer.authorize(policy, scope, invocation.origin, &[], now) {
            Decision::Allow(rule) => return Ok(Gate::Run(rule)),
            Decision::Deny(rule) => return Err(ToolFailure::Denied { rule }.into()),
            Decision::NeedsApproval(_) => {}
        }
        // Only a call that may need approval is fingerprinted (once): an
        // allowed or denied one never looks an approval up.
        let fingerprint = invocation.fingerprint();
        let now = self.now(now).await?;
        // A person's approval of this very call is spent before any grant is
        // consulted, so an approve-and-grant's own lease is never left over
        // to run the call again after the grant is revoked.
        if let Some(dispatch) = self.claim_identical(invocation, &fingerprint, now).await? {
            return Ok(Gate::Approved(dispatch));
        }
        let grants = self
            .store
            .grants(&policy.capability_id, &scope.location, now)
            .await?;
        match authorizer.authorize(policy, scope, invocation.origin, &grants, now) {
            Decision::Allow(rule) => Ok(Gate::Run(rule)),
            Decision::NeedsApproval(rule) => {
                // An identical call waits on the pending request, if any:
                // one found, or one another host opened just before this.
                let request = match self.store.pending_with(&fingerprint).await? {
                    Some(waiting) => waiting,
                    None => match self
                        .persist_request(invocation, fingerprint.clone(), rule, now)
                        .await
                    {
                        Err(ApprovalError::Store(StoreError::AlreadyPending)) => self
                            .store
                            .pending_with(&fingerprint)
                            .await?
                            .ok_or(ApprovalError::Store(StoreError::AlreadyPending))?,
                        other => other?,
                    },
                };
                Ok(Gate::Blocked(Box::new(request)))
            }
            Decision::Deny(rule) => Err(ToolFailure::Denied { rule }.into()),
        }
    }

    /// "Approve, then call again": claims the lease of an approved,
    /// unexpired, unclaimed request identical to `invocation` (same
    /// `fingerprint`: tool, package, input, origin, scope).
    async fn claim_identical(
        &self,
        invocation: &GatedCall,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<Option<Dispatch>, ApprovalError> {
        let Some(approval_id) = self.store.claim_approved(fingerprint, now).await? else {
            return Ok(None);
        };
        let lease = self
            .store
            .lease(&approval_id)
            .await?
            .ok_or_else(|| missing_lease(&approval_id))?;
        Ok(Some(Dispatch {
            approval_id,
            lease_id: lease.id,
            invocation: invocation.clone(),
        }))
    }

    /// Persists a pending request for `invocation` (needing approval because
    /// of `rule`) and returns it.
    pub async fn request(
        &self,
        invocation: &GatedCall,
        rule: Rule,
        now: UnixMillis,
    ) -> Result<ApprovalRequest, ApprovalError> {
        let now = self.now(now).await?;
        self.persist_request(invocation, invocation.fingerprint(), rule, now)
            .await
    }

    async fn persist_request(
        &self,
        invocation: &GatedCall,
        fingerprint: Fingerprint,
        rule: Rule,
        now: UnixMillis,
    ) -> Result<ApprovalRequest, ApprovalError> {
        let request = ApprovalRequest {
            id: ApprovalId(new_id("apr", &fingerprint.0)),
            capability_id: invocation.capability_id.clone(),
            package: invocation.package.clone(),
            scope: invocation.scope.clone(),
            origin: invocation.origin,
            input: invocation.input.clone(),
            fingerprint,
            rule,
            created_at: now,
            state: ApprovalState::Pending,
            resolved_at: None,
        };
        self.store.insert_approval(&request).await?;
        Ok(request)
    }

    /// Pending requests of a Location, oldest first.
    pub async fn pending(
        &self,
        location: &LocationId,
    ) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        Ok(self.store.pending_approvals(location).await?)
    }

    /// The live grants of a Location, oldest first.
    pub async fn grants(
        &self,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, ApprovalError> {
        let now = self.now(now).await?;
        Ok(self.store.live_grants(location, now).await?)
    }

    /// The time to read expiry by: the store's clock when it keeps one
    /// (hosts sharing a database agree on it), else `host` (the caller's).
    async fn now(&self, host: UnixMillis) -> Result<UnixMillis, ApprovalError> {
        Ok(self.store.now().await?.unwrap_or(host))
    }

    /// Revokes a grant; false when no live grant has that id.
    pub async fn revoke_grant(&self, id: &GrantId) -> Result<bool, ApprovalError> {
        Ok(self.store.revoke_grant(id).await?)
    }

    /// Records a person's answer. Approvals issue a lease; approve-and-grant
    /// also stores a grant. Answers to a non-pending request are refused.
    pub async fn resolve(
        &self,
        id: &ApprovalId,
        resolution: Resolution,
        now: UnixMillis,
    ) -> Result<Resolved, ApprovalError> {
        let approval = self
            .store
            .approval(id)
            .await?
            .ok_or_else(|| ApprovalError::NotFound(id.clone()))?;
        let now = self.now(now).await?;
        let lease = || Lease {
            id: LeaseId(new_id("lea", &id.0)),
            approval_id: id.clone(),
            fingerprint: approval.fingerprint.clone(),
            issued_at: now,
            expires_at: now.saturating_add(millis(self.config.lease_ttl)),
            state: LeaseState::Issued,
            claimed_at: None,
        };
        let (state, lease, grant) = match resolution {
            Resolution::ApproveOnce => (ApprovalState::Approved, Some(lease()), None),
            Resolution::ApproveAndGrant(terms) => {
                let grant = Grant {
                    id: GrantId(new_id("gra", &id.0)),
                    capability_id: approval.capability_id.clone(),
                    package_digest: approval.package.as_ref().map(|p| p.digest.clone()),
                    location: approval.scope.location.clone(),
                    session: approval
                        .scope
                        .session
                        .clone()
                        .filter(|_| terms.session_only),
                    origin: approval.origin,
                    created_at: now,
                    expires_at: terms.ttl.map(|t| now.saturating_add(millis(t))),
                };
                (ApprovalState::Approved, Some(lease()), Some(grant))
            }
            Resolution::Deny => (ApprovalState::Denied { feedback: None }, None, None),
            Resolution::DenyWithFeedback(text) => (
                ApprovalState::Denied {
                    feedback: Some(text),
                },
                None,
                None,
            ),
            Resolution::Dismiss => (ApprovalState::Dismissed, None, None),
        };
        let resolved = Resolved {
            state,
            lease,
            grant,
            at: now,
        };
        if self.store.resolve(id, &resolved).await? {
            Ok(resolved)
        } else {
            Err(ApprovalError::AlreadyResolved(id.clone()))
        }
    }

    /// How the person refused approval `id` (declined, with their
    /// feedback, or dismissed) — what [`Approvals::resume`] answers for it —
    /// for a call whose tool is gone, so its package can no longer be told:
    /// `call`'s capability id is the tool as the caller named it (capability
    /// id or model name) and its package is not looked at. Everything else
    /// must be the call that was asked about (Location, session, origin,
    /// input). `None` while it is pending or approved, when there is no such
    /// approval, or when `call` is another.
    pub async fn refusal(
        &self,
        id: &ApprovalId,
        call: &GatedCall,
    ) -> Result<Option<ToolFailure>, ApprovalError> {
        let Some(approval) = self.store.approval(id).await? else {
            return Ok(None);
        };
        let named = &call.capability_id;
        let names_it = *named == approval.capability_id
            || crate::name::model_name(None, &approval.capability_id)
                .is_ok_and(|name| name == *named);
        // The call as asked about, but for the package nobody can tell now.
        let asked = GatedCall {
            capability_id: approval.capability_id.clone(),
            package: approval.package.clone(),
            ..call.clone()
        };
        if !names_it || asked.fingerprint() != approval.fingerprint {
            return Ok(None);
        }
        Ok(refusal_of(id, &approval.state))
    }

    /// Hands back the lease `approval_id`'s call claimed when that call
    /// never ran (it stopped before its lane: an account to connect), so
    /// the identical retry claims it again; whether there was one to hand
    /// back.
    pub async fn release(
        &self,
        approval_id: &ApprovalId,
        invocation: &GatedCall,
    ) -> Result<bool, ApprovalError> {
        let fingerprint = invocation.fingerprint();
        Ok(self.store.release_lease(approval_id, &fingerprint).await?)
    }

    /// Resumes a blocked call: refuses changed input, surfaces declines and
    /// dismissals as tool failures, and claims the lease atomically. Exactly
    /// one resume of an approval ever returns a [`Dispatch`].
    pub async fn resume(
        &self,
        id: &ApprovalId,
        invocation: &GatedCall,
        now: UnixMillis,
    ) -> Result<Dispatch, ApprovalError> {
        let approval = self
            .store
            .approval(id)
            .await?
            .ok_or_else(|| ApprovalError::NotFound(id.clone()))?;
        let approval_id = id.clone();
        let fingerprint = invocation.fingerprint();
        if fingerprint != approval.fingerprint {
            let digest = |p: &Option<PackageIdentity>| p.as_ref().map(|p| p.digest.clone());
            if digest(&approval.package) != digest(&invocation.package) {
                return Err(ToolFailure::PackageChanged {
                    approval_id,
                    extension_id: invocation
                        .package
                        .as_ref()
                        .map(|p| p.extension_id.clone())
                        .unwrap_or_else(|| invocation.capability_id.clone()),
                }
                .into());
            }
            return Err(ToolFailure::InputChanged { approval_id }.into());
        }
        if let Some(refused) = refusal_of(&approval_id, &approval.state) {
            return Err(refused.into());
        }
        if approval.state == ApprovalState::Pending {
            return Err(ApprovalError::Pending(approval_id));
        }
        let now = self.now(now).await?;
        if self.store.claim_lease(id, &fingerprint, now).await? {
            let lease = self
                .store
                .lease(id)
                .await?
                .ok_or_else(|| missing_lease(id))?;
            return Ok(Dispatch {
                approval_id,
                lease_id: lease.id,
                invocation: invocation.clone(),
            });
        }
        match self.store.lease(id).await? {
            Some(lease) if lease.state == LeaseState::Claimed => {
                Err(ApprovalError::AlreadyDispatched(approval_id))
            }
            Some(_) => Err(ToolFailure::ApprovalExpired { approval_id }.into()),
            None => Err(missing_lease(id)),
        }
    }
}

fn missing_lease(id: &ApprovalId) -> ApprovalError {
    ApprovalError::Store(crate::StoreError::Corrupt {
        what: format!("approval `{id}` without a lease"),
    })
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A fresh, unguessable-enough id: `<prefix>_<24 hex>` from a hash of the
/// seed, the time, the process and a counter.
fn new_id(prefix: &str, seed: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(seed.as_bytes());
    hasher.update(nanos.to_le_bytes());
    hasher.update(std::process::id().to_le_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    format!("{prefix}_{}", &hex::encode(hasher.finalize())[..24])
}

/// The failure a person's refusal of approval `id` is, if `state` is one.
fn refusal_of(id: &ApprovalId, state: &ApprovalState) -> Option<ToolFailure> {
    let approval_id = id.clone();
    match state {
        ApprovalState::Denied { feedback } => Some(ToolFailure::Declined {
            approval_id,
            feedback: feedback.clone(),
        }),
        ApprovalState::Dismissed => Some(ToolFailure::Dismissed { approval_id }),
        ApprovalState::Pending | ApprovalState::Approved => None,
    }
}

#[cfg(test)]
mod tests;
