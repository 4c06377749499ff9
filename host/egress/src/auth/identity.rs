//! `[auth.<vendor>.identity]`: who a connected account is (`account_id`,
//! and named claims such as `team_id`). Claims are read through the
//! recipe's JSON pointers from the token response, or — when the recipe
//! names an identity endpoint — from a GET to it with the new access token.
//! That endpoint is chosen by the package, so, like an API key's probe, it
//! must be one of the audiences the account is bound to: the token is never
//! sent where the account may not go.

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use warden_core::spec::{CredentialSpec, Injection};

use super::oauth2::TokenSet;
use super::{AuthError, host_request};
use crate::redact::Redactor;
use crate::secrets::AccountAudience;
use crate::session::Egress;

/// Claim name → value (`account_id` among them).
pub type Claims = BTreeMap<String, String>;

/// The claims `pointers` name in `json`: strings as they are, numbers and
/// booleans as their JSON text. A pointer that names nothing, or an object
/// or array, is left out.
pub fn claims_in(json: &Value, pointers: &BTreeMap<String, String>) -> Claims {
    pointers
        .iter()
        .filter_map(|(name, pointer)| {
            let value = match json.pointer(pointer)? {
                Value::String(s) if !s.is_empty() => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some((name.clone(), value))
        })
        .collect()
}

/// `claims` without any whose value holds the access or the refresh token
/// of `tokens` in any form the redactor knows (raw, base64, percent, hex,
/// escaped): a package's pointer (`account_id = "/access_token"`), or an
/// endpoint that echoes the bearer, must not turn a secret into a label
/// that `warden auth status` prints.
pub fn without_tokens(claims: Claims, tokens: &TokenSet) -> Claims {
    let redactor = Redactor::new(
        std::iter::once(&tokens.access_token)
            .chain(&tokens.refresh_token)
            .map(|s| s.expose_secret().as_bytes()),
    );
    claims
        .into_iter()
        .filter(|(name, value)| {
            let secret = redactor.contains(value.as_bytes());
            if secret {
                tracing::warn!(claim = %name, "an identity claim holds a token and is dropped");
            }
            !secret
        })
        .collect()
}

/// GET `endpoint` through `egress` with `access` as a bearer token and read
/// `pointers` from its JSON answer. `audiences` are where the account may
/// be sent; an endpoint outside them is refused before anything is sent.
pub async fn fetch(
    egress: &Egress,
    vendor: &str,
    endpoint: &str,
    pointers: &BTreeMap<String, String>,
    audiences: &[AccountAudience],
    access: &SecretString,
) -> Result<Claims, AuthError> {
    let (url, audience) = host_request::in_audiences(endpoint, audiences)?;
    let spec = CredentialSpec {
        handle: "identity".into(),
        vendor: vendor.to_owned(),
        scopes: Vec::new(),
        audience,
        injection: Injection::Header {
            name: "authorization".into(),
            prefix: Some("Bearer ".into()),
        },
        required: true,
    };
    let response = host_request::send(egress, spec, access.clone(), "GET", url).await?;
    if response.status != 200 {
        return Err(AuthError::Rejected {
            status: response.status,
            error: None,
        });
    }
    let json: Value = serde_json::from_slice(&response.body)
        .map_err(|_| AuthError::TokenResponse("the identity endpoint answered no JSON"))?;
    Ok(claims_in(&json, pointers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_holding_a_token_in_any_form_is_dropped() {
        use base64::Engine as _;
        let access = "gho_AccessTokenValue0123456789";
        let tokens = TokenSet {
            access_token: SecretString::from(access),
            refresh_token: Some(SecretString::from("ghr_RefreshTokenValue0123456789")),
            expires_at: None,
            scopes: Vec::new(),
            token_type: None,
            claims: Claims::new(),
        };
        let claims: Claims = [
            ("account_id", "octocat".to_owned()),
            ("raw", format!("id:{access}")),
            (
                "base64",
                base64::engine::general_purpose::STANDARD.encode(access),
            ),
            ("percent", access.replace('_', "%5F")),
            ("refresh", "ghr_RefreshTokenValue0123456789".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let kept = without_tokens(claims, &tokens);
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["account_id"]);
    }

    #[test]
    fn claims_are_read_through_pointers_and_non_scalars_left_out() {
        let json = serde_json::json!({
            "user": {"login": "octocat", "id": 583231, "site_admin": false},
            "team": {"id": "T123"},
            "orgs": ["a"],
            "empty": ""
        });
        let pointers: BTreeMap<String, String> = [
            ("account_id", "/user/login"),
            ("user_number", "/user/id"),
            ("admin", "/user/site_admin"),
            ("team_id", "/team/id"),
            ("orgs", "/orgs"),
            ("missing", "/nope"),
            ("blank", "/empty"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let claims = claims_in(&json, &pointers);
        let expected: Claims = [
            ("account_id", "octocat"),
            ("admin", "false"),
            ("team_id", "T123"),
            ("user_number", "583231"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(claims, expected);
    }
}
