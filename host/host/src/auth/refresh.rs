//! What a call does about accounts around the guest: stage them, refresh
//! the staged OAuth accounts that are due before it starts, and turn a
//! provider's 401 to a staged credential into a structured `auth_required`
//! after it ran.

use std::time::SystemTime;

use warden_egress::auth::grant;
use warden_egress::{AuthRequired, CallSession, EgressError};

use crate::location::{Binding, Location};

/// Why a call got no egress session.
pub(crate) enum NotStaged {
    /// A staged account's refresh was refused: connect it again.
    Auth(AuthRequired),
    /// The session could not be built (the store failed).
    Egress(EgressError),
}

impl Location {
    /// The egress session of a call of `binding`: its credentials staged
    /// with one read of the store, which also tells which staged OAuth
    /// accounts expire within the skew; those are refreshed (one flight per
    /// account) and the call staged again, with the new tokens. Most calls
    /// find nothing due and read the store once.
    pub(crate) async fn stage_call(
        &self,
        binding: &Binding,
        owner: Option<&str>,
    ) -> Result<CallSession, NotStaged> {
        let session = self.session_of(binding, owner).await?;
        let due = grant::due_for_refresh(&session, SystemTime::now());
        if due.is_empty() {
            return Ok(session);
        }
        drop(session);
        let expired = grant::refresh_accounts(
            &self.shared.egress,
            &binding.extension_id,
            &due,
            SystemTime::now(),
        )
        .await;
        match expired.into_iter().next() {
            Some(expired) => Err(NotStaged::Auth(expired)),
            None => self.session_of(binding, owner).await,
        }
    }

    /// The call's session, staging the accounts of `owner` (the caller the
    /// call is made for), or the deployment's when there is none.
    async fn session_of(
        &self,
        binding: &Binding,
        owner: Option<&str>,
    ) -> Result<CallSession, NotStaged> {
        let max_egress_bytes = binding.capability.max_egress_bytes.unwrap_or(u64::MAX);
        let requester = binding
            .requester()
            .acting_for(owner, &self.shared.shared_accounts);
        self.shared
            .egress
            .prepared_session(&binding.policy, requester, max_egress_bytes)
            .await
            .map_err(NotStaged::Egress)
    }
}

/// The `auth_required` of a failed call whose staged credential the provider
/// refused with 401 (never the provider's 401 passed through).
pub(crate) fn refused_after_call(session: Option<&CallSession>) -> Option<AuthRequired> {
    session?.refused_credential()
}
