//! An in-memory [`ApprovalStore`]: nothing survives the process.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::{
    ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, Lease, LeaseState, Resolved,
    StoreError,
};
use crate::approvals::Fingerprint;
use crate::{Grant, GrantId, LocationId, UnixMillis};

#[derive(Debug, Default)]
struct State {
    approvals: BTreeMap<ApprovalId, ApprovalRequest>,
    leases: BTreeMap<ApprovalId, Lease>,
    grants: BTreeMap<GrantId, (Grant, bool)>,
}

/// An [`ApprovalStore`] in process memory; every method holds one lock, so
/// each is atomic.
#[derive(Debug, Default)]
pub struct MemoryApprovalStore {
    state: Mutex<State>,
}

impl MemoryApprovalStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryApprovalStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl ApprovalStore for MemoryApprovalStore {
    async fn insert_approval(&self, request: &ApprovalRequest) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.approvals.contains_key(&request.id) {
            return Err(StoreError::Duplicate {
                id: request.id.0.clone(),
            });
        }
        let pending = |a: &ApprovalRequest| a.state == ApprovalState::Pending;
        if pending(request)
            && state
                .approvals
                .values()
                .any(|a| pending(a) && a.fingerprint == request.fingerprint)
        {
            return Err(StoreError::AlreadyPending);
        }
        state.approvals.insert(request.id.clone(), request.clone());
        Ok(())
    }

    async fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRequest>, StoreError> {
        Ok(self.lock().approvals.get(id).cloned())
    }

    async fn pending_approvals(
        &self,
        location: &LocationId,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let mut pending: Vec<_> = self
            .lock()
            .approvals
            .values()
            .filter(|a| a.state == ApprovalState::Pending && &a.scope.location == location)
            .cloned()
            .collect();
        pending.sort_by_key(|a| a.created_at);
        Ok(pending)
    }

    async fn resolve(&self, id: &ApprovalId, resolved: &Resolved) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let Some(approval) = state.approvals.get_mut(id) else {
            return Ok(false);
        };
        if approval.state != ApprovalState::Pending {
            return Ok(false);
        }
        approval.state = resolved.state.clone();
        approval.resolved_at = Some(resolved.at);
        if let Some(lease) = &resolved.lease {
            state.leases.insert(id.clone(), lease.clone());
        }
        if let Some(grant) = &resolved.grant {
            state
                .grants
                .insert(grant.id.clone(), (grant.clone(), false));
        }
        Ok(true)
    }

    async fn lease(&self, approval_id: &ApprovalId) -> Result<Option<Lease>, StoreError> {
        Ok(self.lock().leases.get(approval_id).cloned())
    }

    async fn claim_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.leases.get_mut(approval_id) {
            Some(lease)
                if lease.state == LeaseState::Issued
                    && &lease.fingerprint == fingerprint
                    && now < lease.expires_at =>
            {
                lease.state = LeaseState::Claimed;
                lease.claimed_at = Some(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.leases.get_mut(approval_id) {
            Some(lease)
                if lease.state == LeaseState::Claimed && &lease.fingerprint == fingerprint =>
            {
                lease.state = LeaseState::Issued;
                lease.claimed_at = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn claim_approved(
        &self,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<Option<ApprovalId>, StoreError> {
        let mut state = self.lock();
        let oldest = state
            .leases
            .values_mut()
            .filter(|l| {
                l.state == LeaseState::Issued && &l.fingerprint == fingerprint && now < l.expires_at
            })
            .min_by(|a, b| (a.issued_at, &a.id).cmp(&(b.issued_at, &b.id)));
        Ok(oldest.map(|lease| {
            lease.state = LeaseState::Claimed;
            lease.claimed_at = Some(now);
            lease.approval_id.clone()
        }))
    }

    async fn pending_with(
        &self,
        fingerprint: &Fingerprint,
    ) -> Result<Option<ApprovalRequest>, StoreError> {
        Ok(self
            .lock()
            .approvals
            .values()
            .filter(|a| a.state == ApprovalState::Pending && &a.fingerprint == fingerprint)
            .min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    async fn insert_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.grants.contains_key(&grant.id) {
            return Err(StoreError::Duplicate {
                id: grant.id.0.clone(),
            });
        }
        state
            .grants
            .insert(grant.id.clone(), (grant.clone(), false));
        Ok(())
    }

    async fn grants(
        &self,
        capability_id: &str,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        Ok(self
            .lock()
            .grants
            .values()
            .filter(|(g, revoked)| {
                !revoked
                    && g.capability_id == capability_id
                    && &g.location == location
                    && g.expires_at.is_none_or(|t| now < t)
            })
            .map(|(g, _)| g.clone())
            .collect())
    }

    async fn live_grants(
        &self,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        let mut live: Vec<Grant> = self
            .lock()
            .grants
            .values()
            .filter(|(g, revoked)| {
                !revoked && &g.location == location && g.expires_at.is_none_or(|t| now < t)
            })
            .map(|(g, _)| g.clone())
            .collect();
        live.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(live)
    }

    async fn revoke_grant(&self, id: &GrantId) -> Result<bool, StoreError> {
        Ok(match self.lock().grants.get_mut(id) {
            Some((_, revoked)) if !*revoked => {
                *revoked = true;
                true
            }
            _ => false,
        })
    }

    async fn prune(&self, before: UnixMillis) -> Result<u64, StoreError> {
        let mut state = self.lock();
        let settled: Vec<ApprovalId> = state
            .approvals
            .values()
            .filter(|a| {
                a.state != ApprovalState::Pending && a.resolved_at.is_some_and(|t| t < before)
            })
            .map(|a| a.id.clone())
            .collect();
        let mut deleted = 0;
        for id in &settled {
            deleted += u64::from(state.approvals.remove(id).is_some());
            deleted += u64::from(state.leases.remove(id).is_some());
        }
        let grants = state.grants.len();
        state.grants.retain(|_, (grant, revoked)| {
            let expired = grant.expires_at.is_some_and(|t| t < before);
            !(expired || (*revoked && grant.created_at < before))
        });
        Ok(deleted + (grants - state.grants.len()) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_store_conforms() {
        crate::store::conformance::run(&MemoryApprovalStore::new()).await;
        crate::store::conformance::prunes(&MemoryApprovalStore::new()).await;
        crate::store::conformance::claims_race(std::sync::Arc::new(MemoryApprovalStore::new()))
            .await;
        crate::store::conformance::one_pending_per_fingerprint(std::sync::Arc::new(
            MemoryApprovalStore::new(),
        ))
        .await;
    }
}
