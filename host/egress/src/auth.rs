//! Auth recipes, run generically from the manifest's `[auth.<vendor>]`
//! tables (no per-vendor code): [`api_key`] validates a pasted key with the
//! recipe's probe, [`oauth2`] runs the authorization-code flow with PKCE,
//! [`loopback`] receives its redirect on 127.0.0.1 (RFC 8252), [`discovery`]
//! reads authorization-server metadata (RFC 8414) and registers a public
//! client (RFC 7591), and [`grant`] keeps refresh material and refreshes
//! before expiry (one flight per account); [`identity`] reads who a
//! connected account is; [`challenge`] reads a resource's
//! `WWW-Authenticate` and [`resource`] composes them for a protected
//! resource (an MCP server that requires OAuth). Every request goes through the
//! same egress policy, address checks and transport as tools.
//!
//! This module never decides where an account may be sent: the host stores
//! what a flow returns as a bound account (see [`crate::secrets::account`]).

pub mod api_key;
pub mod challenge;
pub mod discovery;
pub mod grant;
mod host_request;
pub mod identity;
pub mod loopback;
pub mod oauth2;
pub mod resource;
pub mod server_callback;

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
    /// Egress refused or failed the request (an http:// or private
    /// authorization server lands here).
    #[error(transparent)]
    Egress(#[from] EgressError),
    /// The provider answered with a status that means no.
    #[error("the provider rejected the request (status {status}{})", error_suffix(.error))]
    Rejected {
        /// HTTP status.
        status: u16,
        /// The OAuth `error` code of the answer (`invalid_grant`), when it
        /// is a plain token (never the provider's description).
        error: Option<String>,
    },
    /// The token response lacks a field or is not JSON.
    #[error("token response: {0}")]
    TokenResponse(&'static str),
    /// The callback's `state` differs from the one issued.
    #[error("authorization state does not match")]
    StateMismatch,
    /// The API-key validation probe would send the key to an origin the
    /// credential is not bound to.
    #[error("the validation probe {url} is outside the credential's audiences ({audiences})")]
    ProbeOutsideAudience {
        /// The probe URL (no secret in it).
        url: String,
        /// The audiences the key may go to.
        audiences: String,
    },
    /// The recipe names no value for the field the probe injects.
    #[error("no value was given for `{0}`")]
    MissingField(String),
    /// The authorization callback did not arrive in time.
    #[error("no authorization callback arrived within {0} s")]
    CallbackTimeout(u64),
    /// The loopback listener failed or closed before the callback.
    #[error("the loopback redirect listener failed: {0}")]
    Listener(String),
    /// The callback carried an OAuth error (`access_denied`) or no code.
    #[error("the authorization was not granted: {0}")]
    Authorization(String),
    /// Authorization-server metadata is missing, malformed or inconsistent.
    #[error("authorization server metadata: {0}")]
    Metadata(String),
    /// Dynamic client registration failed.
    #[error("client registration: {0}")]
    Registration(String),
    /// No account is connected for this key.
    #[error("no account is connected")]
    NotConnected,
    /// The secret store failed.
    #[error(transparent)]
    Secret(#[from] SecretError),
}

fn error_suffix(error: &Option<String>) -> String {
    error
        .as_deref()
        .map(|e| format!(", {e}"))
        .unwrap_or_default()
}

impl AuthError {
    /// Whether the provider refused a grant (so a refresh cannot succeed
    /// and the user must connect again).
    pub fn is_refusal(&self) -> bool {
        matches!(self, AuthError::Rejected { status, .. } if (400..500).contains(status))
    }
}

/// The HTTPS audience of `url` (recipe endpoints must be HTTPS).
pub(crate) fn https_audience(url: &str) -> Result<(url::Url, Audience), AuthError> {
    endpoint_audience(url, None)
}

/// The audience of an endpoint: HTTPS, or plain `http` where `egress`
/// allows it for that origin (loopback test servers, by the operator's
/// choice; see [`crate::EgressConfig::allow_loopback_http`]).
pub(crate) fn endpoint_audience(
    url: &str,
    egress: Option<&crate::EgressConfig>,
) -> Result<(url::Url, Audience), AuthError> {
    let url =
        url::Url::parse(url).map_err(|_| AuthError::InvalidRecipe("endpoint is not a URL"))?;
    let endpoint = endpoint_of(&url)
        .map_err(|_: Denial| AuthError::InvalidRecipe("endpoint is not a plain HTTPS URL"))?;
    let plain_http_allowed =
        egress.is_some_and(|c| c.plain_http_allowed(&endpoint.host, endpoint.port));
    let scheme = match endpoint.scheme {
        crate::policy::Scheme::Https => "https",
        crate::policy::Scheme::Http if plain_http_allowed => "http",
        crate::policy::Scheme::Http => {
            return Err(AuthError::InvalidRecipe("endpoint must use https"));
        }
    };
    let audience = Audience {
        scheme: scheme.into(),
        host: endpoint.host,
        port: Some(endpoint.port),
    };
    Ok((url, audience))
}

/// The OAuth `error` code of a JSON error body, when it is a short plain
/// token (a provider's free text never passes through).
pub(crate) fn oauth_error_code(body: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let code = json.get("error")?.as_str()?;
    let plain = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    plain.then(|| code.to_owned())
}
