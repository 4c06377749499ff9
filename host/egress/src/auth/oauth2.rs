//! `method = "oauth2_code"`: authorization URL with PKCE (S256) and state,
//! code exchange, and refresh before expiry, reading the token response
//! through the recipe's JSON pointers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderName, HeaderValue, Method};
use rand::RngCore as _;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use warden_core::spec::{NetworkTarget, OAuth2Recipe};

use super::{AuthError, https_audience};
use crate::policy::ParsedRequest;
use crate::secrets::{AccountKey, SecretStore};
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
];

/// The host's OAuth client registration for a vendor.
#[derive(Debug, Clone)]
pub struct OAuth2Client {
    /// Client id.
    pub client_id: String,
    /// Client secret, for confidential clients.
    pub client_secret: Option<SecretString>,
    /// Redirect URI registered with the provider.
    pub redirect_uri: String,
}

/// A started authorization: send the user to `url`, keep the rest for the callback.
#[derive(Debug)]
pub struct PendingAuthorization {
    /// Authorization URL to open.
    pub url: String,
    /// The `state` the callback must return.
    pub state: String,
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
    /// Granted scopes, when reported.
    pub scopes: Vec<String>,
    /// Token type, when reported.
    pub token_type: Option<String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    refresh_token: Option<String>,
    expires_at: Option<u64>,
}

/// The generic engine for one recipe and client.
#[derive(Debug, Clone, Copy)]
pub struct OAuth2Flow<'a> {
    recipe: &'a OAuth2Recipe,
    client: &'a OAuth2Client,
}

fn random_token(bytes: usize) -> String {
    let mut buf = zeroize::Zeroizing::new(vec![0u8; bytes]);
    rand::rng().fill_bytes(&mut buf);
    URL_SAFE_NO_PAD.encode(buf.as_slice())
}

/// The store key of the refresh metadata of `key`.
fn meta_key(key: &AccountKey) -> AccountKey {
    AccountKey::new(
        key.vendor.clone(),
        format!("{}#oauth2", key.handle),
        key.scopes.clone(),
    )
}

impl<'a> OAuth2Flow<'a> {
    /// An engine for `recipe` with `client`.
    pub fn new(recipe: &'a OAuth2Recipe, client: &'a OAuth2Client) -> Self {
        Self { recipe, client }
    }

    fn separator(&self) -> &str {
        self.recipe.scope_separator.as_deref().unwrap_or(" ")
    }

