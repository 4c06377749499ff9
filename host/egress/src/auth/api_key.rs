//! `method = "api_key"`: validate pasted values with the recipe's probe.
//!
//! The probe injects one value into a request to the probe URL. That URL is
//! chosen by the package, so it must be one of the audiences the credential
//! is bound to: a probe elsewhere would hand the key to a host the account
//! may never reach, and is refused before anything is sent. The caller
//! stores the values (bound) only after [`validate`] returns `Ok`.

use secrecy::SecretString;
use warden_core::net::GuestRequest;
use warden_core::spec::{ApiKeyRecipe, CredentialSpec};

use super::{AuthError, https_audience};
use crate::secrets::AccountAudience;
use crate::session::Egress;
use crate::staging::Staged;

/// Run the recipe's validation probe (if any) through `egress` with the
/// value of the field it names (the first field by default). `audiences`
/// are where the credential may be sent; the probe must target one of them.
pub async fn validate(
    egress: &Egress,
    vendor: &str,
    recipe: &ApiKeyRecipe,
    audiences: &[AccountAudience],
    values: &[(String, SecretString)],
) -> Result<(), AuthError> {
    let Some(probe) = &recipe.validation else {
        return Ok(());
    };
    let (url, audience) = https_audience(&probe.url)?;
    if !audiences.contains(&AccountAudience::of(&audience)) {
        let mut shown = url.clone();
        shown.set_query(None);
        return Err(AuthError::ProbeOutsideAudience {
            url: shown.into(),
            audiences: audiences
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let handle = probe
        .handle
        .clone()
        .or_else(|| recipe.fields.first().map(|f| f.handle.clone()))
        .ok_or_else(|| AuthError::MissingField("validation.inject.handle".into()))?;
    let value = values
        .iter()
        .find(|(h, _)| *h == handle)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| AuthError::MissingField(handle.clone()))?;
    let spec = CredentialSpec {
        handle,
        vendor: vendor.to_owned(),
        scopes: Vec::new(),
        audience,
        injection: probe.injection.clone(),
        required: true,
    };
    let staged = Staged::with_values(vec![(spec.clone(), value)]);
    let session = egress.session_with(
        &format!("auth.{vendor}"),
        "host",
        std::slice::from_ref(&spec),
        &[],
        egress.config().max_response_body as u64,
        staged,
    );
    let request = GuestRequest {
        method: probe.method.clone().unwrap_or_else(|| "GET".into()),
        url: url.into(),
        headers: vec![("accept".into(), "application/json".into())],
        body: None,
        timeout: None,
    };
    let response = session
        .send_checked(request, Some(&spec.handle), egress.config().total_timeout)
        .await?;
    let expected: &[u16] = if probe.expect_status.is_empty() {
        &[200]
    } else {
        &probe.expect_status
    };
    if !expected.contains(&response.status) {
        return Err(AuthError::Rejected {
            status: response.status,
            error: None,
        });
    }
    Ok(())
}
