//! `method = "oauth2_code"`: authorization URL with PKCE (S256) and state,
//! code exchange and refresh, reading the token response through the
//! recipe's JSON pointers. Client authentication follows `exchange_auth`
//! (`post_body`, `basic`) or is none for a public client. Storing tokens and
//! refreshing before expiry is [`super::grant`].

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderName, HeaderValue, Method};
use rand::RngCore as _;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use warden_core::spec::{NetworkTarget, OAuth2Recipe};

use super::{AuthError, endpoint_audience};
use crate::policy::ParsedRequest;
use crate::session::Egress;
use crate::staging::Staged;

/// Parameters the engine sets itself; `authorize_params` may not override them.
const RESERVED: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
];

/// How the client authenticates at the token endpoint (the recipe's
/// `exchange_auth`, or the registration's `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// `client_id` and `client_secret` in the form body (`post_body`).
    PostBody,
    /// `Authorization: Basic` with the form-encoded id and secret (`basic`).
    Basic,
    /// A public client: `client_id` in the body, no secret.
    None,
}

impl ClientAuth {
    /// The method a recipe asks for, given whether the client has a secret.
    pub fn for_recipe(recipe: &OAuth2Recipe, has_secret: bool) -> Self {
        match (has_secret, recipe.exchange_auth.as_deref()) {
            (false, _) => ClientAuth::None,
            (true, Some("basic")) => ClientAuth::Basic,
            (true, _) => ClientAuth::PostBody,
        }
    }
}

/// The host's OAuth client registration for a vendor (operator
/// configuration, the secret store, or dynamic registration; never a package).
#[derive(Debug, Clone)]
pub struct OAuth2Client {
    /// Client id.
    pub client_id: String,
    /// Client secret, for confidential clients.
    pub client_secret: Option<SecretString>,
    /// Redirect URI registered with the provider (the loopback listener's).
    pub redirect_uri: String,
    /// How the client authenticates on token requests.
    pub auth: ClientAuth,
}

/// A started authorization: send the user to `url`, keep the rest for the
/// callback. [`OAuth2Flow::exchange`] consumes it: a state is checked once.
#[derive(Debug)]
pub struct PendingAuthorization {
    /// Authorization URL to open.
    pub url: String,
    /// The `state` the callback must return.
    pub state: String,
    /// The scopes requested.
    pub scopes: Vec<String>,
    verifier: SecretString,
}

/// Tokens read from a token response.
#[derive(Debug, Clone)]
pub struct TokenSet {
    /// Access token (what egress injects).
    pub access_token: SecretString,
    /// Refresh token, if granted.
    pub refresh_token: Option<SecretString>,
    /// When the access token expires.
    pub expires_at: Option<SystemTime>,
    /// Granted scopes: reported by the provider, or the requested ones when
    /// the recipe says to fall back (or reads no scope field).
    pub scopes: Vec<String>,
    /// Token type, when reported.
    pub token_type: Option<String>,
    /// Identity claims the recipe's `[identity]` pointers name in the token
    /// response (empty when it reads them from an identity endpoint).
    pub claims: super::identity::Claims,
}

/// The generic engine for one recipe and client.
#[derive(Debug, Clone, Copy)]
pub struct OAuth2Flow<'a> {
    recipe: &'a OAuth2Recipe,
    client: &'a OAuth2Client,
    resource: Option<&'a str>,
    /// Where plain `http` endpoints are allowed (none without it).
    egress: Option<&'a crate::EgressConfig>,
}

pub(crate) fn random_token(bytes: usize) -> String {
    let mut buf = zeroize::Zeroizing::new(vec![0u8; bytes]);
    rand::rng().fill_bytes(&mut buf);
    URL_SAFE_NO_PAD.encode(buf.as_slice())
}

impl<'a> OAuth2Flow<'a> {
    /// An engine for `recipe` with `client`.
    pub fn new(recipe: &'a OAuth2Recipe, client: &'a OAuth2Client) -> Self {
        Self {
            recipe,
            client,
            resource: None,
            egress: None,
        }
    }

    /// Accept a plain-`http` authorization endpoint where `config` allows
    /// plain http to its origin (a loopback test server); the token
    /// endpoint is always checked against the egress it is sent through.
    pub fn with_egress_config(mut self, config: &'a crate::EgressConfig) -> Self {
        self.egress = Some(config);
        self
    }

    /// Send the RFC 8707 `resource` indicator on the authorize and token
    /// requests (MCP servers that require OAuth).
    pub fn with_resource(mut self, resource: &'a str) -> Self {
        self.resource = Some(resource);
        self
    }

    /// The recipe this flow runs.
    pub fn recipe(&self) -> &OAuth2Recipe {
        self.recipe
    }

    /// The client this flow authenticates as.
    pub fn client(&self) -> &OAuth2Client {
        self.client
    }

    fn separator(&self) -> &str {
        self.recipe.scope_separator.as_deref().unwrap_or(" ")
    }

