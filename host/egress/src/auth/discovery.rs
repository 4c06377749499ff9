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
use super::{AuthError, endpoint_audience, https_audience};
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
    /// Whether the server accepts a client ID metadata document's URL as
    /// `client_id` (CIMD, draft-ietf-oauth-client-id-metadata-document).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
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
pub struct ClientRegistration {
    /// The issuer it was registered with.
    pub issuer: String,
    /// Client id the server assigned.
    pub client_id: String,
    /// Client secret, if the server issued one anyway.
    #[serde(default)]
    pub client_secret: Option<String>,
    /// How the server says the client authenticates at the token endpoint
    /// (`token_endpoint_auth_method` of the registration answer), when it
    /// said; otherwise the secret goes in the body.
    #[serde(default)]
    pub token_endpoint_auth_method: Option<String>,
    /// The token endpoint it was registered for (the recipe's): it is
    /// reused only with that one, so a package naming the vendor and the
    /// issuer with a token endpoint of its own never receives it (or its
    /// secret). One kept without (from an earlier version) is not reused.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// The redirect URI it was registered with. A loopback one serves any
    /// loopback port (RFC 8252); a server's own callback only itself. One
    /// kept without (from an earlier version) was made for a loopback.
    #[serde(default)]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl ClientRegistration {
    /// Whether the authorization server knows `redirect_uri` for this
    /// client: a connection through the server after one on a loopback
    /// listener (or the other way round) registers anew.
    pub fn serves(&self, redirect_uri: &str) -> bool {
        let loopback = |uri: &str| {
            ["http://127.0.0.1:", "http://[::1]:", "http://localhost:"]
                .iter()
                .any(|prefix| uri.starts_with(prefix))
        };
        match &self.redirect_uri {
            None => loopback(redirect_uri),
            Some(registered) => {
                registered == redirect_uri || (loopback(registered) && loopback(redirect_uri))
            }
        }
    }

    /// Whether it was registered with `issuer` for `token_endpoint`.
    pub fn is_for(&self, issuer: &str, token_endpoint: &str) -> bool {
        self.issuer.trim_end_matches('/') == issuer.trim_end_matches('/')
            && self.token_endpoint.as_deref() == Some(token_endpoint)
    }

