//! Finding and registering with an authorization server, generically:
//! protected-resource metadata (RFC 9728), authorization-server metadata
//! (RFC 8414, with the OpenID Connect discovery fallback) and dynamic client
//! registration of a public loopback client (RFC 7591).
//!
//! Every document is fetched through egress (HTTPS, no private address
//! unless the host allows that origin, no redirects) and checked: the issuer
//! must be the one asked for, the resource the one expected, and the
//! registration endpoint on the issuer's origin.

use http::{HeaderName, HeaderValue, Method};
use secrecy::{ExposeSecret, SecretString};
use warden_core::spec::NetworkTarget;

use super::oauth2::{ClientAuth, OAuth2Client};
use super::{AuthError, https_audience};
use crate::policy::ParsedRequest;
use crate::secrets::{AccountKey, SecretStore};
use crate::session::Egress;
use crate::staging::Staged;

/// Handle the registration of a vendor's client is stored under.
pub const REGISTRATION_HANDLE: &str = "#registration";

/// What an authorization server says about itself (RFC 8414).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier (checked against the one asked for).
    pub issuer: String,
    /// Authorization endpoint.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Token endpoint.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration endpoint.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server supports.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// Token endpoint client authentication methods.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// PKCE methods.
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    /// Where the server publishes its signing keys (a JWKS document).
    #[serde(default)]
    pub jwks_uri: Option<String>,
}

/// What a protected resource says about itself (RFC 9728).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ResourceMetadata {
    /// The resource identifier (checked against the one expected).
    pub resource: String,
    /// Issuers of the servers that grant tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource uses.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// A client registered dynamically, kept per vendor.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Registration {
    /// The issuer it was registered with.
    pub issuer: String,
    /// Client id the server assigned.
    pub client_id: String,
    /// Client secret, if the server issued one anyway.
    #[serde(default)]
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// The client to run a flow with, redirecting to `redirect_uri`.
    pub fn client(&self, redirect_uri: &str) -> OAuth2Client {
        let client_secret = self.client_secret.clone().map(SecretString::from);
        OAuth2Client {
            auth: if client_secret.is_some() {
                ClientAuth::PostBody
            } else {
                ClientAuth::None
            },
            client_id: self.client_id.clone(),
            client_secret,
            redirect_uri: redirect_uri.to_owned(),
        }
    }
}

/// The issuer identifier of an authorization endpoint: its origin.
pub fn issuer_of(authorization_endpoint: &str) -> Result<String, AuthError> {
    let (url, _) = https_audience(authorization_endpoint)?;
    Ok(url.origin().ascii_serialization())
}

/// The authorization-server metadata of `issuer`: RFC 8414's well-known
/// location first, then OpenID Connect discovery (path-inserted, then
/// appended). The document's issuer must be exactly `issuer`.
pub async fn server_metadata(egress: &Egress, issuer: &str) -> Result<ServerMetadata, AuthError> {
    let (base, _) = https_audience(issuer)?;
    let origin = base.origin().ascii_serialization();
    let path = base.path().trim_end_matches('/');
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ];
    for url in candidates.iter() {
        let Some(body) = get_json(egress, url).await? else {
            continue;
        };
        let metadata: ServerMetadata = serde_json::from_slice(&body).map_err(|_| {
            AuthError::Metadata(format!("{url} is not authorization-server metadata"))
        })?;
        if metadata.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(AuthError::Metadata(format!(
                "{url} names issuer `{}`, not `{issuer}`",
                bounded(&metadata.issuer)
            )));
        }
        return Ok(metadata);
    }
    Err(AuthError::Metadata(format!(
        "{issuer} publishes no metadata"
    )))
}

/// The signing keys (a JWKS document) of `issuer`: its metadata's
/// `jwks_uri` (which must be https), fetched through egress. A resource
/// server verifies the issuer's access tokens with them.
pub async fn issuer_jwks(egress: &Egress, issuer: &str) -> Result<String, AuthError> {
    let metadata = server_metadata(egress, issuer).await?;
    let uri = metadata
        .jwks_uri
        .ok_or_else(|| AuthError::Metadata(format!("{issuer}'s metadata names no jwks_uri")))?;
    let Some(body) = get_json(egress, &uri).await? else {
        return Err(AuthError::Metadata(format!(
            "{issuer}'s jwks_uri {} answered nothing",
            bounded(&uri)
        )));
    };
    String::from_utf8(body)
        .map_err(|_| AuthError::Metadata(format!("{issuer}'s JWKS is not UTF-8 text")))
}

/// The protected-resource metadata at `url`, whose `resource` must be
/// `expected` (RFC 9728 §3.3).
pub async fn resource_metadata(
    egress: &Egress,
    url: &str,
    expected: &str,
) -> Result<ResourceMetadata, AuthError> {
    let body = get_json(egress, url)
        .await?
        .ok_or_else(|| AuthError::Metadata(format!("{url} was not found")))?;
    let metadata: ResourceMetadata = serde_json::from_slice(&body)
        .map_err(|_| AuthError::Metadata(format!("{url} is not resource metadata")))?;
    if metadata.resource.trim_end_matches('/') != expected.trim_end_matches('/') {
        return Err(AuthError::Metadata(format!(
            "{url} describes resource `{}`, not `{expected}`",
            bounded(&metadata.resource)
        )));
    }
    Ok(metadata)
}

