//! Auth recipes, run generically from the manifest's `[auth.<vendor>]`
//! tables (no per-vendor code): [`api_key`] stores a key after its
//! validation probe passes, [`oauth2`] runs the authorization-code flow
//! with PKCE and refreshes tokens before they expire. Every request goes
//! through the same egress policy, address checks and transport as tools.

pub mod api_key;
pub mod oauth2;

use warden_core::spec::Audience;

use crate::policy::{Denial, endpoint_of};
use crate::secrets::SecretError;
use crate::session::EgressError;

/// Why an auth recipe step failed. Provider bodies never pass through.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The recipe is unusable (non-HTTPS endpoint, bad URL).
    #[error("auth recipe: {0}")]
    InvalidRecipe(&'static str),
    /// Egress refused or failed the request.
    #[error(transparent)]
    Egress(#[from] EgressError),
    /// The provider answered with a status that means no.
    #[error("the provider rejected the credential (status {status})")]
    Rejected {
        /// HTTP status.
        status: u16,
    },
    /// The token response lacks a field or is not JSON.
    #[error("token response: {0}")]
    TokenResponse(&'static str),
    /// The callback's `state` differs from the one issued.
    #[error("authorization state does not match")]
    StateMismatch,
    /// No account is connected for this key.
    #[error("no account is connected")]
    NotConnected,
    /// The secret store failed.
    #[error(transparent)]
    Secret(#[from] SecretError),
}

/// The HTTPS audience of `url` (recipe endpoints must be HTTPS).
pub(crate) fn https_audience(url: &str) -> Result<(url::Url, Audience), AuthError> {
    let url =
        url::Url::parse(url).map_err(|_| AuthError::InvalidRecipe("endpoint is not a URL"))?;
    let endpoint = endpoint_of(&url)
        .map_err(|_: Denial| AuthError::InvalidRecipe("endpoint is not a plain HTTPS URL"))?;
    if endpoint.scheme != crate::policy::Scheme::Https {
        return Err(AuthError::InvalidRecipe("endpoint must use https"));
    }
    let audience = Audience {
        scheme: "https".into(),
        host: endpoint.host,
        port: Some(endpoint.port),
    };
    Ok((url, audience))
}
