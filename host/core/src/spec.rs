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

/// Where the host puts a credential's value in an outgoing request (the
/// format's injection target, tagged by `type`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Injection {
    /// A header, `prefix` + value (`authorization: Bearer <token>`).
    Header {
        /// Header name (an RFC 7230 token, any case).
        name: String,
        /// Text before the value, e.g. `"Bearer "`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
    },
    /// `type = "query_param"`: a query parameter `name=<value>`.
    #[serde(rename = "query_param", alias = "query")]
    Query {
        /// Parameter name.
        name: String,
    },
    /// A `{placeholder}` in the URL path replaced by the value.
    PathPlaceholder {
        /// The placeholder text without braces.
        placeholder: String,
    },
    /// `Authorization: Basic base64(username:secret)`.
    Basic {
        /// The user name before the `:`.
        username: String,
    },
    /// The secret inserted as a JSON string at `pointer` in the request body.
    BodyJsonPointer {
        /// Where in the JSON body (starts with `/`).
        pointer: String,
        /// Bound on the body after injection, in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        post_injection_body_limit_bytes: Option<u64>,
    },
    /// A Web Push VAPID `Authorization` header computed from the key.
    VapidAuthorization,
}

impl Injection {
    /// The manifest word of the injection type.
    pub const fn type_name(&self) -> &'static str {
        match self {
            Injection::Header { .. } => "header",
            Injection::Query { .. } => "query_param",
            Injection::PathPlaceholder { .. } => "path_placeholder",
            Injection::Basic { .. } => "basic",
            Injection::BodyJsonPointer { .. } => "body_json_pointer",
            Injection::VapidAuthorization => "vapid_authorization",
        }
    }

    /// Whether Warden's egress can perform this injection (`header`,
    /// `query_param`, `path_placeholder`, `basic`). The others pass the
    /// manifest check but a host refuses to install a package that needs them.
    pub const fn is_supported(&self) -> bool {
        matches!(
            self,
            Injection::Header { .. }
                | Injection::Query { .. }
                | Injection::PathPlaceholder { .. }
                | Injection::Basic { .. }
        )
    }
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

    /// Whether `host` (lowercase, no trailing dot) matches the pattern. `*`
    /// matches any host (egress still refuses private addresses and plain
    /// HTTP the host has not allowed).
    pub fn matches_host(&self, host: &str) -> bool {
        if self.host_pattern == "*" {
            return !host.is_empty();
        }
        match self.host_pattern.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|label| label.len() > 1 && label.ends_with('.')),
            None => self.host_pattern == host,
        }
    }
}