/// Register a public client (auth method `none`, grants
/// `authorization_code` and `refresh_token`, the loopback redirect).
pub async fn register(
    egress: &Egress,
    metadata: &ServerMetadata,
    redirect_uri: &str,
) -> Result<Registration, AuthError> {
    let endpoint = metadata.registration_endpoint.as_deref().ok_or_else(|| {
        AuthError::Registration(format!(
            "{} offers no registration endpoint",
            metadata.issuer
        ))
    })?;
    let (url, _) = https_audience(endpoint)?;
    let (issuer, _) = https_audience(&metadata.issuer)?;
    if url.origin() != issuer.origin() {
        return Err(AuthError::Registration(format!(
            "the registration endpoint {} is on another origin than the issuer {}",
            url.origin().ascii_serialization(),
            issuer.origin().ascii_serialization()
        )));
    }
    let request = serde_json::json!({
        "client_name": "Warden",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let (status, body) = send(egress, Method::POST, url, Some(request.to_string())).await?;
    if !(200..300).contains(&status) {
        return Err(AuthError::Rejected {
            status,
            error: super::oauth_error_code(&body),
        });
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
    }
    let answer: Answer = serde_json::from_slice(&body)
        .map_err(|_| AuthError::Registration("the answer has no client_id".into()))?;
    if answer.client_id.is_empty() {
        return Err(AuthError::Registration(
            "the answer has an empty client_id".into(),
        ));
    }
    Ok(Registration {
        issuer: metadata.issuer.clone(),
        client_id: answer.client_id,
        client_secret: answer.client_secret,
    })
}

fn registration_key(vendor: &str) -> AccountKey {
    AccountKey::new(vendor, REGISTRATION_HANDLE, Vec::<String>::new())
}

/// The registration kept for `vendor` with `issuer`, if any.
pub async fn load_registration(
    store: &dyn SecretStore,
    vendor: &str,
    issuer: &str,
) -> Result<Option<Registration>, AuthError> {
    let Some(text) = store.get(&registration_key(vendor)).await? else {
        return Ok(None);
    };
    let registration: Option<Registration> = serde_json::from_str(text.expose_secret()).ok();
    Ok(registration.filter(|r| r.issuer.trim_end_matches('/') == issuer.trim_end_matches('/')))
}

/// Keep `registration` for `vendor` (replacing any earlier one).
pub async fn save_registration(
    store: &dyn SecretStore,
    vendor: &str,
    registration: &Registration,
) -> Result<(), AuthError> {
    let json = zeroize::Zeroizing::new(
        serde_json::to_string(registration)
            .map_err(|_| AuthError::Registration("serialize".into()))?,
    );
    store
        .put(&registration_key(vendor), SecretString::from(json.as_str()))
        .await?;
    Ok(())
}

/// Forget the registration of `vendor` (the server refused it).
pub async fn forget_registration(store: &dyn SecretStore, vendor: &str) -> Result<(), AuthError> {
    store.delete(&registration_key(vendor)).await?;
    Ok(())
}

/// GET a JSON document; `None` on 404 (try the next location).
async fn get_json(egress: &Egress, url: &str) -> Result<Option<Vec<u8>>, AuthError> {
    let (parsed, _) = https_audience(url)?;
    let (status, body) = send(egress, Method::GET, parsed, None).await?;
    match status {
        200..=299 => Ok(Some(body)),
        404 | 405 => Ok(None),
        status => Err(AuthError::Rejected {
            status,
            error: None,
        }),
    }
}

async fn send(
    egress: &Egress,
    method: Method,
    url: url::Url,
    json: Option<String>,
) -> Result<(u16, Vec<u8>), AuthError> {
    let (_, audience) = https_audience(url.as_str())?;
    let target = NetworkTarget {
        scheme: "https".into(),
        host_pattern: audience.host,
        port: audience.port,
    };
    let session = egress.session_with(
        "auth.discovery",
        "host",
        &[],
        &[target],
        egress.config().max_response_body as u64 * 2,
        Staged::default(),
    );
    let mut headers = vec![(
        HeaderName::from_static("accept"),
        HeaderValue::from_static("application/json"),
    )];
    if json.is_some() {
        headers.push((
            HeaderName::from_static("content-type"),
            HeaderValue::from_static("application/json"),
        ));
    }
    let request = ParsedRequest {
        method,
        url,
        headers,
        body: json.map(String::into_bytes),
    };
    let response = session.host_request(request).await?;
    Ok((response.status.as_u16(), response.body.to_vec()))
}

/// A provider-chosen text shown in an error, bounded.
fn bounded(text: &str) -> String {
    crate::policy::bounded(text, 120)
}
