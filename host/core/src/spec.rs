//! Resolved credential, network and auth declarations of a capability.
//!
//! These are the manifest's `[[tools.credentials]]`, `network_targets` and
//! `[auth.<vendor>]` tables after validation. The manifest layer produces
//! them; egress consumes them to build a capability's network policy and to
//! run auth recipes. Field names follow the v3 manifest.

use std::collections::BTreeMap;

/// The exact origin a credential may be sent to (`https`, literal host, port).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Audience {
    /// Always `https` in a valid v3 manifest.
    pub scheme: String,
    /// Literal host name, lowercase, no wildcard.
    pub host: String,
    /// Port; `None` means the scheme's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

impl Audience {
    /// The port requests must use: the declared one or the scheme default.
    pub fn effective_port(&self) -> u16 {
        self.port.unwrap_or_else(|| default_port(&self.scheme))
    }
}

/// Where the host puts a credential's value in an outgoing request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Injection {
    /// A header, `prefix` + value (`authorization: Bearer <token>`).
    Header {
        /// Header name, lowercase.
        name: String,
        /// Text before the value, e.g. `"Bearer "`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
    },
    /// A query parameter `name=<value>`.
    Query {
        /// Parameter name.
        name: String,
    },
    /// A `{placeholder}` in the URL path replaced by the value.
    PathPlaceholder {
        /// The placeholder text without braces.
        placeholder: String,
    },
}

/// One `[[tools.credentials]]` (or `[[mcp.credentials]]`) entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CredentialSpec {
    /// Extension-local handle name the guest asks for.
    pub handle: String,
    /// Credential-authority namespace (`github`, `google`).
    pub vendor: String,
    /// Scopes this capability needs.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Where the value may be sent. For `[[mcp.credentials]]` it is derived from the server URL.
    pub audience: Audience,
    /// How the value is injected.
    pub injection: Injection,
    /// Whether the call cannot proceed without it (default true).
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

impl CredentialSpec {
    /// A required credential sent as `authorization: Bearer <value>` to
    /// `https://<host>` (the shape most provider APIs use).
    pub fn bearer(handle: &str, vendor: &str, scopes: &[&str], host: &str) -> Self {
        CredentialSpec {
            handle: handle.to_owned(),
            vendor: vendor.to_owned(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            audience: Audience {
                scheme: "https".into(),
                host: host.to_owned(),
                port: None,
            },
            injection: Injection::Header {
                name: "authorization".into(),
                prefix: Some("Bearer ".into()),
            },
            required: true,
        }
    }
}

/// A `network_targets` entry: egress that carries no credential.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkTarget {
    /// `https` (or `http` when the host explicitly allows plain HTTP for it).
    pub scheme: String,
    /// A literal host, or `*.example.com` to match exactly one or more labels below it.
    pub host_pattern: String,
    /// Port; `None` means the scheme's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

impl NetworkTarget {
    /// The port requests must use.
    pub fn effective_port(&self) -> u16 {
        self.port.unwrap_or_else(|| default_port(&self.scheme))
    }

    /// Whether `host` (lowercase, no trailing dot) matches the pattern.
    pub fn matches_host(&self, host: &str) -> bool {
        match self.host_pattern.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|label| label.len() > 1 && label.ends_with('.')),
            None => self.host_pattern == host,
        }
    }
}

/// The default port of `scheme` (443 for https, 80 for http).
pub fn default_port(scheme: &str) -> u16 {
    if scheme == "http" { 80 } else { 443 }
}

/// An `[auth.<vendor>]` recipe. The host runs it generically; there is no
/// per-vendor auth code.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum AuthRecipe {
    /// OAuth 2.0 authorization code flow (with PKCE).
    Oauth2Code(OAuth2Recipe),
    /// A static API key the user pastes.
    ApiKey(ApiKeyRecipe),
}

impl AuthRecipe {
    /// The name shown to a person.
    pub fn display_name(&self) -> Option<&str> {
        match self {
            AuthRecipe::Oauth2Code(r) => r.display_name.as_deref(),
            AuthRecipe::ApiKey(r) => r.display_name.as_deref(),
        }
    }
}

/// `method = "oauth2_code"`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Recipe {
    /// Name shown to a person ("GitHub account").
    #[serde(default)]
    pub display_name: Option<String>,
    /// HTTPS authorization endpoint.
    pub authorization_endpoint: String,
    /// HTTPS token endpoint.
    pub token_endpoint: String,
    /// Scopes requested at authorization.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Separator used to join scopes (default a space).
    #[serde(default)]
    pub scope_separator: Option<String>,
    /// Whether PKCE (S256) is used (default true).
    #[serde(default)]
    pub pkce: Option<bool>,
    /// Extra, non-reserved authorization parameters.
    #[serde(default)]
    pub authorize_params: BTreeMap<String, String>,
    /// JSON pointers into the token response.
    pub token_response: TokenResponsePointers,
    /// Refresh settings; refresh is used when the token response has a refresh token.
    #[serde(default)]
    pub refresh: Option<RefreshSettings>,
    /// Named identity-claim pointers (free-form keys by design).
    #[serde(default)]
    pub identity: BTreeMap<String, String>,
}

/// `[auth.<vendor>.token_response]`: where to find each field.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenResponsePointers {
    /// Pointer to the access token (required), e.g. `/access_token`.
    pub access_token: String,
    /// Pointer to the refresh token.
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Pointer to the lifetime in seconds.
    #[serde(default)]
    pub expires_in: Option<String>,
    /// Pointer to the granted scopes.
    #[serde(default)]
    pub scope: Option<String>,
    /// Pointer to the token type.
    #[serde(default)]
    pub token_type: Option<String>,
}

/// `[auth.<vendor>.refresh]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshSettings {
    /// Refresh this many seconds before expiry (default 60).
    #[serde(default)]
    pub skew_seconds: Option<u64>,
    /// Token endpoint for refresh, when it differs.
    #[serde(default)]
    pub endpoint: Option<String>,
}

/// `method = "api_key"`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyRecipe {
    /// Name shown to a person.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Label of the input field ("Personal access token").
    #[serde(default)]
    pub label: Option<String>,
    /// Where a person gets a key.
    #[serde(default)]
    pub help_url: Option<String>,
    /// A request that proves the key works, sent through host egress.
    #[serde(default)]
    pub validation: Option<ValidationProbe>,
}

/// `[auth.<vendor>.validation]`: a probe request for an API key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationProbe {
    /// HTTP method (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// HTTPS URL of the probe.
    pub url: String,
    /// How the key is injected into the probe.
    pub injection: Injection,
    /// Statuses that mean the key is valid (default 200).
    #[serde(default)]
    pub expect_status: Vec<u16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_target_matches_subdomains_only() {
        let target = NetworkTarget {
            scheme: "https".into(),
            host_pattern: "*.example.com".into(),
            port: None,
        };
        assert!(target.matches_host("api.example.com"));
        assert!(target.matches_host("a.b.example.com"));
        assert!(!target.matches_host("example.com"));
        assert!(!target.matches_host("evilexample.com"));
        assert_eq!(target.effective_port(), 443);
    }
}
