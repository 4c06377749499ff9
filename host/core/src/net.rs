//! The per-call network service behind a guest's `http` and `credential` imports.
//!
//! The runtime owns the wasm side (resources, limits, usage counters); an
//! implementation of [`CallNetwork`] owns policy, credentials and transport.
//! The host creates one per invocation, already bound to the capability and
//! its staged credentials, and drops it when the call ends.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A boxed, sendable future, as [`CallNetwork::send`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A request as the guest asked for it (before policy and injection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestRequest {
    /// HTTP method as written by the guest.
    pub method: String,
    /// Absolute URL as written by the guest.
    pub url: String,
    /// Header fields in order.
    pub headers: Vec<(String, String)>,
    /// Optional body.
    pub body: Option<Vec<u8>>,
    /// Timeout the guest asked for, if any.
    pub timeout: Option<Duration>,
}

/// A response as the guest will see it: already redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestResponse {
    /// Status code.
    pub status: u16,
    /// Header fields (sensitive ones removed, secrets redacted).
    pub headers: Vec<(String, String)>,
    /// Body (secrets redacted).
    pub body: Vec<u8>,
}

/// Why a request did not complete; mirrors the WIT `http-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The network policy refused the request.
    #[error("request denied: {0}")]
    Denied(String),
    /// The request is malformed.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The request did not complete in time.
    #[error("request timed out")]
    Timeout,
    /// The response body exceeded the host's limit.
    #[error("body too large")]
    TooLarge,
    /// The request body exceeded the host's limit: nothing was sent.
    #[error("request body too large")]
    RequestTooLarge,
    /// DNS, TCP or TLS failed.
    #[error("connection failed: {0}")]
    ConnectionFailed(String),
    /// The call used up its request or byte allowance.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
}

/// Why a credential handle could not be acquired; mirrors the WIT `credential-error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The capability does not declare this handle.
    #[error("credential `{0}` is not declared by this capability")]
    NotDeclared(String),
    /// Declared, but no secret is configured.
    #[error("credential for vendor `{}` is not configured", .0.vendor)]
    NotConfigured(AuthNeeded),
    /// More than one declared credential matches one request's audience
    /// (worlds whose guests name no credential); carries the handle names.
    #[error("credentials `{}` all match the request's audience", .0.join("`, `"))]
    Ambiguous(Vec<String>),
}

/// The declared credential a request's URL selects (see [`CallNetwork::credential_for_url`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialMatch {
    /// Declared handle name, to pass to [`CallNetwork::send`].
    pub handle: String,
    /// Vendor and scopes, for an auth-required outcome.
    pub needed: AuthNeeded,
}

/// What a user must connect for a call to proceed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct AuthNeeded {
    /// Credential-authority namespace (`github`).
    pub vendor: String,
    /// Scopes the capability needs.
    pub scopes: Vec<String>,
}

/// The network and credential services of one call.
///
/// Implementations must uphold the contract's rules: deny by default, never
/// hand a secret to the guest, inject only for a matching audience, and
/// redact staged secrets from everything returned.
pub trait CallNetwork: Send + Sync {
    /// Check that the capability declares credential `handle` and that a
    /// secret is staged for it. The runtime keeps the handle name as the
    /// guest's opaque resource.
    fn acquire(&self, handle: &str) -> Result<(), CredentialError>;

    /// Send `request`, injecting credential `credential` (a handle name
    /// previously acquired) when given. `remaining` is what is left of the
    /// call's deadline; the implementation must not take longer.
    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>>;

    /// The declared credential whose audience equals the scheme (`https`
    /// only), host and port of `url`, for worlds whose guests name no
    /// credential (`near:agent`). `Ok(None)` when none matches (or the URL
    /// does not parse: sending it fails later); `NotConfigured` when the
    /// match has no staged value; `Ambiguous` when several match.
    ///
    /// The default matches nothing.
    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        let _ = url;
        Ok(None)
    }

    /// Replace every staged secret in `text` by `[REDACTED]`. The runtime
    /// calls it on guest logs and failure messages.
    fn redact(&self, text: &str) -> String;

    /// Whether `bytes` (an image, audio or blob a tool returns) carry a
    /// staged secret, raw or in any form [`Self::redact`] finds. Such a
    /// block is withheld whole: cutting bytes out of an image corrupts it.
    ///
    /// The default looks through [`Self::redact`] at the bytes read as
    /// UTF-8 (lossily: a secret is text, and its bytes survive); an
    /// implementation with a byte search overrides it.
    fn holds_secret(&self, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        self.redact(&text) != text
    }
}

/// The default network: every credential is undeclared and every request is
/// denied. Used whenever no egress is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl CallNetwork for DenyAll {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        Err(CredentialError::NotDeclared(handle.to_owned()))
    }

    fn send<'a>(
        &'a self,
        _request: GuestRequest,
        _credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        Box::pin(async {
            Err(HttpError::Denied(
                "no network egress is configured for this host".into(),
            ))
        })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}
