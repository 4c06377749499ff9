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
use crate::redact::Fragments;
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

/// Longest claim value kept, in characters: identity claims are labels
/// (a login, an id, a team, an e-mail address: at most 254), and a longer
/// value is more room to carry a token in.
pub const MAX_CLAIM_CHARS: usize = 256;

/// `claims` without any that could carry the access or the refresh token of
/// `tokens`, or that is no label: a value longer than [`MAX_CLAIM_CHARS`],
/// with a control or invisible character, or sharing
/// [`SHARED_RUN`](crate::redact::SHARED_RUN) consecutive characters with
/// either token in any form the redactor knows (raw, reversed, rot13,
/// base64, base32, hex, decimal, escaped…). A package's pointers
/// (`account_id = "/access_token"`, or two claims each reading one half of
/// it), or an endpoint that echoes the bearer, must not turn a secret into
/// labels that `warden auth status` prints. A claim is dropped whole: a
/// shortened one could still hold a piece.
pub fn without_tokens(claims: Claims, tokens: &TokenSet) -> Claims {
    let fragments = Fragments::new(
        std::iter::once(&tokens.access_token)
            .chain(&tokens.refresh_token)
            .map(|s| s.expose_secret().as_bytes()),
    );
    claims
        .into_iter()
        .filter(|(name, value)| match refusal(value, &fragments) {
            Some(reason) => {
                tracing::warn!(claim = %name, reason, "an identity claim is dropped");
                false
            }
            None => true,
        })
        .collect()
}

/// Why `value` may not be kept as a claim, if it may not.
fn refusal(value: &str, fragments: &Fragments) -> Option<&'static str> {
    if value.chars().count() > MAX_CLAIM_CHARS {
        return Some("longer than a label");
    }
    if value
        .chars()
        .any(|c| c.is_control() || crate::redact::is_default_ignorable(c))
    {
        return Some("a control or invisible character");
    }
    fragments
        .found_in(value.as_bytes())
        .then_some("it holds part of a token")
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

    fn tokens(access: &str, refresh: &str) -> TokenSet {
        TokenSet {
            access_token: SecretString::from(access),
            refresh_token: Some(SecretString::from(refresh)),
            expires_at: None,
            scopes: Vec::new(),
            token_type: None,
            claims: Claims::new(),
        }
    }

    fn claims(pairs: &[(&str, String)]) -> Claims {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    /// RFC 4648 base32, written out here so the test does not lean on the
    /// redactor's own encoder.
    fn base32(bytes: &[u8]) -> String {
        let bits: String = bytes.iter().map(|b| format!("{b:08b}")).collect();
        bits.as_bytes()
            .chunks(5)
            .map(|chunk| {
                let mut five = String::from_utf8(chunk.to_vec()).unwrap();
                while five.len() < 5 {
                    five.push('0');
                }
                let n = usize::from_str_radix(&five, 2).unwrap();
                char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[n])
            })
            .collect()
    }

    /// The token in pieces, each read by a claim of its own: two halves,
    /// reversed, base32, rot13, interleaved with zero-width spaces — and
    /// the same for the refresh token. Each was printed by `auth status`.
    #[test]
    fn a_claim_holding_a_piece_of_a_token_in_any_form_is_dropped() {
        let access = "gho_16C7e42F292c6912E7710c838347Ae178B4a";
        let refresh = "ghr_1B4a2e77838347a7E420ce178F2E7c6912E1";
        let tokens = tokens(access, refresh);
        let (first, second) = access.split_at(access.len() / 2);
        let rot13: String = access
            .chars()
            .map(|c| match c {
                'a'..='z' => char::from((c as u8 - b'a' + 13) % 26 + b'a'),
                'A'..='Z' => char::from((c as u8 - b'A' + 13) % 26 + b'A'),
                _ => c,
            })
            .collect();
        let zero_width: String = access.chars().flat_map(|c| [c, '\u{200B}']).collect();
        let found = claims(&[
            ("first_half", first.to_owned()),
            ("second_half", second.to_owned()),
            ("third", access[13..26].to_owned()),
            ("reversed", access.chars().rev().collect()),
            ("base32", base32(access.as_bytes())),
            (
                "base32_lower",
                base32(access.as_bytes()).to_ascii_lowercase(),
            ),
            ("rot13", rot13),
            ("refresh_half", refresh[..20].to_owned()),
            ("refresh_reversed", refresh.chars().rev().collect()),
            ("zero_width", zero_width),
            ("fullwidth_piece", "ｇｈｏ＿１６Ｃ７ｅ４２".to_owned()),
        ]);
        let kept = without_tokens(found, &tokens);
        assert!(kept.is_empty(), "kept: {kept:?}");
    }

    #[test]
    fn a_claim_that_is_no_label_is_dropped_and_labels_are_kept() {
        let tokens = tokens(
            "gho_16C7e42F292c6912E7710c838347Ae178B4a",
            "ghr_1B4a2e77838347a7E420ce178F2E7c6912E1",
        );
        let found = claims(&[
            ("login", "octocat".to_owned()),
            ("email", "mona.lisa@users.noreply.github.com".to_owned()),
            ("id", "583231".to_owned()),
            ("big_id", "1234567890123456789".to_owned()),
            ("uuid", "0b7f2c4e-9d3a-4c1b-8e6f-5a2d7c9e1f30".to_owned()),
            ("name", "José Müller 山田".to_owned()),
            ("longest", "a".repeat(MAX_CLAIM_CHARS)),
            ("too_long", "a".repeat(MAX_CLAIM_CHARS + 1)),
            ("control", "octo\u{1b}[31mcat".to_owned()),
            ("newline", "octo\ncat".to_owned()),
            ("bidi", "octo\u{202E}tac".to_owned()),
            ("soft_hyphen", "octo\u{AD}cat".to_owned()),
        ]);
        let kept = without_tokens(found, &tokens);
        assert_eq!(
            kept.keys().collect::<Vec<_>>(),
            ["big_id", "email", "id", "login", "longest", "name", "uuid"]
        );
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
