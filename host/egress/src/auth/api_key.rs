//! `method = "api_key"`: validate a pasted key with the recipe's probe, then store it.

use secrecy::SecretString;
use warden_core::net::GuestRequest;
use warden_core::spec::{ApiKeyRecipe, CredentialSpec};

use super::{AuthError, https_audience};
use crate::secrets::AccountKey;
use crate::session::Egress;
use crate::staging::Staged;

/// Validate `value` with the recipe's probe (if any) through `egress`, then
/// store it under `key`. The probe injects the key only into its own URL's origin.
pub async fn connect(
    egress: &Egress,
    recipe: &ApiKeyRecipe,
    key: &AccountKey,
    value: SecretString,
) -> Result<(), AuthError> {
    if let Some(probe) = &recipe.validation {
        let (url, audience) = https_audience(&probe.url)?;
        let spec = CredentialSpec {
            handle: key.handle.clone(),
            vendor: key.vendor.clone(),
            scopes: key.scopes.clone(),
            audience,
            injection: probe.injection.clone(),
            required: true,
        };
        let staged = Staged::with_values(vec![(spec.clone(), value.clone())]);
        let session = egress.session_with(
            &format!("auth.{}", key.vendor),
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
            });
        }
    }
    egress.store().put(key, value)?;
    Ok(())
}