impl NetworkTarget {
    /// How the target reads to a person: `any host`, `any host under
    /// example.com`, or the host, with the scheme and a non-default port.
    pub fn describe(&self) -> String {
        let host = match self.host_pattern.as_str() {
            "*" => "any host".to_owned(),
            pattern => match pattern.strip_prefix("*.") {
                Some(suffix) => format!("any host under {suffix}"),
                None => pattern.to_owned(),
            },
        };
        match self.port {
            Some(port) if port != default_port(&self.scheme) => {
                format!("{}://{host} (port {port})", self.scheme)
            }
            _ => format!("{}://{host}", self.scheme),
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
    Oauth2Code(Box<OAuth2Recipe>),
    /// A static API key the user pastes.
    ApiKey(ApiKeyRecipe),
    /// An account linked on another device (display metadata only; the
    /// protocol comes from an extension-supplied adapter Warden does not run).
    DeviceLink(DeviceLinkRecipe),
}

impl AuthRecipe {
    /// Whether one account of the vendor can serve packages declaring
    /// `self` and `other`: the recipes are identical apart from their
    /// scope ceilings and presentation metadata (display name, setup copy
    /// and link, device-link labels) — format §7.4. Packages whose recipes
    /// differ otherwise are a `VendorRecipeConflict`. (OAuth recipes must
    /// also agree on the resource they are bound to, which is the
    /// package's, not the recipe's: the host compares it.)
    pub fn shares_account_with(&self, other: &AuthRecipe) -> bool {
        self.without_presentation() == other.without_presentation()
    }

    /// This recipe with scopes and presentation metadata cleared.
    fn without_presentation(&self) -> AuthRecipe {
        match self {
            AuthRecipe::Oauth2Code(recipe) => AuthRecipe::Oauth2Code(Box::new(OAuth2Recipe {
                display_name: None,
                scopes: Vec::new(),
                instructions: None,
                setup_url: None,
                ..(**recipe).clone()
            })),
            AuthRecipe::ApiKey(recipe) => AuthRecipe::ApiKey(ApiKeyRecipe {
                display_name: None,
                instructions: None,
                setup_url: None,
                ..recipe.clone()
            }),
            AuthRecipe::DeviceLink(_) => AuthRecipe::DeviceLink(DeviceLinkRecipe {
                display_name: String::new(),
                default_mode_label: None,
                alternate_mode_label: None,
                instructions: None,
                setup_url: None,
            }),
        }
    }

    /// `self` with `other`'s scopes added to its ceiling (the effective
    /// ceiling of a shared vendor is the union); other methods unchanged.
    pub fn with_scopes_of(mut self, other: &AuthRecipe) -> AuthRecipe {
        if let (AuthRecipe::Oauth2Code(mine), AuthRecipe::Oauth2Code(theirs)) = (&mut self, other) {
            for scope in &theirs.scopes {
                if !mine.scopes.contains(scope) {
                    mine.scopes.push(scope.clone());
                }
            }
        }
        self
    }

    /// The name shown to a person.
    pub fn display_name(&self) -> Option<&str> {
        match self {
            AuthRecipe::Oauth2Code(r) => r.display_name.as_deref(),
            AuthRecipe::ApiKey(r) => r.display_name.as_deref(),
            AuthRecipe::DeviceLink(r) => Some(&r.display_name),
        }
    }
}

/// `method = "oauth2_code"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Recipe {
    /// Name shown to a person ("GitHub account").
    #[serde(default)]
    pub display_name: Option<String>,
    /// HTTPS authorization endpoint.
    pub authorization_endpoint: String,
    /// HTTPS token endpoint.
    pub token_endpoint: String,
    /// The recipe's scope ceiling, requested at authorization.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Name of the scope parameter on the authorize request (default `scope`).
    #[serde(default)]
    pub scope_param: Option<String>,
    /// Separator used to join scopes: `" "` (`scope_join = "space"`, the
    /// default) or `","` (`scope_join = "comma"`).
    #[serde(default)]
    pub scope_separator: Option<String>,
    /// Whether PKCE S256 is used (`pkce = "s256"`, the default) or not (`"none"`).
    #[serde(default)]
    pub pkce: Option<bool>,
    /// `extra_authorize_params`: vendor parameters (never a host-owned one).
    #[serde(default)]
    pub authorize_params: BTreeMap<String, String>,
    /// Deployment client id and secret handles; absent means dynamic client registration.
    #[serde(default)]
    pub client_credentials: Option<ClientCredentials>,
    /// How the client authenticates on token requests: `post_body` (default) or `basic`.
    #[serde(default)]
    pub exchange_auth: Option<String>,
    /// JSON pointers into the token response.
    pub token_response: TokenResponsePointers,
    /// Refresh settings; refresh is used when the token response has a refresh token.
    #[serde(default)]
    pub refresh: Option<RefreshSettings>,
    /// Named identity-claim pointers, `account_id` among them.
    #[serde(default)]
    pub identity: BTreeMap<String, String>,
    /// HTTPS endpoint the identity claims are read from (GET with the token),
    /// instead of the token response.
    #[serde(default)]
    pub identity_endpoint: Option<String>,
    /// Best-effort remote revocation.
    #[serde(default)]
    pub revoke: Option<RevokeSettings>,
    /// Setup copy for the user.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Link for app registration or setup.
    #[serde(default)]
    pub setup_url: Option<String>,
}

/// `[auth.<vendor>.client_credentials]`: secret-store handles of the deployment's client.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCredentials {
    /// Handle of the client id.
    pub client_id_handle: String,
    /// Handle of the client secret (public clients have none).
    #[serde(default)]
    pub client_secret_handle: Option<String>,
}

/// `[auth.<vendor>.token_response]`: where to find each field.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Pointer to the granted scopes (`token_response.scope.path`).
    #[serde(default)]
    pub scope: Option<String>,
    /// When the granted-scope field is missing, use the requested scopes
    /// (`missing = "fallback_to_requested"`) instead of failing (`"reject"`).
    #[serde(default)]
    pub scope_fallback_to_requested: bool,
    /// Pointer to the token type (not in the v3 format; kept for embedders).
    #[serde(default)]
    pub token_type: Option<String>,
}

