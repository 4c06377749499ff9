//! Calls made for an authenticated caller ([`Invocation::caller`]) use that
//! caller's accounts. A lane that cannot send with a call's own accounts
//! (an embedder's, whose connection holds the deployment's account) runs
//! such a call only where the operator shares every vendor it needs.

use warden_core::ErrorCode;

use crate::lane::LaneError;
use crate::location::{Binding, Location};
use crate::outcome::{CallFailure, Invocation, InvokeOutcome};

impl Location {
    /// The refusal of a call made for a caller whose lane would send with
    /// an account the deployment does not share; `None` when it may run.
    pub(super) fn unshared_for_caller(
        &self,
        binding: &Binding,
        invocation: &Invocation,
    ) -> Option<InvokeOutcome> {
        invocation.caller.as_ref()?;
        if binding.lane.uses_call_accounts() {
            return None;
        }
        let shared = &self.shared.shared_accounts;
        let vendor = binding
            .capability
            .credentials
            .iter()
            .map(|c| &c.vendor)
            .find(|vendor| !shared.contains(vendor))?;
        Some(InvokeOutcome::Failed(CallFailure::Runtime {
            error: Box::new(AccountNotShared {
                capability_id: binding.capability.id.clone(),
                vendor: vendor.clone(),
            }),
            usage: Default::default(),
            logs: Vec::new(),
        }))
    }
}

/// See [`ErrorCode::AccountNotShared`].
#[derive(Debug, thiserror::Error)]
#[error(
    "`{capability_id}` runs on a lane that sends only the deployment's `{vendor}` account, \
     which the operator does not share with callers (warden.toml `[accounts] shared`); \
     nothing was sent"
)]
struct AccountNotShared {
    capability_id: String,
    vendor: String,
}

impl LaneError for AccountNotShared {
    fn code(&self) -> ErrorCode {
        ErrorCode::AccountNotShared
    }
}
