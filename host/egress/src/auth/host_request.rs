//! A request the host makes with an account's value during a recipe (an API
//! key's validation probe, a connect's identity read). The URL comes from the
//! package, so it must be one of the audiences the account is bound to;
//! anywhere else is refused before anything is sent.

use secrecy::SecretString;
use warden_core::net::{GuestRequest, GuestResponse};
use warden_core::spec::{Audience, CredentialSpec};

use super::{AuthError, https_audience};
use crate::secrets::AccountAudience;
use crate::session::Egress;
use crate::staging::Staged;

/// `url` parsed, and its audience, when that is one of `audiences`.
pub(crate) fn in_audiences(
    url: &str,
    audiences: &[AccountAudience],
) -> Result<(url::Url, Audience), AuthError> {
    let (url, audience) = https_audience(url)?;
    if audiences.contains(&AccountAudience::of(&audience)) {
        return Ok((url, audience));
    }
    let mut shown = url.clone();
    shown.set_query(None);
    Err(AuthError::ProbeOutsideAudience {
        url: shown.into(),
        audiences: audiences
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Send `method url` (accepting JSON, no body) through `egress` as the
/// host, with `value` injected as `spec` says (toward `spec.audience` only,
/// like a tool's call).
pub(crate) async fn send(
    egress: &Egress,
    spec: CredentialSpec,
    value: SecretString,
    method: &str,
    url: url::Url,
) -> Result<GuestResponse, AuthError> {
    let request = GuestRequest {
        method: method.to_owned(),
        url: url.into(),
        headers: vec![("accept".into(), "application/json".into())],
        body: None,
        timeout: None,
    };
    let staged = Staged::with_values(vec![(spec.clone(), value)]);
    let session = egress.session_with(
        &format!("auth.{}", spec.vendor),
        "host",
        std::slice::from_ref(&spec),
        &[],
        egress.config().max_response_body as u64,
        staged,
    );
    Ok(session
        .send_checked(request, Some(&spec.handle), egress.config().total_timeout)
        .await?)
}