    /// The client to run a flow with, redirecting to `redirect_uri`.
    pub fn client(&self, redirect_uri: &str) -> OAuth2Client {
        let client_secret = self.client_secret.clone().map(SecretString::from);
        let auth = match (&client_secret, self.token_endpoint_auth_method.as_deref()) {
            (None, _) | (_, Some("none")) => ClientAuth::None,
            (Some(_), Some("client_secret_basic")) => ClientAuth::Basic,
            (Some(_), _) => ClientAuth::PostBody,
        };
        OAuth2Client {
            auth,
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
    let (base, _) = endpoint_audience(issuer, Some(egress.config()))?;
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

/// The RFC 8414 metadata a server of MCP's 2025-03-26 revision publishes
/// at its `origin`'s well-known location, `None` when there is none. That
/// revision names no issuer to expect, so the document's may carry a path
/// (`{origin}/oauth`); it must still be on `origin`.
pub async fn origin_server_metadata(
    egress: &Egress,
    origin: &str,
) -> Result<Option<ServerMetadata>, AuthError> {
    let url = format!("{origin}/.well-known/oauth-authorization-server");
    let Some(body) = get_json(egress, &url).await? else {
        return Ok(None);
    };
    let metadata: ServerMetadata = serde_json::from_slice(&body)
        .map_err(|_| AuthError::Metadata(format!("{url} is not authorization-server metadata")))?;
    let same_origin = url::Url::parse(&metadata.issuer)
        .is_ok_and(|issuer| issuer.origin().ascii_serialization() == origin);
    if !same_origin {
        return Err(AuthError::Metadata(format!(
            "{url} names issuer `{}`, not one on {origin}",
            bounded(&metadata.issuer)
        )));
    }
    Ok(Some(metadata))
}

/// The signing keys (a JWKS document) of `issuer`: its metadata's
/// `jwks_uri` (which must be https), fetched through egress. A resource
/// server verifies the issuer's access tokens with them.
///
/// The metadata must name `issuer` exactly, trailing `/` included: it is
/// what the issuer's tokens carry as `iss`, which a resource server compares
/// byte for byte. (A client looking an issuer up, [`server_metadata`],
/// allows the slash.)
pub async fn issuer_jwks(egress: &Egress, issuer: &str) -> Result<String, AuthError> {
    let metadata = server_metadata(egress, issuer).await?;
    if metadata.issuer != issuer {
        return Err(AuthError::Metadata(format!(
            "{issuer}'s metadata names the issuer `{}`, which its tokens carry as `iss`: \
             give exactly that",
            bounded(&metadata.issuer)
        )));
    }
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

/// The protected-resource metadata at `url`, which must describe the
/// resource `expected` (the MCP server's URL) or one containing it: the
/// same origin and a path that is a prefix of its path on a segment
/// boundary (RFC 9728 §3.3; metadata at the origin's well-known location
/// names the origin). The caller sends the metadata's `resource`.
pub async fn resource_metadata(
    egress: &Egress,
    url: &str,
    expected: &str,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let Some(body) = get_json(egress, url).await? else {
        return Ok(None);
    };
    let metadata: ResourceMetadata = serde_json::from_slice(&body)
        .map_err(|_| AuthError::Metadata(format!("{url} is not resource metadata")))?;
    if !resource_covers(&metadata.resource, expected) {
        return Err(AuthError::Metadata(format!(
            "{url} describes resource `{}`, not `{expected}`",
            bounded(&metadata.resource)
        )));
    }
    Ok(Some(metadata))
}

/// Whether resource identifier `resource` names `server` or a resource
/// containing it (same origin, path prefix on a `/` boundary, no query or
/// fragment).
pub fn resource_covers(resource: &str, server: &str) -> bool {
    let (Ok(resource), Ok(server)) = (url::Url::parse(resource), url::Url::parse(server)) else {
        return false;
    };
    if resource.origin() != server.origin()
        || resource.query().is_some()
        || resource.fragment().is_some()
    {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Register a public client (auth method `none`, grants
/// `authorization_code` and `refresh_token`, the loopback redirect).
pub async fn register(
    egress: &Egress,
    metadata: &ServerMetadata,
    redirect_uri: &str,
) -> Result<ClientRegistration, AuthError> {
    let endpoint = metadata.registration_endpoint.as_deref().ok_or_else(|| {
        AuthError::Registration(format!(
            "{} offers no registration endpoint",
            metadata.issuer
        ))
    })?;
    let (url, _) = endpoint_audience(endpoint, Some(egress.config()))?;
    let (issuer, _) = endpoint_audience(&metadata.issuer, Some(egress.config()))?;
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
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    let answer: Answer = serde_json::from_slice(&body)
        .map_err(|_| AuthError::Registration("the answer has no client_id".into()))?;
    if answer.client_id.is_empty() {
        return Err(AuthError::Registration(
            "the answer has an empty client_id".into(),
        ));
    }
    Ok(ClientRegistration {
        issuer: metadata.issuer.clone(),
        client_id: answer.client_id,
        client_secret: answer.client_secret,
        token_endpoint_auth_method: answer.token_endpoint_auth_method,
        token_endpoint: None,
        redirect_uri: Some(redirect_uri.to_owned()),
    })
}

fn registration_key(vendor: &str) -> AccountKey {
    AccountKey::new(vendor, REGISTRATION_HANDLE, Vec::<String>::new())
}

/// The registration kept for `vendor` with `issuer`, for `token_endpoint`,
/// if any (see [`ClientRegistration::token_endpoint`]).
pub async fn load_registration(
    store: &dyn SecretStore,
    vendor: &str,
    issuer: &str,
    token_endpoint: &str,
) -> Result<Option<ClientRegistration>, AuthError> {
    let Some(text) = store.get(&registration_key(vendor)).await? else {
        return Ok(None);
    };
    let registration: Option<ClientRegistration> = serde_json::from_str(text.expose_secret()).ok();
    Ok(registration.filter(|r| r.is_for(issuer, token_endpoint)))
}

/// Keep `registration` for `vendor` (replacing any earlier one).
pub async fn save_registration(
    store: &dyn SecretStore,
    vendor: &str,
    registration: &ClientRegistration,
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
    let (parsed, _) = endpoint_audience(url, Some(egress.config()))?;
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
    let (_, audience) = endpoint_audience(url.as_str(), Some(egress.config()))?;
    let target = NetworkTarget {
        scheme: audience.scheme.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_covers_itself_and_paths_below_it_on_its_origin() {
        let server = "https://mcp.example.com/v1/mcp";
        for resource in [
            "https://mcp.example.com/v1/mcp",
            "https://mcp.example.com/v1/mcp/",
            "https://mcp.example.com/v1",
            "https://mcp.example.com",
            "https://MCP.example.com:443/",
        ] {
            assert!(resource_covers(resource, server), "{resource}");
        }
        for resource in [
            "https://mcp.example.com/v1/mc",
            "https://mcp.example.com/v1/mcp/more",
            "https://mcp.example.com/v2",
            "https://other.example.com/v1/mcp",
            "https://mcp.example.com:8443/v1/mcp",
            "http://mcp.example.com/v1/mcp",
            "https://mcp.example.com/v1/mcp?tenant=a",
            "https://mcp.example.com/v1/mcp#x",
            "not a url",
        ] {
            assert!(!resource_covers(resource, server), "{resource}");
        }
    }

    #[test]
    fn a_registration_authenticates_as_the_server_said() {
        let registration = |secret: Option<&str>, method: Option<&str>| ClientRegistration {
            issuer: "https://as.example.com".into(),
            client_id: "c".into(),
            client_secret: secret.map(str::to_owned),
            token_endpoint_auth_method: method.map(str::to_owned),
            token_endpoint: None,
            redirect_uri: None,
        };
        let auth = |r: ClientRegistration| r.client("http://127.0.0.1:1/callback").auth;
        assert_eq!(
            auth(registration(Some("s"), Some("client_secret_basic"))),
            ClientAuth::Basic
        );
        assert_eq!(
            auth(registration(Some("s"), Some("client_secret_post"))),
            ClientAuth::PostBody
        );
        assert_eq!(auth(registration(Some("s"), None)), ClientAuth::PostBody);
        assert_eq!(
            auth(registration(Some("s"), Some("none"))),
            ClientAuth::None
        );
        assert_eq!(
            auth(registration(None, Some("client_secret_basic"))),
            ClientAuth::None
        );
        // A registration kept before the method was recorded still reads.
        let old: ClientRegistration =
            serde_json::from_str(r#"{"issuer":"https://as.example.com","client_id":"c"}"#).unwrap();
        assert_eq!(old.token_endpoint_auth_method, None);
    }

    #[test]
    fn a_registration_is_reused_only_for_its_issuer_and_token_endpoint() {
        let kept = ClientRegistration {
            issuer: "https://as.example.com/".into(),
            client_id: "c".into(),
            client_secret: Some("s".into()),
            token_endpoint_auth_method: None,
            token_endpoint: Some("https://as.example.com/token".into()),
            redirect_uri: None,
        };
        assert!(kept.is_for("https://as.example.com", "https://as.example.com/token"));
        assert!(!kept.is_for("https://as.example.com", "https://evil.example/token"));
        assert!(!kept.is_for("https://other.example", "https://as.example.com/token"));
        // Kept by an earlier version, with no token endpoint: registered anew.
        let old: ClientRegistration =
            serde_json::from_str(r#"{"issuer":"https://as.example.com","client_id":"c"}"#).unwrap();
        assert!(!old.is_for("https://as.example.com", "https://as.example.com/token"));
    }

    #[test]
    fn a_registration_serves_its_own_redirect_and_loopback_any_loopback() {
        let kept = |redirect: Option<&str>| ClientRegistration {
            issuer: "https://as.example.com".into(),
            client_id: "c".into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            token_endpoint: None,
            redirect_uri: redirect.map(str::to_owned),
        };
        let server = "https://warden.example.com/oauth/callback";
        assert!(kept(None).serves("http://127.0.0.1:4711/callback"));
        assert!(!kept(None).serves(server));
        let loopback = kept(Some("http://127.0.0.1:1234/callback"));
        assert!(loopback.serves("http://127.0.0.1:4711/callback"));
        assert!(!loopback.serves(server));
        assert!(kept(Some(server)).serves(server));
        assert!(!kept(Some(server)).serves("http://127.0.0.1:4711/callback"));
    }
}