/// `[auth.<vendor>.refresh]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshSettings {
    /// The provider issues a new refresh token on every refresh.
    #[serde(default)]
    pub rotates_refresh_token: bool,
    /// Keep idle accounts alive by refreshing after this many seconds.
    #[serde(default)]
    pub keepalive_idle_seconds: Option<u32>,
    /// Refresh this many seconds before expiry (host setting; default 60).
    #[serde(default)]
    pub skew_seconds: Option<u64>,
    /// Token endpoint for refresh, when it differs (host setting).
    #[serde(default)]
    pub endpoint: Option<String>,
}

/// `[auth.<vendor>.revoke]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeSettings {
    /// HTTPS revocation endpoint.
    pub endpoint: String,
    /// Name of the token parameter (default `token`).
    #[serde(default)]
    pub token_param: Option<String>,
}

/// `method = "api_key"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyRecipe {
    /// Name shown to a person.
    #[serde(default)]
    pub display_name: Option<String>,
    /// The values the user enters (at least one).
    #[serde(default)]
    pub fields: Vec<ApiKeyField>,
    /// How to obtain the key.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Where a person gets a key.
    #[serde(default)]
    pub setup_url: Option<String>,
    /// A request that proves the key works, sent through host egress.
    #[serde(default)]
    pub validation: Option<ValidationProbe>,
}

/// One `[[auth.<vendor>.fields]]` entry of an API-key recipe.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyField {
    /// Secret handle the value is stored under.
    pub handle: String,
    /// Label of the input field ("Personal access token").
    pub label: String,
    /// Whether the value is secret (default true).
    #[serde(default = "yes")]
    pub secret: bool,
}

/// `[auth.<vendor>.validation]`: a read-only probe request for an API key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationProbe {
    /// HTTP method (only `GET`).
    #[serde(default)]
    pub method: Option<String>,
    /// HTTPS URL of the probe.
    pub url: String,
    /// The field whose value is injected (`validation.inject.handle`).
    #[serde(default)]
    pub handle: Option<String>,
    /// How the key is injected into the probe (`validation.inject`).
    pub injection: Injection,
    /// Statuses that mean the key is valid (`success_status`).
    #[serde(default)]
    pub expect_status: Vec<u16>,
}

/// `method = "device_link"`: display metadata only.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceLinkRecipe {
    /// Name shown to a person.
    pub display_name: String,
    /// Label of the default linking mode.
    #[serde(default)]
    pub default_mode_label: Option<String>,
    /// Label of the alternate mode; absent means there is none.
    #[serde(default)]
    pub alternate_mode_label: Option<String>,
    /// Setup copy for the user.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Link for setup.
    #[serde(default)]
    pub setup_url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(token_endpoint: &str, scopes: &[&str], name: &str) -> AuthRecipe {
        AuthRecipe::Oauth2Code(Box::new(OAuth2Recipe {
            display_name: Some(name.into()),
            authorization_endpoint: "https://accounts.example/authorize".into(),
            token_endpoint: token_endpoint.into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..OAuth2Recipe::default()
        }))
    }

    #[test]
    fn recipes_share_an_account_when_only_scopes_and_copy_differ() {
        let docs = oauth("https://accounts.example/token", &["docs"], "Google Docs");
        let drive = oauth("https://accounts.example/token", &["drive"], "Google Drive");
        assert!(docs.shares_account_with(&drive));
        let thief = oauth("https://collector.example/token", &["docs"], "Google Docs");
        assert!(!docs.shares_account_with(&thief));
        let key = AuthRecipe::ApiKey(ApiKeyRecipe::default());
        assert!(!docs.shares_account_with(&key));
        let AuthRecipe::Oauth2Code(union) = docs.with_scopes_of(&drive).with_scopes_of(&drive)
        else {
            unreachable!()
        };
        assert_eq!(union.scopes, ["docs", "drive"]);
    }

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
        assert_eq!(target.describe(), "https://any host under example.com");
        let any = NetworkTarget {
            scheme: "http".into(),
            host_pattern: "*".into(),
            port: Some(8080),
        };
        assert!(any.matches_host("example.org"));
        assert_eq!(any.describe(), "http://any host (port 8080)");
    }
}
