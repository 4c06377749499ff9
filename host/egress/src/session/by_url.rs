//! Credential selection by URL, for guests that name no credential (the
//! `near:agent@0.4.1` world): the calling capability's declared credential
//! whose audience is the request's scheme, host and port.

use warden_core::net::{AuthNeeded, CredentialError, CredentialMatch};

use super::CallSession;
use crate::policy::{audience_matches, endpoint_of};

/// See [`warden_core::net::CallNetwork::credential_for_url`].
pub(super) fn credential_for_url(
    session: &CallSession,
    url: &str,
) -> Result<Option<CredentialMatch>, CredentialError> {
    // An unparseable URL selects nothing; the policy refuses it when sent.
    let Some(endpoint) = url::Url::parse(url)
        .ok()
        .and_then(|url| endpoint_of(&url).ok())
    else {
        return Ok(None);
    };
    // `audience_matches` requires https on both sides: nothing is ever
    // selected for plain http.
    let matching: Vec<_> = session
        .staged
        .iter()
        .filter(|s| audience_matches(&s.spec, &endpoint))
        .collect();
    let staged = match matching.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        several => {
            return Err(CredentialError::Ambiguous(
                several.iter().map(|s| s.spec.handle.clone()).collect(),
            ));
        }
    };
    let needed = AuthNeeded {
        vendor: staged.spec.vendor.clone(),
        scopes: staged.spec.scopes.clone(),
    };
    if staged.secret.is_none() {
        return Err(CredentialError::NotConfigured(needed));
    }
    Ok(Some(CredentialMatch {
        handle: staged.spec.handle.clone(),
        needed,
    }))
}
