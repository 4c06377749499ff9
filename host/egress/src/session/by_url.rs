//! Credential selection by URL, for guests that name no credential (the
//! `near:agent@0.4.1` world): the calling capability's declared credential
//! whose audience is the request's scheme, host and port.

use warden_core::net::{AuthNeeded, CredentialError, CredentialMatch};
use warden_core::spec::CredentialSpec;

use super::CallSession;
use crate::policy::{audience_matches, endpoint_of};

/// See [`warden_core::net::CallNetwork::credential_for_url`].
pub(super) fn credential_for_url(
    session: &CallSession,
    url: &str,
) -> Result<Option<CredentialMatch>, CredentialError> {
    let Some(spec) = declared_for_url(session.staged.iter().map(|s| &s.spec), url)? else {
        return Ok(None);
    };
    let staged = session.staged.get(&spec.handle);
    let matched = matched(spec);
    if staged.is_none_or(|s| s.secret.is_none()) {
        return Err(CredentialError::NotConfigured(matched.needed));
    }
    Ok(Some(matched))
}

/// The one credential of `declared` whose audience is the scheme, host and
/// port of `url`; none for an unparseable URL (the policy refuses it when
/// sent) and for plain `http` (`audience_matches` requires https on both
/// sides); an error when several are.
pub(crate) fn declared_for_url<'a>(
    declared: impl Iterator<Item = &'a CredentialSpec>,
    url: &str,
) -> Result<Option<&'a CredentialSpec>, CredentialError> {
    let Some(endpoint) = url::Url::parse(url)
        .ok()
        .and_then(|url| endpoint_of(&url).ok())
    else {
        return Ok(None);
    };
    let matching: Vec<&CredentialSpec> = declared
        .filter(|spec| audience_matches(spec, &endpoint))
        .collect();
    match matching.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        several => Err(CredentialError::Ambiguous(
            several.iter().map(|s| s.handle.clone()).collect(),
        )),
    }
}

/// The match of `spec`: its handle, and what connecting it needs.
pub(crate) fn matched(spec: &CredentialSpec) -> CredentialMatch {
    CredentialMatch {
        handle: spec.handle.clone(),
        needed: AuthNeeded {
            vendor: spec.vendor.clone(),
            scopes: spec.scopes.clone(),
        },
    }
}