    /// The authorization URL, with a fresh state and PKCE verifier.
    pub fn start(&self) -> Result<PendingAuthorization, AuthError> {
        let (mut url, _) = https_audience(&self.recipe.authorization_endpoint)?;
        let state = random_token(16);
        let verifier = random_token(32);
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client.client_id)
                .append_pair("redirect_uri", &self.client.redirect_uri)
                .append_pair("state", &state);
            if !self.recipe.scopes.is_empty() {
                let param = self.recipe.scope_param.as_deref().unwrap_or("scope");
                query.append_pair(param, &self.recipe.scopes.join(self.separator()));
            }
            if self.recipe.pkce.unwrap_or(true) {
                let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                query
                    .append_pair("code_challenge", &challenge)
                    .append_pair("code_challenge_method", "S256");
            }
            for (name, value) in &self.recipe.authorize_params {
                if !RESERVED.contains(&name.as_str()) {
                    query.append_pair(name, value);
                }
            }
        }
        Ok(PendingAuthorization {
            url: url.into(),
            state,
            verifier: SecretString::from(verifier),
        })
    }

    /// Exchange the callback's `code` (after checking `state`) for tokens.
    pub async fn exchange(
        &self,
        egress: &Egress,
        pending: &PendingAuthorization,
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
        self.token_request(egress, &self.recipe.token_endpoint, form)
            .await
    }

    /// Trade `refresh_token` for fresh tokens (the old refresh token is kept
    /// when the provider does not rotate it).
    pub async fn refresh(
        &self,
        egress: &Egress,
        refresh_token: &SecretString,
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
        let mut tokens = self.token_request(egress, endpoint, form).await?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = Some(refresh_token.clone());
        }
        Ok(tokens)
    }

    /// Store `tokens` for `key`: the access token under `key` (what calls stage),
    /// refresh material beside it.
    pub fn store(
        store: &dyn SecretStore,
        key: &AccountKey,
        tokens: &TokenSet,
    ) -> Result<(), AuthError> {
        store.put(key, tokens.access_token.clone())?;
        let meta = Meta {
            refresh_token: tokens
                .refresh_token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            expires_at: tokens
                .expires_at
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs()),
        };
        let json = zeroize::Zeroizing::new(
            serde_json::to_string(&meta).map_err(|_| AuthError::TokenResponse("serialize"))?,
        );
        store.put(&meta_key(key), SecretString::from(json.as_str()))?;
        Ok(())
    }

    /// Refresh the stored tokens of `key` if they expire within the recipe's
    /// skew (default 60 s) of `now`; whether a refresh happened.
    pub async fn refresh_if_needed(
        &self,
        egress: &Egress,
        key: &AccountKey,
        now: SystemTime,
    ) -> Result<bool, AuthError> {
        let store = egress.store();
        let meta = store.get(&meta_key(key))?.ok_or(AuthError::NotConnected)?;
        let meta: Meta = serde_json::from_str(meta.expose_secret())
            .map_err(|_| AuthError::TokenResponse("stored metadata"))?;
        let skew = self
            .recipe
            .refresh
            .as_ref()
            .and_then(|r| r.skew_seconds)
            .unwrap_or(60);
        let due = meta.expires_at.is_some_and(|at| {
            let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            now + skew >= at
        });
        let (true, Some(refresh)) = (due, meta.refresh_token) else {
            return Ok(false);
        };
        let tokens = self.refresh(egress, &SecretString::from(refresh)).await?;
        Self::store(store.as_ref(), key, &tokens)?;
        Ok(true)
    }

    async fn token_request(
        &self,
        egress: &Egress,
        endpoint: &str,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<TokenSet, AuthError> {
        let (url, audience) = https_audience(endpoint)?;
        form.push(("client_id", self.client.client_id.clone()));
        if let Some(secret) = &self.client.client_secret {
            form.push(("client_secret", secret.expose_secret().to_owned()));
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
            scheme: "https".into(),
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
            headers: vec![
                (
                    HeaderName::from_static("content-type"),
                    HeaderValue::from_static("application/x-www-form-urlencoded"),
                ),
                (
                    HeaderName::from_static("accept"),
                    HeaderValue::from_static("application/json"),
                ),
            ],
            body: Some(body.as_bytes().to_vec()),
        };
        let response = session.host_request(request).await?;
        if !response.status.is_success() {
            return Err(AuthError::Rejected {
                status: response.status.as_u16(),
            });
        }
        self.parse_tokens(&response.body)
    }

    fn parse_tokens(&self, body: &[u8]) -> Result<TokenSet, AuthError> {
        let json: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| AuthError::TokenResponse("not JSON"))?;
        let pointers = &self.recipe.token_response;
        let at = |p: &Option<String>| p.as_deref().and_then(|p| json.pointer(p));
        let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_owned);
        let access = text(json.pointer(&pointers.access_token))
            .ok_or(AuthError::TokenResponse("no access token"))?;
        let expires_in =
            at(&pointers.expires_in).and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()));
        let scopes = match at(&pointers.scope) {
            Some(serde_json::Value::String(s)) => s
                .split([' ', ','])
                .chain(s.split(self.separator()))
                .filter(|s| !s.is_empty() && !s.contains([' ', ',']))
                .map(str::to_owned)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        Ok(TokenSet {
            access_token: SecretString::from(access),
            refresh_token: text(at(&pointers.refresh_token)).map(SecretString::from),
            expires_at: expires_in.map(|s| SystemTime::now() + Duration::from_secs(s)),
            scopes,
            token_type: text(at(&pointers.token_type)),
        })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