    /// The authorization URL asking for `scopes`, with a fresh state and
    /// PKCE verifier. The recipe's extra parameters never replace a
    /// host-owned one (state, redirect_uri, PKCE, client_id, scope).
    pub fn start(&self, scopes: &[String]) -> Result<PendingAuthorization, AuthError> {
        let (mut url, _) = endpoint_audience(&self.recipe.authorization_endpoint, self.egress)?;
        let state = random_token(16);
        let verifier = random_token(32);
        let scope_param = self.recipe.scope_param.as_deref().unwrap_or("scope");
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client.client_id)
                .append_pair("redirect_uri", &self.client.redirect_uri)
                .append_pair("state", &state);
            if !scopes.is_empty() {
                query.append_pair(scope_param, &scopes.join(self.separator()));
            }
            if self.recipe.pkce.unwrap_or(true) {
                let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                query
                    .append_pair("code_challenge", &challenge)
                    .append_pair("code_challenge_method", "S256");
            }
            if let Some(resource) = self.resource {
                query.append_pair("resource", resource);
            }
            for (name, value) in &self.recipe.authorize_params {
                let reserved = RESERVED.contains(&name.as_str()) || name == scope_param;
                if !reserved {
                    query.append_pair(name, value);
                }
            }
        }
        Ok(PendingAuthorization {
            url: url.into(),
            state,
            scopes: scopes.to_vec(),
            verifier: SecretString::from(verifier),
        })
    }

    /// Exchange the callback's `code` (after checking `state`, in constant
    /// time) for tokens. The pending authorization is used up either way.
    pub async fn exchange(
        &self,
        egress: &Egress,
        pending: PendingAuthorization,
        code: &str,
        state: &str,
    ) -> Result<TokenSet, AuthError> {
        if !constant_time_eq(pending.state.as_bytes(), state.as_bytes()) {
            return Err(AuthError::StateMismatch);
        }
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", self.client.redirect_uri.clone()),
        ];
        if self.recipe.pkce.unwrap_or(true) {
            form.push(("code_verifier", pending.verifier.expose_secret().to_owned()));
        }
        let body = self
            .token_request(egress, &self.recipe.token_endpoint, form)
            .await?;
        self.parse_tokens(&body, &pending.scopes)
    }

    /// Trade `refresh_token` for fresh tokens (the old refresh token is kept
    /// when the provider does not rotate it). `scopes` are the account's.
    pub async fn refresh(
        &self,
        egress: &Egress,
        refresh_token: &SecretString,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let endpoint = self
            .recipe
            .refresh
            .as_ref()
            .and_then(|r| r.endpoint.as_deref())
            .unwrap_or(&self.recipe.token_endpoint);
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.expose_secret().to_owned()),
        ];
        let body = self.token_request(egress, endpoint, form).await?;
        let mut tokens = self.parse_tokens(&body, scopes)?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh_token.clone());
        }
        Ok(tokens)
    }

    /// Revoke `token` at the recipe's `revoke` endpoint (RFC 7009), with
    /// the same client authentication as the token endpoint; whether it was
    /// sent. Only to an endpoint on the token endpoint's origin: the token
    /// and the client's secret never go to another a recipe names (a
    /// package naming a vendor's real token endpoint, to be given the
    /// operator's client, could name a revoke endpoint of its own).
    pub async fn revoke(&self, egress: &Egress, token: &SecretString) -> Result<bool, AuthError> {
        let Some(revoke) = &self.recipe.revoke else {
            return Ok(false);
        };
        let (_, token_origin) =
            endpoint_audience(&self.recipe.token_endpoint, Some(egress.config()))?;
        let (_, revoke_origin) = endpoint_audience(&revoke.endpoint, Some(egress.config()))?;
        if revoke_origin != token_origin {
            tracing::warn!(
                revoke = %revoke.endpoint,
                token = %self.recipe.token_endpoint,
                "not revoking: the revoke endpoint is not on the token endpoint's origin"
            );
            return Ok(false);
        }
        let param = revoke.token_param.as_deref().unwrap_or("token");
        let form = vec![(param, token.expose_secret().to_owned())];
        self.token_request(egress, &revoke.endpoint, form).await?;
        Ok(true)
    }

    /// POST a form to a token endpoint; the body of a 2xx answer.
    async fn token_request(
        &self,
        egress: &Egress,
        endpoint: &str,
        mut form: Vec<(&str, String)>,
    ) -> Result<zeroize::Zeroizing<Vec<u8>>, AuthError> {
        let (url, audience) = endpoint_audience(endpoint, Some(egress.config()))?;
        let mut headers = vec![
            (
                HeaderName::from_static("content-type"),
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            ),
            (
                HeaderName::from_static("accept"),
                HeaderValue::from_static("application/json"),
            ),
        ];
        if let Some(resource) = self.resource {
            form.push(("resource", resource.to_owned()));
        }
        match (&self.client.auth, &self.client.client_secret) {
            (ClientAuth::Basic, Some(secret)) => {
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = zeroize::Zeroizing::new(format!(
                    "{}:{}",
                    encode(&self.client.client_id),
                    encode(secret.expose_secret())
                ));
                let value = zeroize::Zeroizing::new(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair.as_bytes())
                ));
                let mut value = HeaderValue::from_str(&value)
                    .map_err(|_| AuthError::InvalidRecipe("client credentials"))?;
                value.set_sensitive(true);
                headers.push((HeaderName::from_static("authorization"), value));
            }
            (ClientAuth::PostBody, Some(secret)) => {
                form.push(("client_id", self.client.client_id.clone()));
                form.push(("client_secret", secret.expose_secret().to_owned()));
            }
            _ => form.push(("client_id", self.client.client_id.clone())),
        }
        let body = zeroize::Zeroizing::new(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
                .finish(),
        );
        for (_, value) in &mut form {
            zeroize::Zeroize::zeroize(value);
        }
        let target = NetworkTarget {
            scheme: audience.scheme.clone(),
            host_pattern: audience.host.clone(),
            port: audience.port,
        };
        let limit = egress.config().max_response_body as u64 + body.len() as u64;
        let session = egress.session_with(
            "auth.oauth2",
            "host",
            &[],
            &[target],
            limit,
            Staged::default(),
        );
        let request = ParsedRequest {
            method: Method::POST,
            url,
            headers,
            body: Some(body.as_bytes().to_vec()),
        };
        let response = session.host_request(request).await?;
        if !response.status.is_success() {
            return Err(AuthError::Rejected {
                status: response.status.as_u16(),
                error: super::oauth_error_code(&response.body),
            });
        }
        Ok(zeroize::Zeroizing::new(response.body.to_vec()))
    }

    /// Read the token response through the recipe's pointers. A pointer the
    /// recipe names but the response lacks is an error naming it (the scope
    /// field falls back to `requested` only when the recipe says so).
    fn parse_tokens(&self, body: &[u8], requested: &[String]) -> Result<TokenSet, AuthError> {
        let json: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| AuthError::TokenResponse("not JSON"))?;
        let pointers = &self.recipe.token_response;
        let at = |p: &Option<String>| p.as_deref().and_then(|p| json.pointer(p));
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_owned);
        let access = text(json.pointer(&pointers.access_token))
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::TokenResponse(
                "the access_token pointer names no string",
            ))?;
        let expires_in =
            at(&pointers.expires_in).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
        let scopes = match (at(&pointers.scope), &pointers.scope) {
            (Some(serde_json::Value::String(s)), _) => s
                .split([' ', ','])
                .chain(s.split(self.separator()))
                .filter(|s| !s.is_empty() && !s.contains([' ', ',']))
                .map(str::to_owned)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            (Some(serde_json::Value::Array(items)), _) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            (_, None) => requested.to_vec(),
            (_, Some(_)) if pointers.scope_fallback_to_requested => requested.to_vec(),
            (_, Some(_)) => {
                return Err(AuthError::TokenResponse(
                    "the scope pointer names no granted scopes",
                ));
            }
        };
        // A scope is a token of printable ASCII (RFC 6749 §3.3); anything
        // else (control characters, spaces, quotes) is not kept: scopes name
        // the account and are shown in terminals and logs.
        let scopes: Vec<String> = scopes.into_iter().filter(|s| is_scope_token(s)).collect();
        let mut tokens = TokenSet {
            access_token: SecretString::from(access),
            refresh_token: text(at(&pointers.refresh_token)).map(SecretString::from),
            expires_at: expires_in.map(expiry_in),
            scopes,
            token_type: text(at(&pointers.token_type)),
            claims: super::identity::Claims::new(),
        };
        if self.recipe.identity_endpoint.is_none() {
            let claims = super::identity::claims_in(&json, &self.recipe.identity);
            tokens.claims = super::identity::without_tokens(claims, &tokens);
        }
        Ok(tokens)
    }
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `scope` is a scope token (RFC 6749 §3.3: `%x21 / %x23-5B /
/// %x5D-7E`, at least one).
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

/// Longest token lifetime taken from a token endpoint; a longer one (up to
/// `u64::MAX` seconds, past what the clock can hold) is taken as this.
const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// When a token whose endpoint says it lives `seconds` expires.
fn expiry_in(seconds: u64) -> SystemTime {
    let lifetime = Duration::from_secs(seconds).min(MAX_TOKEN_LIFETIME);
    SystemTime::now() + lifetime
}

#[cfg(test)]
mod tests {
    use super::is_scope_token;

    #[test]
    fn a_scope_is_printable_ascii_without_space_quote_or_backslash() {
        for scope in [
            "repo",
            "read:org",
            "https://www.googleapis.com/auth/gmail.send",
        ] {
            assert!(is_scope_token(scope), "{scope}");
        }
        for scope in [
            "",
            "re po",
            "a\u{1b}[2J",
            "quo\"te",
            "back\\slash",
            "é",
            "tab\t",
        ] {
            assert!(!is_scope_token(scope), "{scope:?}");
        }
    }
}
