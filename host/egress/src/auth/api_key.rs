//! `method = "api_key"`: validate pasted values with the recipe's probe.
//!
//! The probe injects one value into a request to the probe URL. That URL is
//! chosen by the package, so it must be one of the audiences the credential
//! is bound to: a probe elsewhere would hand the key to a host the account
//! may never reach, and is refused before anything is sent. The caller
//! stores the values (bound) only after [`validate`] returns `Ok`.

use secrecy::SecretString;
use warden_core::spec::{ApiKeyRecipe, CredentialSpec};

use super::{AuthError, host_request};
use crate::secrets::AccountAudience;
use crate::session::Egress;

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
    let (url, audience) = host_request::in_audiences(&probe.url, audiences)?;
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
    let response = host_request::send(
        egress,
        spec,
        value,
        probe.method.as_deref().unwrap_or("GET"),
        url,
    )
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
