//! The authorization of a protected resource (an MCP server that requires
//! OAuth), composed from the generic pieces: the resource's 401 challenge
//! (RFC 6750/9728) → its protected-resource metadata → the authorization
//! server's metadata (RFC 8414) → a recipe the [`super::oauth2`] engine runs
//! with the RFC 8707 `resource`. The hosted-MCP lane calls
//! [`discover`] and then [`ResourceAuthorization::recipe`].

use warden_core::spec::{OAuth2Recipe, TokenResponsePointers};

use super::AuthError;
use super::challenge::BearerChallenge;
use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::endpoint_audience;
use crate::session::Egress;

/// What is needed to authorize against a protected resource.
#[derive(Debug, Clone)]
pub struct ResourceAuthorization {
    /// The resource identifier the metadata names (sent as `resource`):
    /// the server's URL, or a resource containing it.
    pub resource: String,
    /// The resource's metadata.
    pub resource_metadata: ResourceMetadata,
    /// The metadata of its (first) authorization server.
    pub server: ServerMetadata,
    /// Scopes to request: the challenge's, else the resource's
    /// `scopes_supported`, else none (the parameter is then omitted).
    pub scopes: Vec<String>,
    /// The server published no metadata at all: its endpoints are MCP
    /// 2025-03-26's defaults on its origin, assumed. A caller choosing how
    /// to authorize (OAuth or a bearer token) should not take that for an
    /// answer; one told to use OAuth may.
    pub assumed_endpoints: bool,
}

/// Discover how to authorize against `resource` (an HTTPS URL), from its
/// 401 `challenge` when there is one. Every document comes through egress
/// and is checked: the resource metadata must name `resource`, the server
/// metadata its issuer. A server that publishes no resource metadata (and
/// whose challenge names none) is one of MCP's 2025-03-26 revision, whose
/// authorization server is its origin (see `legacy`).
pub async fn discover(
    egress: &Egress,
    resource: &str,
    challenge: Option<&BearerChallenge>,
) -> Result<ResourceAuthorization, AuthError> {
    let (url, _) = endpoint_audience(resource, Some(egress.config()))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut candidates = Vec::new();
    if let Some(at) = challenge.and_then(|c| c.resource_metadata.clone()) {
        candidates.push(at);
    } else {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
        if !path.is_empty() {
            candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
        }
    }
    let named = challenge.is_some_and(|c| c.resource_metadata.is_some());
    let mut last = None;
    let mut found = None;
    for at in &candidates {
        match discovery::resource_metadata(egress, at, resource).await {
            Ok(Some(metadata)) => {
                found = Some(metadata);
                break;
            }
            Ok(None) if named => {
                last = Some(AuthError::Metadata(format!(
                    "{at}, named by the server's challenge, was not found"
                )));
            }
            Ok(None) => {}
            Err(error) => last = Some(error),
        }
    }
    let resource_metadata = match (found, last) {
        (Some(found), _) => found,
        (None, Some(error)) => return Err(error),
        (None, None) => return legacy(egress, resource, &origin, challenge).await,
    };
    let issuer = resource_metadata
        .authorization_servers
        .first()
        .ok_or_else(|| AuthError::Metadata(format!("{resource} names no authorization server")))?
        .clone();
    let server = discovery::server_metadata(egress, &issuer).await?;
    let scopes = match challenge.map(|c| c.scopes.clone()) {
        Some(scopes) if !scopes.is_empty() => scopes,
        _ => resource_metadata.scopes_supported.clone(),
    };
    Ok(ResourceAuthorization {
        // What the metadata names (the server's URL or a resource
        // containing it, checked above): the RFC 8707 `resource` to send.
        resource: resource_metadata.resource.clone(),
        resource_metadata,
        server,
        scopes,
        assumed_endpoints: false,
    })
}

/// A server of the 2025-03-26 revision of MCP publishes no resource
/// metadata: its authorization server is its own origin (the path
/// dropped), described by RFC 8414 metadata there or, when there is none,
/// at that revision's default endpoints (`/authorize`, `/token`,
/// `/register`). Scopes come from the challenge only.
async fn legacy(
    egress: &Egress,
    resource: &str,
    origin: &str,
    challenge: Option<&BearerChallenge>,
) -> Result<ResourceAuthorization, AuthError> {
    let published = discovery::origin_server_metadata(egress, origin).await?;
    let assumed_endpoints = published.is_none();
    let server = match published {
        Some(server) => server,
        None => ServerMetadata {
            issuer: origin.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: Some(format!("{origin}/token")),
            registration_endpoint: Some(format!("{origin}/register")),
            scopes_supported: Vec::new(),
            token_endpoint_auth_methods_supported: Vec::new(),
            code_challenge_methods_supported: Vec::new(),
            jwks_uri: None,
            client_id_metadata_document_supported: false,
        },
    };
    Ok(ResourceAuthorization {
        resource: resource.to_owned(),
        resource_metadata: ResourceMetadata {
            resource: resource.to_owned(),
            authorization_servers: vec![origin.to_owned()],
            scopes_supported: Vec::new(),
        },
        server,
        scopes: challenge.map(|c| c.scopes.clone()).unwrap_or_default(),
        assumed_endpoints,
    })
}

impl ResourceAuthorization {
    /// The recipe the OAuth engine runs for this server: its endpoints,
    /// the standard token response, PKCE S256, and client authentication
    /// `basic` only when the server supports nothing else a secret fits.
    pub fn recipe(&self) -> Result<OAuth2Recipe, AuthError> {
        let endpoint = |e: &Option<String>, name: &str| {
            e.clone()
                .ok_or_else(|| AuthError::Metadata(format!("{} has no {name}", self.server.issuer)))
        };
        let methods = &self.server.token_endpoint_auth_methods_supported;
        let post = methods.is_empty() || methods.iter().any(|m| m == "client_secret_post");
        Ok(OAuth2Recipe {
            authorization_endpoint: endpoint(
                &self.server.authorization_endpoint,
                "authorization_endpoint",
            )?,
            token_endpoint: endpoint(&self.server.token_endpoint, "token_endpoint")?,
            scopes: self.scopes.clone(),
            exchange_auth: Some(if post { "post_body" } else { "basic" }.into()),
            token_response: TokenResponsePointers {
                access_token: "/access_token".into(),
                refresh_token: Some("/refresh_token".into()),
                expires_in: Some("/expires_in".into()),
                scope: Some("/scope".into()),
                scope_fallback_to_requested: true,
                token_type: Some("/token_type".into()),
            },
            ..OAuth2Recipe::default()
        })
    }
}
