//! What a call does about accounts around the guest: refresh the OAuth
//! accounts it will stage before it starts, and turn a provider's 401 to a
//! staged credential into a structured `auth_required` after it ran.

use std::time::SystemTime;

use warden_egress::auth::grant;
use warden_egress::{AuthRequired, CallSession};

use crate::location::{Binding, Location};

impl Location {
    /// Refresh (one flight per account) every OAuth account this call of
    /// `binding` would stage whose access token expires within the skew; the
    /// first credential whose refresh the provider refused.
    pub(crate) async fn refresh_before_call(&self, binding: &Binding) -> Option<AuthRequired> {
        let credentials = &binding.capability.credentials;
        if credentials.is_empty() {
            return None;
        }
        match grant::refresh_due(
            &self.shared.egress,
            binding.requester(),
            credentials,
            SystemTime::now(),
        )
        .await
        {
            Ok(expired) => expired.into_iter().next(),
            Err(error) => {
                // The stored tokens are used as they are; a provider 401
                // still becomes an auth_required (see `refused_after_call`).
                tracing::warn!(%error, "could not check the call's accounts for refresh");
                None
            }
        }
    }
}

/// The `auth_required` of a failed call whose staged credential the provider
/// refused with 401 (never the provider's 401 passed through).
pub(crate) fn refused_after_call(session: Option<&CallSession>) -> Option<AuthRequired> {
    session?.refused_credential()
}
